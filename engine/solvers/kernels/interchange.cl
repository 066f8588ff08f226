/* interchange.cl: particle arrays in any layout into the solvers' padded real4 rows, checked on
 * the device, and the rows back out as plain arrays.
 *
 * The arrays come from another framework (DLPack, the CUDA or SYCL array interfaces) or straight
 * from a host upload of the caller's arrays; either way no host code reads their values.
 * pack_rows reads `columns` (count x 3) and, when HAS_FOURTH, `fourth` (count) through element
 * strides from element `start` (the element of row 0, column 0: a view with negative strides
 * begins past its allocation's first element), converts to `real` and writes (x, y, z, fourth or
 * 0); rows count..padded-1 become zero-mass padding at the origin. unpack_rows writes the first
 * three components of each row to `columns` (count x 3, C order) and, when HAS_FOURTH, the fourth
 * to `fourth`. check_rows applies the column checks to rows already packed.
 *
 * Host defines: REAL_BITS (the solver's precision), COLUMN_BITS and FOURTH_BITS (the element types
 * of the arrays read, 32 or 64), HAS_FOURTH.
 *
 * The checks are those of particles.check_positions_and_masses: checks[CHECK_*] receives the first
 * row failing each test (0xffffffff: none) through an atomic minimum, so the row named does not
 * depend on the order the work-items run in; checks[CHECK_POSITIVE] is set to 1 by any positive
 * fourth value (every writer stores the same value). A value v is finite when v - v == 0, which
 * NaN and infinity fail (no fast-math on either compiler). */

#if (COLUMN_BITS == 64 || FOURTH_BITS == 64) && defined(__OPENCL_VERSION__)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if COLUMN_BITS == 64
typedef double column_t;
#else
typedef float column_t;
#endif
#if FOURTH_BITS == 64
typedef double fourth_t;
#else
typedef float fourth_t;
#endif

#define CHECK_COLUMN_NOT_FINITE 0
#define CHECK_COLUMN_TOO_LARGE 1
#define CHECK_FOURTH_NOT_FINITE 2
#define CHECK_FOURTH_NEGATIVE 3
#define CHECK_FOURTH_TOO_LARGE 4
#define CHECK_POSITIVE 5
#define CHECKS 8
#define NONE 0xffffffffu

/* Whether x, y and z are finite and within +-largest; else the row into its check. */
#define CHECK_COLUMNS(x, y, z, largest, i, checks)                                            \
  if (!((x) - (x) == 0 && (y) - (y) == 0 && (z) - (z) == 0)) {                                \
    ATOMIC_MIN(&(checks)[CHECK_COLUMN_NOT_FINITE], (uint)(i));                                \
  } else if ((x) > (largest) || (x) < -(largest) || (y) > (largest) || (y) < -(largest) ||    \
             (z) > (largest) || (z) < -(largest)) {                                           \
    ATOMIC_MIN(&(checks)[CHECK_COLUMN_TOO_LARGE], (uint)(i));                                 \
  }

KERNEL void clear_checks(GLOBAL uint* RESTRICT checks) {
  const int i = GLOBAL_ID;
  if (i < CHECKS) checks[i] = i == CHECK_POSITIVE ? 0u : NONE;
}

KERNEL void pack_rows(GLOBAL real4* RESTRICT rows, GLOBAL const column_t* RESTRICT columns,
                      const long column_start, const long row_stride, const long column_stride,
                      GLOBAL const fourth_t* RESTRICT fourth, const long fourth_start,
                      const long fourth_stride, const int count, const int padded,
                      const column_t largest_column, const fourth_t largest_fourth,
                      GLOBAL uint* RESTRICT checks) {
  const int i = GLOBAL_ID;
  if (i >= padded) return;
  if (i >= count) {
    rows[i] = MAKE_REAL4((real)0, (real)0, (real)0, (real)0);
    return;
  }
  const long row = column_start + (long)i * row_stride;
  const column_t x = columns[row], y = columns[row + column_stride],
                 z = columns[row + 2 * column_stride];
  CHECK_COLUMNS(x, y, z, largest_column, i, checks);
  real w = 0;
#ifdef HAS_FOURTH
  const fourth_t m = fourth[fourth_start + (long)i * fourth_stride];
  if (!(m - m == 0)) {
    ATOMIC_MIN(&checks[CHECK_FOURTH_NOT_FINITE], (uint)i);
  } else if (m < 0) {
    ATOMIC_MIN(&checks[CHECK_FOURTH_NEGATIVE], (uint)i);
  } else if (m > largest_fourth) {
    ATOMIC_MIN(&checks[CHECK_FOURTH_TOO_LARGE], (uint)i);
  } else if (m > 0) {
    checks[CHECK_POSITIVE] = 1u;
  }
  w = (real)m;
#endif
  rows[i] = MAKE_REAL4((real)x, (real)y, (real)z, w);
}

KERNEL void unpack_rows(GLOBAL const real4* RESTRICT rows, GLOBAL real* RESTRICT columns,
                        GLOBAL real* RESTRICT fourth, const int count) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 r = rows[i];
  columns[3 * (long)i] = r.x;
  columns[3 * (long)i + 1] = r.y;
  columns[3 * (long)i + 2] = r.z;
#ifdef HAS_FOURTH
  fourth[i] = r.w;
#endif
}

/* check_rows: the column checks of pack_rows on rows already on the device (the state a
 * Simulation keeps there between steps), so checking it moves no particle data. */
KERNEL void check_rows(GLOBAL const real4* RESTRICT rows, const int count, const real largest,
                       GLOBAL uint* RESTRICT checks) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 r = rows[i];
  CHECK_COLUMNS(r.x, r.y, r.z, largest, i, checks);
}
