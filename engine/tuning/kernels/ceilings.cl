/* ceilings.cl: probe kernels that measure what a device can do at best, so kernel figures can
 * be reported as fractions of limits measured on the same device.
 *
 * Each arithmetic probe runs CHAINS independent dependency chains per work-item (enough
 * independent work to hide latency) for ITERATIONS steps and writes the chains' sum, so the
 * compiler cannot drop the work. Host defines: ITERATIONS, REAL_BITS.
 *   fma_probe           2 flop per chain step (one fused multiply-add)
 *   rsqrt_probe         one RSQRT per chain step (the direct kernel's inverse square root)
 *   sqrt_divide_probe   one SQRT and one divide per chain step (1 / sqrt(x) done exactly)
 *   read_probe          streams `count` real4 values once (read bandwidth)
 *   fill                writes a pattern, so the bandwidth probe needs no host transfer */

#define CHAINS 8
#define CHAIN_DECLARE(start) \
  real x0 = (start), x1 = x0 + (real)0.125, x2 = x0 + (real)0.25, x3 = x0 + (real)0.375, \
       x4 = x0 + (real)0.5, x5 = x0 + (real)0.625, x6 = x0 + (real)0.75, x7 = x0 + (real)0.875
#define CHAIN_STEP(op) \
  x0 = op(x0); x1 = op(x1); x2 = op(x2); x3 = op(x3); x4 = op(x4); x5 = op(x5); x6 = op(x6); \
  x7 = op(x7)
#define CHAIN_SUM (x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7)

KERNEL void fma_probe(GLOBAL real* RESTRICT out, const real scale, const real offset) {
  CHAIN_DECLARE((real)1 + (real)GLOBAL_ID * (real)1e-9);
#define AFFINE(x) FMA((x), scale, offset)
#pragma unroll 4
  for (int i = 0; i < ITERATIONS; ++i) {
    CHAIN_STEP(AFFINE);
  }
  out[GLOBAL_ID] = CHAIN_SUM;
}

KERNEL void rsqrt_probe(GLOBAL real* RESTRICT out, const real start) {
  CHAIN_DECLARE(start + (real)GLOBAL_ID * (real)1e-9);
#pragma unroll 4
  for (int i = 0; i < ITERATIONS; ++i) {
    CHAIN_STEP(RSQRT);
  }
  out[GLOBAL_ID] = CHAIN_SUM;
}

KERNEL void sqrt_divide_probe(GLOBAL real* RESTRICT out, const real start) {
  CHAIN_DECLARE(start + (real)GLOBAL_ID * (real)1e-9);
#define INVERSE_SQRT(x) ((real)1 / SQRT(x))
#pragma unroll 4
  for (int i = 0; i < ITERATIONS; ++i) {
    CHAIN_STEP(INVERSE_SQRT);
  }
  out[GLOBAL_ID] = CHAIN_SUM;
}

KERNEL void read_probe(GLOBAL const real4* RESTRICT data, GLOBAL real* RESTRICT out,
                       const int count) {
  real sum = 0;
  for (int i = GLOBAL_ID; i < count; i += GLOBAL_SIZE) {
    const real4 v = data[i];
    sum += (v.x + v.y) + (v.z + v.w);
  }
  out[GLOBAL_ID] = sum;
}

KERNEL void fill(GLOBAL real4* RESTRICT data, const int count) {
  for (int i = GLOBAL_ID; i < count; i += GLOBAL_SIZE) {
    const real value = (real)(i & 1023);
    data[i] = MAKE_REAL4(value, value, value, value);
  }
}
