// What this CPU and its operating system let the process run, asked of the hardware directly
// (simd.cpp chooses the kernel tables from it): on x86-64 CPUID and XGETBV, written for GCC and
// Clang (<cpuid.h>) and MSVC (<intrin.h>), so that no compiler's __builtin_cpu_supports is needed;
// on AArch64 Linux the auxiliary vector and the SVE vector length the kernel gives the process.
#pragma once

namespace orrery {

#ifdef ORRERY_X86_KERNELS
// AVX2, FMA and F16C, with the YMM registers saved by the OS: what simd_avx2.cpp is compiled for.
bool cpu_runs_avx2();
// AVX-512 F and DQ, with the ZMM and mask registers saved by the OS: simd_avx512.cpp's.
bool cpu_runs_avx512();
#endif

#ifdef ORRERY_ARM64_KERNELS
// The SVE vector length of this process in bits, 0 without SVE (or outside Linux, where it is not
// asked). Linux may give a process less than the CPU's largest length (prctl PR_SVE_SET_VL);
// this is what the process runs with.
unsigned cpu_sve_vector_bits();
#endif

}  // namespace orrery
