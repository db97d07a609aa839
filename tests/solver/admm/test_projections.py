import numpy as np
import pytest

from solver.admm.projections import (
    check_p,
    project_box,
    project_lp_sphere,
    project_nonneg,
    sphere_radius,
)


def test_box_clips():
    x = np.array([-1.0, 0.2, 1.5])
    np.testing.assert_array_equal(project_box(x), [0.0, 0.2, 1.0])


def test_nonneg_truncates():
    np.testing.assert_array_equal(project_nonneg(np.array([-2.0, 0.0, 3.0])), [0.0, 0.0, 3.0])


def test_box_projection_is_closest_point():
    rng = np.random.default_rng(0)
    x = rng.normal(size=20) * 2
    p = project_box(x)
    others = rng.random((5000, 20))
    assert np.all(np.linalg.norm(others - x, axis=1) >= np.linalg.norm(p - x) - 1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 50])
def test_sphere_projection_lies_on_sphere_and_is_closest(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    p = project_lp_sphere(x)
    assert np.isclose(np.sum((p - 0.5) ** 2), n / 4)
    # many random points on the sphere are never closer than the projection
    v = rng.normal(size=(20000, n))
    pts = 0.5 + sphere_radius(n) * v / np.linalg.norm(v, axis=1, keepdims=True)
    assert np.linalg.norm(pts - x, axis=1).min() >= np.linalg.norm(p - x) - 1e-12


def test_sphere_contains_binary_points():
    for x in (np.zeros(5), np.ones(5), np.array([1.0, 0, 1, 0, 0])):
        np.testing.assert_allclose(project_lp_sphere(x), x)


def test_sphere_projection_of_centre_is_on_sphere():
    p = project_lp_sphere(np.full(4, 0.5))
    assert np.isclose(np.sum((p - 0.5) ** 2), 1.0)


@pytest.mark.parametrize("p", [0, -1, float("nan"), float("inf")])
def test_bad_p_rejected(p):
    with pytest.raises(ValueError, match="p must be"):
        check_p(p)


def test_other_p_clearly_unsupported():
    with pytest.raises(ValueError, match="p = 2 only"):
        project_lp_sphere(np.zeros(3), p=1.0)
