"""The built-in host backends (``fgt``, ``sparse``, ``native``; ``tree``, ``topk`` and
``binned`` within their tolerances) behind the backend
protocol: each is a :class:`attnpool.Backend`, and its ``log_sums`` equals the textbook's
sums in float64 (:func:`attnpool.sums.backends.exact_log_sums`) on hostile data — ties,
queries far from every key, observation weights spanning 2^±250, values at 2^±1000 —
as ``log S₀ + shift`` and the ratios ``S_j / S₀``; the layer finishes them as it
finishes a backend of your own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attnpool import Backend, Binned, TopK, Tree, kernels
from attnpool.methods.backends import BUILT_IN, host_backend
from attnpool.methods.prefix_sums import PREFIX_RTOL
from attnpool.sums import layer
from attnpool.sums.backends import exact_log_sums
from attnpool.sums.problem import SumProblem
from sum_problems import hostile_problem

CASES = [("fgt", "gaussian", 1), ("sparse", "epanechnikov", 1), ("sparse", "tricube", 2),
         ("sparse", "biweight", 3), ("native", "gaussian", 1), ("native", "gaussian", 2),
         ("native", "gaussian", 5)]  # fmt: skip
#: Each one's documented accuracy: fgt within 1e-14 of each row's weight, the loop exact
#: (both to the offsets' rounding), sparse's one-column prefix sums within PREFIX_RTOL of
#: each row's sum.
TOLERANCE = {"fgt": 1e-12, "native": 1e-12, "sparse": 2 * PREFIX_RTOL}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name, kernel, d", CASES)
def test_each_backend_equals_the_textbook_sums(name, kernel, d, weighted):
    problem = hostile_problem(kernel, d, seed=d, weighted=weighted)
    backend = host_backend(name)
    assert isinstance(backend, Backend) and backend.refusal(problem) is None
    got, want = backend.log_sums(problem), exact_log_sums(problem)
    assert got.settled.all() or name == "native"
    rows = got.settled & (want.sums[:, 0] > 0)
    assert np.array_equal(got.sums[:, 0] > 0, want.sums[:, 0] > 0)  # the same empty rows
    with np.errstate(divide="ignore"):
        log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=0, atol=TOLERANCE[name])
    ratios = [found.sums[rows, 1:] / found.sums[rows, :1] for found in (got, want)]
    scale = np.max(np.abs(problem.values), axis=0)
    np.testing.assert_allclose(ratios[0] / scale, ratios[1] / scale, rtol=0,
                               atol=TOLERANCE[name])  # fmt: skip


@pytest.mark.parametrize("name, kernel, d", CASES[::3])
def test_the_layer_finishes_a_built_in_backend_as_a_registered_one(name, kernel, d):
    problem = hostile_problem(kernel, d, seed=7, weighted=True)
    found = layer.solve(host_backend(name), problem)
    assert found.settled.all()
    want = exact_log_sums(problem)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(
            layer.log_kernel_sums(host_backend(name), problem),
            want.shift + np.log(want.sums[:, 0]), rtol=0, atol=TOLERANCE[name],
        )  # fmt: skip


def test_each_declares_what_it_serves_and_refuses_the_rest_by_name():
    assert set(BUILT_IN) == {"fgt", "sparse", "native"}
    flat = SumProblem(np.zeros((1, 2)), np.zeros((3, 2)), np.zeros((3, 0)), np.ones(2),
                      kernels.get("gaussian"))  # fmt: skip
    assert "'fgt' sums the Gaussian in one column; received 'gaussian' in 2" in (
        host_backend("fgt").refusal(flat))  # fmt: skip
    assert "'sparse' needs a compact-support radial kernel" in host_backend("sparse").refusal(flat)
    compact = SumProblem(flat.queries, flat.keys, flat.values, flat.bandwidth,
                         kernels.get("epanechnikov"))  # fmt: skip
    assert "'native' pools the built-in 'gaussian'" in host_backend("native").refusal(compact)
    for backend in BUILT_IN.values():
        assert backend.serves.leave_one_out and backend.serves.powers == (1,)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name, kernel, d", CASES)
def test_each_backends_leave_one_out_sums_are_the_textbook_ones(name, kernel, d, weighted):
    whole = hostile_problem(kernel, d, seed=d + 20, weighted=weighted)
    problem = SumProblem.leave_one_out(whole.keys, whole.values, whole.bandwidth, whole.kernel,
                                       whole.weights)  # fmt: skip
    got, want = host_backend(name).log_sums(problem), exact_log_sums(problem)
    # (unsettled: the points whose own term the rest's rounding could swamp)
    assert got.settled.mean() > (0.5 if weighted else 0.9)
    rows = got.settled & (want.sums[:, 0] > 0)
    assert np.array_equal(got.sums[got.settled, 0] > 0, want.sums[got.settled, 0] > 0)
    with np.errstate(divide="ignore"):
        log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    # the own term taken away: the rest's rounding is relative to the sum with it
    tolerance = {"fgt": 1e-9, "native": 1e-12, "sparse": 1e-9}[name]
    np.testing.assert_allclose(*log_total, rtol=0, atol=tolerance)
    ratios = [found.sums[rows, 1:] / found.sums[rows, :1] for found in (got, want)]
    scale = np.max(np.abs(problem.values), axis=0)
    np.testing.assert_allclose(ratios[0] / scale, ratios[1] / scale, rtol=0, atol=tolerance)
    finished = layer.solve(host_backend(name), problem)
    assert finished.settled.all()


@pytest.mark.parametrize("name, kernel, d", CASES[::3])
def test_rows_leaving_out_other_keys_are_left_to_the_layer(name, kernel, d):
    whole = hostile_problem(kernel, d, seed=d + 30, weighted=False)
    left_out = np.where(np.arange(whole.queries.shape[0]) % 3 == 0, -1, 7)
    problem = dataclasses.replace(whole, left_out=left_out)
    got = host_backend(name).log_sums(problem)
    assert not got.settled[left_out >= 0].any()
    found, want = layer.solve(host_backend(name), problem), exact_log_sums(problem)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(found.shift + np.log(found.sums[:, 0]),
                                   want.shift + np.log(want.sums[:, 0]), rtol=0,
                                   atol=TOLERANCE[name])  # fmt: skip


@pytest.mark.parametrize("kernel, d", [("gaussian", 2), ("epanechnikov", 3), ("laplacian", 1)])
def test_the_tree_backend_is_within_its_tolerance_where_it_settles(kernel, d):
    problem = hostile_problem(kernel, d, seed=11, weighted=False)
    backend = host_backend("tree", Tree(rtol=1e-6))
    assert isinstance(backend, Backend) and backend.refusal(problem) is None
    got, want = backend.log_sums(problem), exact_log_sums(problem)
    rows = got.settled & (want.sums[:, 0] > 0)
    assert rows.sum() >= 20  # (the others: walks that would visit most leaves)
    with np.errstate(divide="ignore"):
        log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=0, atol=2e-6)  # the weight sum within rtol
    ratios = [found.sums[rows, 1:] / found.sums[rows, :1] for found in (got, want)]
    span = np.ptp(problem.values, axis=0)
    assert np.all(np.abs(ratios[0] - ratios[1]) <= 1e-6 / (1 - 1e-6) * span + 1e-300)


@pytest.mark.parametrize("kernel, d", [("gaussian", 1), ("epanechnikov", 2), ("laplacian", 3)])
def test_the_topk_backend_with_every_key_equals_the_textbook_sums(kernel, d):
    problem = hostile_problem(kernel, d, seed=13, weighted=False)
    backend = host_backend("topk", TopK(k=400))
    assert isinstance(backend, Backend) and backend.refusal(problem) is None
    got, want = backend.log_sums(problem), exact_log_sums(problem)
    assert got.settled.all()
    assert np.array_equal(got.sums[:, 0] > 0, want.sums[:, 0] > 0)
    rows = want.sums[:, 0] > 0
    with np.errstate(divide="ignore"):
        log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=0, atol=1e-12)
    ratios = [found.sums[rows, 1:] / found.sums[rows, :1] for found in (got, want)]
    scale = np.max(np.abs(problem.values), axis=0)
    np.testing.assert_allclose(ratios[0] / scale, ratios[1] / scale, rtol=0, atol=1e-12)


def spread_problem(kernel: str, d: int, seed: int, bandwidth: float) -> SumProblem:
    """Many queries over 4000 keys at 1e6 ± 1e3 (no ties: a few nearest keys can bound
    the rest), values at 2^±1000, some queries 30 bandwidths out."""
    rng = np.random.default_rng(seed)
    keys = rng.uniform(-1, 1, (4000, d)) * 1e3 + 1e6
    queries = np.concatenate([rng.uniform(-1, 1, (3000, d)) * 1e3 + 1e6,
                              keys[:20] + 30 * bandwidth])  # fmt: skip
    values = np.stack([np.sin(keys[:, 0] / 50), 2.0**-1000 * np.cos(keys[:, -1] / 50),
                       2.0**1000 * rng.uniform(-1, 1, 4000)], axis=1)  # fmt: skip
    return SumProblem(queries, keys, values, np.full(d, bandwidth), kernels.get(kernel))


def test_the_topk_backend_bounds_what_it_leaves_out_or_refuses():
    near = spread_problem("gaussian", 1, seed=17, bandwidth=2.0)
    got, want = host_backend("topk", TopK(k=64)).log_sums(near), exact_log_sums(near)
    ratios = [found.sums[:, 1:] / found.sums[:, :1] for found in (got, want)]
    assert np.all(np.abs(ratios[0] - ratios[1]) <= 1e-3 * np.ptp(near.values, axis=0))
    wide = dataclasses.replace(near, bandwidth=np.array([1e4]))  # every key weighs alike
    with pytest.raises(ValueError, match=r"TopK\(k=64\) leaves out up to .* tolerance 0.001"):
        host_backend("topk", TopK(k=64)).log_sums(wide)
    loose = host_backend("topk", TopK(k=64, tolerance=None)).log_sums(wide)
    assert np.all(np.isfinite(loose.sums))


@pytest.mark.parametrize("kernel, d", [("gaussian", 1), ("epanechnikov", 1), ("gaussian", 2),
                                       ("biweight", 1)])  # fmt: skip
def test_the_binned_backend_is_within_its_tolerance_where_it_settles(kernel, d):
    problem = spread_problem(kernel, d, seed=19, bandwidth=40.0)
    backend = host_backend("binned", Binned(tolerance=1e-4))
    assert isinstance(backend, Backend) and backend.refusal(problem) is None
    got, want = backend.log_sums(problem), exact_log_sums(problem)
    rows = got.settled
    assert rows.mean() > 0.5  # (the others: far rows, little weight near a kink or edge)
    assert np.all(want.sums[rows, 0] > 0)
    ratios = [found.sums[rows, 1:] / found.sums[rows, :1] for found in (got, want)]
    span = np.ptp(problem.values, axis=0)
    assert np.all(np.abs(ratios[0] - ratios[1]) <= 1e-4 * span)
    with np.errstate(divide="ignore"):  # the binned weight: near the exact one
        log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=0, atol=1e-2)


@pytest.mark.parametrize("kernel, d, weighted", [("gaussian", 1, False), ("gaussian", 2, True),
                                                 ("epanechnikov", 1, True),
                                                 ("biweight", 2, False)])  # fmt: skip
def test_the_binned_backends_densities_are_each_within_their_tolerance(kernel, d, weighted):
    # a density's sums (no values): the rows the bound cannot settle — 30 bandwidths out,
    # little weight near an edge — are summed by the backend over the keys within reach
    spread = spread_problem(kernel, d, seed=23, bandwidth=100.0)
    rng = np.random.default_rng(4)
    weights = 2.0 ** rng.uniform(-20, 20, spread.keys.shape[0]) if weighted else None
    problem = dataclasses.replace(spread, values=np.zeros((spread.keys.shape[0], 0)),
                                  weights=weights)  # fmt: skip
    backend = host_backend("binned", Binned(tolerance=1e-3))
    assert backend.refusal(problem) is None
    got, want = backend.log_sums(problem), exact_log_sums(problem)
    assert got.settled.all()
    assert np.array_equal(got.sums[:, 0] > 0, want.sums[:, 0] > 0)  # the same empty rows
    rows = want.sums[:, 0] > 0
    log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    assert np.all(np.abs(np.expm1(log_total[0] - log_total[1])) <= 1e-3)
    if weighted:
        with_values = dataclasses.replace(problem, values=spread.values)
        assert "'binned' pools unweighted keys" in backend.refusal(with_values)


def test_host_backend_names_the_host_methods():
    with pytest.raises(ValueError, match="'dense' is not a host method; those are 'fgt'"):
        host_backend("dense")


@pytest.mark.parametrize("kernel, d, spacing", [("tricube", 1, 0.98), ("biweight", 2, 0.995)])
def test_sparse_settles_its_leave_one_out_rows_over_the_keys_in_their_support(kernel, d, spacing):
    # keys on a lattice just inside each other's support's edge, shifted a million
    # bandwidths: every point's rest is a small share of its own term, so the rows are
    # summed again over the keys within their support (not left to the layer: every key)
    h = 1e-3
    axes = np.meshgrid(*[np.arange(12) * spacing * h] * d, indexing="ij")
    x = np.stack([a.ravel() for a in axes], axis=1) + 1e3
    values = np.sin(np.arange(x.shape[0]))[:, None]
    problem = SumProblem.leave_one_out(x, values, np.full(d, h), kernels.get(kernel))
    got, want = host_backend("sparse").log_sums(problem), exact_log_sums(problem)
    assert got.settled.all()
    assert np.all(want.sums[:, 0] > 0) and np.all(got.sums[:, 0] > 0)
    log_total = [found.shift + np.log(found.sums[:, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=0, atol=1e-9)
    ratios = [found.sums[:, 1:] / found.sums[:, :1] for found in (got, want)]
    np.testing.assert_allclose(*ratios, rtol=0, atol=1e-9)


@pytest.mark.parametrize("kernel, d, inside", [("epanechnikov", 1, 1e-10), ("biweight", 2, 1e-6)])
def test_sparse_keeps_a_leave_one_out_neighbour_at_its_supports_edge(kernel, d, inside):
    """Two points a hair inside each other's support, the rest 10 bandwidths apart: each
    of the two has the other's weight alone (1e-10 of ``K(0)`` or less), below the own
    term's rounding once that term is taken away — summed exactly, where it was declared
    none (log 0, the textbook's finite); the points with no other in reach have none."""
    far = np.zeros((300, d))
    far[:, 0] = 10.0 * np.arange(300) + 100.0
    pair = np.zeros((2, d))
    pair[1, 0] = 1.0 - inside
    x = np.r_[pair, far]
    problem = SumProblem.leave_one_out(x, np.ones((302, 1)), np.ones(d), kernels.get(kernel))
    got, want = host_backend("sparse").log_sums(problem), exact_log_sums(problem)
    assert np.all(want.sums[:2, 0] > 0) and np.all(got.sums[:2, 0] > 0)
    assert np.all(want.sums[2:, 0] == 0) and np.all(got.sums[2:, 0] == 0)
    log_total = [found.shift[:2] + np.log(found.sums[:2, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=1e-9)


@pytest.mark.parametrize("name", ["native", "dense", "stream", "numpy"])
def test_states_of_two_key_sets_merge_into_the_state_of_both(name):
    # log weights near −2^57: a state that put its ties' count log 2 into its shift lost
    # it to the shift's rounding, and merging two key sets' states (Dask's chunks)
    # weighed their ties alike: here 1 key against 2
    from attnpool.engines.compiled_backends import ENGINES
    from attnpool.methods.backends.exact import settled_sums

    backend = BUILT_IN.get(name) or ENGINES.get(name)
    keys = np.array([[0.0], [0.0], [1.0], [5.0]])
    values = np.array([[1.0], [1.0], [4.0], [9.0]])
    queries = np.array([[0.5], [0.25]])
    gaussian = kernels.get("gaussian")
    problems = [SumProblem(queries, keys[rows], values[rows], np.array([2.0**-30]), gaussian)
                for rows in ([0, 3], [1, 2])]  # fmt: skip
    states = [exact_log_sums(problem) if backend is None else
              settled_sums(name, problem, backend.log_sums(problem), exact_log_sums)
              for problem in problems]  # fmt: skip
    shift = np.maximum(states[0].shift, states[1].shift)
    sums = sum(np.exp(s.shift - shift)[:, None] * s.sums for s in states)
    np.testing.assert_allclose(sums[:, 1] / sums[:, 0], [2.0, 1.0], rtol=1e-15)
