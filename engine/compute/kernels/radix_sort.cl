/* radix_sort.cl: stable LSD radix sort of (SORT_KEY key, uint value) pairs, RADIX_BITS per pass.
 *
 * The pairs are cut into RADIX_BLOCKS contiguous blocks, one work-item each (serial loops: the
 * right shape for a CPU OpenCL device, which is what this sort is for; CUDA devices use CuPy's
 * sort). A pass is: radix_histogram (per block digit counts, stored digit-major:
 * counts[digit * RADIX_BLOCKS + block]), an exclusive scan of counts (scan.cl; digit-major order
 * makes block b's slots for a digit follow block b-1's, which keeps the sort stable), then
 * radix_scatter, each block moving its pairs to their slots in order. Equal keys keep their
 * starting order, so values that start as 0..n-1 end with ties ordered by value, as on the host.
 * The host runs one pass per RADIX_BITS of the keys' significant bits (the rest are zero).
 * Host defines: RADIX_BITS, RADIX_BLOCKS, SORT_KEY (uint or ulong). */

#define RADIX_BUCKETS (1 << RADIX_BITS)

KERNEL void radix_histogram(GLOBAL const SORT_KEY* RESTRICT keys, const int count, const int chunk,
                            const int shift, GLOBAL uint* RESTRICT counts) {
  const int block = GLOBAL_ID;
  if (block >= RADIX_BLOCKS) return;
  uint histogram[RADIX_BUCKETS];
  for (int d = 0; d < RADIX_BUCKETS; ++d) histogram[d] = 0;
  const int begin = MIN(count, block * chunk);
  const int end = MIN(count, begin + chunk);
  for (int i = begin; i < end; ++i) ++histogram[(keys[i] >> shift) & (RADIX_BUCKETS - 1)];
  for (int d = 0; d < RADIX_BUCKETS; ++d) counts[d * RADIX_BLOCKS + block] = histogram[d];
}

KERNEL void radix_scatter(GLOBAL const SORT_KEY* RESTRICT keys, GLOBAL const uint* RESTRICT values,
                          const int count, const int chunk, const int shift,
                          GLOBAL const uint* RESTRICT offsets, GLOBAL SORT_KEY* RESTRICT keys_out,
                          GLOBAL uint* RESTRICT values_out) {
  const int block = GLOBAL_ID;
  if (block >= RADIX_BLOCKS) return;
  uint slot[RADIX_BUCKETS];
  for (int d = 0; d < RADIX_BUCKETS; ++d) slot[d] = offsets[d * RADIX_BLOCKS + block];
  const int begin = MIN(count, block * chunk);
  const int end = MIN(count, begin + chunk);
  for (int i = begin; i < end; ++i) {
    const SORT_KEY key = keys[i];
    const uint s = slot[(key >> shift) & (RADIX_BUCKETS - 1)]++;
    keys_out[s] = key;
    values_out[s] = values[i];
  }
}
