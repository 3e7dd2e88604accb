"""The compiled engines (``dense``, ``stream``, ``pallas``; ``fused`` within its float32
logits) behind the backend protocol: each is a :class:`attnpool.Backend` whose
``log_sums`` equals the textbook's sums in float64
(:func:`attnpool.sums.backends.exact_log_sums`) on hostile data — ties, queries far
from every key, observation weights spanning 2^±250, values at 2^±1000, leave-one-out
rows, ``K²`` — and the layer finishes it as it finishes a host backend or one of
your own, and sums many unsettled rows again on it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attnpool import Backend, Serves, kernels
from attnpool.engines.compiled_backends import ENGINES
from attnpool.sums import layer
from attnpool.sums.backends import exact_log_sums
from attnpool.sums.facts import finish_facts
from attnpool.sums.plan import plan
from attnpool.sums.problem import LogSums, SumProblem
from sum_problems import hostile_problem

EXACT = ["dense", "stream", "pallas"]
TOLERANCE = {"dense": 1e-12, "stream": 1e-12, "pallas": 1e-12}


def fused_tolerance(problem: SumProblem) -> float:
    """fused's declared accuracy: its logits in float32, ``eps32 · ‖x − centre‖²/h²`` at
    the data's extent from the keys' mean (the matrix-product form's terms)."""
    rows = np.concatenate([problem.queries, problem.keys]) - problem.keys.mean(axis=0)
    extent = np.max(np.sum((rows / problem.bandwidth) ** 2, axis=1))
    return float(np.finfo(np.float32).eps * extent)


def assert_equal_sums(problem: SumProblem, got, want, tolerance: float) -> None:
    """``log S₀ + shift`` and ``S_j / S₀`` (per value column's largest) as the textbook's,
    the same rows empty."""
    assert np.array_equal(got.sums[:, 0] > 0, want.sums[:, 0] > 0)
    rows = want.sums[:, 0] > 0
    log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=0, atol=tolerance)
    ratios = [found.sums[rows, 1:] / found.sums[rows, :1] for found in (got, want)]
    scale = np.max(np.abs(problem.values), axis=0)
    np.testing.assert_allclose(ratios[0] / scale, ratios[1] / scale, rtol=0, atol=tolerance)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name, kernel, d", [("dense", "gaussian", 3), ("stream", "tricube", 2),
                                             ("pallas", "epanechnikov", 1),
                                             ("fused", "gaussian", 2)])  # fmt: skip
def test_each_engine_equals_the_textbook_sums(name, kernel, d, weighted):
    problem = hostile_problem(kernel, d, seed=d, weighted=weighted)
    engine = ENGINES[name]
    assert isinstance(engine, Backend)
    if weighted and not engine.serves.weights:
        assert "'fused' takes no observation weights" in engine.refusal(problem)
        return
    assert engine.refusal(problem) is None
    got = engine.log_sums(problem)
    assert got.settled.all()
    tolerance = fused_tolerance(problem) if name == "fused" else TOLERANCE[name]
    assert_equal_sums(problem, got, exact_log_sums(problem), tolerance)


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("weighted", [False, True])
def test_each_engines_leave_one_out_sums_are_the_textbook_ones(name, weighted):
    whole = hostile_problem("biweight", 2, seed=11, weighted=weighted)
    problem = SumProblem.leave_one_out(whole.keys, whole.values, whole.bandwidth, whole.kernel,
                                       whole.weights)  # fmt: skip
    # rows that leave out another key, or none, among them
    left_out = problem.left_out.copy()
    left_out[::7], left_out[1::7] = -1, 3
    problem = dataclasses.replace(problem, left_out=left_out)
    if weighted:  # a left-out key of no weight: the row leaves nothing out
        problem.weights[3] = 0.0
    got = ENGINES[name].log_sums(problem)
    assert got.settled.all()
    assert_equal_sums(problem, got, exact_log_sums(problem), TOLERANCE[name])


@pytest.mark.parametrize("name", ["dense", "stream"])
def test_the_sums_of_the_squared_kernel_are_the_textbook_ones(name):
    problem = dataclasses.replace(hostile_problem("laplacian", 1, seed=5, weighted=True), power=2)
    got = ENGINES[name].log_sums(problem)
    assert_equal_sums(problem, got, exact_log_sums(problem), TOLERANCE[name])


def test_each_declares_what_it_serves_and_refuses_the_rest_by_name():
    squared = dataclasses.replace(hostile_problem("gaussian", 1, seed=1, weighted=False), power=2)
    assert "'pallas' sums K^r for r in [1]" in ENGINES["pallas"].refusal(squared)
    compact = hostile_problem("epanechnikov", 1, seed=1, weighted=False)
    assert "'fused' takes the kernels ['gaussian']" in ENGINES["fused"].refusal(compact)
    higher = dataclasses.replace(compact, kernel=kernels.get("gaussian-order4"))  # signed
    for engine in ENGINES.values():
        said = engine.refusal(higher)
        assert f"{engine.name!r} sums non-negative distance kernels" in said
        assert "received 'gaussian-order4'" in said


