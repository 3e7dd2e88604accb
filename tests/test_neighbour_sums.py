"""The compiled neighbourhood sums of LOESS in several columns, against brute force: each
query's radius against a k-d tree, its moments and its operator row's sums against the
textbook sums over every key."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from attnpool import kernels
from attnpool.smoothers.local_polynomial import design, kernel_weights
from attnpool.smoothers.neighbour_sums import (
    KERNEL_FORMS,
    Neighbourhoods,
    compiled_neighbours,
    neighbour_band,
    neighbour_moments,
    neighbour_radii,
    neighbour_rows,
    strips,
)


def _keys(d, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, d)) * rng.uniform(0.5, 3.0, d)
    X[:60] = X[60:120]  # repeated rows
    X[200:260, 0] = X[200, 0]  # ties in the first column, across strips' edges
    X[300:360] = X[300]  # sixty copies of one row
    return X


def _brute(X, weights, q, radius, degree, kernel):
    """(b, w K) over every key: the design at ``q`` and the kernel weights."""
    u = (X - q) / radius
    return design(u, degree), weights * kernel_weights(kernel, np.sum(u * u, axis=1))


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("count", [1, 7, 150, 1500])
def test_radii_equal_a_kd_tree(d, count):
    X = _keys(d)
    queries = np.vstack([X[::7], X[:20] + 0.01, X.max(axis=0) + 1.0, X.min(axis=0) - 5.0])
    expected = cKDTree(X).query(queries, k=[count])[0][:, 0]
    np.testing.assert_allclose(neighbour_radii(X, queries, count), expected, rtol=1e-15, atol=0)


def test_radii_where_the_nearest_keys_coincide():
    # sixty copies of a row: its 60th nearest is at distance 0, its 61st beyond
    X = _keys(2)
    assert neighbour_radii(X, X[300:301], 60)[0] == 0.0
    beyond = cKDTree(X).query(X[300:301], k=[61])[0][0, 0]
    assert neighbour_radii(X, X[300:301], 61)[0] == beyond > 0


@pytest.mark.parametrize("d, degree", [(2, 0), (2, 1), (2, 2), (3, 2), (4, 1), (8, 2)])
@pytest.mark.parametrize("name", sorted(KERNEL_FORMS))
def test_moments_and_rows_equal_brute_force(d, degree, name):
    kernel = kernels.get(name)
    X = _keys(d, n=900, seed=d)
    assert compiled_neighbours(X, kernel)
    rng = np.random.default_rng(1)
    weights, square = rng.uniform(0.2, 3.0, X.shape[0]), rng.uniform(0.2, 3.0, X.shape[0])
    values = rng.normal(size=(X.shape[0], 3))
    signs = rng.choice([-1.0, 1.0], size=(X.shape[0], 5))
    queries = np.vstack([X[:40], X[:5] + 0.003])
    # radii halfway from the 200th distance to the next larger one: no key on a radius,
    # where a rounding would decide whether the boxcar counts it
    distances = np.sort(np.linalg.norm(X[None, :, :] - queries[:, None, :], axis=2), axis=1)
    beyond = np.where(distances > distances[:, 199:200], distances, np.inf).min(axis=1)
    radius = 0.5 * (distances[:, 199] + beyond)
    layout = strips(X, float(np.median(radius)))
    at = Neighbourhoods(queries, radius, degree)
    gram, cross = neighbour_moments(layout, weights, values, at, kernel)
    a = rng.normal(size=gram.shape[:2])
    spread, smooths = neighbour_rows(layout, weights, signs, square, a, at, kernel)
    for i, q in enumerate(queries):
        b, w = _brute(X, weights, q, radius[i], degree, kernel)
        scale = np.abs(w[:, None] * b).sum(axis=0)
        np.testing.assert_allclose(
            gram[i], (b * w[:, None]).T @ b, rtol=0, atol=1e-13 * scale.max()
        )
        np.testing.assert_allclose(cross[i], (b * w[:, None]).T @ values, rtol=0,
                                   atol=1e-13 * scale.max() * np.abs(values).max())  # fmt: skip
        row = w * (b @ a[i])
        np.testing.assert_allclose(spread[i], np.sum(row**2 * square), rtol=1e-12)
        np.testing.assert_allclose(smooths[i], row @ signs, rtol=0,
                                   atol=1e-12 * np.abs(row).sum())  # fmt: skip


def test_rows_take_sign_vectors_only():
    X = np.random.default_rng(0).uniform(size=(200, 2))
    layout = strips(X, 0.3)
    halves = np.full((200, 1), 0.5)
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        at = Neighbourhoods(X[:3], np.full(3, 0.3), 2)
        neighbour_rows(layout, np.ones(200), halves, np.ones(200), np.zeros((3, 6)), at,
                       kernels.get("tricube"))  # fmt: skip


def _both_paths(monkeypatch, X, y, weights=None, **options):
    """The same Loess fit from the compiled loop and from the NumPy operator rows."""
    import attnpool
    from attnpool.smoothers import neighbourhoods, operator_rows

    direct = attnpool.Loess(**options).fit(X, y, sample_weight=weights)
    with monkeypatch.context() as patched:
        patched.setattr(operator_rows, "MOMENT_WORK", 100)
        patched.setattr(neighbourhoods, "NEIGHBOUR_WORK", 100)
        compiled = attnpool.Loess(**options).fit(X, y, sample_weight=weights)
        queries = X[::37] + 0.013 * np.ptp(X, axis=0)
        pair = compiled.predict(queries, return_std=True)
    expected = direct.predict(queries, return_std=True)
    return compiled, direct, pair, expected


@pytest.mark.parametrize("case", ["rounded", "offset", "weights", "narrow", "wide"])
def test_the_compiled_loop_on_hostile_data(monkeypatch, case):
    # rounded data (ties in both columns and on the radii), huge offsets with unequal
    # scales, weights over sixteen orders of magnitude, ten neighbours for six terms (the
    # ill-conditioned rows refitted), a span of 30 (every row, the radius stretched): the
    # loop equals the operator rows
    rng = np.random.default_rng(11)
    X = rng.uniform(0.0, 10.0, (900, 2))
    y = np.sin(X[:, 0]) * X[:, 1] + rng.normal(0.0, 0.2, 900)
    weights, span = None, {"narrow": 0.012, "wide": 30.0}.get(case, 0.2)
    if case == "rounded":
        X = np.round(X, 0)
    elif case == "offset":
        X = X * [1e-4, 1e3] + [1e8, -5e6]
    elif case == "weights":
        weights = 10.0 ** rng.uniform(-8.0, 8.0, 900)
    compiled, direct, pair, expected = _both_paths(monkeypatch, X, y, weights, span=span,
                                                   family="symmetric")  # fmt: skip
    scale = np.abs(y).max()
    np.testing.assert_allclose(compiled.fitted_values_, direct.fitted_values_, rtol=0,
                               atol=1e-9 * scale)  # fmt: skip
    assert compiled.trace_hat_ == pytest.approx(direct.trace_hat_, rel=1e-9)
    np.testing.assert_allclose(pair[0], expected[0], rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(pair[1], expected[1], rtol=1e-7)


@pytest.mark.parametrize("d", [2, 4])
def test_bands_count_and_list_every_key(d):
    # the keys at or below each band's inner end are counted, those inside listed (up to
    # the width; the count says where a row overflowed), and the compiled radius is a
    # member of a band around it, to the bit
    X = _keys(d)
    rng = np.random.default_rng(3)
    queries = np.vstack([X[:20], rng.uniform(0.0, 2.0, (60, d))])
    squared = np.sum((X[None] - queries[:, None]) ** 2, axis=-1)
    # ends off the distances themselves (the loop's are rounded as a fused multiply-add)
    inner = np.quantile(squared, 0.01, axis=1) * (1 + 1e-9)
    inner[:5] = -1.0  # an empty inner end
    outer = np.quantile(squared, 0.03, axis=1) * (1 + 1e-9)
    below, band, kept = neighbour_band(X, queries, inner, outer, 40)
    np.testing.assert_array_equal(below, np.sum(squared <= inner[:, None], axis=1))
    inside = (squared > inner[:, None]) & (squared <= outer[:, None])
    np.testing.assert_array_equal(kept, inside.sum(axis=1))
    assert (kept > 40).any() and (kept <= 40).any()
    for row in np.flatnonzero(kept <= 40):
        listed = np.sort(band[row, : kept[row]])
        np.testing.assert_allclose(listed, np.sort(squared[row, inside[row]]), rtol=1e-14)
        assert np.isnan(band[row, kept[row] :]).all()
    radius = neighbour_radii(X, queries, 90)
    below, band, kept = neighbour_band(X, queries, np.full(80, -1.0), radius**2 * (1 + 1e-9), 200)
    assert all(radius[i] in np.sqrt(band[i, : kept[i]]) for i in range(80))
