/* image.cl: a finished float image copied into a GL pixel buffer mapped for CUDA (what
 * app/render/_device_image.py lands in the accumulation texture). A plain copy, one work-item a
 * value, run only once the kernels that made the image have finished, so that the mapping and
 * the GL copy behind it never wait on the device for a simulation step. No host defines. */

KERNEL void image_copy(GLOBAL const float* RESTRICT image, const int values,
                       GLOBAL float* RESTRICT pixels) {
  const int i = GLOBAL_ID;
  if (i >= values) return;
  pixels[i] = image[i];
}
