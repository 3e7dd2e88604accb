"""Sums the NumPy pairs backend alone serves: signed (higher-order) kernels and bandwidths
that vary by query or by key (:class:`~attnpool.sums.problem.SumProblem`'s
``bandwidth_by``) — equal to the textbook's sums written out pair by pair, zero
bandwidths taken as their limit, the nearest-key limit measured in each pair's bandwidth,
and every other backend refusing them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnpool
from attnpool import kernels
from attnpool.engines.compiled_backends import ENGINES
from attnpool.kernels.signed import log_abs_polynomial, signed_log_weights
from attnpool.sums import layer, pairs
from attnpool.sums.backends import NUMPY_PAIRS, exact_log_sums
from attnpool.sums.exact_pairs import heaviest_keys
from attnpool.sums.facts import finish_facts
from attnpool.sums.problem import SumProblem
from sum_problems import brute_backend

HIGHER_ORDER = ["gaussian-order4", "gaussian-order8", "epanechnikov-order4", "epanechnikov-order6"]


def _textbook_weight(q, k, h, kernel, per_key: bool) -> float:
    """One pair's ``Π_c K(u_c)`` (a product kernel) or ``K(‖u‖)``, over ``Π h`` for a
    key's own bandwidth, from the kernel's own ``__call__`` (normalised: the constant
    cancels in every ratio, and is divided out of the sums below)."""
    u = (q - k) / h
    if kernel.product or kernel.base is not None:
        value = float(np.prod(kernel(u))) / math.exp(len(u) * kernel.log_norm)
    else:
        value = float(kernel(np.array([np.linalg.norm(u)]))[0]) / math.exp(kernel.log_norm)
    return value / float(np.prod(h)) if per_key else value


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(HIGHER_ORDER),
    us=st.lists(st.floats(-6, 6, allow_nan=False), min_size=1, max_size=3),
)
def test_signed_weights_are_the_kernel_s_magnitude_and_sign(name, us):
    kernel = kernels.get(name)
    log_w, sign = signed_log_weights([np.array([u]) for u in us], kernel)
    expected = _textbook_weight(np.array(us), np.zeros(len(us)), np.ones(len(us)), kernel, False)
    found = float(sign[0] * np.exp(log_w[0]))
    assert found == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("name", HIGHER_ORDER)
def test_far_pairs_neither_overflow_nor_turn_nan(name):
    kernel = kernels.get(name)
    us = [np.array([0.5, 1e160, 1e300, np.inf])]
    log_w, sign = signed_log_weights(us, kernel)
    assert np.isfinite(log_w[0]) and np.all(log_w[1:] == -np.inf) and not np.isnan(sign).any()
    coefficients = kernel.polynomial
    log_p, sign_p = log_abs_polynomial(coefficients, np.array([1e300]))
    degree = len(coefficients) - 1
    expected = degree * math.log(1e300) + math.log(abs(coefficients[-1]))
    assert log_p[0] == pytest.approx(expected, rel=1e-14)
    assert sign_p[0] == np.sign(coefficients[-1])


def _random_problem(rng, by: str, kernel, *, weighted: bool, leave_one_out: bool):
    m, d = 30, 2
    keys = rng.uniform(0, 4, (m, d))
    queries = keys.copy() if leave_one_out else rng.uniform(0, 4, (12, d))
    n = queries.shape[0]
    bandwidth = {"fixed": rng.uniform(0.8, 2, d), "query": rng.uniform(0.8, 2, (n, d)),
                 "key": rng.uniform(0.8, 2, (m, d))}[by]  # fmt: skip
    weights = rng.uniform(0.2, 3, m) if weighted else None
    left_out = np.arange(m) if leave_one_out else None
    return SumProblem(queries, keys, rng.normal(size=(m, 2)), bandwidth, kernel,
                      weights=weights, left_out=left_out, bandwidth_by=by)  # fmt: skip


def _pair_bandwidth(problem: SumProblem, i: int, j: int) -> np.ndarray:
    """``h (d,)`` of the pair of query ``i`` and key ``j``."""
    return {"fixed": problem.bandwidth, "query": problem.bandwidth[i % len(problem.bandwidth)],
            "key": problem.bandwidth[j % len(problem.bandwidth)]}[problem.bandwidth_by]  # fmt: skip


def _textbook_weights(problem: SumProblem, i: int) -> np.ndarray:
    """``(m,)``: query ``i``'s weights ``ω_j K_ij`` (its left-out key 0)."""
    found = np.array([
        _textbook_weight(problem.queries[i], k, _pair_bandwidth(problem, i, j), problem.kernel,
                         problem.bandwidth_by == "key")
        for j, k in enumerate(problem.keys)
    ])  # fmt: skip
    if problem.weights is not None:
        found *= problem.weights
    if problem.left_out is not None and problem.left_out[i] >= 0:
        found[problem.left_out[i]] = 0.0
    return found


