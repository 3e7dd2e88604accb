"""The fgt method's compiled loops (``expansions.c``) against its NumPy/XLA form and the
textbook formula, and when densities use them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from attnpool import kernel_density, select_density_bandwidth
from attnpool.methods import fgt, native


def textbook_sums(queries, keys, values, h):
    """``[Σ K, Σ K v] · exp(r²/2)`` pair by pair, as :func:`fgt.expansion_sums` scales them."""
    d2 = ((queries[:, None] - keys[None, :]) / h) ** 2
    w = np.exp(-0.5 * (d2 - d2.min(axis=1, keepdims=True)))
    return np.concatenate([w.sum(axis=1, keepdims=True), w @ values], axis=1)


def points(layout: str, seed: int):
    rng = np.random.default_rng(seed)
    if layout == "clustered":
        keys = np.concatenate([rng.normal(0, 0.05, 1500), rng.normal(7, 1.0, 1500)])
    else:
        keys = rng.uniform(-3, 3, 3000)
    queries = np.concatenate([rng.uniform(-4, 9, 400), [-3.4, 9.5, keys[0]]])
    return queries, keys, rng.standard_normal((keys.shape[0], 3))


@pytest.mark.parametrize("layout", ["uniform", "clustered"])
@pytest.mark.parametrize("bandwidth", [0.01, 0.2, 3.0])
def test_the_compiled_loops_equal_the_xla_form_and_the_textbook(
    layout, bandwidth, native_cache, monkeypatch
):
    queries, keys, values = points(layout, 1)
    compiled, settled = fgt.expansion_sums(queries[:, None], keys[:, None], values, 1 / bandwidth)
    assert native.expansions_ready()
    monkeypatch.setenv("CC", "no-such-cc")  # the same call without a compiler: XLA
    assert native.expansion_function("fgt_evaluate") is None
    xla, settled_xla = fgt.expansion_sums(queries[:, None], keys[:, None], values, 1 / bandwidth)
    np.testing.assert_array_equal(settled, settled_xla)
    nearest = np.min(np.abs(queries[:, None] - keys[None, :]), axis=1) / bandwidth
    np.testing.assert_array_equal(settled, nearest <= fgt.MAX_NEAREST)  # the rest: by pairs
    want = textbook_sums(queries, keys, values, bandwidth)
    scale = want[:, :1]  # the expansion's error is relative to the row's weight
    for got in (compiled, xla):
        np.testing.assert_allclose(got[settled] / scale[settled], want[settled] / scale[settled],
                                   rtol=0, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(compiled[settled], xla[settled], rtol=1e-12, atol=1e-13)


def test_more_coefficients_than_the_loop_holds_are_built_in_numpy():
    # 40 value columns × the order exceed the compiled box's MAX_TERMS
    rng = np.random.default_rng(2)
    keys, queries = rng.uniform(0, 20, 2000), rng.uniform(0, 20, 300)
    values = rng.standard_normal((2000, 40))
    order = fgt.plan(9.0)[2]
    assert order * 41 > fgt.COMPILED_MAX_TERMS
    got, settled = fgt.expansion_sums(queries[:, None], keys[:, None], values, 1 / 0.3)
    assert settled.all()
    want = textbook_sums(queries, keys, values, 0.3)
    np.testing.assert_allclose(got / want[:, :1], want / want[:, :1], rtol=0, atol=1e-12)


def test_a_window_outside_the_table_is_not_a_number():
    # a query whose window would leave the table is NaN, for the caller to sum otherwise
    # (expansion_sums marks it unsettled); queries of nearby boxes run together, each
    # with its own window, as each would alone
    evaluate = native.expansion_function("fgt_evaluate")
    order, half, columns = 4, 2, 2 * (2 * 2 + 1) + 1
    table = np.random.default_rng(5).uniform(size=(order, columns))
    at = native.address

    def sums(u):
        u, out = np.asarray(u, np.float64), np.empty((len(u), 1))
        evaluate(at(u), at(np.zeros(len(u))), len(u), at(table), columns, 1, 1.0, half, order,
                 at(out))  # fmt: skip
        return out[:, 0]

    got = sums([0.5, 1.2, 3.5, 4.5, -40.0, 400.0])
    assert np.isfinite(got[:3]).all() and np.isnan(got[3:]).all()
    np.testing.assert_allclose(got[:3], [sums([u])[0] for u in (0.5, 1.2, 3.5)], rtol=1e-15)


def test_a_small_density_builds_no_loop_but_runs_on_one_already_built(native_cache, monkeypatch):
    rng = np.random.default_rng(3)
    x, q = rng.normal(size=(400, 1)), rng.normal(size=(300, 1))
    log_k = -0.5 * ((q - x.T) / 0.2) ** 2  # the textbook, pair by pair
    want = np.exp(logsumexp(log_k, axis=1)) / (400 * 0.2 * np.sqrt(2 * np.pi))
    calls, expansion_sums = [], fgt.expansion_sums
    monkeypatch.setattr(fgt, "expansion_sums",
                        lambda *a, **k: calls.append(1) or expansion_sums(*a, **k))  # fmt: skip
    on_numpy = kernel_density(x, q, bandwidth=0.2)
    assert not calls and not list(native_cache.rglob("*.so"))  # nothing compiled
    native.expansion_function("fgt_evaluate")  # built, as a larger call would
    on_the_loop = kernel_density(x, q, bandwidth=0.2)
    assert calls and len(list(native_cache.rglob("expansions-*.so"))) == 1
    for got in (on_numpy, on_the_loop):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_likelihood_search_builds_the_loop_and_finds_the_pairs_optimum(native_cache, monkeypatch):
    x = np.random.default_rng(4).standard_t(5, size=(1200, 1))
    fast = select_density_bandwidth(x, method="cv_ml")
    assert [p.name.split("-")[0] for p in native_cache.rglob("*.so")] == ["expansions"]
    monkeypatch.setenv("CC", "no-such-cc")  # the same search without a compiler
    native._failures.clear()
    other = select_density_bandwidth(x, method="cv_ml")
    np.testing.assert_allclose(fast.objective, other.objective, rtol=1e-12)
    np.testing.assert_allclose(fast.bandwidth, other.bandwidth, rtol=1e-5)


def test_a_compiler_that_cannot_build_the_expansions_still_builds_the_loop(
    native_cache, monkeypatch, tmp_path
):
    # a failure is remembered per source: fgt takes its XLA form (with a warning), and
    # method="native" keeps its compiled loop
    picky = tmp_path / "picky-cc"
    picky.write_text('#!/bin/sh\ncase "$*" in *expansions.c*) exit 1;; esac\nexec cc "$@"\n')
    picky.chmod(0o755)
    monkeypatch.setenv("CC", str(picky))
    queries, keys, values = points("uniform", 5)
    with pytest.warns(RuntimeWarning, match="compiled host loops are unavailable"):
        sums, settled = fgt.expansion_sums(queries[:, None], keys[:, None], values, 1 / 0.2)
    assert settled.any() and not native.expansions_ready()
    assert native.available()
    want = textbook_sums(queries, keys, values, 0.2)
    np.testing.assert_allclose(sums[settled] / want[settled, :1], want[settled] / want[settled, :1],
                               rtol=0, atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("weighted", [False, True])
def test_rows_far_from_every_key_sum_over_the_keys_within_their_reach(weighted):
    # rows the expansions leave unsettled (over 8 bandwidths from every key) are summed
    # over the keys fgt.reach names only: the textbook over every key, weights included
    from attnpool import log_density

    rng = np.random.default_rng(6)
    x = np.concatenate([rng.normal(size=100_000), [30.0, 31.0, -25.0]])
    w = rng.uniform(1e-3, 1.0, x.size) if weighted else None
    q = np.concatenate([rng.normal(size=40), [12.0, 20.0, 29.0, -18.0, 60.0, -300.0]])
    got = log_density(x, q, bandwidth=0.1, weights=w)
    ww = np.ones(x.size) if w is None else w
    want = logsumexp(-0.5 * ((q[:, None] - x[None, :]) / 0.1) ** 2, b=ww, axis=1) - np.log(
        np.sum(ww) * 0.1 * np.sqrt(2 * np.pi)
    )
    np.testing.assert_allclose(got, want, rtol=1e-12)
    centres = np.array([12.0, 29.0])
    nearest2 = (np.min(np.abs(centres[:, None] - x[None, :]), axis=1) / 0.1) ** 2
    radii = 0.1 * fgt.reach(nearest2, x.size)
    near = fgt.keys_within(x, centres, radii)
    brute = np.flatnonzero(np.any(np.abs(x[:, None] - centres) <= radii, axis=1))
    np.testing.assert_array_equal(near, brute)
    assert 100_000 in near and near.size < 100  # a few of 100 003 (31 is out of reach of 29)


def test_keys_within_merged_intervals_match_brute_force_across_chunks():
    rng = np.random.default_rng(7)
    x = rng.uniform(-50, 50, 3 * fgt.KEY_CHUNK + 17)  # chunks of keys, the last partial
    centres = np.array([-40.0, -39.5, 0.0, 49.9, 200.0])  # two overlap; one near no key
    radii = np.array([0.4, 0.3, 1e-3, 0.2, 1.0])
    near = fgt.keys_within(x, centres, radii)
    brute = np.flatnonzero(np.any(np.abs(x[:, None] - centres) <= radii, axis=1))
    np.testing.assert_array_equal(near, brute)
    assert fgt.keys_within(x, np.array([500.0]), np.array([1.0])).size == 0


@pytest.mark.parametrize(
    "centres, radii",
    [
        ([-9.0, 9.0], [5.0, 4.5]),  # the rows beyond both ends of the data
        ([-9.0, 0.3], [5.0, 0.2]),  # one beyond, one inside
        ([0.0], [20.0]),  # an interval over all the points
        ([30.0], [1.0]),  # none within
    ],
)
@pytest.mark.parametrize("known", [False, True])
def test_keys_within_intervals_are_the_brute_forces(centres, radii, known):
    # with the points' extent known, an interval's side beyond it is not compared
    points = np.random.default_rng(12).normal(size=200_003)  # chunks, and a partial one
    centres, radii = np.array(centres), np.array(radii)
    extent = (float(points.min()), float(points.max())) if known else None
    got = fgt.keys_within(points, centres, radii, extent=extent)
    want = np.flatnonzero((np.abs(points[:, None] - centres) <= radii).any(axis=1))
    np.testing.assert_array_equal(got, want)
