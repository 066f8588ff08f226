// What cpu-fmm's mutual P2P kernel reads and writes (fmm_p2p_kernel.hpp computes it, fmm.cpp
// calls it through the SimdKernels table). Plain data and pointer types only, like
// tree_lists.hpp, so the table can carry the kernel across the per-instruction-set files.
#pragma once

#include <cstddef>

namespace orrery {

// A target leaf's bodies, padded to `own` (a multiple of kLanes<T>), then the bodies of the
// leaves it pairs with, concatenated, then kLanes<T> entries of padding. Padding has zero mass
// and sits at the last body before it (so every distance the kernel takes is a real one).
// sum_*: per entry, in the kernel's scaled units, 8 a and -2 u: the own leaf's [0, own)
// accumulated (+=), the rest written (its first target writes them); sum_u is null when
// potentials are not wanted.
template <typename T>
struct MutualBodies {
  const T *x, *y, *z, *m;
  T *sum_x, *sum_y, *sum_z, *sum_u;
  std::size_t targets;  // the target leaf's bodies: [0, targets)
  std::size_t own;      // where the other leaves' bodies start
  std::size_t count;    // own + their bodies (padding not counted)
};

// Every pair (i, j) with i < targets and i < j < count (j a real body), once: one distance for
// both halves, the softened pull of j on i into i's sum and of i on j into j's (the law of
// TreeMonopoleFn).
template <typename T>
using FmmP2PFn = void (*)(const MutualBodies<T>& bodies, T eps2);

}  // namespace orrery