def _textbook_sums(problem: SumProblem) -> np.ndarray:
    rows = [_textbook_weights(problem, i) for i in range(problem.sizes[0])]
    return np.array([[w.sum(), *(w @ problem.values)] for w in rows])


@pytest.mark.parametrize("by", ["fixed", "query", "key"])
@pytest.mark.parametrize("name", ["gaussian", "epanechnikov", "gaussian-order4",
                                  "epanechnikov-order6"])  # fmt: skip
@pytest.mark.parametrize(("weighted", "leave_one_out"), [(False, False), (True, True)])
def test_sums_are_the_textbook_sums_pair_by_pair(by, name, weighted, leave_one_out):
    rng = np.random.default_rng(len(by) + len(name) + weighted)
    problem = _random_problem(rng, by, kernels.get(name), weighted=weighted,
                              leave_one_out=leave_one_out)  # fmt: skip
    found = exact_log_sums(problem)
    sums = np.exp(found.shift)[:, None] * found.sums
    expected = _textbook_sums(problem)
    np.testing.assert_allclose(sums, expected, rtol=1e-11, atol=1e-12 * np.abs(expected).max())


def test_the_sums_of_a_signed_kernel_s_square_are_positive():
    rng = np.random.default_rng(8)
    problem = _random_problem(rng, "key", kernels.get("gaussian-order4"), weighted=True,
                              leave_one_out=False)  # fmt: skip
    found = exact_log_sums(problem.replace(power=2))
    squares = [_textbook_weights(problem, i) ** 2 / problem.weights
               for i in range(problem.sizes[0])]  # fmt: skip
    expected = np.array([[w.sum(), *(w @ problem.values)] for w in squares])
    np.testing.assert_allclose(np.exp(found.shift)[:, None] * found.sums, expected, rtol=1e-11)


