/* portable.h: the small vocabulary every Orrery kernel is written in, so one kernel text compiles
 * as OpenCL C (SYCL devices through dpctl) and as CUDA C++ (NVRTC through CuPy).
 *
 * The host prepends this header to the kernel text after its own defines:
 *   REAL_BITS        32 or 64: the working precision of `real`, `real4`
 *   SUBGROUP_SIZE    lanes per sub-group (CUDA: 32, the warp); a compile-time constant so kernels
 *                    may size per-sub-group arrays with it
 *   REQD_SUBGROUP    (OpenCL only) defined when KERNEL must pin the sub-group size
 *   MAX_THREADS_PER_UNIT (CUDA only) most threads resident on one multiprocessor; use it only
 *                    inside LAUNCH_BOUNDS, which OpenCL drops
 * MUL_RN(a, b): a product never fused with a following add (bitwise host agreement).
 * Integer vocabulary: `uint`, `ulong` (64-bit, as in OpenCL), CLZ64 (leading zeros of a ulong),
 * ALIGNED(bytes) for struct alignment, ATOMIC_ADD_ULONG (a 64-bit atomic add into global memory),
 * FLOAT_AS_UINT / UINT_AS_FLOAT (a float's bits and back), ATOMIC_MAX (like ATOMIC_MIN), ATOMIC_OR,
 * `ushort` (16 bits).
 * Kernels use only these names, never `__global`, `threadIdx`, `get_local_id` and the like.
 *
 * Rules the macros rely on: work-groups are 1-D and a multiple of SUBGROUP_SIZE; sub-group
 * (warp) operations are called by every lane of the sub-group (uniform control flow), which is
 * what OpenCL requires and what the full-mask CUDA `*_sync` intrinsics assume.
 * Kernels take `real4` arrays rather than `real3`: 16/32-byte aligned loads on both APIs.
 * References: OpenMM platforms/common (the same approach), the OpenCL C 3.0 and
 * cl_intel_subgroups specifications, the CUDA C++ programming guide (warp intrinsics). */
#ifndef ORRERY_PORTABLE_H
#define ORRERY_PORTABLE_H

#if defined(__CUDACC__)
/* ---------------------------------------------------------------- CUDA (NVRTC) */
typedef unsigned int uint;
#define KERNEL extern "C" __global__
#define DEVICE __device__ __forceinline__
#define GLOBAL
#define LOCAL __shared__
#define LOCAL_ARG /* a pointer parameter into shared memory needs no qualifier in CUDA */
#define CONSTANT const
#define RESTRICT __restrict__
/* Placed between KERNEL and the return type. The work-group size is exact; asking for
 * `min_groups` resident groups per multiprocessor caps registers per thread accordingly. */
#define LAUNCH_BOUNDS(group_size, min_groups) __launch_bounds__(group_size, min_groups)

#define LOCAL_ID ((int)threadIdx.x)
#define LOCAL_SIZE ((int)blockDim.x)
#define GROUP_ID ((int)blockIdx.x)
#define NUM_GROUPS ((int)gridDim.x)
#define GLOBAL_ID ((int)(blockIdx.x * blockDim.x + threadIdx.x))
#define GLOBAL_SIZE ((int)(gridDim.x * blockDim.x))
#define SYNC_THREADS __syncthreads()
#define MEM_FENCE __threadfence_block()
#define ATOMIC_ADD(pointer, value) atomicAdd((pointer), (value))
#define ATOMIC_MIN(pointer, value) atomicMin((pointer), (value))
#define ATOMIC_MAX(pointer, value) atomicMax((pointer), (value))
#define ATOMIC_OR(pointer, value) atomicOr((pointer), (value))
#define FLOAT_AS_UINT(value) __float_as_uint(value)
#define UINT_AS_FLOAT(value) __uint_as_float(value)
#define ATOMIC_ADD_ULONG(pointer, value) \
  atomicAdd((unsigned long long*)(pointer), (unsigned long long)(value))

