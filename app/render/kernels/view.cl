/* view.cl: the camera projection the render kernels share (splat.cl, density.cl), so the splats
 * put a particle where the GL path's vertex shaders do. A kernel argument cannot be a matrix, so
 * the view-projection matrix M comes as sixteen scalars m0..m15, row by row
 * (VIEW_MATRIX_ARGUMENTS declares them); CLIP_COORDINATES(x, y, z) then declares
 * (cx, cy, cz, cw) = M (x, y, z, 1), every product and sum in this order in both kernels. */

#define VIEW_MATRIX_ARGUMENTS                                                     \
  const float m0, const float m1, const float m2, const float m3,                 \
  const float m4, const float m5, const float m6, const float m7,                 \
  const float m8, const float m9, const float m10, const float m11,               \
  const float m12, const float m13, const float m14, const float m15

#define CLIP_COORDINATES(x, y, z)                                                 \
  const float cw = m12 * (x) + m13 * (y) + m14 * (z) + m15;                       \
  const float cx = m0 * (x) + m1 * (y) + m2 * (z) + m3;                           \
  const float cy = m4 * (x) + m5 * (y) + m6 * (z) + m7;                           \
  const float cz = m8 * (x) + m9 * (y) + m10 * (z) + m11
