// What the M2L kernel reads and writes (fmm_kernels.hpp computes it; fmm.cpp calls it through
// the SimdKernels table). Plain data and pointers only, so the table can carry it across the
// per-instruction-set files without any inline code crossing that boundary.
#pragma once

#include <cstddef>
#include <cstdint>

namespace orrery {

// Raw views of the FmmTables arrays the M2L needs (fmm_expansions.hpp).
struct FmmM2LTables {
  int terms;
  const std::int32_t* pair_start;  // terms + 1
  const std::int32_t* pair_n;
  const std::int32_t* pair_sum;
  const std::int32_t* minus_one[3];
  const std::int32_t* minus_two[3];
  const double* recurrence_first;   // (2|k| - 1) / |k|
  const double* recurrence_second;  // (|k| - 1) / |k|
  const double* factorial;
};

// One target cell and its sources: local[k] = sum over sources j (in list order, in batches of
// kFmmBatch<E> sources, lanes folded in one fixed order) of sum_n D_{k+n}(z_target - z_j) S_n(j),
// computed in E (the `expansions` option: double, or float for twice the lanes per vector;
// docs/fmm-tuning-log.md#0165) and widened to double.
template <typename E>
struct FmmM2LTask {
  const double* centre;             // 3 per node
  const E* signed_multipole;        // terms per node
  const std::uint32_t* sources;
  std::size_t count;
  std::uint32_t target;
  double eps2;
  double* local;                    // terms; overwritten
};

template <typename E>
using FmmM2LFn = void (*)(const FmmM2LTables& tables, const FmmM2LTask<E>& task);

}  // namespace orrery
