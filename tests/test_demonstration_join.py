"""Joining a warm start's teacher episodes: the same arrays as ``np.concatenate``, never held twice."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mara_agents.mara.packed_vectors import joined


def test_joined_equals_concatenate_cast_and_releases_each_piece():
    pieces = [np.arange(6, dtype=np.int8).reshape(3, 2), np.full((2, 2), -1, dtype=np.int8)]
    expected = np.concatenate(pieces).astype(np.float32)
    out = joined(pieces, np.float32)
    assert out.dtype == np.float32 and np.array_equal(out, expected)
    assert pieces == [None, None]  # the caller's list no longer holds them


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak resident size of a Linux process")
def test_joining_adds_about_one_piece_to_the_peak_memory_not_a_whole_copy():
    # 8 pieces of 32 MB: a plain concatenate-then-cast would add 256-512 MB to the peak; joining
    # adds at most about one piece, since each is freed before the next part of the output is written
    script = textwrap.dedent(
        """
        import resource
        import numpy as np
        from mara_agents.mara.packed_vectors import joined
        pieces = [np.ones((1024, 8192), dtype=np.float32) for _ in range(8)]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = joined(pieces, np.float32)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert out.shape == (8192, 8192) and float(out.sum()) == 8192 * 8192
        print((after - before) // 1024)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    grown_mb = int(result.stdout.strip())
    assert grown_mb <= 96, f"joining grew the peak by {grown_mb} MB (the pieces total 256 MB)"
