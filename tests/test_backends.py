"""Adding a backend is one module: a brute-force NumPy backend registered here is used,
when asked, by pooling, densities, a leave-one-out CV search and confidence bands, and
the layer finishes its answers the same way for every backend (rows it leaves
unsettled or not finite summed exactly, the nearest-key limit, the empty policy).

References: the textbook's four lines in NumPy float64 (:mod:`reference`), the
long-double oracle on adversarial data (:mod:`adversarial`), and the built-in paths.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import adversarial
import attnpool
from attnpool import LogSums, Serves, SumProblem, kernels
from attnpool.sums.backends import exact_log_sums
from reference import KERNEL_VALUES, leave_one_out_pool, reference_pool

NAME = "brute-force"


class BruteForce:
    """Every pair, written out here as a user would: the textbook's weights, each row
    about its largest log weight."""

    name = NAME
    serves = Serves()

    def __init__(self) -> None:
        self.problems: list[SumProblem] = []

    def log_sums(self, problem: SumProblem) -> LogSums:
        self.problems.append(problem)
        q, k, h = problem.queries, problem.keys, problem.bandwidth
        u = (q[:, None, :] - k[None, :, :]) / h
        profile = problem.kernel.log_profile
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            if problem.kernel.product:  # a product of one-column kernels
                logs = sum(profile(u[..., j] ** 2) for j in range(u.shape[-1]))
            else:
                logs = profile(np.sum(u * u, axis=-1))
            logs = problem.power * np.where(np.isnan(logs), -np.inf, logs)
            if problem.weights is not None:
                logs = logs + np.log(problem.weights)[None, :]
        if problem.left_out is not None:
            logs[np.arange(q.shape[0]), problem.left_out] = -np.inf
        shift = np.max(logs, axis=1)
        shift = np.where(np.isfinite(shift), shift, 0.0)
        columns = np.concatenate([np.ones((k.shape[0], 1)), problem.values], axis=1)
        return LogSums(shift, np.exp(logs - shift[:, None]) @ columns, np.ones(q.shape[0], bool))


TOY = BruteForce()
attnpool.register_backend(TOY)  # for the whole session: the oracle's workers see it too
adversarial.SUPPORTS[NAME] = [name for name in adversarial.KERNELS if name != "dot"]


def _used(before: int) -> int:
    return len(TOY.problems) - before


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return rng.uniform(-1, 1, (40, 2)), rng.normal(size=(40, 3)), rng.uniform(-1.2, 1.2, (9, 2))


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "cosine", "laplacian"])
def test_pooling_uses_the_backend_and_equals_the_textbook(data, kernel):
    keys, values, queries = data
    before = len(TOY.problems)
    got = attnpool.attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.9,
                                  method=NAME)  # fmt: skip
    assert _used(before) == 1
    np.testing.assert_allclose(got, reference_pool(queries, keys, values, kernel, 0.9),
                               rtol=1e-13, atol=1e-13)  # fmt: skip


test_backend_meets_the_oracle = adversarial.oracle_test([NAME])


def test_observation_weights_count_as_copies(data):
    keys, values, queries = data
    counts = np.arange(40) % 3  # 0, 1 or 2 copies
    repeated = np.repeat(np.arange(40), counts)
    got = attnpool.attention_pool(queries, keys, values, bandwidth=0.5, weights=counts,
                                  method=NAME)  # fmt: skip
    expected = reference_pool(queries, keys[repeated], values[repeated], "gaussian", 0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)


def test_the_empty_policy_and_the_nearest_key_limit(data):
    keys, values, queries = data
    far = np.vstack([queries, [[40.0, 40.0]]])
    with pytest.warns(attnpool.EmptyNeighbourhoodWarning, match="1 of 10"):
        got = attnpool.attention_pool(far, keys, values, kernel="epanechnikov", bandwidth=0.9,
                                      method=NAME)  # fmt: skip
    assert np.all(np.isnan(got[-1])) and np.all(np.isfinite(got[:-1]))
    nearest = attnpool.attention_pool(far, keys, values, kernel="epanechnikov", bandwidth=0.9,
                                      method=NAME, empty="nearest")  # fmt: skip
    closest = np.argmin(np.sum((keys - far[-1]) ** 2, axis=1))
    np.testing.assert_array_equal(nearest[-1], values[closest])
    with pytest.raises(ValueError, match=r"^empty: 1 of 10"):
        attnpool.attention_pool(far, keys, values, kernel="epanechnikov", bandwidth=0.9,
                                method=NAME, empty="raise")  # fmt: skip
    # the Gaussian at a vanishing bandwidth: exact lookup, as every method gives it
    tiny = attnpool.attention_pool(keys[:5] + 1e-9, keys, values, bandwidth=1e-300, method=NAME)
    np.testing.assert_array_equal(tiny, values[:5])


def test_a_density_uses_the_backend_and_equals_the_textbook(data):
    keys, _, queries = data
    h = np.array([0.3, 0.6])
    before = len(TOY.problems)
    got = attnpool.kernel_density(keys, queries, bandwidth=h, method=NAME)
    assert _used(before) == 1
    u = (queries[:, None, :] - keys[None, :, :]) / h
    expected = np.mean(np.exp(-0.5 * np.sum(u**2, axis=-1)), axis=1) / (2 * np.pi * h.prod())
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    weights = np.linspace(0.0, 2.0, 40)
    np.testing.assert_allclose(
        attnpool.log_density(keys, queries, bandwidth=h, weights=weights, method=NAME),
        attnpool.log_density(keys, queries, bandwidth=h, weights=weights, method="dense"),
        rtol=1e-13,
    )


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_a_cv_search_uses_the_backends_leave_one_out_sums(kernel):
    data = attnpool.datasets.sine_data(n=80, seed=1)
    before = len(TOY.problems)
    found = attnpool.select_bandwidth(data.x_train, data.y_train, kernel=kernel, pooling=NAME)
    assert _used(before) >= 20  # the grid and the refinement
    assert all(p.left_out is not None for p in TOY.problems[before:])
    default = attnpool.select_bandwidth(data.x_train, data.y_train, kernel=kernel)
    np.testing.assert_allclose(found.bandwidth, default.bandwidth, rtol=1e-9)
    h = found.bandwidth[0]
    loo = leave_one_out_pool(data.x_train, data.y_train, h, kernel)
    np.testing.assert_allclose(found.objective, np.mean((data.y_train - loo) ** 2), rtol=1e-10)


@pytest.mark.parametrize("method", ["asymptotic", "bootstrap"])
def test_a_band_uses_the_backend(method):
    data = attnpool.datasets.sine_data(n=80, seed=1)
    queries = np.array([0.5, 2.0, 3.5])
    before = len(TOY.problems)
    band = attnpool.confidence_band(data.x_train, data.y_train, queries, bandwidth=0.4,
                                    method=method, n_boot=40, pooling=NAME)  # fmt: skip
    assert _used(before) >= 3 and any(p.left_out is not None for p in TOY.problems[before:])
    default = attnpool.confidence_band(data.x_train, data.y_train, queries, bandwidth=0.4,
                                       method=method, n_boot=40)  # fmt: skip
    for mine, theirs in zip(band[:4], default[:4], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(band.fit, reference_pool(queries, data.x_train, data.y_train,
                                                        "gaussian", 0.4), rtol=1e-13)  # fmt: skip


class Careless:
    """Settles every other row, with wrong numbers in the rows it leaves, and sums one
    row to NaN while claiming it: the layer must sum all those again."""

    name = "careless"
    serves = Serves()

    def log_sums(self, problem: SumProblem) -> LogSums:
        found = exact_log_sums(problem)
        n = found.shift.shape[0]
        settled = np.arange(n) % 2 == 0
        sums = np.where(settled[:, None], found.sums, 123.0)
        sums[0] = np.nan
        return LogSums(found.shift, sums, settled)


def test_rows_left_unsettled_or_not_finite_are_summed_exactly(data):
    keys, values, queries = data
    attnpool.register_backend(Careless())
    try:
        got = attnpool.attention_pool(queries, keys, values, bandwidth=0.7, method="careless")
        density = attnpool.kernel_density(keys, queries, bandwidth=0.7, method="careless")
    finally:
        attnpool.unregister_backend("careless")
    np.testing.assert_allclose(got, reference_pool(queries, keys, values, "gaussian", 0.7),
                               rtol=1e-13, atol=1e-14)  # fmt: skip
    np.testing.assert_allclose(density, attnpool.kernel_density(keys, queries, bandwidth=0.7),
                               rtol=1e-13)  # fmt: skip


class Narrow:
    """Declares little: the Gaussian, two columns, no weights, no leave-one-out sums."""

    name = "narrow"
    serves = Serves(kernels=("gaussian",), max_columns=2, weights=False, leave_one_out=False)

    def log_sums(self, problem: SumProblem) -> LogSums:
        return exact_log_sums(problem)


def test_what_a_backend_does_not_declare_is_refused_by_name(data):
    keys, values, queries = data
    attnpool.register_backend(Narrow())
    try:
        with pytest.raises(ValueError, match=r"^method: 'narrow' takes the kernels \['gaussian'\]"):
            attnpool.attention_pool(queries, keys, values, kernel="cosine", method="narrow")
        with pytest.raises(ValueError, match=r"^method: 'narrow' takes at most 2 columns"):
            attnpool.kernel_density(np.zeros((4, 3)), np.zeros((1, 3)), method="narrow")
        with pytest.raises(ValueError, match=r"^method: 'narrow' takes no observation weights"):
            attnpool.attention_pool(queries, keys, values, weights=np.ones(40), method="narrow")
        with pytest.raises(ValueError, match=r"^pooling: 'narrow' has no leave-one-out sums"):
            attnpool.select_bandwidth(keys, values[:, 0], pooling="narrow")
        with pytest.raises(ValueError, match=r"^mask: backend 'narrow'"):
            attnpool.attention_pool(queries, keys, values, mask=np.ones((9, 40), bool),
                                    method="narrow")  # fmt: skip
        with pytest.raises(ValueError, match=r"^return_weights: backend 'narrow'"):
            attnpool.attention_pool(queries, keys, values, return_weights=True, method="narrow")
        with pytest.raises(ValueError, match=r"^kernel: backend 'narrow' takes non-negative"):
            attnpool.attention_pool(queries, keys, values, kernel="dot", method="narrow")
        with pytest.raises(ValueError, match=r"^degree: backend 'narrow'"):
            attnpool.select_bandwidth(keys, values[:, 0], degree=1, pooling="narrow")
        with pytest.raises(ValueError, match=r"^pooling: backend 'narrow' gives bands"):
            attnpool.confidence_band(keys, values[:, 0], queries, degree=1, pooling="narrow")
    finally:
        attnpool.unregister_backend("narrow")
    assert "narrow" not in attnpool.backend_names()
    with pytest.raises(ValueError, match=r"^method: expected one of"):
        attnpool.attention_pool(queries, keys, values, method="narrow")


def test_registration_is_checked():
    with pytest.raises(ValueError, match=r"^backend.name: expected a new name, not one of"):
        attnpool.register_backend(type("Dense", (BruteForce,), {"name": "dense"})())
    with pytest.raises(ValueError, match=rf"^backend.name: '{NAME}' is registered already"):
        attnpool.register_backend(BruteForce())
    with pytest.raises(TypeError, match=r"^backend: expected an object with name"):
        attnpool.register_backend(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^name: no backend is registered as 'absent'"):
        attnpool.unregister_backend("absent")
    assert NAME in attnpool.backend_names()


class Misshapen:
    name = "misshapen"
    serves = Serves()

    def log_sums(self, problem: SumProblem) -> LogSums:
        found = exact_log_sums(problem)
        return LogSums(found.shift, found.sums[:, :1], found.settled)


def test_an_answer_of_the_wrong_shape_is_named(data):
    keys, values, queries = data
    attnpool.register_backend(Misshapen())
    try:
        shapes = r"backend 'misshapen': log_sums must return .* sums \(9, 4\)"
        with pytest.raises(ValueError, match=shapes):
            attnpool.attention_pool(queries, keys, values, method="misshapen")
    finally:
        attnpool.unregister_backend("misshapen")


def test_jax_in_jax_out_and_no_tracing(data):
    keys, values, queries = data
    got = attnpool.attention_pool(jnp.asarray(queries, jnp.float32), jnp.asarray(keys, jnp.float32),
                                  jnp.asarray(values, jnp.float32), method=NAME)  # fmt: skip
    assert isinstance(got, jax.Array) and got.dtype == jnp.float32
    np.testing.assert_allclose(got, reference_pool(queries, keys, values, "gaussian", 1.0),
                               rtol=1e-5)  # fmt: skip
    with pytest.raises(ValueError, match=rf"^method: backend '{NAME}' needs concrete arrays"):
        jax.jit(lambda q: attnpool.attention_pool(q, keys, values, method=NAME))(queries)


def test_the_reference_sums_squares_and_leaves_rows_out(data):
    keys, values, _ = data
    h = np.array([0.8, 0.5])
    r = np.sqrt(np.sum(((keys[:, None] - keys[None]) / h) ** 2, axis=-1))
    squares = KERNEL_VALUES["epanechnikov"](r) ** 2
    np.fill_diagonal(squares, 0.0)
    problem = SumProblem.leave_one_out(keys, values, h, kernels.get("epanechnikov"), None)
    found = exact_log_sums(dataclasses.replace(problem, power=2))
    expected = squares @ np.c_[np.ones(40), values] / 0.75**2  # (the profile is 1 − r²)
    np.testing.assert_allclose(np.exp(found.shift)[:, None] * found.sums, expected,
                               rtol=1e-12, atol=1e-15)  # fmt: skip
    assert found.settled.all()


def test_a_backend_needs_no_jax():
    script = textwrap.dedent("""
        import sys, numpy as np, attnpool
        from attnpool.sums.backends import exact_log_sums
        class Brute:
            name = "brute"; serves = attnpool.Serves()
            def log_sums(self, problem): return exact_log_sums(problem)
        attnpool.register_backend(Brute())
        x = np.linspace(0, 3, 50); y = np.sin(x)
        attnpool.attention_pool(x[:5], x, y, bandwidth=0.3, method="brute")
        attnpool.kernel_density(x, x[:5], bandwidth=0.3, method="brute")
        attnpool.select_bandwidth(x, y, pooling="brute")
        attnpool.confidence_band(x, y, x[:5], bandwidth=0.3, pooling="brute")
        print(sorted(m for m in ("jax", "sklearn") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert out.strip() == "[]"