#define SUBGROUP_LANE ((int)(threadIdx.x & (SUBGROUP_SIZE - 1)))
#define SUBGROUP_ID ((int)(threadIdx.x / SUBGROUP_SIZE))
#define SUBGROUP_COUNT ((int)(blockDim.x / SUBGROUP_SIZE))
#define SYNC_SUBGROUP __syncwarp()
#define SUBGROUP_ANY(predicate) __any_sync(0xffffffffu, (predicate))
#define SUBGROUP_ALL(predicate) __all_sync(0xffffffffu, (predicate))
#define SUBGROUP_BALLOT(predicate) __ballot_sync(0xffffffffu, (predicate))
#define SUBGROUP_BROADCAST(value, lane) __shfl_sync(0xffffffffu, (value), (lane))
#define SUBGROUP_SHUFFLE(value, lane) __shfl_sync(0xffffffffu, (value), (lane))
#define SUBGROUP_SHUFFLE_XOR(value, mask) __shfl_xor_sync(0xffffffffu, (value), (mask))
template <typename T>
__device__ __forceinline__ T orrery_subgroup_reduce_add(T value) {
  for (int offset = SUBGROUP_SIZE / 2; offset > 0; offset >>= 1)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}
#define SUBGROUP_REDUCE_ADD(value) orrery_subgroup_reduce_add(value)
#define POPCOUNT(bits) __popc(bits)
typedef unsigned short ushort;
typedef unsigned long long ulong;
#define CLZ64(bits) __clzll((long long)(bits))
#define ALIGNED(bytes) __align__(bytes)

/* rsqrtf compiles to a scaling sequence around the hardware instruction so that subnormal
 * inputs work; that sequence costs a quarter of a gravity interaction's instructions. The ftz
 * form is the bare instruction; an r2 below 1.2e-38 does not occur between distinct bodies. */
