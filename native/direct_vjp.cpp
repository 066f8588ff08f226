// The VJP of cpu-direct's direct sum (direct_vjp.hpp): layout, blocks of targets on the thread
// pool, write-back.
#include "direct_vjp.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "parallel.hpp"

namespace orrery {

void direct_vjp(const double* p, const double* m, const double* ab, const double* pb, std::size_t n,
                double softening, unsigned threads, const SimdKernels& kernels, double* px, double* mb,
                double* a) {
  const std::size_t block = kernels.block_vjp_f64;
  const std::size_t blocks = (n + block - 1) / block;
  const std::size_t padded = blocks * block;
  if (threads == 0) threads = ThreadPool::hardware_threads();
  constexpr std::size_t F = DirectVjpInput::fields;
  const std::size_t stride = kernels.vjp_source_stride;
  const bool forces = a != nullptr;
  // Padding targets sit at the origin with no mass and no cotangent; their lanes are
  // computed and never written back.
  std::vector<double> sources(stride * n), targets(F * padded, 0.0),
      out((forces ? 7 : 4) * padded);
  bool positive_masses = true;
  for (std::size_t i = 0; i < n; ++i) {
    positive_masses = positive_masses && m[i] > 0 && std::isfinite(8.0 / m[i]);
    const double fields[F] = {p[3 * i], p[3 * i + 1], p[3 * i + 2], m[i],
                              ab[3 * i], ab[3 * i + 1], ab[3 * i + 2], pb ? pb[i] : 0.0};
    for (std::size_t f = 0; f < F; ++f) {
      sources[stride * i + f] = fields[f];
      targets[f * padded + i] = fields[f];
    }
    kernels.vjp_mass_terms(m[i], sources.data() + stride * i + F);
  }
  const DirectVjpInput in{sources.data(), targets.data(), padded, n, softening * softening,
                          pb != nullptr, positive_masses};
  double* o = out.data();
  const DirectVjpOutput result{o, o + padded, o + 2 * padded, o + 3 * padded,
                               forces ? o + 4 * padded : nullptr,
                               forces ? o + 5 * padded : nullptr,
                               forces ? o + 6 * padded : nullptr};
  // Chunks of about 2^18 pairs, as cpu-direct's.
  const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(1) << 18) / (block * n));
  ThreadPool::instance().parallel_for(blocks, chunk, threads, [&](std::size_t b0, std::size_t b1) {
    kernels.direct_vjp_f64(in, b0, b1, result);
  });
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < 3; ++d) px[3 * i + d] = out[d * padded + i];
    mb[i] = result.mass[i];
    if (a)
      for (std::size_t d = 0; d < 3; ++d) a[3 * i + d] = out[(4 + d) * padded + i];
  }
}

}  // namespace orrery
