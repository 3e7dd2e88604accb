"""Searches on clusters far apart: 100 points on ``[0, 30]`` and 40 near ``10⁵``. The
whole sample's standard deviation and quartiles span the gap, so the rule of thumb
smooths across it and the criterion is flat on the grid of multiples of it (every
search chose a bandwidth of tens of thousands, CV 0.47, where 0.3 gives 0.025); the
values' spacing reaches the grid down to each cluster's own bandwidths.

References: leave-one-out CV by the textbook formula in NumPy float64 (distances →
kernel → normalise over the other keys → weighted sum; local linear by its two moment
sums) on a dense grid of bandwidths."""

from __future__ import annotations

import numpy as np
import pytest

from attnpool import LocalLinear, LocalPolynomial, NadarayaWatson, select_bandwidth
from attnpool.bandwidth.grid import (
    GRID,
    OUTLIER_RATIO,
    multipliers,
    spacing_spreads,
    steps_below,
)
from attnpool.regression.polynomial import loo_residuals


def clusters(seed=1):
    rng = np.random.default_rng(seed)
    x = np.r_[rng.uniform(0, 30, 100), 1e5 + rng.uniform(0, 10, 40)]
    return x, np.sin(x) + rng.normal(0, 0.1, x.size)


def textbook_cv(x, y, bandwidths, degree):
    """Mean squared leave-one-out residual of the Gaussian NW (degree 0) or local linear
    fit at each bandwidth."""
    offsets = x[None, :] - x[:, None]  # key − query
    curve = []
    for h in bandwidths:
        w = np.exp(-0.5 * (offsets / h) ** 2)
        np.fill_diagonal(w, 0.0)
        if degree == 0:
            fit = w @ y / w.sum(axis=1)
        else:
            s0, s1, s2 = (np.sum(w * offsets**p, axis=1) for p in range(3))
            t0, t1 = w @ y, (w * offsets) @ y
            with np.errstate(invalid="ignore", divide="ignore"):  # (rows with one key)
                fit = (s2 * t0 - s1 * t1) / (s0 * s2 - s1**2)
        curve.append(np.mean((y - fit) ** 2))
    return np.array(curve)


DENSE = np.geomspace(0.05, 1e6, 700)


@pytest.mark.parametrize("pooling", ["auto", "dense"])
@pytest.mark.parametrize("degree", [0, 1])
def test_clusters_far_apart_do_not_hide_their_bandwidths(degree, pooling):
    x, y = clusters()
    found = select_bandwidth(x, y, degree=degree, pooling=pooling)
    curve = textbook_cv(x, y, DENSE, degree)  # (NaN where local linear needs its limit)
    assert found.bandwidth[0] < 1.0  # (each cluster's scale, not across the gap)
    # (the compiled search stops at its Newton steps' 1e-7)
    assert found.objective <= np.nanmin(curve) * (1 + (1e-9 if pooling == "auto" else 1e-6))
    assert textbook_cv(x, y, found.bandwidth, degree)[0] == pytest.approx(found.objective, rel=1e-9)


def test_the_estimators_on_clusters_far_apart():
    x, y = clusters()
    X = x[:, None]
    for estimator, degree in ((NadarayaWatson(), 0), (LocalLinear(), 1)):
        estimator.fit(X, y)
        assert estimator.cv_score_ <= np.nanmin(textbook_cv(x, y, DENSE, degree)) * (1 + 1e-9)
    # local polynomial fits search the same grid: degree 1 is local linear's criterion
    linear = LocalPolynomial(degree=1).fit(X, y)
    assert linear.cv_score_ == pytest.approx(LocalLinear().fit(X, y).cv_score_, rel=1e-9)
    quadratic = LocalPolynomial(degree=2).fit(X, y)
    curve = [np.mean(loo_residuals(X, y, h, "gaussian", 2) ** 2) for h in DENSE[::4]]
    assert quadratic.bandwidth_[0] < 2.0
    assert quadratic.cv_score_ <= np.nanmin(curve) * (1 + 1e-9)


