/* counter_random.cl: the random numbers of the initial conditions drawn on the device
 * (plummer.cl, galaxy.cl; engine/initial_conditions/on_device.py), listed before them.
 *
 * A counter-based generator, not a sequential stream: the body of index i has the key
 * mix64(mix64(seed) ^ i), and its k-th uniform is splitmix64's finaliser of
 * (key + (k + 1) * golden). A draw depends on the seed, the body and k only, so each body is
 * drawn on its own, whatever the launch, and a seed gives the same bodies on every device up to
 * the math library's rounding of the functions applied to the draws (sqrt, log, pow, sin, cos).
 * Gaussian draws come in pairs by Box-Muller from two uniforms.
 *
 * Host defines: ACCUM_BITS (64 where the device has doubles: the draws' precision, the type
 * `accum` the files after this one use), TWO_PI. */

#if ACCUM_BITS == 64
typedef double accum;
#else
typedef float accum;
#endif

#define GOLDEN ((ulong)0x9e3779b97f4a7c15UL)

DEVICE ulong mix64(ulong z) {
  z = (z ^ (z >> 30)) * (ulong)0xbf58476d1ce4e5b9UL;
  z = (z ^ (z >> 27)) * (ulong)0x94d049bb133111ebUL;
  return z ^ (z >> 31);
}

/* The key of the stream of body `index`. */
DEVICE ulong body_key(const ulong seed, const ulong index) { return mix64(mix64(seed) ^ index); }

/* Draw k of the body whose key is `key`, uniform in [0, 1): the top 53 bits (24 in float). */
DEVICE accum uniform_draw(const ulong key, const ulong k) {
  const ulong z = mix64(key + (k + 1) * GOLDEN);
#if ACCUM_BITS == 64
  return (accum)(z >> 11) * (accum)(1.0 / 9007199254740992.0);
#else
  return (accum)(uint)(z >> 40) * (accum)(1.0f / 16777216.0f);
#endif
}

/* Draw k uniform in the open interval (0, 1), for a logarithm: an odd multiple of 2^-53
 * (2^-24 in float), the largest, 1 - 2^-53 (1 - 2^-24), still below 1 in the type. */
DEVICE accum open_uniform_draw(const ulong key, const ulong k) {
  const ulong z = mix64(key + (k + 1) * GOLDEN);
#if ACCUM_BITS == 64
  return (accum)((z >> 11) | 1) * (accum)(1.0 / 9007199254740992.0);
#else
  return (accum)((uint)(z >> 40) | 1u) * (accum)(1.0f / 16777216.0f);
#endif
}

/* Two independent standard normal draws from draws k, k + 1 (Box-Muller). */
DEVICE void normal_pair(const ulong key, const ulong k, accum* first, accum* second) {
  const accum radius = sqrt(-2 * log(open_uniform_draw(key, k)));
  const accum angle = (accum)TWO_PI * uniform_draw(key, k + 1);
  *first = radius * cos(angle);
  *second = radius * sin(angle);
}

/* A vector of length `length` in the direction of draws k, k + 1 (cos theta, phi uniform). */
DEVICE void isotropic(const ulong key, const ulong k, const accum length, accum* x, accum* y, accum* z) {
  const accum cos_theta = 2 * uniform_draw(key, k) - 1;
  const accum phi = (accum)TWO_PI * uniform_draw(key, k + 1);
  const accum sin_theta = sqrt(1 - cos_theta * cos_theta);
  *x = length * sin_theta * cos(phi);
  *y = length * sin_theta * sin(phi);
  *z = length * cos_theta;
}
