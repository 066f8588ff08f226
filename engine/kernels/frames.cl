/* frames.cl: what a recorded frame is made of, narrowed on the device so only the recorded
 * bytes cross the bus.
 *
 * Algorithm. `frame_half` converts each position (x, y, z of a real4 body row) first to float
 * (round to nearest, as the host's astype(float32)) and then to IEEE binary16 with round to
 * nearest, ties to even, done in integer arithmetic on the float's bits: the same function as
 * the host's native narrowing (native/half_kernel.hpp, `float_to_half`; numpy's astype(float16)
 * for every non-NaN input), so a recording made on the device holds the bits one made on the
 * host would. `frame_fixed16` stores each coordinate as a 16-bit unsigned integer on the
 * frame's bounding box: q = rint((x - lo) * scale) clamped to 0..65535, with lo and scale
 * computed by `bounds_partials` (per-group min/max) and `bounds_finish` (one group: the box,
 * scale = 65535 / (hi - lo), step = (hi - lo) / 65535, both float). The reader gives back
 * lo + q * step; the error per axis is at most 0.5 step plus float rounding (the bound
 * engine/frame_encoding.py states, from the box stored with each frame). `state_xyz` copies the (x, y, z) of
 * real4 rows in the run's own precision (a keyframe, exact). `frame_widen_half` goes the other
 * way for a reader that draws on the device (a movie of a float16 recording): binary16 bits to
 * float, exact (every half is a float), so half the bytes cross the bus.
 *
 * Host defines: REAL_BITS (the state's precision), BOUNDS_GROUP (work-group size of the
 * bounds kernels, a power of two). The box sits in `box` as 9 floats: lo xyz, step xyz,
 * scale xyz; `frame_fixed16` appends it to the frame's 3 count values as 18 words (the float
 * bits, low word first), so one download carries the frame and its box. Launched with at
 * least 9 work-items.
 *
 * Determinism: every output element depends on its own input element only (and, for fixed16,
 * on the box); min and max are exact and order-independent, so the box's lo, and every frame
 * given a box, is the same bits for any launch configuration and on every device. step and scale
 * are float divisions: correctly rounded on CUDA, within OpenCL's 2.5 ulp elsewhere, so they may
 * differ in the last bit between devices; the reader decodes with the box stored with the
 * frame, so the bound holds either way. No operation here can be contracted into an FMA (no
 * product is followed by an add), and rint rounds to nearest even on both APIs. */

/* Where a min (max) starts: the largest float (its negation); positions are finite. */
#define BOUNDS_START 3.40282347e38f

DEVICE ushort orrery_float_to_half(const float value) {
  const uint bits = FLOAT_AS_UINT(value);
  const uint sign = (bits >> 16) & 0x8000u;
  const uint magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u)  /* infinity, or NaN (quieted, top payload bits kept) */
    return (ushort)(sign | 0x7c00u |
                    (magnitude > 0x7f800000u ? 0x200u | ((magnitude >> 13) & 0x3ffu) : 0u));
  if (magnitude >= 0x477ff000u)  /* 65520 and up round past the largest half, 65504 */
    return (ushort)(sign | 0x7c00u);
  uint bits16, rest, halfway;
  if (magnitude >= 0x38800000u) {  /* a normal half: rebias the exponent, drop 13 bits */
    bits16 = (magnitude >> 13) - (112u << 10);
    rest = magnitude & 0x1fffu;
    halfway = 0x1000u;
  } else {  /* below 2^-14: a subnormal half (units of 2^-24) or zero */
    if (magnitude < 0x33000000u) return (ushort)sign;  /* below 2^-25 */
    const uint exponent = magnitude >> 23;  /* 102 .. 112 */
    const uint mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint shift = 126u - exponent;  /* 14 .. 24 */
    bits16 = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
  }
  /* A carry out of the mantissa moves to the next exponent, which is the right encoding. */
  if (rest > halfway || (rest == halfway && (bits16 & 1u))) bits16 += 1u;
  return (ushort)(sign | bits16);
}

KERNEL void frame_half(GLOBAL const real4* RESTRICT body, const int count,
                       GLOBAL ushort* RESTRICT out) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 p = body[i];
  const ulong at = 3 * (ulong)i;
  out[at] = orrery_float_to_half((float)p.x);
  out[at + 1] = orrery_float_to_half((float)p.y);
  out[at + 2] = orrery_float_to_half((float)p.z);
}

KERNEL void state_xyz(GLOBAL const real4* RESTRICT rows, const int count,
                      GLOBAL real* RESTRICT out) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 r = rows[i];
  const ulong at = 3 * (ulong)i;
  out[at] = r.x;
  out[at + 1] = r.y;
  out[at + 2] = r.z;
}

/* The work-group's minima and maxima per axis into low[axis][0] and high[axis][0], from each
 * lane's values in low[axis][lane] and high[axis][lane] (a tree over BOUNDS_GROUP lanes; every
 * lane calls it). */
DEVICE void bounds_reduce(LOCAL_ARG float (*low)[BOUNDS_GROUP], LOCAL_ARG float (*high)[BOUNDS_GROUP],
                          const int lane) {
  SYNC_THREADS;
  for (int stride = BOUNDS_GROUP / 2; stride > 0; stride >>= 1) {
    if (lane < stride) {
      for (int axis = 0; axis < 3; ++axis) {
        low[axis][lane] = MIN(low[axis][lane], low[axis][lane + stride]);
        high[axis][lane] = MAX(high[axis][lane], high[axis][lane + stride]);
      }
    }
    SYNC_THREADS;
  }
}

