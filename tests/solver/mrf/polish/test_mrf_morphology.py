"""The compiled square dilation and closing against scipy's binary morphology."""

import numpy as np
import pytest
from scipy import ndimage

from solver.mrf.polish.morphology import square_morphology

SCIPY = {"dilation": ndimage.binary_dilation, "closing": ndimage.binary_closing}


@pytest.mark.parametrize("operation,radius", [("closing", 1), ("closing", 2), ("closing", 3),
                                              ("closing", 5), ("dilation", 1), ("dilation", 2),
                                              ("dilation", 8)])
def test_square_morphology_equals_scipy(operation, radius):
    rng = np.random.default_rng(radius)
    for trial in range(60):
        h, w = rng.integers(1, 40, size=2)
        density = rng.random() * (0.05 if operation == "dilation" else 1.0)
        mask = rng.random((h, w)) < density
        if trial % 2:  # blobs with notches and holes rather than noise
            mask = ndimage.binary_opening(mask)
        expected = SCIPY[operation](mask, np.ones((3, 3), bool), iterations=radius)
        got = square_morphology(mask, radius, operation)
        assert got.dtype == bool and got.shape == mask.shape
        np.testing.assert_array_equal(got, expected, err_msg=f"{h}x{w} trial {trial}")


def test_square_closing_fills_a_notch_but_not_at_the_image_border():
    mask = np.zeros((12, 12), bool)
    mask[2:9, 2:9] = True
    mask[5, 4:9] = False  # a one-pixel notch cut in from the right edge of the square
    closed = square_morphology(mask, 1, "closing")
    assert closed[5, 4:8].all()  # filled where a 3 x 3 square fits around it
    full = np.ones((5, 5), bool)
    full[2, 2] = False
    out = square_morphology(full, 1, "closing")
    assert out[2, 2] and not out[0].any()  # the outside counts as 0: the border is eroded


def test_square_morphology_refuses_a_bad_radius_or_operation():
    with pytest.raises(ValueError, match="radius"):
        square_morphology(np.ones((4, 4), bool), 0, "dilation")
    with pytest.raises(ValueError, match="operation"):
        square_morphology(np.ones((4, 4), bool), 1, "opening")
