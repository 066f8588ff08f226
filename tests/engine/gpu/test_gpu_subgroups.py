"""The portability header's sub-group (warp) vocabulary on known data, on every backend: lane
and sub-group ids, any/all, ballot and popcount, broadcast, shuffle, shuffle-xor, reduce-add."""

import numpy as np
import pytest

from .conftest import needs_float64

FIELDS = 10
INTEGER_KERNEL = """
KERNEL void integer_ops(GLOBAL const int* RESTRICT input, GLOBAL int* RESTRICT out) {
  const int v = input[GLOBAL_ID];
  const int lane = SUBGROUP_LANE;
  const uint ballot = SUBGROUP_BALLOT(v % 3 == 0);
  GLOBAL int* o = out + GLOBAL_ID * FIELDS;
  o[0] = lane;
  o[1] = SUBGROUP_ID;
  o[2] = SUBGROUP_ANY(v == 7) != 0;
  o[3] = SUBGROUP_ALL(v >= 0) != 0;
  o[4] = (int)ballot;
  o[5] = POPCOUNT(ballot);
  o[6] = SUBGROUP_BROADCAST(v, 5);
  o[7] = SUBGROUP_SHUFFLE(v, (lane + 3) % SUBGROUP_SIZE);
  o[8] = SUBGROUP_SHUFFLE_XOR(v, 1);
  o[9] = SUBGROUP_REDUCE_ADD(v);
}
"""
REAL_KERNEL = """
KERNEL void real_ops(GLOBAL const real* RESTRICT input, GLOBAL real* RESTRICT out) {
  const real v = input[GLOBAL_ID];
  GLOBAL real* o = out + GLOBAL_ID * 3;
  o[0] = SUBGROUP_REDUCE_ADD(v);
  o[1] = SUBGROUP_BROADCAST(v, SUBGROUP_SIZE - 1);
  o[2] = SUBGROUP_SHUFFLE(v, SUBGROUP_SIZE - 1 - SUBGROUP_LANE);
}
"""


def _subgroup_values(size: int) -> np.ndarray:
    """Four sub-groups: has a 7 and no negatives; neither; a 7 and negatives; only negatives."""
    lanes = np.arange(size)
    return np.concatenate([lanes, lanes + 8, lanes - 3, -lanes - 1]).astype(np.int32)


def test_integer_subgroup_operations(context):
    size = context.info.subgroup_size
    values = _subgroup_values(size)
    program = context.build(text=INTEGER_KERNEL, defines={"FIELDS": FIELDS})
    out = context.zeros((values.size, FIELDS), np.int32)
    program.kernel("integer_ops").launch(values.size, 2 * size, context.upload(values), out)
    got = out.download()
    groups = values.reshape(-1, size)
    lanes = np.arange(size)
    multiples = groups % 3 == 0
    ballot = (multiples * (1 << lanes).astype(np.uint64)).sum(axis=1).astype(np.uint32)
    expected = np.stack([
        np.tile(lanes, 4),
        np.repeat([0, 1, 0, 1], size),
        np.repeat((groups == 7).any(axis=1), size),
        np.repeat((groups >= 0).all(axis=1), size),
        np.repeat(ballot.view(np.int32), size),
        np.repeat(multiples.sum(axis=1), size),
        np.repeat(groups[:, 5], size),
        groups[:, (lanes + 3) % size].reshape(-1),
        groups[:, lanes ^ 1].reshape(-1),
        np.repeat(groups.sum(axis=1), size),
    ], axis=1).astype(np.int32)
    names = ["lane", "sub-group id", "any", "all", "ballot", "popcount", "broadcast", "shuffle",
             "shuffle-xor", "reduce-add"]
    for column, name in enumerate(names):
        assert np.array_equal(got[:, column], expected[:, column]), name


@pytest.mark.parametrize("bits", [32, 64])
def test_real_subgroup_operations(device, context, bits):
    if bits == 64:
        needs_float64(device, context.info)
    real = np.float32 if bits == 32 else np.float64
    size = context.info.subgroup_size
    values = (_subgroup_values(size) * 0.25).astype(real)  # sums of quarters are exact
    program = context.build(text=REAL_KERNEL, defines={"REAL_BITS": bits})
    out = context.zeros((values.size, 3), real)
    program.kernel("real_ops").launch(values.size, size, context.upload(values), out)
    got = out.download()
    groups = values.reshape(-1, size)
    assert np.array_equal(got[:, 0], np.repeat(groups.sum(axis=1), size))
    assert np.array_equal(got[:, 1], np.repeat(groups[:, -1], size))
    assert np.array_equal(got[:, 2], groups[:, ::-1].reshape(-1))
