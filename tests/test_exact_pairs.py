"""The NumPy pairs backend (:mod:`attnpool.sums.exact_pairs`): the sums of a problem —
weights and values, categorical columns, local linear's moments about a reference key —
equal to brute-force loops written from the textbook; observation weights multiplied
after the shift (exact at tiny bandwidths); the layer's local fit equal to weighted
least squares at each query; and a backend that does not declare moments or categorical
columns refused them."""

from __future__ import annotations

import dataclasses
import itertools

import jax
import numpy as np
import pytest

from attnpool import kernels
from attnpool.sums import layer
from attnpool.sums.backends import NUMPY_PAIRS, exact_log_sums
from attnpool.sums.exact_pairs import heaviest_keys
from attnpool.sums.local_model import solve_moments
from attnpool.sums.problem import SumProblem
from sum_problems import brute_backend


def _brute_weight(q, k, h, var_type, levels):
    """``K`` of one pair, written out: the Gaussian profile ``exp(−‖u‖²/2)`` of the
    continuous columns times Aitchison–Aitken's (``"u"``) or Wang–van Ryzin's (``"o"``)
    kernel of each categorical one, ``λ = h``."""
    u2 = sum(((q[j] - k[j]) / h[j]) ** 2 for j, t in enumerate(var_type) if t == "c")
    weight = np.exp(-u2 / 2)
    for j, t in enumerate(var_type):
        if t == "c":
            continue
        lam, same = h[j], q[j] == k[j]
        if t == "u":
            weight *= 1 - lam if same else lam / (levels[j] - 1)
        else:
            weight *= 1 - lam if same else (1 - lam) / 2 * lam ** abs(q[j] - k[j])
    return weight


def _brute_sums(problem: SumProblem) -> np.ndarray:
    """``(n, width)``: ``Σ ω K [1, r, δ, δδᵀ, δrᵀ]`` by loops over every pair."""
    q, k, v, h = problem.queries, problem.keys, problem.values, problem.bandwidth
    var_type = problem.var_type or "c" * k.shape[1]
    units = np.array([h[j] if t == "c" else 1.0 for j, t in enumerate(var_type)])
    out = np.zeros((q.shape[0], problem.width))
    for i, j in itertools.product(range(q.shape[0]), range(k.shape[0])):
        if problem.left_out is not None and problem.left_out[i] == j:
            continue
        w = _brute_weight(q[i], k[j], h, var_type, problem.levels)
        w *= 1.0 if problem.weights is None else problem.weights[j]
        if problem.degree == 0:
            out[i] += w * np.concatenate([[1.0], v[j]])
            continue
        o = problem.origin[i]
        about_k, about_v = (q[i], np.zeros(v.shape[1])) if o < 0 else (k[o], v[o])
        delta, r = (k[j] - about_k) / units, v[j] - about_v
        terms = [[1.0], r, delta, np.outer(delta, delta).ravel(), np.outer(delta, r).ravel()]
        out[i] += w * np.concatenate(terms)
    return out


def _mixed_problem(var_type: str, degree: int, seed: int = 0) -> SumProblem:
    rng = np.random.default_rng(seed)
    m, n = 30, 12
    columns = [rng.normal(size=m) if t == "c" else rng.integers(0, 4, m).astype(float)
               for t in var_type]  # fmt: skip
    keys = np.stack(columns, axis=1)
    queries = keys[rng.integers(0, m, n)] + np.where(np.array(list(var_type)) == "c", 0.3, 0.0)
    values = rng.normal(size=(m, 2)) + 5.0
    bandwidth = np.array([0.7 if t == "c" else 0.3 for t in var_type])
    levels = tuple(int(np.unique(keys[:, j]).size) if t == "u" else 0
                   for j, t in enumerate(var_type))  # fmt: skip
    problem = SumProblem(queries, keys, values, bandwidth, kernels.get("gaussian"),
                         weights=rng.uniform(0.5, 2.0, m), left_out=rng.integers(-1, m, n),
                         var_type=var_type, levels=levels, degree=degree)  # fmt: skip
    if degree:
        origin = rng.integers(-1, m, n)  # any key will do as the reference, or the query
        problem = dataclasses.replace(problem, origin=origin)
    return problem


@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("var_type", ["c", "cc", "cu", "co", "uo"])
def test_the_sums_are_the_brute_force_loops(var_type, degree):
    problem = _mixed_problem(var_type, degree)
    found = exact_log_sums(problem)
    assert found.sums.shape == (12, problem.width) and found.settled.all()
    want = _brute_sums(problem)
    np.testing.assert_allclose(np.exp(found.shift)[:, None] * found.sums, want, rtol=1e-12,
                               atol=1e-12 * np.max(np.abs(want)))  # fmt: skip