__device__ __forceinline__ float orrery_rsqrt(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ double orrery_rsqrt(double x) { return rsqrt(x); }
#define SQRT(x) sqrt(x)
#define RSQRT(x) orrery_rsqrt(x)
/* MUL_RN: a product NVRTC may not fuse into a following add (it contracts a*b + c by default),
 * for kernels whose results must match the host's separately rounded arithmetic bit for bit. */
__device__ __forceinline__ float orrery_mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double orrery_mul_rn(double a, double b) { return __dmul_rn(a, b); }
#define MUL_RN(a, b) orrery_mul_rn((a), (b))
#define FMA(a, b, c) fma((a), (b), (c))
#define MIN(a, b) min((a), (b))
#define MAX(a, b) max((a), (b))

#if REAL_BITS == 64
typedef double real;
/* CUDA 13 deprecates double4; an own 32-byte aligned struct keeps one vector load per body. */
struct __align__(32) orrery_real4 { double x, y, z, w; };
typedef struct orrery_real4 real4;
__device__ __forceinline__ real4 make_real4(real x, real y, real z, real w) {
  real4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v;
}
#else
typedef float real;
typedef float4 real4;
#define make_real4(x, y, z, w) make_float4((x), (y), (z), (w))
#endif
#define MAKE_REAL4(x, y, z, w) make_real4((x), (y), (z), (w))

#elif defined(__OPENCL_VERSION__)
/* ---------------------------------------------------------------- OpenCL C (dpctl) */
#if REAL_BITS == 64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef REQD_SUBGROUP
#define KERNEL __kernel __attribute__((intel_reqd_sub_group_size(SUBGROUP_SIZE)))
#else
#define KERNEL __kernel
#endif
#define DEVICE static inline
#define GLOBAL __global
#define LOCAL __local
#define LOCAL_ARG __local
#define CONSTANT __constant
#define RESTRICT restrict
#define LAUNCH_BOUNDS(group_size, min_groups) __attribute__((reqd_work_group_size(group_size, 1, 1)))

#define LOCAL_ID ((int)get_local_id(0))
#define LOCAL_SIZE ((int)get_local_size(0))
#define GROUP_ID ((int)get_group_id(0))
#define NUM_GROUPS ((int)get_num_groups(0))
#define GLOBAL_ID ((int)get_global_id(0))
#define GLOBAL_SIZE ((int)get_global_size(0))
#define SYNC_THREADS barrier(CLK_LOCAL_MEM_FENCE)
#define MEM_FENCE mem_fence(CLK_LOCAL_MEM_FENCE)
#define ATOMIC_ADD(pointer, value) atomic_add((pointer), (value))
#define ATOMIC_MIN(pointer, value) atomic_min((pointer), (value))
#define ATOMIC_MAX(pointer, value) atomic_max((pointer), (value))
#define ATOMIC_OR(pointer, value) atomic_or((pointer), (value))
#define FLOAT_AS_UINT(value) as_uint(value)
#define UINT_AS_FLOAT(value) as_float(value)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define ATOMIC_ADD_ULONG(pointer, value) atom_add((volatile GLOBAL ulong*)(pointer), (ulong)(value))

#define SUBGROUP_LANE ((int)get_sub_group_local_id())
#define SUBGROUP_ID ((int)get_sub_group_id())
#define SUBGROUP_COUNT ((int)get_num_sub_groups())
#define SYNC_SUBGROUP sub_group_barrier(CLK_LOCAL_MEM_FENCE)
#define SUBGROUP_ANY(predicate) sub_group_any((int)(predicate))
#define SUBGROUP_ALL(predicate) sub_group_all((int)(predicate))
/* Distinct bits sum to their OR; SUBGROUP_SIZE <= 32 keeps the mask in one uint, like a warp's. */
#define SUBGROUP_BALLOT(predicate) \
  sub_group_reduce_add((predicate) ? (1u << get_sub_group_local_id()) : 0u)
#define SUBGROUP_BROADCAST(value, lane) sub_group_broadcast((value), (uint)(lane))
#define SUBGROUP_SHUFFLE(value, lane) intel_sub_group_shuffle((value), (uint)(lane))
#define SUBGROUP_SHUFFLE_XOR(value, mask) intel_sub_group_shuffle_xor((value), (uint)(mask))
#define SUBGROUP_REDUCE_ADD(value) sub_group_reduce_add(value)
#define POPCOUNT(bits) popcount(bits)
#define CLZ64(bits) ((int)clz((ulong)(bits)))
#define ALIGNED(bytes) __attribute__((aligned(bytes)))

#define SQRT(x) sqrt(x)
#define RSQRT(x) rsqrt(x)
/* OpenCL C contracts only within one expression, and a call's result is not a product there. */
static inline __attribute__((overloadable)) float orrery_mul_rn(float a, float b) { return a * b; }
#if REAL_BITS == 64
static inline __attribute__((overloadable)) double orrery_mul_rn(double a, double b) { return a * b; }
#endif
#define MUL_RN(a, b) orrery_mul_rn((a), (b))
#define FMA(a, b, c) fma((a), (b), (c))
#define MIN(a, b) min((a), (b))
#define MAX(a, b) max((a), (b))

#if REAL_BITS == 64
typedef double real;
typedef double4 real4;
#define MAKE_REAL4(x, y, z, w) ((double4)((x), (y), (z), (w)))
#else
typedef float real;
typedef float4 real4;
#define MAKE_REAL4(x, y, z, w) ((float4)((x), (y), (z), (w)))
#endif

#else
#error "portable.h compiles as OpenCL C or CUDA C++ only"
#endif

#if SUBGROUP_SIZE > 32
#error "SUBGROUP_SIZE above 32 does not fit SUBGROUP_BALLOT's 32-bit mask"
#endif

#endif /* ORRERY_PORTABLE_H */
