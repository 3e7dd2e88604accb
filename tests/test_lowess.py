"""LOWESS held to statsmodels' ``lowess``, to R's ``lowess`` and to the textbook formula.

R's values are those statsmodels tests against (``statsmodels/nonparametric/tests/
results/test_lowess_*.csv``, written by its ``test_lowess_r_outputs.R`` with R's
``lowess``), read from the installed statsmodels.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.nonparametric._smoothers_lowess as statsmodels_cython
import statsmodels.nonparametric.tests as statsmodels_tests
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.nonparametric.smoothers_lowess import lowess as statsmodels_lowess

import attnpool
from attnpool.smoothers.rules import STATSMODELS, R

RESULTS = Path(statsmodels_tests.__file__).parent / "results"

#: (file, column, statsmodels' keywords, R's keywords)
R_CASES = [
    ("test_lowess_simple.csv", "out", {}, {"delta": 0.0}),
    ("test_lowess_iter.csv", "out_0", {"it": 0}, {"iter": 0, "delta": 0.0}),
    ("test_lowess_iter.csv", "out_3", {"it": 3}, {"iter": 3, "delta": 0.0}),
    ("test_lowess_frac.csv", "out_2_3", {"frac": 2 / 3}, {"f": 2 / 3, "delta": 0.0}),
    ("test_lowess_frac.csv", "out_1_5", {"frac": 1 / 5}, {"f": 1 / 5, "delta": 0.0}),
    ("test_lowess_delta.csv", "out_0", {"frac": 0.1}, {"f": 0.1, "delta": 0.0}),
    ("test_lowess_delta.csv", "out_Rdef", {"frac": 0.1, "delta": 0.24}, {"f": 0.1}),
    ("test_lowess_delta.csv", "out_1", {"frac": 0.1, "delta": 1 + 1e-10}, {"f": 0.1, "delta": 1.0}),
]


def _close(actual, expected, tolerance=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(float(np.nanmax(np.abs(expected))), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tolerance * scale)


@pytest.mark.parametrize(("name", "column", "ours", "theirs"), R_CASES)
def test_statsmodels_and_r_on_statsmodels_test_data(name, column, ours, theirs):
    data = pd.read_csv(RESULTS / name)
    _close(attnpool.lowess(data.y, data.x, **ours), statsmodels_lowess(data.y, data.x, **ours))
    curve = attnpool.r_lowess(data.x, data.y, **theirs)
    np.testing.assert_array_equal(curve.x, np.sort(data.x))
    _close(curve.y, data[column])


def test_r_rules_are_not_statsmodels_rules():
    # R's output that statsmodels misses by 4e-9 (its window and weight rules differ)
    data = pd.read_csv(RESULTS / "test_lowess_frac.csv")
    ours = attnpool.r_lowess(data.x, data.y, f=2 / 3, delta=0.0).y
    theirs = statsmodels_lowess(data.y, data.x, frac=2 / 3)[:, 1]
    assert np.abs(theirs - data.out_2_3).max() > 1e-9
    _close(ours, data.out_2_3, 1e-13)


def _hostile(name: str, n: int, rng: np.random.Generator):
    x = rng.uniform(0.0, 10.0, n)
    if name == "uniform":
        return x, np.sin(x) + 0.3 * rng.normal(size=n)
    if name == "ties":  # runs of ties as long as small spans
        return np.round(x, 1), np.sin(x) + rng.normal(size=n)
    if name == "integers":
        return rng.integers(0, 30, n).astype(float), rng.normal(size=n)
    if name == "heavy tails":
        z = rng.standard_cauchy(n)
        return z, np.sin(z) + rng.standard_cauchy(n)
    if name == "constant":
        return x, np.full(n, 3.0)
    if name == "outliers":
        y = np.sin(x)
        y[::50] += 100.0
        return x, y
    if name == "clusters":
        tight = rng.normal(0.0, 1e-3, n // 2)
        return np.concatenate([tight, rng.normal(5.0, 1.0, n - n // 2)]), rng.normal(size=n)
    if name == "tiny scale":  # statsmodels' variance floor of 1e-12 takes the slopes
        return x * 1e-9, np.sin(x)
    raise ValueError(name)


HOSTILE = ["uniform", "ties", "integers", "heavy tails", "constant", "outliers", "clusters",
           "tiny scale"]  # fmt: skip


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("frac", [0.01, 0.1, 2 / 3])
def test_statsmodels_numbers_on_hostile_data(name, frac):
    rng = np.random.default_rng(7)
    x, y = _hostile(name, 2500, rng)
    if name == "constant":  # exact here; statsmodels is within 1e-9
        for it, delta in ((0, 0.0), (3, 0.0), (3, 0.1)):
            fits = attnpool.lowess(y, x, frac=frac, it=it, delta=delta)[:, 1]
            np.testing.assert_array_equal(fits, y)
        return
    delta = 0.01 * np.ptp(x)
    for kwargs in ({"it": 0}, {"it": 0, "delta": delta}):
        _close(
            attnpool.lowess(y, x, frac=frac, **kwargs),
            statsmodels_lowess(y, x, frac=frac, **kwargs),
        )
    if name != "outliers" or frac > 0.01:
        # end to end; with an outlier in most windows of 25 points, the robustness
        # weights of whole windows are ~1e-10, and their fits follow the rounding of both
        # programs (the step test below holds each iteration there)
        for kwargs in ({"it": 3}, {"it": 3, "delta": delta}):
            _close(
                attnpool.lowess(y, x, frac=frac, **kwargs),
                statsmodels_lowess(y, x, frac=frac, **kwargs),
            )


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("frac", [0.01, 0.3])
def test_each_robustness_iteration_as_statsmodels(name, frac):
    # statsmodels' own loop, one pass at a time from the same robustness weights
    rng = np.random.default_rng(8)
    x, y = _hostile(name, 2500, rng)
    order = np.argsort(x)
    xs, ys = x[order], y[order]
    k = STATSMODELS.neighbours(frac, xs.size)
    firsts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    robustness = np.ones(xs.size)
    for _ in range(3):
        with np.errstate(invalid="ignore"):
            result, _ = statsmodels_cython.lowess(ys, xs, xs, robustness, frac, 0)
        theirs = result[:, 1]
        ours = STATSMODELS.fit(xs, ys, robustness, xs[firsts], ys[firsts], k)
        bound = _rounding_bound(xs, robustness, xs[firsts], k)
        tolerance = np.fmax(1e-10, 1e-15 * bound) * np.abs(ys).max()
        assert np.all(np.abs(ours - theirs[firsts]) <= tolerance)
        robustness = STATSMODELS.robustness(ys, theirs)
        np.testing.assert_allclose(
            robustness, statsmodels_cython.calculate_residual_weights(ys, theirs), atol=1e-15
        )


def _rounding_bound(xs, robustness, queries, k):
    """How much statsmodels' sums magnify rounding at each query, ``(1 + |x̄| / sd) ·
    (1 + |q − x̄| / sd)``: its offsets from the weighted mean ``x̄`` lose ``|x̄| / sd`` of
    their digits, and the line carries them ``|q − x̄| / sd`` standard deviations away
    (both ~10³ where robustness weights leave two nearby keys to extrapolate from)."""
    n = xs.size
    bound = np.empty(queries.size)
    for i, q in enumerate(queries):
        start = int(np.searchsorted((xs[: n - k] + xs[k:]) / 2.0, q))
        d = xs[start : start + k] - q
        with np.errstate(invalid="ignore", divide="ignore"):  # no weight: no fit to bound
            w = (1 - (np.abs(d) / np.abs(d).max()) ** 3) ** 3 * robustness[start : start + k]
            w = w / w.sum()
            mean = w @ d
            sd = np.sqrt(max(w @ (d - mean) ** 2, 1e-12))
            bound[i] = (1 + abs(mean + q) / sd) * (1 + abs(mean) / sd)
    return bound


def _textbook(x, y, frac):
    """statsmodels' fit with ``it = 0`` by its four steps, per point, in coordinates
    centred on the point and on the window's mean response: exact where statsmodels'
    own sums lose digits to offsets."""
    order = np.argsort(x)
    xs, ys = x[order], y[order]
    n = xs.size
    k = int(frac * n + 1e-10)
    fits = np.empty(n)
    for i, q in enumerate(xs):
        start = int(np.searchsorted((xs[: n - k] + xs[k:]) / 2.0, q))
        d = xs[start : start + k] - q
        level = ys[start : start + k].mean()
        v = ys[start : start + k] - level
        w = (1 - (np.abs(d) / np.abs(d).max()) ** 3) ** 3
        w = w / w.sum()
        mean = w @ d
        spread = max(w @ (d - mean) ** 2, 1e-12)
        fits[i] = level + w @ v + (0.0 - mean) * (w @ ((d - mean) * v)) / spread
    return xs, fits


def test_exact_under_huge_offsets():
    # x near 1e8 and y near 1e6: statsmodels loses 1e-1 to its uncentred sums; the
    # running moments about each segment's anchor keep every digit the data has
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 10.0, 2000) + 1e8
    y = np.sin(x) + 1e6 + rng.normal(size=2000)
    xs, expected = _textbook(x, y, 0.3)
    result = attnpool.lowess(y, x, frac=0.3, it=0)
    np.testing.assert_array_equal(result[:, 0], xs)
    np.testing.assert_allclose(result[:, 1], expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(result[:, 1] - 1e6, expected - 1e6, rtol=0, atol=1e-6)


@pytest.mark.parametrize("rules", [STATSMODELS, R], ids=["statsmodels", "R"])
@pytest.mark.parametrize("name", ["uniform", "ties", "clusters", "heavy tails"])
def test_running_moments_equal_the_direct_sums(rules, name):
    rng = np.random.default_rng(11)
    x, y = _hostile(name, 3000, rng)
    order = np.argsort(x, kind="stable")
    keys, values = x[order], y[order]
    robustness = rng.uniform(0.0, 1.0, keys.size) ** 2
    robustness[::7] = 0.0
    for frac in (0.05, 0.5):
        k = rules.neighbours(frac, keys.size)
        queries = np.unique(keys)
        starts = rules.window_starts(keys, queries, k)
        extent = keys[-1] - keys[0]
        fits, redo = rules.fast(keys, values, robustness, queries, starts, k, extent)
        direct = rules.direct(keys, values, robustness, queries, starts, k,
                              np.zeros(queries.size), extent)  # fmt: skip
        assert redo.mean() < 0.5
        _close(fits[~redo], direct[~redo])


def test_robustness_down_weights_outliers():
    x = np.linspace(0.0, 10.0, 400)
    y = np.sin(x)
    y[::20] += 50.0
    clean = ~np.isin(np.arange(400), np.arange(0, 400, 20))
    plain = attnpool.lowess(y, x, frac=0.2, it=0)[:, 1]
    robust = attnpool.lowess(y, x, frac=0.2, it=3)[:, 1]
    without = attnpool.lowess(np.sin(x), x, frac=0.2, it=3)[:, 1]
    assert np.abs(plain - without)[clean].max() > 1.0
    assert np.abs(robust - without).max() < 0.01


def test_invariances():
    rng = np.random.default_rng(5)
    x, y = rng.uniform(0, 10, 3000), rng.normal(size=3000)
    base = attnpool.lowess(y, x, frac=0.2)[:, 1]
    _close(attnpool.lowess(3.0 * y - 7.0, x, frac=0.2)[:, 1], 3.0 * base - 7.0)
    _close(attnpool.lowess(y, x + 1e4, frac=0.2)[:, 1], base, 1e-9)
    r_base = attnpool.r_lowess(x, y, f=0.2).y
    _close(attnpool.r_lowess(1e-6 * x - 4.0, y, f=0.2).y, r_base, 1e-9)


def test_statsmodels_own_cases():
    x = np.arange(20.0)
    _close(attnpool.lowess(np.zeros(20), x), np.column_stack([x, np.zeros(20)]))
    _close(attnpool.lowess(x, x), np.column_stack([x, x]))
    steps = np.repeat([0.0, 1.0], 10)
    _close(attnpool.lowess(steps, x, frac=0.4), np.column_stack([x, steps]))
    _close(attnpool.lowess(steps, x, frac=0.4, xvals=x[:5]), np.zeros(5))
    rng = np.random.RandomState(8437972)
    ties = np.array([0] + [1] * 100 + [2] * 100 + [3], dtype=float)
    noisy = ties + rng.normal(size=ties.size) * 1e-8
    _close(
        attnpool.lowess(noisy, ties, frac=50 / ties.size, it=1),
        statsmodels_lowess(noisy, ties, frac=50 / ties.size, it=1),
    )
    spike_x = np.linspace(0, 10, 1001)
    spike_y = np.cos(spike_x**2 / 5)
    _close(
        attnpool.lowess(spike_y, spike_x, frac=11 / 1001, it=1),
        statsmodels_lowess(spike_y, spike_x, frac=11 / 1001, it=1),
    )


def test_options_as_statsmodels():
    data = pd.read_csv(RESULTS / "test_lowess_simple.csv")
    y, x = data.y.to_numpy(dtype=float, copy=True), data.x.to_numpy(dtype=float, copy=True)
    y[[5, 6]] = np.nan
    x[3] = np.nan
    rng = np.random.default_rng(0)
    shuffled = rng.permutation(x.size)
    for kwargs in (
        {},
        {"is_sorted": True},
        {"return_sorted": False},
        {"xvals": x[shuffled[:8]]},
        {"xvals": x[shuffled[:8]], "it": 0},
    ):
        _close(attnpool.lowess(y, x, **kwargs), statsmodels_lowess(y, x, **kwargs))
    # statsmodels, told is_sorted, drops a non-finite xval from its answer; NaN keeps
    # the others in their places
    ours = attnpool.lowess(y, x, xvals=x, is_sorted=True)
    assert np.isnan(ours[3])
    _close(np.delete(ours, 3), statsmodels_lowess(y, x, xvals=x, is_sorted=True))
    _close(
        attnpool.lowess(y[shuffled], x[shuffled], return_sorted=False),
        statsmodels_lowess(y[shuffled], x[shuffled], return_sorted=False),
    )
    integers = np.round(data.y.to_numpy()).astype(int)  # and ties in x
    result = attnpool.lowess(integers, data.x.to_numpy().astype(int))
    assert result.dtype == np.float64
    _close(result, statsmodels_lowess(integers, data.x.to_numpy().astype(int)))
    with pytest.raises(ValueError, match="missing='raise'"):
        attnpool.lowess(y, x, missing="raise")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frac": 1.5}, "frac must be a number in \\[0, 1\\]; got 1.5"),
        ({"it": -1}, "it must be a whole number ≥ 0; got -1"),
        ({"it": 2.5}, "it must be a whole number"),
        ({"delta": -1.0}, "delta must be a finite number ≥ 0; got -1.0"),
        ({"missing": "keep"}, "missing must be one of"),
        ({"xvals": [1.0], "delta": 0.5}, "delta must be 0 with xvals"),
        ({"xvals": [[1.0]]}, "xvals must be one-dimensional"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        attnpool.lowess(np.arange(10.0), np.arange(10.0), **kwargs)


def test_bad_data_are_named():
    with pytest.raises(ValueError, match="same length; got 3 and 4"):
        attnpool.lowess(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="exog must be numbers"):
        attnpool.lowess(np.zeros(3), np.array(["a", "b", "c"]))
    with pytest.raises(ValueError, match="must be finite"):
        attnpool.r_lowess([0.0, np.nan, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="f must be a number"):
        attnpool.r_lowess([0.0, 1.0], [1.0, 2.0], f=-0.1)


def test_unfittable_points_warn_not_silently_nan():
    x = np.array([0.0, 0.0, 0.0, 10.0, 11.0, 12.0])  # at 5, a window of three zeros
    with pytest.warns(RuntimeWarning, match="1 of the xvals could not be fitted"):
        fits = attnpool.lowess(x, x, frac=0.5, xvals=[5.0, 10.5], it=0)
    assert np.isnan(fits[0]) and np.isfinite(fits[1])


def test_lowess_loads_no_jax():
    code = (
        "import sys, numpy as np, attnpool; x = np.linspace(0, 1, 10000);"
        "attnpool.lowess(np.sin(x), x); attnpool.r_lowess(x, np.sin(x));"
        "print(sorted(m for m in ('jax', 'scipy', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@settings(max_examples=40, deadline=None)
@given(
    points=st.lists(st.integers(0, 40), min_size=3, max_size=60),
    seed=st.integers(0, 10**6),
    frac=st.floats(0.05, 1.0),
    delta=st.sampled_from([0.0, 0.5, 3.0]),
)
def test_property_statsmodels_first_fit(points, seed, frac, delta):
    # integers make ties and spans smaller than them; it=0 is free of the robustness
    # weights' rounding-level chaos, which the iteration test above handles
    x = np.array(points, dtype=float) / 4.0
    y = np.random.default_rng(seed).normal(size=x.size)
    with np.errstate(invalid="ignore"):
        theirs = statsmodels_lowess(y, x, frac=frac, it=0, delta=delta)
    _close(attnpool.lowess(y, x, frac=frac, it=0, delta=delta), theirs, 1e-9)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    scale=st.floats(1e-3, 1e3),
    shift=st.floats(-1e4, 1e4),
    slope=st.floats(-10.0, 10.0),
)
def test_property_equivariance(seed, scale, shift, slope):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0.0, 1.0, 200), rng.normal(size=200)
    base = attnpool.r_lowess(x, y, f=0.3).y
    moved = attnpool.r_lowess(scale * x + shift, slope * y + shift, f=0.3).y
    _close(moved, slope * base + shift, 1e-8)
    fit = attnpool.lowess(y, x, frac=0.3)[:, 1]
    _close(attnpool.lowess(slope * y + shift, x, frac=0.3)[:, 1], slope * fit + shift, 1e-9)


def test_tiny_inputs_and_missing_none():
    np.testing.assert_array_equal(attnpool.lowess([2.0], [1.0]), [[1.0, 2.0]])
    np.testing.assert_array_equal(attnpool.r_lowess([1.0], [2.0]).y, [2.0])
    _close(attnpool.lowess([1.0, 3.0], [0.0, 1.0]), statsmodels_lowess([1.0, 3.0], [0.0, 1.0]))
    with pytest.raises(ValueError, match="missing='none'"):
        attnpool.lowess([1.0, np.nan, 2.0], [0.0, 1.0, 2.0], missing="none")
    series = pd.Series(np.arange(20.0))
    _close(attnpool.lowess(series, series), statsmodels_lowess(series, series))


@pytest.mark.parametrize("scale", [1e154, 1e200, 2.0**1000])
def test_x_beyond_the_squares_range_gives_the_same_fits(scale):
    # the squares of x's differences overflowed: NaN (statsmodels' rules without
    # robustness steps) or fits 0.5 off, silently, from x near 1e154 on (statsmodels'
    # own lowess does the same); R's relative rules are also scale-free below 1e-154
    rng = np.random.default_rng(6)
    x = rng.integers(0, 30, 300).astype(float)
    y = np.sin(x / 5) + 0.2 * rng.normal(size=300)
    points = np.array([3.5, 10.25])
    for it in (0, 3):
        plain = attnpool.lowess(y, x, frac=0.3, it=it)
        scaled = attnpool.lowess(y, x * scale, frac=0.3, it=it)
        np.testing.assert_allclose(scaled[:, 1], plain[:, 1], rtol=1e-13, atol=1e-14)
    at_points = attnpool.lowess(y, x * scale, frac=0.3, xvals=points * scale)
    np.testing.assert_allclose(at_points, attnpool.lowess(y, x, frac=0.3, xvals=points), atol=1e-14)
    plain_r = attnpool.r_lowess(x, y, f=0.3)
    for r_scale in (scale, 1.0 / scale):
        np.testing.assert_allclose(attnpool.r_lowess(x * r_scale, y, f=0.3).y, plain_r.y,
                                   rtol=1e-13, atol=1e-14)  # fmt: skip