def test_weights_multiply_after_the_shift_at_tiny_bandwidths():
    # log K ≈ −5.6·10¹⁴ rounds in steps of 0.0625: log 2 added there became 0.6875, and
    # the pool 0.6654
    keys, values = np.array([[-1.0], [1.0]]), np.array([[0.0], [1.0]])
    problem = SumProblem(np.zeros((1, 1)), keys, values, np.array([3e-8]),
                         kernels.get("gaussian"), weights=np.array([1.0, 2.0]))  # fmt: skip
    found = exact_log_sums(problem)
    assert found.sums[0, 1] / found.sums[0, 0] == pytest.approx(2 / 3, rel=1e-15)
    log_total = found.shift[0] + np.log(found.sums[0, 0])
    assert log_total == pytest.approx(-0.5 / 3e-8**2 + np.log(3.0), abs=0.2)


def test_values_at_the_floats_bottom_survive_weights_far_below_the_largest():
    # the row's keys weigh 2⁻⁴⁰⁰ of the heaviest key elsewhere: each row is scaled by itself
    keys = np.array([[0.0], [100.0]])
    values = np.array([[2.0**-1000], [1.0]])
    problem = SumProblem(np.zeros((1, 1)), keys, values, np.ones(1), kernels.get("epanechnikov"),
                         weights=np.array([2.0**-400, 1.0]))  # fmt: skip
    found = exact_log_sums(problem)
    assert found.sums[0, 1] / found.sums[0, 0] == 2.0**-1000
    assert found.shift[0] + np.log(found.sums[0, 0]) == pytest.approx(-400 * np.log(2), rel=1e-15)


def test_the_heaviest_key_weighs_its_weight_leaves_out_its_own_and_is_none_where_none_reach():
    keys = np.array([[0.0], [0.5], [3.0]])
    problem = SumProblem(np.array([[0.0], [0.0], [10.0]]), keys, np.ones((3, 1)), np.ones(1),
                         kernels.get("epanechnikov"), weights=np.array([1.0, 4.0, 1.0]),
                         left_out=np.array([-1, 1, -1]))  # fmt: skip
    # row 0: K(0)·1 = 1 < K(0.5)·4 = 3; row 1 leaves key 1 out; row 2 reaches nothing
    assert heaviest_keys(problem).tolist() == [1, 0, -1]


def _weighted_least_squares(x, y, q, h, weights):
    """The local linear fit at ``q``: least squares of ``y`` on ``[1, x − q]`` with weights
    ``ω K((x − q)/h)`` (the textbook's definition)."""
    w = weights * np.exp(-0.5 * np.sum(((x - q) / h) ** 2, axis=1))
    design = np.concatenate([np.ones((x.shape[0], 1)), x - q], axis=1)
    root = np.sqrt(w)[:, None]
    coefficients = np.linalg.lstsq(design * root, y * root, rcond=None)[0]
    return coefficients[0], coefficients[1:]


@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_a_local_linear_fit_is_weighted_least_squares_at_each_query(offset):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (60, 2)) + offset
    y = np.stack([np.sin(3 * x[:, 0] - 3 * offset) + x[:, 1], np.cos(x[:, 1])], axis=1)
    q, h, w = x[:9] + 0.05, np.array([0.4, 0.6]), rng.uniform(0.2, 3.0, 60)
    problem = SumProblem(q, x, y, h, kernels.get("gaussian"), weights=w, degree=1)
    problem = dataclasses.replace(problem, origin=heaviest_keys(problem))
    fit, slopes, empty = layer.local_fit(NUMPY_PAIRS, problem)
    assert not empty.any()
    for i in range(q.shape[0]):
        want_fit, want_slopes = _weighted_least_squares(x, y, q[i], h, w)
        np.testing.assert_allclose(fit[i], want_fit, rtol=0, atol=1e-9)
        np.testing.assert_allclose(slopes[i], want_slopes, rtol=0, atol=1e-8)


def test_a_backend_is_refused_moments_and_column_types_it_does_not_declare():
    with brute_backend("brute-degree-0"):
        with pytest.raises(ValueError, match=r"^method: 'brute-degree-0' sums the moments of "
                           r"degrees \[0\]; received 1"):  # fmt: skip
            layer.solve("brute-degree-0", _mixed_problem("c", 1))
        with pytest.raises(ValueError, match=r"^method: 'brute-degree-0' takes the column types "
                           r"'c'; received var_type='cu'"):  # fmt: skip
            layer.solve("brute-degree-0", _mixed_problem("cu", 0))
        problem = _mixed_problem("cc", 0)
        np.testing.assert_array_equal(layer.solve("brute-degree-0", problem).sums,
                                      exact_log_sums(problem).sums)  # fmt: skip


