"""The polish's shared move plumbing: docstring pieces and the in-place to public step."""

import numpy as np
import pytest

from solver.mrf.polish import fusion, moves, pipeline
from solver.mrf.polish.icm import icm, pair_moves


def test_every_shared_piece_is_filled_into_the_public_moves():
    """No docstring of a decorated move keeps a ``%(name)s`` placeholder, and each reads the
    shared wording (the numpydoc sections a user's ``help()`` shows)."""
    for func in (fusion.fuse_level_sets, fusion.fuse_closings, icm, pair_moves,
                 pipeline.polish_labels):
        assert "%(" not in func.__doc__, func.__name__
        assert "``(H, W)`` or ``(n,)`` labels in 1..K." in func.__doc__, func.__name__
    assert "Work arrays shared with the other steps" in fusion.fuse_closings.__doc__
    assert "Number of regions taken." in fusion.fuse_level_sets.__doc__


def test_a_docstring_naming_an_unknown_piece_is_refused():
    def move():
        """%(no_such_piece)s"""

    with pytest.raises(KeyError, match="no_such_piece"):
        moves.documented(move)


def test_on_copy_runs_the_in_place_form_on_a_copy_and_returns_one_based_labels():
    """The caller's labels stay as they were; the move sees 0-based labels of the asked type and
    its count comes back with the new 1-based ``(n,)`` int32 labels."""
    seen = {}

    def into(problem, lab, shift):
        seen["dtype"], seen["first"] = lab.dtype, int(lab[0])
        lab[:2] = shift
        return 7

    labels = np.array([[1, 2, 2], [1, 1, 2]])
    before = labels.copy()
    out, moved = moves.on_copy(into, None, labels, 1, dtype=np.int64)
    assert moved == 7 and seen == {"dtype": np.dtype(np.int64), "first": 0}
    assert out.dtype == np.int32 and out.tolist() == [2, 2, 2, 1, 1, 2]
    assert np.array_equal(labels, before)
