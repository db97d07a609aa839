"""Grid graph, edge weights, beta and Laplacian."""

import numpy as np
import pytest

from solver.mrf import build_grid_graph, estimate_beta, grid_edges, image_to_float, laplacian
from solver.mrf.build.graph import edge_contrast


def _images():
    rng = np.random.default_rng(1)
    base = rng.random((7, 9, 4))
    return {
        "grey_uint8": (base[..., 0] * 255).astype(np.uint8),
        "grey_float": base[..., 0],
        "rgb_uint8": (base[..., :3] * 255).astype(np.uint8),
        "rgb_uint16": (base[..., :3] * 65535).astype(np.uint16),
        "rgb_float": base[..., :3],
        "rgba_uint8": (base * 255).astype(np.uint8),
        "rgba_float": base,
    }


@pytest.mark.parametrize("name", list(_images()))
def test_laplacian_symmetric_zero_row_sums(name):
    image = _images()[name]
    lap = laplacian(build_grid_graph(image))
    n = image.shape[0] * image.shape[1]
    assert lap.shape == (n, n)
    assert abs(lap - lap.T).max() < 1e-12
    np.testing.assert_allclose(np.asarray(lap.sum(axis=1)).ravel(), 0.0, atol=1e-12)
    assert np.all(lap.diagonal() > 0)
    assert lap.nnz == n + 2 * len(build_grid_graph(image).weights)


def test_grid_edges_each_pair_once():
    h, w = 4, 5
    i, j, diag = grid_edges((h, w))
    assert len(i) == h * (w - 1) + (h - 1) * w + 2 * (h - 1) * (w - 1)
    assert np.all(i < j)
    assert len(set(zip(i.tolist(), j.tolist()))) == len(i)
    dr = np.abs(j // w - i // w)
    dc = np.abs(j % w - i % w)
    assert np.all(np.maximum(dr, dc) == 1)
    np.testing.assert_array_equal(diag, (dr == 1) & (dc == 1))


def test_a_graph_with_int64_ends_gives_the_same_laplacian_and_energy():
    """The built graph's ends are int32 (half the memory); a caller's own int64 graph still
    works, with the same matrix and energies."""
    from dataclasses import replace

    from solver.mrf import problem_from_unary

    g = build_grid_graph(_images()["rgb_uint8"])
    assert g.i.dtype == g.j.dtype == np.int32
    wide = replace(g, i=g.i.astype(np.int64), j=g.j.astype(np.int64))
    a, b = laplacian(g), laplacian(wide)
    assert (a != b).nnz == 0
    unary = np.random.default_rng(0).random((*g.shape, 3))
    lab = np.random.default_rng(1).integers(1, 4, g.n)
    p = problem_from_unary(np.zeros(g.shape), unary, lam=2.0)
    assert replace(p, graph=g).energy(lab) == replace(p, graph=wide).energy(lab)


def test_grid_edges_refuse_an_image_beyond_32_bit_indices():
    with pytest.raises(ValueError, match="too large"):
        grid_edges((2**16, 2**15))


def test_grid_edges_single_row_and_pixel():
    assert len(grid_edges((1, 4))[0]) == 3
    assert len(grid_edges((1, 1))[0]) == 0


def test_image_to_float_normalises():
    assert image_to_float(np.full((2, 2), 255, np.uint8)).max() == 1.0
    assert image_to_float(np.full((2, 2, 3), 65535, np.uint16)).max() == 1.0
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[..., 3] = 255
    out = image_to_float(rgba)
    assert out.shape == (2, 2, 3) and out.max() == 0.0
    assert image_to_float(np.full((3, 2), 0.5)).shape == (3, 2, 1)


@pytest.mark.parametrize(
    "image, match",
    [
        (np.zeros(5), "dimensions"),
        (np.zeros((0, 4)), "empty"),
        (np.full((2, 2), np.nan), "NaN"),
        (np.zeros((2, 2, 5)), "channels"),
        (np.zeros((2, 2), np.int64), "dtype"),
    ],
)
def test_image_validation(image, match):
    with pytest.raises(ValueError, match=match):
        image_to_float(image)


def test_weights_and_beta():
    image = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    i, j, _ = grid_edges(image.shape)
    sq = (image.ravel()[i] - image.ravel()[j]) ** 2
    beta = estimate_beta(image)
    assert beta == pytest.approx(1.0 / (2.0 * sq.mean()))
    g = build_grid_graph(image, beta=2.0, diagonal_distance=False)
    np.testing.assert_allclose(g.weights, np.exp(-2.0 * sq))
    gd = build_grid_graph(image, beta=2.0)
    _, _, diag = grid_edges(image.shape)
    np.testing.assert_allclose(gd.weights[diag], np.exp(-2.0 * sq[diag]) / np.sqrt(2.0))


def test_beta_constant_image_is_finite():
    beta = estimate_beta(np.full((5, 5, 3), 0.3))
    assert np.isfinite(beta) and beta > 0
    g = build_grid_graph(np.full((5, 5), 7, np.uint8))
    np.testing.assert_allclose(g.weights.max(), 1.0)


@pytest.mark.parametrize("beta", [-1.0, np.inf, np.nan])
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        build_grid_graph(np.zeros((3, 3)), beta=beta)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(7, 9, 3), (6, 5, 1), (1, 4, 3), (4, 1, 3), (1, 1, 3), (2, 2, 1)])
def test_edge_contrast_follows_grid_edges(shape):
    colours = np.random.default_rng(3).random(shape)
    i, j, _ = grid_edges(shape[:2])
    flat = colours.reshape(-1, shape[2])
    expected = ((flat[i] - flat[j]) ** 2).sum(axis=1)
    np.testing.assert_allclose(edge_contrast(colours), expected, rtol=1e-15, atol=0)


def test_grid_edges_order_is_direction_then_row_major():
    i, j, _ = grid_edges((3, 4))
    # east pairs first, row by row, then south, south-east, south-west
    assert list(zip(i[:3].tolist(), j[:3].tolist())) == [(0, 1), (1, 2), (2, 3)]
    assert (i[9], j[9]) == (0, 4)
    assert (i[17], j[17]) == (0, 5)
    assert (i[23], j[23]) == (1, 4)
    assert len(i) == 29


def test_image_to_float_passes_its_own_output_on_without_a_copy():
    raw = np.random.default_rng(0).random((5, 6, 3))
    first = image_to_float(raw)
    assert first is not raw and not first.flags.writeable and raw.flags.writeable
    assert image_to_float(first) is first  # build_problem's helpers reuse it
    bad = first.copy()
    bad[0, 0, 0] = np.nan
    bad.flags.writeable = False
    with pytest.raises(ValueError, match="NaN"):
        image_to_float(bad)
