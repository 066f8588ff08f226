"""``orrery bench movie`` called as a function: a recording filmed twice, headless through EGL,
with the stages timed and the two files compared."""

import pytest

from ..extras import package

package("av")
pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.bench import movie  # noqa: E402


@pytest.mark.parametrize("yuv", ["gpu", "cpu"])
def test_movie_benchmark_times_each_stage_and_finds_the_repeats_identical(tmp_path, capsys, yuv):
    rows = movie.run(n=2000, frames=9, size="64x48", repeats=2, encoders=2, yuv=yuv,
                     device="none", dir=str(tmp_path))
    assert [row["repeat"] for row in rows] == [0, 1]
    for row in rows:
        assert row["frames"] == 9 and row["segments"] == 2 and row["same_bytes"]
        assert row["fps"] > 0 and row["draw_ms"] > 0 and row["encode_ms"] > 0
        # host frames: GL points, or the host splat where GL is software (llvmpipe)
        assert row["particles"].startswith(("GL points", "host splat ("))
        assert row["yuv"].startswith(yuv.upper())
    assert "same_bytes" in capsys.readouterr().out


def test_a_missing_movie_folder_is_named_before_any_work(tmp_path):
    from orrery.engine.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="no such folder"):
        movie.run(n=100, frames=3, size="64x48", repeats=1, dir=str(tmp_path / "absent"))
