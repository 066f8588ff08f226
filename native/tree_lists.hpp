// What a tree interaction kernel reads and writes: one group of target particles and its
// interaction list (tree_walk.cpp builds them; tree_kernels.hpp computes on them). Plain data
// and function pointer types only, so the SimdKernels table (simd_kernels.hpp) can carry the
// kernels across the per-instruction-set files.
//
// Sources are separate arrays padded to a multiple of kLanes<T> entries (64 bytes of T); padding
// entries have zero mass and sit at the largest finite coordinate, so they add exact zeros. Each
// target's sum is kept in kLanes<T> partial sums (lane k takes sources k, k + kLanes, ...) folded
// in one fixed order at the end: the same arithmetic whatever the thread count or the group's
// neighbours.
#pragma once

#include <cstddef>

namespace orrery {

template <typename T>
constexpr std::size_t kLanes = 64 / sizeof(T);

template <typename T>
struct MonopoleSources {
  const T *x, *y, *z, *m;
  std::size_t count;  // a multiple of kLanes<T>
};

template <typename T>
struct QuadrupoleSources {
  const T *x, *y, *z, *m;
  const T *qxx, *qxy, *qxz, *qyy, *qyz, *qzz;  // traceless quadrupoles (octree.hpp)
  std::size_t count;  // a multiple of kLanes<T>
};

template <typename T>
struct GroupTargets {
  const T *x, *y, *z;
  std::size_t count;
  T *ax, *ay, *az, *u;  // outputs; u is null when potentials are not wanted
};

// Softened monopole pull of every source on every target: ax = sum m dx / (r^2 + eps^2)^(3/2),
// u = -sum m / (r^2 + eps^2)^(1/2). Overwrites the targets' outputs.
template <typename T>
using TreeMonopoleFn = void (*)(const MonopoleSources<T>& sources, const GroupTargets<T>& targets, T eps2);

// Monopole plus quadrupole terms of cells: a = M d / r^3 - Q d / r^5 + (5/2) (d.Q.d) d / r^7,
// u = -M / r - (1/2) d.Q.d / r^5, with d = cell com - target and r^2 = |d|^2 + eps^2.
// Overwrites the targets' outputs.
template <typename T>
using TreeQuadrupoleFn = void (*)(const QuadrupoleSources<T>& sources, const GroupTargets<T>& targets, T eps2);

}  // namespace orrery