def searched_on_dask(x, y, rows: int = 35):
    """Dask's CV search of ``x (n, d)``, ``y`` in chunks of ``rows`` on a local cluster."""
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    from attnpool.distributed.selection import select_bandwidth as select_on_dask

    local = LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0")
    with local as cluster, Client(cluster):
        return select_on_dask(da.from_array(x, chunks=(rows, x.shape[1])),
                              da.from_array(y, chunks=rows))  # fmt: skip


def test_the_dask_search_on_clusters_far_apart():
    x, y = clusters()
    found = searched_on_dask(x[:, None], y)
    # (Dask's search: its grid and 16 points between the best one's neighbours)
    assert found.bandwidth[0] < 1.0
    assert found.objective <= np.min(textbook_cv(x, y, DENSE, 0)) * 1.01


def test_the_spacing_spread_is_the_standard_deviation_of_a_normal_sample():
    rng = np.random.default_rng(2)
    sample = rng.normal(3.0, 2.0, (20000, 1))
    assert spacing_spreads(sample)[0] == pytest.approx(2.0, rel=0.1)
    # distinct values only; fewer than four say nothing
    values = np.unique(sample[:50, 0])
    repeated = np.repeat(values, 3)[:, None]
    expected = 0.4 * values.size * np.median(np.diff(values))
    assert spacing_spreads(repeated)[0] == pytest.approx(expected, rel=1e-15)
    assert spacing_spreads(np.array([[0.0], [1.0], [1.0], [5.0], [5.0]]))[0] == 0.0


def test_only_far_points_or_gaps_extend_the_grid():
    rng = np.random.default_rng(0)
    ordinary = [
        rng.normal(size=(500, 2)),
        rng.uniform(size=(300, 1)),
        np.linspace(0, 1, 200)[:, None],
        rng.exponential(size=(400, 1)),
        np.r_[rng.normal(size=250), 10 + rng.normal(size=250)][:, None],  # 10σ apart
        np.round(rng.uniform(0, 3, (200, 1)), 2),
    ]
    for x in ordinary:
        assert steps_below(x, range(x.shape[1])) == 0
    x = clusters()[0][:, None]
    below = steps_below(x, [0])
    # down to 0.05× the rule of the spacing's spread, in the grid's steps
    ratio = np.std(x, ddof=1) / spacing_spreads(x)[0]
    assert ratio > OUTLIER_RATIO
    grid = multipliers(len(GRID) + below)
    assert grid[0] <= GRID[0] / ratio < grid[1]
    # rows of weight 0 take no place in the spacing
    weights = np.r_[np.ones(100), np.zeros(40)]
    assert steps_below(x, [0], weights) == 0


@pytest.mark.parametrize("n", [97, 150])
def test_the_compiled_criterion_has_a_gradient_where_the_data_span_many_bandwidths(n):
    """Rows are padded to their bucket with copies of the first, and local linear's moments
    are taken about each row's heaviest key. A padding row's heaviest key was searched
    as if it left out a real key, so the block's larger log weight at its twin overflowed
    (``exp(+5·10⁴)`` on data 100 bandwidths wide): NaN in the padding rows, through
    which the gradient became NaN, and the compiled search stopped at its grid (local
    linear CV 0.01740 at 0.305 on the clusters, where 0.340 gives 0.01733)."""
    import jax
    import jax.numpy as jnp

    from attnpool.engines.local_fits import loo_residuals
    from attnpool.sums.local_model import model_for

    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, (n, 1))
    y = np.sin(6 * x) + rng.normal(0, 0.1, x.shape)
    model = model_for(x, var_type="c", degree=1)

    def cv(theta):
        bandwidth = jnp.exp(theta)[None]
        return jnp.mean(loo_residuals(jnp.asarray(x), jnp.asarray(y), bandwidth, model) ** 2)

    theta, step = np.log(0.01), 1e-5
    with jax.enable_x64(True):  # (as the search evaluates float64 data)
        gradient = float(jax.grad(cv)(theta))
        difference = (float(cv(theta + step)) - float(cv(theta - step))) / (2 * step)
    assert gradient == pytest.approx(difference, rel=1e-7)
