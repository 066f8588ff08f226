// Probes of this machine's ceilings (ceilings.hpp), in equal units taken by every thread.
#include "ceilings.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

#include "parallel.hpp"

namespace orrery {
namespace {

// Keeps every probe's checksum observable, so no probe loop can be optimised away.
std::atomic<double> probe_sink{0.0};

void keep(double checksum) {
  double old = probe_sink.load(std::memory_order_relaxed);
  while (!probe_sink.compare_exchange_weak(old, old + checksum, std::memory_order_relaxed)) {
  }
}

ProbeFn find_probe(const SimdKernels& k, const std::string& probe, const std::string& precision) {
  if (precision != "f32" && precision != "f64")
    throw std::invalid_argument("precision must be 'f32' or 'f64', got '" + precision + "'");
  const bool single = precision == "f32";
  ProbeFn fn = nullptr;
  if (probe == "fma")
    fn = single ? k.fma_f32 : k.fma_f64;
  else if (probe == "sqrt_div")
    fn = single ? k.sqrt_div_f32 : k.sqrt_div_f64;
  else if (probe == "rsqrt_estimate")
    fn = single ? k.estimate_f32 : k.estimate_f64;
  else
    throw std::invalid_argument("probe must be fma, sqrt_div or rsqrt_estimate, got '" + probe + "'");
  if (!fn)
    throw std::runtime_error(std::string("no ") + precision + " " + probe + " instruction at SIMD level " + k.name);
  return fn;
}

}  // namespace

double probe_operations(const std::string& probe, const std::string& precision, std::uint64_t rounds,
                        unsigned threads, const SimdKernels& kernels) {
  const ProbeFn fn = find_probe(kernels, probe, precision);
  if (threads == 0) threads = ThreadPool::hardware_threads();
  // Four equal units per thread, taken dynamically: a core slowed by outside load takes fewer,
  // so the figure is what the machine as a whole sustains.
  const std::size_t units = 4 * std::size_t(threads);
  std::atomic<double> operations{0.0};
  ThreadPool::instance().parallel_for(units, 1, threads, [&](std::size_t b, std::size_t e) {
    for (std::size_t u = b; u < e; ++u) {
      ProbeCount count = fn(rounds);
      keep(count.checksum);
      double old = operations.load();
      while (!operations.compare_exchange_weak(old, old + count.operations)) {
      }
    }
  });
  return operations.load();
}

double probe_read_bytes(const double* data, std::size_t size, unsigned threads, const SimdKernels& kernels) {
  const ReadProbeFn fn = kernels.read;
  if (threads == 0) threads = ThreadPool::hardware_threads();
  constexpr std::size_t piece = std::size_t(1) << 17;  // 1 MiB of doubles per task
  const std::size_t count = size / piece * piece;
  if (count == 0) throw std::invalid_argument("the read buffer must hold at least 1 MiB");
  ThreadPool::instance().parallel_for(count / piece, 1, threads, [&](std::size_t b, std::size_t e) {
    for (std::size_t t = b; t < e; ++t) keep(fn(data + t * piece, piece).checksum);
  });
  return 8.0 * double(count);
}

}  // namespace orrery