/* Per work-group min and max of x, y, z (as floats) over a grid-stride share of the bodies:
 * partials[6 g .. 6 g + 5] = min xyz, max xyz. */
KERNEL void bounds_partials(GLOBAL const real4* RESTRICT body, const int count,
                            GLOBAL float* RESTRICT partials) {
  LOCAL float low[3][BOUNDS_GROUP];
  LOCAL float high[3][BOUNDS_GROUP];
  const int lane = LOCAL_ID;
  float lx = BOUNDS_START, ly = BOUNDS_START, lz = BOUNDS_START;
  float hx = -BOUNDS_START, hy = -BOUNDS_START, hz = -BOUNDS_START;
  for (ulong i = (ulong)GLOBAL_ID; i < (ulong)count; i += (ulong)GLOBAL_SIZE) {
    const real4 p = body[i];
    const float x = (float)p.x, y = (float)p.y, z = (float)p.z;
    lx = MIN(lx, x); ly = MIN(ly, y); lz = MIN(lz, z);
    hx = MAX(hx, x); hy = MAX(hy, y); hz = MAX(hz, z);
  }
  low[0][lane] = lx; low[1][lane] = ly; low[2][lane] = lz;
  high[0][lane] = hx; high[1][lane] = hy; high[2][lane] = hz;
  bounds_reduce(low, high, lane);
  if (lane < 3) {
    partials[6 * GROUP_ID + lane] = low[lane][0];
    partials[6 * GROUP_ID + 3 + lane] = high[lane][0];
  }
}

/* One work-group: the box of `groups` partials, as lo, step and scale per axis. A flat axis
 * (every body at one coordinate) gets step 0 and scale 0: every q is 0 and decodes exactly. */
KERNEL void bounds_finish(GLOBAL const float* RESTRICT partials, const int groups,
                          GLOBAL float* RESTRICT box) {
  LOCAL float low[3][BOUNDS_GROUP];
  LOCAL float high[3][BOUNDS_GROUP];
  const int lane = LOCAL_ID;
  float l[3] = {BOUNDS_START, BOUNDS_START, BOUNDS_START};
  float h[3] = {-BOUNDS_START, -BOUNDS_START, -BOUNDS_START};
  for (int g = lane; g < groups; g += BOUNDS_GROUP) {
    for (int axis = 0; axis < 3; ++axis) {
      l[axis] = MIN(l[axis], partials[6 * g + axis]);
      h[axis] = MAX(h[axis], partials[6 * g + 3 + axis]);
    }
  }
  for (int axis = 0; axis < 3; ++axis) {
    low[axis][lane] = l[axis];
    high[axis][lane] = h[axis];
  }
  bounds_reduce(low, high, lane);
  if (lane < 3) {
    const float lo = low[lane][0];
    const float extent = high[lane][0] - lo;
    box[lane] = lo;
    box[3 + lane] = extent > 0.0f ? extent / 65535.0f : 0.0f;
    box[6 + lane] = extent > 0.0f ? 65535.0f / extent : 0.0f;
  }
}

KERNEL void frame_fixed16(GLOBAL const real4* RESTRICT body, const int count,
                          GLOBAL const float* RESTRICT box, GLOBAL ushort* RESTRICT out) {
  const int i = GLOBAL_ID;
  if (i < 9) {  /* the box after the 3 count values, each float as two words, low word first */
    const uint bits = FLOAT_AS_UINT(box[i]);
    out[3 * (ulong)count + 2 * i] = (ushort)(bits & 0xffffu);
    out[3 * (ulong)count + 2 * i + 1] = (ushort)(bits >> 16);
  }
  if (i >= count) return;
  const real4 p = body[i];
  const float xyz[3] = {(float)p.x, (float)p.y, (float)p.z};
  for (int axis = 0; axis < 3; ++axis) {
    const float scaled = rint((xyz[axis] - box[axis]) * box[6 + axis]);
    out[3 * (ulong)i + axis] = (ushort)MIN(MAX(scaled, 0.0f), 65535.0f);
  }
}

/* binary16 bits to float, exactly: a normal half moves its exponent bias from 15 to 127, a
 * subnormal one is its mantissa times 2^-24 (exact in float), infinities and NaNs keep their
 * payload bits. */
DEVICE float orrery_half_to_float(const ushort half_bits) {
  const uint bits = (uint)half_bits;
  const uint sign = (bits & 0x8000u) << 16;
  const uint exponent = (bits >> 10) & 0x1fu;
  const uint mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) return UINT_AS_FLOAT(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0u) return UINT_AS_FLOAT(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  return UINT_AS_FLOAT(sign | FLOAT_AS_UINT((float)mantissa * 5.9604644775390625e-8f));
}

/* One work-item per body: the 3 binary16 numbers of `count` (x, y, z) rows widened into float. */
KERNEL void frame_widen_half(GLOBAL const ushort* RESTRICT half_values, const int count,
                             GLOBAL float* RESTRICT wide) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const ulong at = 3 * (ulong)i;
  for (int axis = 0; axis < 3; ++axis) wide[at + axis] = orrery_half_to_float(half_values[at + axis]);
}
