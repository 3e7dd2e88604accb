"""``lowess`` and ``r_lowess`` of Dask arrays on a real distributed.LocalCluster (two
worker processes): R's and statsmodels' numbers, and the fit in memory's on hostile
data, with the rows shuffled over uneven blocks."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster
from statsmodels.nonparametric.smoothers_lowess import lowess as statsmodels_lowess

import attnpool
from attnpool.smoothers import rules
from test_lowess import HOSTILE, R_CASES, RESULTS, _close, _hostile

pytestmark = pytest.mark.xdist_group("dask")


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="2GB",
                      dashboard_address=":0") as cluster, Client(cluster) as client:  # fmt: skip
        yield client


def _lazy(values, chunks=(170, 1, 333)):
    """``values`` in uneven blocks (the sizes repeated to cover them)."""
    sizes, left = [], values.shape[0]
    while left:
        for size in chunks:
            sizes.append(min(size, left))
            left -= sizes[-1]
            if not left:
                break
    return da.from_array(values, chunks=(tuple(sizes),))


@pytest.mark.parametrize(("name", "column", "ours", "theirs"), R_CASES)
def test_r_and_statsmodels_numbers(client, name, column, ours, theirs):
    data = pd.read_csv(RESULTS / name)
    fits = attnpool.lowess(_lazy(data.y.to_numpy()), _lazy(data.x.to_numpy()), **ours)
    assert isinstance(fits, da.Array)
    _close(fits.compute(), statsmodels_lowess(data.y, data.x, **ours))
    curve = attnpool.r_lowess(_lazy(data.x.to_numpy()), _lazy(data.y.to_numpy()), **theirs)
    _close(curve.y.compute(), data[column])


@pytest.mark.parametrize(
    "name, frac",
    [(name, 0.05) for name in HOSTILE] + [(name, 2 / 3) for name in ("ties", "heavy tails")],
)
def test_hostile_data_equal_to_the_peers_loops(client, monkeypatch, name, frac):
    # shuffled over the blocks; compared with the peers' loops in memory (every key of
    # every window weighed) on the stably sorted rows, since ties keep their input order
    # on Dask (NumPy's default sort orders them freely)
    monkeypatch.setattr(rules, "DIRECT_WORK", 2**62)
    rng = np.random.default_rng(4)
    x, y = _hostile(name, 900, rng)
    order = np.argsort(x, kind="stable")
    expected = attnpool.lowess(y[order], x[order], frac=frac, is_sorted=True)
    _close(attnpool.lowess(_lazy(y), _lazy(x), frac=frac).compute(), expected)
    curve = attnpool.r_lowess(_lazy(x), _lazy(y), f=frac, delta=0.0)
    _close(curve.y.compute(), attnpool.r_lowess(x, y, f=frac, delta=0.0).y)


def test_input_order_missing_values_and_points(client):
    rng = np.random.default_rng(5)
    x, y = rng.uniform(0, 10, 700), rng.normal(size=700)
    x[::37], y[5::41] = np.nan, np.inf
    lazy = {"endog": _lazy(y), "exog": _lazy(x), "frac": 0.2}
    unsorted = attnpool.lowess(**lazy, return_sorted=False)
    assert unsorted.chunks == lazy["exog"].chunks
    _close(unsorted.compute(), attnpool.lowess(y, x, frac=0.2, return_sorted=False))
    assert np.isnan(unsorted.compute()[::37]).all()
    points = np.array([np.nan, -3.0, 0.5, 5.0, 5.0, 9.99, 30.0])
    at = attnpool.lowess(**lazy, xvals=points)
    assert isinstance(at, np.ndarray)
    np.testing.assert_array_equal(np.isnan(at), np.isnan(points))
    _close(at, attnpool.lowess(y, x, frac=0.2, xvals=points))
    with pytest.raises(ValueError, match=r"hold .* non-finite values .*missing='raise'"):
        attnpool.lowess(**lazy, missing="raise")


@pytest.mark.parametrize(
    "name, share",
    [("ties", 0.002), ("ties", 0.5), ("integers", 0.5), ("clusters", 0.002), ("outliers", 0.5)],
)
def test_delta_schedule_walked_over_the_blocks(client, monkeypatch, name, share):
    # delta's fitted rows are a chain walked block after block, and the rows between lie
    # on lines that can span several blocks (a delta of half the range); each data set
    # with one delta, ties (the chain's hardest steps) with both
    monkeypatch.setattr(rules, "DIRECT_WORK", 2**62)
    x, y = _hostile(name, 900, np.random.default_rng(8))
    order = np.argsort(x, kind="stable")
    delta = share * float(np.ptp(x))
    expected = attnpool.lowess(y[order], x[order], frac=0.1, delta=delta, is_sorted=True)
    _close(attnpool.lowess(_lazy(y), _lazy(x), frac=0.1, delta=delta).compute(), expected)
    curve = attnpool.r_lowess(_lazy(x), _lazy(y), f=0.1, delta=delta)
    _close(curve.y.compute(), attnpool.r_lowess(x, y, f=0.1, delta=delta).y)


def test_bad_inputs_are_clear_errors(client):
    x = _lazy(np.linspace(0, 1, 50))
    with pytest.raises(ValueError, match=r"delta must be 0 with xvals; got delta=0\.1"):
        attnpool.lowess(x, x, delta=0.1, xvals=[0.5])
    with pytest.raises(ValueError, match="delta must be a finite number"):
        attnpool.r_lowess(x, x, delta=-1.0)
    with pytest.raises(ValueError, match="f must be a number in"):
        attnpool.r_lowess(x, x, f=2.0)
    with pytest.raises(ValueError, match="endog and exog must have the same length"):
        attnpool.lowess(x[:-1], x)


def test_one_row_and_none(client):
    one = attnpool.lowess(_lazy(np.array([2.0])), _lazy(np.array([1.0])))
    np.testing.assert_array_equal(one.compute(), [[1.0, 2.0]])
    nothing = attnpool.lowess(_lazy(np.array([np.nan, 1.0])), _lazy(np.array([1.0, np.nan])),
                              return_sorted=False)  # fmt: skip
    np.testing.assert_array_equal(np.isnan(nothing.compute()), [True, True])


def test_x_beyond_the_squares_range_over_the_blocks(client):
    # as in memory: x near 1e200 took the squares of its differences past the float
    # range (fits 0.5 off); in a power of two, the same fits, and x returned as given
    rng = np.random.default_rng(6)
    x = rng.integers(0, 30, 300).astype(float)
    y = np.sin(x / 5) + 0.2 * rng.normal(size=300)
    plain = attnpool.lowess(y, x, frac=0.3)
    sorted_pairs = attnpool.lowess(_lazy(y), _lazy(x * 1e200), frac=0.3).compute()
    np.testing.assert_array_equal(sorted_pairs[:, 0], plain[:, 0] * 1e200)
    np.testing.assert_allclose(sorted_pairs[:, 1], plain[:, 1], rtol=1e-13, atol=1e-14)
    at = attnpool.r_lowess(_lazy(x * 2.0**-600), _lazy(y), f=0.3)
    np.testing.assert_allclose(np.asarray(at.y), attnpool.r_lowess(x, y, f=0.3).y, atol=1e-14)