@pytest.mark.parametrize("signed", [False, True])
def test_the_one_column_solve_is_the_batched_solve(signed):
    # the host's one-column form divides where the batched form solves 1 × 1 systems
    import jax.numpy as jnp

    rng = np.random.default_rng(5)
    p = 2
    means = rng.normal(size=(40, p + 1 + 1 + p))
    means[:, p + 1] = means[:, p] ** 2 + rng.uniform(-0.5 if signed else 0.0, 1.0, 40)
    means[:4, p + 1] = means[:4, p] ** 2  # no spread: the ridge decides
    offset = rng.normal(size=(40, 1))
    with jax.enable_x64(True):
        batched = solve_moments(jnp.asarray(means), 1, p, 1, jnp.asarray(offset), signed)
        batched = [np.asarray(part) for part in batched]
    host = solve_moments(means, 1, p, 1, offset, signed)
    for got, want in zip(host, batched, strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_a_replaced_problem_forgets_what_it_derived():
    keys = np.array([[0.0], [1.0], [2.0]])
    problem = SumProblem(keys, keys, np.array([[1.0], [2.0], [4.0]]), np.ones(1),
                         kernels.get("gaussian"), degree=1, origin=np.array([0, 0, 0]))  # fmt: skip
    assert problem.reference()[1].ravel().tolist() == [1.0, 1.0, 1.0]
    moved = problem.replace(origin=np.array([2, 1, -1]))
    assert moved.reference()[1].ravel().tolist() == [4.0, 2.0, 0.0]
    assert moved.reference()[0].ravel().tolist() == [2.0, 1.0, 2.0]
    want = dataclasses.replace(problem, origin=np.array([2, 1, -1]))
    for field in dataclasses.fields(SumProblem):
        assert getattr(moved, field.name) is getattr(want, field.name) or field.name == "origin"


def test_the_reference_of_one_column_is_the_nearest_key_first_of_ties():
    keys = np.array([[0.0], [2.0], [4.0], [-3.0]])
    queries = np.array([[1.0], [2.9], [-10.0], [1e6]])
    problem = SumProblem(queries, keys, np.ones((4, 1)), np.array([1e-3]),
                         kernels.get("tricube"), degree=1)  # fmt: skip
    assert heaviest_keys(problem).tolist() == [0, 1, 3, 2]


def test_the_nearest_keys_of_a_large_column_are_found_by_a_sorted_search():
    # beyond one block of pairs: a nearest key (ties rounded to one decimal), never the
    # row's own, equal in distance to the dense search's
    rng = np.random.default_rng(8)
    keys = np.round(rng.normal(size=(1200, 1)), 1)
    left_out = np.where(rng.uniform(size=1200) < 0.8, np.arange(1200), -1)
    problem = SumProblem(keys, keys, np.ones((1200, 1)), np.array([0.2]),
                         kernels.get("tricube"), left_out=left_out, degree=1)  # fmt: skip
    found = heaviest_keys(problem)
    distances = np.abs(keys - keys.T)
    distances[np.flatnonzero(left_out >= 0), left_out[left_out >= 0]] = np.inf
    assert np.all(found >= 0) and np.all(found != left_out)
    np.testing.assert_array_equal(distances[np.arange(1200), found], distances.min(axis=1))


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_the_nearest_keys_of_large_columns_are_found_by_a_tree(kernel):
    # several columns of unequal bandwidths, 10⁶ from the origin, ties: a nearest key
    # in the scaled distance, never the row's own
    rng = np.random.default_rng(9)
    keys = np.round(rng.normal(size=(700, 3)), 1) * [1.0, 10.0, 100.0] + 1e6
    left_out = np.where(rng.uniform(size=700) < 0.7, np.arange(700), -1)
    h = np.array([0.3, 3.0, 30.0])
    problem = SumProblem(keys, keys, np.ones((700, 1)), h,
                         kernels.for_dimensions(kernels.get(kernel), 3), left_out=left_out,
                         degree=1)  # fmt: skip
    found = heaviest_keys(problem)
    squares = np.sum(((keys[:, None, :] - keys[None, :, :]) / h) ** 2, axis=2)
    squares[np.flatnonzero(left_out >= 0), left_out[left_out >= 0]] = np.inf
    assert np.all(found >= 0) and np.all(found != left_out)
    np.testing.assert_allclose(squares[np.arange(700), found], squares.min(axis=1), atol=1e-12)
