// The kernels compiled once per instruction set. Each simd_*.cpp file includes the kernel
// templates with its own traits and its own compiler flags and exports one SimdKernels table;
// simd.cpp picks the table at run time. Only plain data and function pointers cross the
// boundary, so no code built for a wider instruction set can leak into the baseline files.
#pragma once

#include <cstddef>
#include <cstdint>

#include "flock_rules.hpp"
#include "fmm_l2p.hpp"
#include "fmm_passes.hpp"
#include "fmm_m2l.hpp"
#include "fmm_p2p.hpp"
#include "splat_kernel.hpp"
#include "tree_lists.hpp"

namespace orrery {

// What the direct-summation kernel reads, prepared once per call by direct.cpp.
template <typename T>
struct DirectInput {
  const T* sources;  // per particle j: x, y, z and the mass terms (pack_sources), j = 0 .. n-1
  const T* x;        // targets, structure of arrays, padded to a whole number of blocks
  const T* y;
  const T* z;
  std::size_t n;
  T eps2;
  // Target i is source first + i (its own lane is left out of its sum): a call may evaluate a
  // contiguous range of the sources, e.g. one rank's share of a distributed run.
  std::size_t first = 0;
};

// Where it writes: structure of arrays padded like the targets; pot is null when not wanted.
template <typename T>
struct DirectOutput {
  T* ax;
  T* ay;
  T* az;
  T* pot;
};

// Computes the targets of blocks [first_block, end_block); a block is SimdKernels::block_* targets.
template <typename T>
using DirectBlocksFn = void (*)(const DirectInput<T>&, std::size_t first_block,
                                std::size_t end_block, const DirectOutput<T>&);

// What the direct sum's VJP reads (direct_vjp_kernel.hpp), float64, prepared by direct_vjp.cpp.
struct DirectVjpInput {
  // Per particle: x, y, z, m, abar x, y, z (cotangent of the acceleration), pbar (of the
  // potential; 0 without). A packed source follows them with the direct kernel's mass terms
  // (SimdKernels::vjp_source_stride values in all).
  static constexpr std::size_t fields = 8;
  const double* sources;  // j = 0 .. n-1
  const double* targets;  // the fields as structure of arrays, each padded to whole blocks
  std::size_t padded;
  std::size_t n;
  double eps2;
  bool potential;  // pbar given
  // Every mass is positive, with a finite 8/m: z^3 may come from the accelerations' weights.
  bool positive_masses;
};

// Where it writes, padded like the targets: pos_bar x, y, z, mass_bar, and the accelerations
// (null: not wanted).
struct DirectVjpOutput {
  double* px;
  double* py;
  double* pz;
  double* mass;
  double* ax;
  double* ay;
  double* az;
};

using DirectVjpBlocksFn = void (*)(const DirectVjpInput&, std::size_t first_block,
                                   std::size_t end_block, const DirectVjpOutput&);
using VjpMassTermsFn = void (*)(double mass, double* out);

// A throughput probe's result: how many operations it performed (flop, sqrt+divide pairs,
// estimates or bytes) and a checksum that keeps the compiler from dropping the work.
struct ProbeCount {
  double operations;
  double checksum;
};
using ProbeFn = ProbeCount (*)(std::uint64_t rounds);
using ReadProbeFn = ProbeCount (*)(const double* data, std::size_t count);

// Writes the sources as the level's kernel reads them (stride values per particle).
template <typename T>
using PackSourcesFn = void (*)(const T* pos, const T* mass, std::size_t n, T* out);

// The kernel's own 1/sqrt (or x^(-3/2)) applied to an array (count a multiple of the lanes), so its error
// can be measured against an exact one.
// float32 -> IEEE half, round to nearest even (half_kernel.hpp).
using NarrowToHalfFn = void (*)(const float* source, std::uint16_t* out, std::size_t count);

template <typename T>
using InverseSqrtFn = void (*)(const T* x, T* out, std::size_t count);

// A boids search over boids [begin, end): sorted positions for the coherent and naive searches,
// boid indices for the scattered one (flock_kernel.hpp).
using FlockLoopFn = void (*)(const FlockLoopInput&, std::size_t begin, std::size_t end);

struct SimdKernels {
  const char* name;
  std::size_t block_f32;  // targets per block
  std::size_t block_f64;
  const char* rsqrt_f32;  // how 1/sqrt is computed
  const char* rsqrt_f64;
  std::size_t source_stride_f32;  // values per packed source
  std::size_t source_stride_f64;
  PackSourcesFn<float> pack_sources_f32;
  PackSourcesFn<double> pack_sources_f64;
  DirectBlocksFn<float> direct_f32;
  DirectBlocksFn<double> direct_f64;
  std::size_t block_vjp_f64;  // targets per block of the direct sum's VJP
  std::size_t vjp_source_stride;  // values per packed source of the VJP
  VjpMassTermsFn vjp_mass_terms;  // writes a source's mass terms after its fields
  DirectVjpBlocksFn direct_vjp_f64;
  InverseSqrtFn<float> inverse_sqrt_f32;
  InverseSqrtFn<double> inverse_sqrt_f64;
  InverseSqrtFn<float> inverse_cube_f32;
  InverseSqrtFn<double> inverse_cube_f64;
  ProbeFn fma_f32;
  ProbeFn fma_f64;
  ProbeFn sqrt_div_f32;
  ProbeFn sqrt_div_f64;
  ProbeFn estimate_f32;  // null: no approximate 1/sqrt instruction at this level
  ProbeFn estimate_f64;
  ReadProbeFn read;
  TreeMonopoleFn<float> tree_monopole_f32;  // cpu-tree's interaction kernels (tree_kernels.hpp)
  TreeMonopoleFn<double> tree_monopole_f64;
  TreeQuadrupoleFn<float> tree_quadrupole_f32;
  TreeQuadrupoleFn<double> tree_quadrupole_f64;
  FlockLoopFn flock_gathered;  // the boids' coherent-grid and naive loop (flock_kernel.hpp)
  FlockLoopFn flock_scattered;  // the boids' scattered-grid loop
  FmmM2LFn<float> fmm_m2l_f32;  // cpu-fmm's cell-cell kernel (fmm_kernels.hpp), per expansion type
  FmmM2LFn<double> fmm_m2l_f64;
  FmmP2PFn<float> fmm_p2p_f32;  // cpu-fmm's mutual leaf-leaf kernel (fmm_p2p_kernel.hpp)
  FmmP2PFn<double> fmm_p2p_f64;
  FmmUpwardFn fmm_p2m;  // cpu-fmm's multipoles of a leaf's bodies, in double lanes (fmm_passes_kernel.hpp)
  FmmUpwardFn fmm_m2m;  // and of a node's children
  FmmDownwardFn fmm_l2l;  // a node's local expansion shifted to its children
  FmmL2PFn fmm_l2p;  // cpu-fmm's far field at a leaf's bodies, in double lanes (fmm_l2p_kernel.hpp)
  NarrowToHalfFn narrow_to_half;  // float16 recordings (half_kernel.hpp)
  SplatProjectFn splat_project;  // the viewer's host splat (splat_kernel.hpp)
  SplatBandFn splat_band;
};

extern const SimdKernels kScalarKernels;
#ifdef ORRERY_X86_KERNELS
extern const SimdKernels kAvx2Kernels;
extern const SimdKernels kAvx512Kernels;
#endif
#ifdef ORRERY_ARM64_KERNELS
extern const SimdKernels kNeonKernels;
extern const SimdKernels kSve128Kernels;  // one SVE table per vector length (simd_sve.hpp)
extern const SimdKernels kSve256Kernels;
extern const SimdKernels kSve512Kernels;
#endif

}  // namespace orrery
