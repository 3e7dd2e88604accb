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
def test_the_compiled_loops_equal_the_xla_form_and_the_textbook(layout, bandwidth, monkeypatch):
    queries, keys, values = points(layout, 1)
    compiled, settled = fgt.expansion_sums(queries[:, None], keys[:, None], values, 1 / bandwidth)
    assert native.expansions_ready()
    monkeypatch.setenv("ATTNPOOL_INSTRUCTION_SET", "none")  # the same call without the loops: XLA
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


def test_a_small_density_runs_on_the_loop_and_equals_numpys(monkeypatch):
    rng = np.random.default_rng(3)
    x, q = rng.normal(size=(400, 1)), rng.normal(size=(300, 1))
    log_k = -0.5 * ((q - x.T) / 0.2) ** 2  # the textbook, pair by pair
    want = np.exp(logsumexp(log_k, axis=1)) / (400 * 0.2 * np.sqrt(2 * np.pi))
    calls, expansion_sums = [], fgt.expansion_sums
    monkeypatch.setattr(fgt, "expansion_sums",
                        lambda *a, **k: calls.append(1) or expansion_sums(*a, **k))  # fmt: skip
    on_the_loop = kernel_density(x, q, bandwidth=0.2)
    assert calls
    monkeypatch.setenv("ATTNPOOL_INSTRUCTION_SET", "none")
    calls.clear()
    on_numpy = kernel_density(x, q, bandwidth=0.2)
    assert not calls
    for got in (on_numpy, on_the_loop):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_likelihood_search_on_the_loop_finds_the_pairs_optimum(monkeypatch):
    x = np.random.default_rng(4).standard_t(5, size=(1200, 1))
    fast = select_density_bandwidth(x, method="cv_ml")
    monkeypatch.setenv("ATTNPOOL_INSTRUCTION_SET", "none")  # the same search without the loops
    other = select_density_bandwidth(x, method="cv_ml")
    np.testing.assert_allclose(fast.objective, other.objective, rtol=1e-12)
    np.testing.assert_allclose(fast.bandwidth, other.bandwidth, rtol=1e-5)


def far_clusters():
    """5000 points on [0, 1], single points at 10⁹ and -5·10⁸, a pair at 2·10⁹."""
    rng = np.random.default_rng(3)
    cluster = np.sort(rng.uniform(0, 1, 5000))
    keys = np.r_[cluster, 1e9, 2e9, 2e9 + 0.001, -5e8]
    values = np.r_[np.sin(12 * cluster), 0.3, 1.0, 2.0, -1.0]
    queries = np.r_[np.linspace(-0.1, 1.1, 50), 1e9 + 0.002, 2e9 + 0.0004, -5e8 - 0.001]
    return queries, keys, values


@pytest.mark.parametrize("bandwidth", [0.003, 0.03])
def test_clusters_far_apart_keep_their_digits(bandwidth):
    """Centred on the whole sample's midrange (7.5·10⁸), the cluster on [0, 1] lost its
    digits: densities 5e-4 off; pools refused the table of 10¹² boxes between the
    clusters (every row summed pair by pair). Each cluster is now laid out about its own
    midrange, the gaps between them closed."""
    queries, keys, values = far_clusters()
    long = np.longdouble
    u = (queries.astype(long)[:, None] - keys.astype(long)[None, :]) / long(bandwidth)
    weights = np.exp(-0.5 * u * u - np.max(-0.5 * u * u, axis=1, keepdims=True))
    pooled = weights @ values / weights.sum(axis=1)
    density = np.exp(-0.5 * u * u).sum(axis=1) / (keys.size * bandwidth * np.sqrt(2 * np.pi))
    from attnpool import attention_pool, log_density

    got = attention_pool(queries, keys, values, bandwidth=bandwidth, method="fgt")
    np.testing.assert_allclose(got, pooled.astype(float), rtol=1e-12, atol=1e-13)
    close = np.exp(log_density(keys, queries, bandwidth=bandwidth, method="fgt"))
    np.testing.assert_allclose(close[:50], density[:50].astype(float), rtol=1e-12)
    centre = float(keys.min() / 2 + keys.max() / 2)
    _, settled = fgt.expansion_sums(queries[:, None], keys[:, None], values[:, None],
                                    1 / bandwidth, centre=centre)  # fmt: skip
    inside = (queries >= 0) & (queries <= 1)
    assert settled[inside].all()  # expanded, not left to the exact path


def test_a_far_row_reaches_its_nearest_key():
    """``r² + 2 log(m / tol)`` rounds to ``r²`` far from every key: the reach is widened
    by a few units of rounding, so the keys within it are never none."""
    keys = np.array([1e9])
    for query in np.random.default_rng(0).uniform(0, 1, 200):  # a third rounded below
        nearest2 = float((keys[0] - query) / 0.003) ** 2
        radius = 0.003 * fgt.reach(nearest2, 20)
        assert fgt.keys_within(keys, np.array([query]), np.array([radius])).size == 1
