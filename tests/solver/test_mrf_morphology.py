"""The compiled square closing and dilation against scipy's binary morphology."""

import numpy as np
import pytest
from scipy import ndimage

from solver.mrf.morphology import square_closing, square_dilation


@pytest.mark.parametrize("radius", [1, 2, 3, 5])
def test_square_closing_equals_scipy_binary_closing(radius):
    rng = np.random.default_rng(radius)
    for trial in range(60):
        h, w = rng.integers(1, 30, size=2)
        mask = rng.random((h, w)) < rng.random()
        if trial % 2:  # blobs with notches and holes rather than noise
            mask = ndimage.binary_opening(mask)
        expected = ndimage.binary_closing(mask, np.ones((3, 3), bool), iterations=radius)
        got = square_closing(mask, radius)
        assert got.dtype == bool and got.shape == mask.shape
        np.testing.assert_array_equal(got, expected, err_msg=f"{h}x{w} trial {trial}")


def test_square_closing_fills_a_notch_but_not_at_the_image_border():
    mask = np.zeros((12, 12), bool)
    mask[2:9, 2:9] = True
    mask[5, 4:9] = False  # a one-pixel notch cut in from the right edge of the square
    closed = square_closing(mask, 1)
    assert closed[5, 4:8].all()  # filled where a 3 x 3 square fits around it
    full = np.ones((5, 5), bool)
    full[2, 2] = False
    out = square_closing(full, 1)
    assert out[2, 2] and not out[0].any()  # the outside counts as 0: the border is eroded


@pytest.mark.parametrize("radius", [1, 2, 8])
def test_square_dilation_equals_scipy_binary_dilation(radius):
    rng = np.random.default_rng(10 + radius)
    for trial in range(60):
        h, w = rng.integers(1, 40, size=2)
        mask = rng.random((h, w)) < 0.05 * rng.random()
        expected = ndimage.binary_dilation(mask, np.ones((3, 3), bool), iterations=radius)
        np.testing.assert_array_equal(square_dilation(mask, radius), expected,
                                      err_msg=f"{h}x{w} trial {trial}")


@pytest.mark.parametrize("op", [square_closing, square_dilation])
def test_square_morphology_refuses_a_radius_below_one(op):
    with pytest.raises(ValueError, match="radius"):
        op(np.ones((4, 4), bool), 0)
