// The arithmetic of the tree walk: one group of target particles against its interaction list.
//
// Sources are stored as separate arrays padded to a multiple of kLanes<T> entries (64 bytes of
// T); padding entries have zero mass and sit at the largest finite coordinate, so they add exact
// zeros. Each target's sum is kept in kLanes<T> partial sums (lane k takes sources k, k + kLanes,
// ...) folded in one fixed order at the end: the same arithmetic whatever the thread count or
// the group's neighbours. Exact sqrt and division without FMA contraction (the same bits on any
// instruction set), except the float kernels on AVX2/AVX-512 machines, which use a refined
// reciprocal square root estimate and FMAs (see tree_kernels.cpp).
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
  T *ax, *ay, *az, *u;  // outputs (u only when potentials are asked for)
};

// Softened monopole pull of every source on every target: ax = sum m dx / (r^2 + eps^2)^(3/2),
// u = -sum m / (r^2 + eps^2)^(1/2). Overwrites the targets' outputs.
void monopole_forces(const MonopoleSources<float>& s, const GroupTargets<float>& t, float eps2, bool potential);
void monopole_forces(const MonopoleSources<double>& s, const GroupTargets<double>& t, double eps2, bool potential);

// Which float kernels this machine runs (for benchmark reports).
const char* float_kernel_name();

// Monopole plus quadrupole terms of cells: a = M d / r^3 - Q d / r^5 + (5/2) (d.Q.d) d / r^7,
// u = -M / r - (1/2) d.Q.d / r^5, with d = cell com - target and r^2 = |d|^2 + eps^2.
// Overwrites the targets' outputs.
void quadrupole_forces(const QuadrupoleSources<float>& s, const GroupTargets<float>& t, float eps2, bool potential);
void quadrupole_forces(const QuadrupoleSources<double>& s, const GroupTargets<double>& t, double eps2,
                       bool potential);

}  // namespace orrery
