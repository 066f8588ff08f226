// What cpu-fmm's upward and downward passes in lanes read and write (fmm_passes_kernel.hpp
// computes them, fmm.cpp calls them through the SimdKernels table). Plain data and pointer types
// only, like fmm_l2p.hpp.
#pragma once

#include <cstddef>

namespace orrery {

// P2M: one leaf's bodies as offsets u from its expansion centre, and their masses (double,
// `count` a multiple of 8, the padding zero mass at any finite offset).
// M2M: one node's children as offsets u of their centres from the node's, and their multipoles,
// term k of child j at multipoles[k * count + j] (`count` a multiple of 8, the padding zero
// multipoles at any finite offset).
struct FmmUpwardLanes {
  const double *ux, *uy, *uz;
  const double* weights;  // P2M: the masses; M2M: the children's multipoles
  std::size_t count;
};

// P2M (multipole[q] += sum over bodies of m t_q(u)) or M2M (multipole[k + n] += sum over children
// of M_k t_n(u)), terms of `order`; false (nothing written) for an order without straight-line
// tables (the caller then takes fmm_expansions.hpp's loops).
using FmmUpwardFn = bool (*)(int order, const FmmUpwardLanes& lanes, double* multipole);

// L2L: one node's children as offsets u of their centres from the node's (`count` a multiple of
// 8, the padding any finite offset), the node's local expansion, and where each child's share
// goes: term k of child j at children[k * count + j] (written, for the caller to add).
struct FmmDownwardLanes {
  const double *ux, *uy, *uz;
  const double* local;
  std::size_t count;
  double* children;
};

// L2L of a node's local expansion to its children, terms of `order`; false (nothing written)
// for an order without straight-line tables.
using FmmDownwardFn = bool (*)(int order, const FmmDownwardLanes& lanes);

}  // namespace orrery
