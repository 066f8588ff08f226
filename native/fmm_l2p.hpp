// What cpu-fmm's L2P kernel in lanes reads and writes (fmm_l2p_kernel.hpp computes it, fmm.cpp
// calls it through the SimdKernels table). Plain data and pointer types only, like fmm_p2p.hpp.
#pragma once

#include <cstddef>

namespace orrery {

// One leaf's bodies as offsets u from its expansion centre (double, `count` a multiple of 8, the
// padding any finite offset), and where their far field goes: the acceleration and (phi not
// null) the potential of the local expansion at each u.
struct FmmL2PBodies {
  const double *ux, *uy, *uz;
  std::size_t count;
  double *ax, *ay, *az, *phi;
};

// L2P of one leaf's local expansion (terms of `order`) at its bodies; false (nothing written)
// for an order without straight-line tables (the caller then takes fmm_expansions.hpp's loop).
using FmmL2PFn = bool (*)(int order, const double* local, const FmmL2PBodies& bodies);

}  // namespace orrery