def test_weights_wider_than_the_engines_span_are_left_to_the_layer():
    # every key but one of weight 2^-1000 beside one of 2^40 far away: in units of the
    # heaviest, the light keys' weights are below the smallest normal number (flushed to 0
    # by XLA:CPU), yet they hold nearly all of each row's sum
    rng = np.random.default_rng(3)
    keys = rng.uniform(0, 1, (60, 1))
    keys[0] = 500.0
    weights = np.full(60, 2.0**-1000)
    weights[0] = 2.0**40
    problem = SumProblem(keys[1:10], keys, np.sin(keys), np.array([0.3]),
                         kernels.get("gaussian"), weights)  # fmt: skip
    got = ENGINES["stream"].log_sums(problem)
    assert not got.settled.any()
    assert_equal_sums(problem, layer.solve(ENGINES["stream"], problem), exact_log_sums(problem),
                      1e-12)  # fmt: skip


class SettlesNothing:
    """A backend that leaves every row to the layer."""

    name, serves = "settles-nothing", Serves()

    def log_sums(self, problem: SumProblem) -> LogSums:
        n, _, _, p = problem.sizes
        return LogSums(np.zeros(n), np.zeros((n, 1 + p)), np.zeros(n, bool))


@pytest.mark.parametrize("n, backend", [(60, "numpy"), (2100, "stream")])
def test_the_layer_sums_unsettled_rows_again_by_its_finishing_table(n, backend):
    rng = np.random.default_rng(8)
    keys = np.concatenate([rng.normal(size=(2100, 2)), np.full((40, 2), 1e3)]) + 1e6
    weights = 2.0 ** rng.uniform(-200, 200, keys.shape[0])
    problem = SumProblem(keys[:n] + 0.1, keys, np.cos(keys), np.array([0.2, 0.3]),
                         kernels.get("epanechnikov"), weights)  # fmt: skip
    assert plan(finish_facts(problem)).backend == backend
    found = layer.solve(SettlesNothing(), problem)
    assert found.settled.all()
    assert_equal_sums(problem, found, exact_log_sums(problem), 1e-12)


def _mixed_problem(var_type: str, degree: int, weighted: bool, seed: int) -> SumProblem:
    """Ties, an offset of 10⁶ bandwidths, ordered and unordered codes, a key of weight 0
    (which some row takes as its reference), every row leaving its own key out."""
    from attnpool.sums.exact_pairs import heaviest_keys

    rng = np.random.default_rng(seed)
    m = 40
    columns = [np.round(rng.normal(size=m), 1) + 1e6 if t == "c" else rng.integers(0, 4, m)
               for t in var_type]  # fmt: skip
    x = np.stack(columns, axis=1).astype(float)
    levels = tuple(4 if t == "u" else 0 for t in var_type)
    h = np.array([0.4 if t == "c" else 0.3 for t in var_type])
    weights = rng.uniform(0.5, 2.0, m) * 2.0 ** rng.integers(-60, 60, m) if weighted else None
    if weighted:
        weights[5] = 0.0
    kernel = kernels.for_dimensions(kernels.get("epanechnikov"), max(var_type.count("c"), 1))
    problem = SumProblem(x, x, rng.normal(size=(m, 2)) * 2.0 ** 300, h, kernel, weights,
                         np.arange(m), var_type=var_type, levels=levels, degree=degree)  # fmt: skip
    return problem.replace(origin=heaviest_keys(problem)) if degree else problem


@pytest.mark.parametrize("name", ["dense", "stream"])
@pytest.mark.parametrize("var_type, degree", [("cu", 0), ("uo", 0), ("c", 1), ("cc", 1),
                                              ("cou", 1)])  # fmt: skip
@pytest.mark.parametrize("weighted", [False, True])
def test_the_exact_engines_sum_categorical_columns_and_local_moments(name, var_type, degree,
                                                                     weighted):  # fmt: skip
    problem = _mixed_problem(var_type, degree, weighted, seed=len(var_type) + degree)
    engine = ENGINES[name]
    assert engine.refusal(problem) is None
    got, want = engine.log_sums(problem), exact_log_sums(problem)
    assert got.sums.shape == want.sums.shape == (40, problem.width)
    assert np.array_equal(got.sums[:, 0] > 0, want.sums[:, 0] > 0)
    rows = want.sums[:, 0] > 0
    log_total = [found.shift[rows] + np.log(found.sums[rows, 0]) for found in (got, want)]
    np.testing.assert_allclose(*log_total, rtol=0, atol=1e-12)
    ratios = [found.sums[rows, 1:] / found.sums[rows, :1] for found in (got, want)]
    scale = np.maximum(np.max(np.abs(ratios[1]), axis=0), 1e-300)
    np.testing.assert_allclose(ratios[0] / scale, ratios[1] / scale, rtol=0, atol=1e-12)


def test_pallas_refuses_what_it_does_not_sum():
    problem = _mixed_problem("c", 1, False, seed=0)
    assert "sums the moments of degrees [0]; received 1" in ENGINES["pallas"].refusal(problem)
    mixed = _mixed_problem("cu", 0, False, seed=0)
    assert "takes the column types 'c'; received var_type='cu'" in ENGINES["pallas"].refusal(mixed)
