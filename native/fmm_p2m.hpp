// What cpu-fmm's P2M kernel in lanes reads and writes (fmm_p2m_kernel.hpp computes it, fmm.cpp
// calls it through the SimdKernels table). Plain data and pointer types only, like fmm_l2p.hpp.
#pragma once

#include <cstddef>

namespace orrery {

// One leaf's bodies as offsets u from its expansion centre and their masses (double, `count` a
// multiple of 8, the padding zero mass at any finite offset).
struct FmmP2MBodies {
  const double *ux, *uy, *uz, *m;
  std::size_t count;
};

// P2M of one leaf's bodies: multipole[q] += sum over bodies of m t_q(u), terms of `order`; false
// (nothing written) for an order without straight-line tables (the caller then takes
// fmm_expansions.hpp's loop).
using FmmP2MFn = bool (*)(int order, const FmmP2MBodies& bodies, double* multipole);

}  // namespace orrery