@pytest.mark.parametrize("by", ["query", "key"])
@pytest.mark.parametrize("name", ["gaussian", "gaussian-order4"])
def test_local_linear_is_weighted_least_squares_with_each_pair_s_bandwidth(by, name):
    rng = np.random.default_rng(3)
    problem = _random_problem(rng, by, kernels.get(name), weighted=True, leave_one_out=False)
    problem = problem.replace(degree=1)
    problem = problem.replace(origin=heaviest_keys(problem))
    fit, slopes, empty = layer.local_fit(NUMPY_PAIRS, problem)
    assert not empty.any()
    for i in range(problem.sizes[0]):
        w = _textbook_weights(problem, i)
        design = np.concatenate([np.ones((problem.sizes[1], 1)),
                                 problem.keys - problem.queries[i]], axis=1)  # fmt: skip
        beta = np.linalg.solve((design.T * w) @ design, (design.T * w) @ problem.values)
        np.testing.assert_allclose(fit[i], beta[0], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(slopes[i], beta[1:], rtol=1e-8, atol=1e-10)


def test_a_zero_bandwidth_keeps_the_pairs_equal_in_the_most_such_columns():
    kernel = kernels.get("gaussian")
    keys = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    values = np.array([[1.0], [2.0], [4.0], [8.0]])
    query = np.array([[0.0, 0.25]])
    # column 0's bandwidth is 0 at this query: only keys with x₀ = 0 count, by column 1
    problem = SumProblem(query, keys, values, np.array([[0.0, 1.0]]), kernel,
                         bandwidth_by="query")  # fmt: skip
    found = exact_log_sums(problem)
    near, far = math.exp(-(0.25**2) / 2), math.exp(-(0.75**2) / 2)
    sums = np.exp(found.shift) * found.sums[0]
    np.testing.assert_allclose(sums / sums[0], [1.0, (1 * near + 2 * far) / (near + far)])
    # both columns 0: the key equal in both alone; left out, no key (each is unequal in
    # a column whose kernel is then a point mass)
    both = problem.replace(bandwidth=np.zeros((1, 2)), queries=np.array([[0.0, 0.0]]))
    found = exact_log_sums(both)
    assert found.sums[0, 1] / found.sums[0, 0] == 1.0
    assert exact_log_sums(both.replace(left_out=np.array([0]))).sums[0, 0] == 0.0


def test_the_nearest_limit_measures_each_pair_in_its_own_bandwidth():
    kernel = kernels.get("epanechnikov")
    keys = np.array([[0.0], [-10.0], [3.0]])
    values = np.array([[1.0], [5.0], [7.0]])
    bandwidth = np.array([[0.1], [100.0], [0.1]])
    # beyond every key's support (|400 − k| / h: 4000, 4.1, 3970): nearest in those units
    # is the key at −10, although the one at 3 is nearer in the data's units
    far = SumProblem(np.array([[400.0]]), keys, values, bandwidth, kernel, bandwidth_by="key")
    fit, _, empty = pairs.local_fit(far)
    assert empty[0] and fit[0, 0] == 5.0
    # a left-out row's limit is over the other keys
    loo = SumProblem(keys, keys, values, bandwidth, kernel, left_out=np.arange(3),
                     bandwidth_by="key")  # fmt: skip
    limit = layer.nearest_limit(loo, np.array([True, True, True]))
    assert limit[1, 0] == 1.0 or limit[1, 0] == 7.0
    assert np.all(limit[:, 0] != values[:, 0])


@pytest.mark.parametrize("by", ["query", "key"])
def test_every_other_backend_refuses_varying_bandwidths(by):
    with brute_backend("brute-varying"):
        problem = _random_problem(np.random.default_rng(0), by, kernels.get("gaussian"),
                                  weighted=False, leave_one_out=False)  # fmt: skip
        said = f"method: 'brute-varying' takes bandwidths 'fixed'; received bandwidths by '{by}'"
        with pytest.raises(ValueError, match=said):
            layer.solve("brute-varying", problem)
        for engine in ENGINES.values():  # the compiled engines, by their declarations
            assert f"received bandwidths by '{by}'" in engine.refusal(problem)
        assert finish_facts(problem).pairs_only  # its re-sums: NumPy pairs at any size
        fixed = problem.replace(bandwidth=np.ones(2), bandwidth_by="fixed")
        assert layer.solve("brute-varying", fixed).sums.shape == (12, 3)


def test_a_backend_that_declares_signed_weights_pools_them_and_its_rows_are_finished_exactly():
    rng = np.random.default_rng(5)
    q, k, v = rng.uniform(0, 3, (9, 1)), rng.uniform(0, 3, (40, 1)), rng.normal(size=(40, 2))
    declared = attnpool.Serves(signed=True, bandwidth_by=("fixed", "query", "key"))

    def every_other(n: int) -> np.ndarray:  # the rest: for the finishing step
        return np.arange(n) % 2 == 0

    with brute_backend("signed-brute", declared, every_other):
        for name in ("gaussian-order4", "epanechnikov-order6"):
            want = attnpool.attention_pool(q, k, v, kernel=name, bandwidth=0.7)
            got = attnpool.attention_pool(q, k, v, kernel=name, bandwidth=0.7,
                                          method="signed-brute")  # fmt: skip
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with (
        brute_backend("plain"),
        pytest.raises(
            ValueError,
            match="method: 'plain' takes non-negative kernels; received 'gaussian-order4'",
        ),
    ):
        attnpool.attention_pool(q, k, v, kernel="gaussian-order4", bandwidth=0.7, method="plain")
