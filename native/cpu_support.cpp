#include "cpu_support.hpp"

#ifdef ORRERY_X86_KERNELS
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

#if defined(ORRERY_ARM64_KERNELS) && defined(__linux__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

namespace orrery {

#ifdef ORRERY_X86_KERNELS
namespace {

struct CpuidRegisters {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Leaf `leaf`, sub-leaf `subleaf`; all zero where the CPU has no such leaf.
CpuidRegisters cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegisters r;
#if defined(_MSC_VER)
  int highest[4], out[4];
  __cpuid(highest, 0);
  if (leaf > static_cast<unsigned>(highest[0])) return r;
  __cpuidex(out, static_cast<int>(leaf), static_cast<int>(subleaf));
  r.eax = static_cast<unsigned>(out[0]);
  r.ebx = static_cast<unsigned>(out[1]);
  r.ecx = static_cast<unsigned>(out[2]);
  r.edx = static_cast<unsigned>(out[3]);
#else
  // Clang declares it returning int, GCC unsigned.
  if (leaf > static_cast<unsigned>(__get_cpuid_max(0, nullptr))) return r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
#endif
  return r;
}

// Which register states the OS saves on a context switch (XCR0); only asked once CPUID says the
// OS enabled XSAVE (OSXSAVE), as XGETBV faults otherwise.
unsigned long long os_saved_registers() {
#if defined(_MSC_VER)
  return _xgetbv(0);
#else
  // Written out: GCC's _xgetbv needs -mxsave, which this baseline file must not be compiled with.
  unsigned eax = 0, edx = 0;
  __asm__("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
#endif
}

bool has(unsigned bits, unsigned bit) { return (bits >> bit) & 1u; }

// CPUID bit numbers (Intel SDM vol. 2A, CPUID) and XCR0 state components (vol. 1, 13.1).
constexpr unsigned kLeaf1EcxFma = 12, kLeaf1EcxOsxsave = 27, kLeaf1EcxAvx = 28, kLeaf1EcxF16c = 29;
constexpr unsigned kLeaf7EbxAvx2 = 5, kLeaf7EbxAvx512f = 16, kLeaf7EbxAvx512dq = 17;
constexpr unsigned long long kXcr0Ymm = 0x6;     // SSE and AVX state
constexpr unsigned long long kXcr0Zmm = 0xe6;    // and the opmask, ZMM0-15 upper halves, ZMM16-31

bool os_saves(unsigned long long states) {
  if (!has(cpuid(1, 0).ecx, kLeaf1EcxOsxsave)) return false;
  return (os_saved_registers() & states) == states;
}

}  // namespace

bool cpu_runs_avx2() {
  const CpuidRegisters leaf1 = cpuid(1, 0), leaf7 = cpuid(7, 0);
  return has(leaf1.ecx, kLeaf1EcxAvx) && has(leaf1.ecx, kLeaf1EcxFma) && has(leaf1.ecx, kLeaf1EcxF16c) &&
         has(leaf7.ebx, kLeaf7EbxAvx2) && os_saves(kXcr0Ymm);
}

bool cpu_runs_avx512() {
  const CpuidRegisters leaf7 = cpuid(7, 0);
  return has(leaf7.ebx, kLeaf7EbxAvx512f) && has(leaf7.ebx, kLeaf7EbxAvx512dq) && os_saves(kXcr0Zmm);
}
#endif

#ifdef ORRERY_ARM64_KERNELS
unsigned cpu_sve_vector_bits() {
#if defined(__linux__)
  if (!(getauxval(AT_HWCAP) & HWCAP_SVE)) return 0;
  const int length = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
  return length < 0 ? 0 : 8 * static_cast<unsigned>(length & PR_SVE_VL_LEN_MASK);
#else
  return 0;
#endif
}
#endif

}  // namespace orrery
