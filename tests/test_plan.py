"""The planner, read as its tables: every rule of the pooling and density tables, first
match wins; readings that cost a pass over the data asked only by the rules that need
them; no JAX; and the front ends doing what it plans."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import attnpool
from attnpool import kernels
from attnpool.density import methods as density_methods
from attnpool.engines import numpy_engine
from attnpool.methods import options
from attnpool.sums import thresholds
from attnpool.sums.facts import density_facts, pool_facts
from attnpool.sums.plan import Facts, Plan, plan

BIG = 3000  # 3000² pairs: beyond the dense block and NumPy's pairs
GAUSSIAN = dict(gaussian=True)
COMPACT = dict(compact=True, radial=True)


def pool(**changes) -> Facts:
    return Facts("pool", BIG, BIG, 2)._replace(**changes)


def density(**changes) -> Facts:
    return Facts("density", BIG, BIG, 2, numpy=True, float64=True)._replace(**changes)


def far() -> bool:
    return False


def never() -> bool:
    raise AssertionError("a rule asked for a reading it does not need")


POOLING_TABLE = [
    # (facts, backend, rule)
    (pool(weight_matrix=True, block_size=True), "dense", 1),
    (pool(block_size=True, numpy=True, float64=True, n=3), "stream", 2),
    (pool(numpy=True, float64=True, n=10, m=100, in_range=never), "numpy", 3),
    (pool(numpy=True, float64=True, n=1000, m=1000, outputs=5), "dense", 4),  # work > 2²²
    (pool(numpy=True, float64=True, n=10, m=100, masked=True), "dense", 4),
    (pool(numpy=True, float64=True, n=10, m=100, host_profile=False), "dense", 4),
    (pool(numpy=True, float64=False, n=10, m=100), "dense", 4),
    (pool(n=1000, m=2000, in_range=never), "dense", 4),
    (pool(traced=True, in_range=never, **GAUSSIAN), "stream", 5),
    (pool(traced=True, device="gpu", **GAUSSIAN), "pallas", 5),
    (pool(traced=True, device="gpu", tiled=False), "stream", 5),
    (pool(masked=True, in_range=never), "stream", 5),
    (pool(in_range=lambda: False, loops=True, **GAUSSIAN), "stream", 5),
    (pool(d=1, **GAUSSIAN), "fgt", 6),
    (pool(d=1, device="gpu", **GAUSSIAN), "fgt", 6),
    (pool(d=1, truncating=False, **GAUSSIAN), "stream", 10),
    (pool(d=1, neighbour_share=never, **COMPACT), "sparse", 6),
    (pool(d=1, compact=True, radial=False), "stream", 10),
    (pool(d=3, neighbour_share=lambda: 0.01, **COMPACT), "sparse", 7),
    (pool(d=3, neighbour_share=lambda: 0.5, **COMPACT), "stream", 10),
    (pool(d=5, neighbour_share=never, **COMPACT), "stream", 10),
    (pool(d=3, device="gpu", neighbour_share=lambda: 0.5, **COMPACT), "pallas", 8),
    (pool(d=8, device="gpu", loops=True, **GAUSSIAN), "pallas", 8),
    (pool(d=8, loops=True, **GAUSSIAN), "native", 9),
    (pool(d=8, loops=True, in_loop_range=far, **GAUSSIAN), "stream", 10),  # 2¹² bandwidths
    (pool(d=8, loops=False, **GAUSSIAN), "stream", 10),
    (pool(d=8, loops=True, truncating=False, **GAUSSIAN), "stream", 10),
    (pool(d=8, loops=True, device="tpu", **GAUSSIAN), "stream", 10),
    (pool(d=2), "stream", 10),
]

DENSITY_TABLE = [
    (density(numpy=False, in_range=never), "stream", 1),
    (density(numpy=False, n=10, m=100), "dense", 1),
    (density(n=100, m=100, in_range=never, **GAUSSIAN), "numpy", 2),
    (density(d=1, n=100, m=100, in_range=never, **GAUSSIAN), "numpy", 2),  # 2¹³ pairs
    (density(d=1, n=200, m=200, expansions_ready=True, **GAUSSIAN), "fgt", 3),
    (density(d=1, n=200, m=200, expansions_ready=False, **GAUSSIAN), "numpy", 2),
    (density(d=1, **GAUSSIAN), "fgt", 3),
    (density(d=1, n=200, m=200, expansions_ready=True, in_range=far, **GAUSSIAN), "numpy", 4),
    (density(d=1, truncating=False, **GAUSSIAN), "stream", 7),
    (density(d=1, **COMPACT), "sparse", 5),
    (density(d=1, builtin=False, **COMPACT), "stream", 7),
    (density(d=2, **COMPACT), "stream", 7),
    (density(d=4, loops=True, **GAUSSIAN), "native", 6),
    (density(d=4, loops=True, in_range=lambda: False, **GAUSSIAN), "stream", 7),
    (density(d=4, loops=True, truncating=False, **GAUSSIAN), "stream", 7),
    (density(d=4, loops=True, device="gpu", **GAUSSIAN), "stream", 7),
    (density(d=4, loops=False, **GAUSSIAN), "stream", 7),
    # the compiled loop pays from 2¹⁴ pairs, within range
    (density(n=200, m=200, loops=True, **GAUSSIAN), "native", 6),
    (density(n=100, m=100, loops=True, in_range=never, **GAUSSIAN), "numpy", 2),  # 2¹³ pairs
    (density(n=200, m=200, loops=True, in_loop_range=far, **GAUSSIAN), "numpy", 2),
    (density(d=4, loops=True, in_loop_range=far, **GAUSSIAN), "stream", 7),  # 2¹² bandwidths
    (density(n=200, m=200, loops=True, device="gpu", in_range=never, **GAUSSIAN), "numpy", 2),
    (density(n=200, m=200, loops=True, truncating=False, in_range=never, **GAUSSIAN), "numpy", 2),
    # a kernel that splits, in one column: sparse's prefix sums from 2¹⁶ pairs
    (density(d=1, n=300, m=300, split=True, **COMPACT), "sparse", 5),
    (density(d=1, n=200, m=200, split=True, in_range=never, **COMPACT), "numpy", 2),
    (density(d=1, n=300, m=300, split=True, in_range=far, **COMPACT), "numpy", 2),
    (density(d=1, n=300, m=300, in_range=never, **COMPACT), "numpy", 2),  # (the triweight)
    (density(n=300, m=300, split=True, in_range=never, **COMPACT), "numpy", 2),  # d = 2
]


def fit(**changes) -> Facts:
    return Facts("fit", BIG, BIG, 2, gaussian=True)._replace(**changes)


FIT_TABLE = [
    (fit(n=100, m=500, degree=1), "numpy", 1),  # 500·100·9 numbers
    (fit(n=100, m=500, degree=1, categorical=True, gaussian=False), "numpy", 1),
    (fit(n=100, m=500, block_size=True), "pool", 3),
    (fit(n=100, m=500, host_profile=False), "pool", 3),
    (fit(degree=1, moments_loops=True), "native", 2),
    (fit(degree=1, moments_loops=True, weighted=True), "stream", 7),
    (fit(degree=1, moments_loops=True, categorical=True), "stream", 7),
    (fit(degree=1, moments_loops=True, gaussian=False), "stream", 7),
    (fit(degree=1, moments_loops=True, block_size=True), "stream", 4),
    (fit(degree=1, moments_loops=False), "stream", 7),
    (fit(), "pool", 3),
    (fit(categorical=True), "stream", 7),
    (fit(categorical=True, block_size=True), "stream", 4),
    # the compiled fits' table: one block up to 2²¹ numbers, the tiled kernel on a GPU
    (fit(n=2**10, m=2**11, categorical=True, host_profile=False), "dense", 5),
    (fit(n=2**10 + 1, m=2**11, categorical=True, host_profile=False), "stream", 7),
    (fit(n=2**10, m=2**11, degree=1, host_profile=False), "stream", 7),  # 9 numbers a pair
    (fit(n=2**5, m=2**11, degree=1, outputs=2, host_profile=False), "dense", 5),  # 18
    (fit(degree=1, device="gpu"), "pallas", 6),
    (fit(degree=1, device="gpu", block_size=True), "stream", 4),
    (fit(degree=1, device="gpu", categorical=True), "stream", 7),
    (fit(degree=1, device="gpu", tiled=False), "stream", 7),
    (fit(categorical=True)._replace(task="compiled"), "stream", 7),
    (fit(n=100, m=500, degree=1)._replace(task="compiled"), "dense", 5),  # never NumPy
    (fit(device="gpu")._replace(task="compiled"), "pallas", 6),  # never pooling's table
]


def search(**changes) -> Facts:
    return Facts("search", 500, 500, 1, gaussian=True)._replace(**changes)


SEARCH_TABLE = [
    (search(), "numpy", 1),  # 500² ≤ 2²¹ in NumPy
    (search(criterion="aicc"), "numpy", 1),  # AICc's in-sample fits in NumPy too
    (search(m=1500, n=1500, criterion="aicc", binnable=True), "numpy", 1),  # one Gaussian
    (search(m=2**17, n=2**17, criterion="aicc", binnable=True), "numpy", 1),  # column: fgt
    (search(m=2**17 + 1, n=2**17 + 1, criterion="aicc", binnable=True), "compiled", 4),
    (search(m=1500, n=1500, criterion="aicc"), "compiled", 4),  # a far outlier: 1500² > 2²¹
    (
        search(m=1500, n=1500, criterion="aicc", degree=1, binnable=True),
        "compiled",
        4,
    ),  # 1500² > 2²¹
    (search(m=1500, n=1500, criterion="aicc", categorical=True, binnable=True), "compiled", 4),
    (search(criterion="aicc", categorical=True), "numpy", 1),  # 500² ≤ 2²¹ in NumPy
    (search(m=1500, n=1500, criterion="aicc", gaussian=False, binnable=True), "compiled", 4),
    (search(m=600, n=600, d=2, criterion="aicc", loo_loops=True), "numpy", 1),  # 600² ≤ 2¹⁹
    (search(criterion="aicc", weighted=True), "compiled", 4),  # its exact gradient
    (search(block_size=True), "compiled", 4),
    (search(m=1500, n=1500, loo_loops=True), "numpy", 1),  # 1500² × 40 ≤ 2²⁷
    (search(m=2000, n=2000, loo_loops=True), "fgt", 2),  # 2000² × 40 > 2²⁷: fgt's sums
    # local linear neither fgt nor binned searches (a spread-out sample): the loop
    (search(m=2000, n=2000, loo_loops=True, degree=1), "numpy", 1),
    (search(m=2**18, n=2**18, loo_loops=True), "fgt", 2),  # fgt's sums at any size
    (search(m=2000, n=2000, loo_loops=True, block_size=True), "compiled", 4),
    (search(m=2000, n=2000, loo_loops=True, categorical=True), "compiled", 4),
    (search(m=2000, n=2000, loo_loops=True, weighted=True), "fgt", 2),  # the layer's sums
    (search(m=2000, n=2000, weighted=True, truncating=False), "compiled", 4),  # too wide
    (search(m=2000, n=2000, weighted=True, degree=1), "compiled", 4),
    (search(m=2000, n=2000, loo_loops=True, criterion="aicc"), "compiled", 4),
    (search(m=2000, n=2000, loo_loops=True, binnable=True), "fgt", 2),
    (search(m=2**17, n=2**17, binnable=True), "fgt", 2),  # on the edge
    # never the binned search: its isolated rows' leave-one-out sums miss its tolerance
    (search(m=2**17 + 1, n=2**17 + 1, binnable=True), "fgt", 2),
    (search(m=2000, n=2000, loo_loops=True, binnable=True, degree=1), "numpy", 1),  # the loop
    (search(m=2**18, n=2**18, loo_loops=True, binnable=True, degree=1), "numpy", 1),
    (search(m=2000, n=2000, loo_loops=True, weighted=True, binnable=True), "fgt", 2),
    (search(m=2000, n=2000, binnable=True, degree=1), "compiled", 4),  # no loop built
    (search(m=2000, n=2000, d=3, loo_loops=True), "numpy", 1),  # several columns: any size
    (search(m=50_000, n=50_000, d=3, loo_loops=True), "numpy", 1),
    (search(m=2000, n=2000, d=3), "compiled", 4),
    (search(m=600, n=600, d=2), "numpy", 1),  # 600² ≤ 2¹⁹
    (search(m=800, n=800, d=2), "compiled", 4),
    (search(m=400, n=400, degree=1, d=2), "compiled", 4),  # 400² × 9 > 2¹⁹
    (search(m=400, n=400, host_profile=False), "fgt", 2),  # the built-in Gaussian: fgt
    (search(m=400, n=400, host_profile=False, gaussian=False), "compiled", 4),
    (search(m=1000, n=1000, binnable=True), "numpy", 1),  # 10⁶ ≤ 2²¹
    (search(m=1500, n=1500, binnable=True), "fgt", 2),
    (search(m=1500, n=1500, binnable=True, gaussian=False), "compiled", 4),  # (tricube …)
    (search(m=1500, n=1500, gaussian=False, compact=True, split=True), "sparse", 3),
    (search(m=1500, n=1500, gaussian=False, split=True, weighted=True), "compiled", 4),
    (search(m=1500, n=1500, gaussian=False, split=True, degree=1), "compiled", 4),
    (search(m=1500, n=1500, binnable=True, categorical=True), "compiled", 4),
    (search(m=1500, n=1500, binnable=True, criterion="aicc"), "numpy", 1),  # fgt's sums
    (search(m=999, n=999, binnable=True, host_profile=False, gaussian=False), "compiled", 4),
]


def finish(**changes) -> Facts:
    return Facts("finish", 100, BIG, 2, outputs=3)._replace(**changes)


FINISH_TABLE = [
    (finish(), "numpy", 1),  # 100·3000·3 ≤ 2²²
    (finish(n=2**20 // 3, m=4, outputs=3), "numpy", 1),  # on the edge: 2²² numbers
    (finish(n=2**20 // 3 + 1, m=4, outputs=3), "dense", 4),
    (finish(host_profile=False), "dense", 4),  # 3·10⁵ pairs
    (finish(n=BIG), "stream", 4),  # 9·10⁶ pairs > 2²¹
    (finish(n=BIG, d=1, gaussian=True), "fgt", 2),
    (finish(n=BIG, d=1, gaussian=True, truncating=False), "stream", 4),
    (finish(n=BIG, d=1, gaussian=True, power=2), "stream", 4),
    (finish(n=BIG, d=1, gaussian=True, in_range=far), "stream", 4),
    (finish(n=BIG, d=1, compact=True, radial=True), "sparse", 2),
    (finish(n=BIG, d=1, compact=True, radial=True, builtin=False), "stream", 4),
    (finish(n=BIG, d=2, compact=True, radial=True), "stream", 4),
    (finish(n=BIG, gaussian=True, loops=True), "native", 3),
    (finish(n=BIG, gaussian=True, loops=True, device="gpu"), "stream", 4),
    (finish(n=BIG, gaussian=True, loops=False), "stream", 4),
    (finish(n=BIG, gaussian=True, loops=True, truncating=False), "stream", 4),
    (finish(degree=1, categorical=True), "numpy", 1),
    (finish(n=BIG, d=1, gaussian=True, pairs_only=True), "numpy", 1),  # signed, or varying h
    (finish(n=BIG, degree=1, pairs_only=True), "numpy", 1),
    (finish(n=BIG, d=1, gaussian=True, degree=1), "stream", 4),  # no host method sums moments
    (finish(n=BIG, gaussian=True, loops=True, categorical=True), "stream", 4),
    (finish(m=4, gaussian=True, loops=True, categorical=True, outputs=2**17), "dense", 4),
    # small, but the Gaussian's compiled loops pay (from 2¹⁴ pairs, built, within range)
    (finish(d=1, gaussian=True, expansions_ready=True), "fgt", 2),  # 3·10⁵ pairs
    (finish(d=1, gaussian=True, expansions_ready=False, in_range=never), "numpy", 1),
    (finish(gaussian=True, loops=True, float64=True), "native", 3),
    (finish(gaussian=True, loops=True, in_loop_range=never), "numpy", 1),  # float32: sums too
    (finish(n=5, gaussian=True, loops=True, in_range=never), "numpy", 1),  # 1.5·10⁴ pairs
    (finish(gaussian=True, loops=True, float64=True, in_loop_range=far), "numpy", 1),
    (finish(n=BIG, gaussian=True, loops=True, in_loop_range=far), "stream", 4),
    (finish(d=1, gaussian=True, expansions_ready=True, in_loop_range=never), "fgt", 2),
    (finish(gaussian=True, loops=True, device="gpu", in_range=never), "numpy", 1),
    (finish(gaussian=True, loops=True, power=2, in_range=never), "numpy", 1),
    (finish(gaussian=True, loops=True, truncating=False, in_range=never), "numpy", 1),
    (finish(gaussian=True, loops=True, categorical=True, in_range=never), "numpy", 1),
    (finish(d=1, gaussian=True, expansions_ready=True, degree=1, in_range=never), "numpy", 1),
    (finish(d=1, split=True, **COMPACT), "sparse", 2),  # 3·10⁵ pairs ≥ 2¹⁶
    (finish(d=1, n=10, split=True, in_range=never, **COMPACT), "numpy", 1),  # 3·10⁴ pairs
    (finish(d=1, split=True, power=2, in_range=never, **COMPACT), "numpy", 1),
    (finish(d=1, split=True, in_range=far, **COMPACT), "numpy", 1),
]


def chunk(**changes) -> Facts:
    return Facts("chunk", 100, BIG, 1, outputs=2)._replace(**changes)


CHUNK_TABLE = [  # a Dask task: no NumPy pairs, however small (its program is reused)
    (chunk(gaussian=True), "fgt", 1),
    (chunk(compact=True, radial=True), "sparse", 1),
    (chunk(gaussian=True, in_range=far), "dense", 3),
    (chunk(d=3, gaussian=True, loops=True), "native", 2),
    (chunk(d=3, gaussian=True, loops=True, device="gpu"), "dense", 3),
    (chunk(d=3, gaussian=True, loops=True, in_loop_range=far), "dense", 3),
    (chunk(d=3, n=BIG, compact=True, radial=True), "stream", 3),
]


@pytest.mark.parametrize(
    "facts, backend, rule",
    POOLING_TABLE + DENSITY_TABLE + FIT_TABLE + SEARCH_TABLE + FINISH_TABLE + CHUNK_TABLE,
)
def test_the_tables(facts, backend, rule):
    assert plan(facts) == Plan(backend, rule)


def test_every_rule_is_in_the_tables():
    assert {r for _, _, r in POOLING_TABLE} == set(range(1, 11))
    assert {r for _, _, r in DENSITY_TABLE} == set(range(1, 8))
    assert {r for _, _, r in FIT_TABLE} == set(range(1, 8))
    assert {r for _, _, r in SEARCH_TABLE} == set(range(1, 5))
    assert {r for _, _, r in FINISH_TABLE} == set(range(1, 5))
    assert {r for _, _, r in CHUNK_TABLE} == set(range(1, 4))


def test_the_thresholds_are_the_planners_and_sit_on_their_edges():
    exact = dict(numpy=True, float64=True, d=3)
    assert plan(pool(n=2**11, m=2**11, outputs=1, **exact)).backend == "numpy"  # 2²² work
    assert plan(pool(n=2**11, m=2**11, outputs=2, **exact)).backend == "stream"
    assert plan(pool(n=2**10, m=2**11)).backend == "dense"  # 2²¹ pairs
    assert plan(pool(n=2**10 + 1, m=2**11)).backend == "stream"
    assert options.exact_engine(2**21) == "dense" and options.exact_engine(2**21 + 1) == "stream"
    assert numpy_engine.NUMPY_MAX_WORK == thresholds.NUMPY_MAX_WORK
    assert density_methods.HOST_PAIRS == thresholds.HOST_PAIRS


def test_a_task_it_does_not_know_is_named():
    with pytest.raises(ValueError, match=r"^facts.task: expected 'pool', 'density', 'fit', 'co"):
        plan(Facts("lookup", 1, 1, 1))


def test_facts_read_from_arrays():
    rng = np.random.default_rng(0)
    q, k = rng.uniform(size=(BIG, 3)), rng.uniform(size=(BIG, 3))
    facts = pool_facts(kernels.get("epanechnikov"), q, k, np.full(3, 0.02), numpy=True,
                       backend="cpu")  # fmt: skip
    assert (facts.compact, facts.radial, facts.gaussian, facts.float64) == (True, True, False, True)
    assert facts.in_range() and facts.neighbour_share() < 0.05
    assert plan(facts) == Plan("sparse", 7)
    far = pool_facts(kernels.get("gaussian"), q + 1e15, k, np.full(3, 1e-3), backend="cuda")
    assert far.device == "gpu" and not far.in_range() and not far.loops
    ints = pool_facts(kernels.get("gaussian"), q.astype(int), k.astype(int), np.ones(3),
                      values=np.ones((BIG, 1), int), numpy=True)  # fmt: skip
    assert ints.float64  # integers compute in float64
    dot = pool_facts(kernels.get("dot"), q, k, np.ones(3), numpy=True)
    assert not dot.host_profile and dot.tiled
    signed = density_facts(kernels.get("gaussian-order4"), k, q, np.ones(3), numpy=True)
    assert not signed.tiled and not signed.gaussian


def test_planning_imports_no_jax():
    script = textwrap.dedent("""
        import sys, numpy as np
        from attnpool import kernels
        from attnpool.sums.facts import density_facts, pool_facts
        from attnpool.sums.plan import plan
        x = np.random.default_rng(0).uniform(size=(3000, 3))
        print(plan(pool_facts(kernels.get("gaussian"), x, x, np.ones(3), numpy=True)).backend,
              plan(density_facts(kernels.get("cosine"), x, x, np.ones(3), numpy=True)).backend,
              "jax" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert out[2] == "False" and out[1] == "stream"
    assert out[0] in ("native", "stream")  # native where the compiled loops are built


@pytest.mark.parametrize(
    "d, kernel, bandwidth", [(1, "gaussian", 0.05), (1, "epanechnikov", 0.05), (3, "gaussian", 0.3)]
)
def test_a_density_is_what_its_planned_method_gives(d, kernel, bandwidth):
    rng = np.random.default_rng(d)
    x, q = rng.normal(size=(BIG, d)), rng.normal(size=(BIG, d))
    record = kernels.get(kernel)
    planned = plan(density_facts(record, x, q, np.full(d, bandwidth), numpy=True)).backend
    assert planned in ("fgt", "sparse", "native", "stream")
    got = attnpool.log_density(x, q, kernel=kernel, bandwidth=bandwidth)
    want = attnpool.log_density(x, q, kernel=kernel, bandwidth=bandwidth, method=planned)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "estimator, n, d, kernel, method, backend",
    [
        ("NadarayaWatson", 200, 1, "gaussian", "auto", "numpy"),
        ("NadarayaWatson", 5000, 1, "gaussian", "auto", "fgt"),
        ("NadarayaWatson", 5000, 3, "epanechnikov", "auto", "sparse"),
        ("NadarayaWatson", 5000, 2, "laplacian", "auto", "stream"),
        ("NadarayaWatson", 5000, 2, "gaussian", "dense", "dense"),
        ("LocalLinear", 5000, 2, "epanechnikov", "auto", "stream"),
        ("NadarayaWatson", 300, 2, "gaussian-order4", "auto", "pairs"),
    ],
)
def test_estimators_resolve_their_backend_in_fit(estimator, n, d, kernel, method, backend):
    rng = np.random.default_rng(n + d)
    x = rng.uniform(size=(n, d))
    y = np.sin(4 * x.sum(axis=1))
    fitted = getattr(attnpool, estimator)(bandwidth=0.1, kernel=kernel, method=method).fit(x, y)
    assert fitted.backend_ == backend
    assert f"Backend                  {backend} (at the training rows)" in str(fitted.summary())
    if estimator == "NadarayaWatson" and method == "auto" and backend not in ("numpy", "pairs"):
        # the fit at the training rows is the pool by that method, bit for bit
        got = fitted.predict(x)
        want = attnpool.attention_pool(x, x, y, kernel=kernel, bandwidth=0.1, method=backend)
        np.testing.assert_array_equal(got, want)


def test_the_native_loop_is_the_backend_where_it_is_built():
    x = np.random.default_rng(0).uniform(size=(5000, 3))
    fitted = attnpool.NadarayaWatson(bandwidth=0.1).fit(x, x.sum(axis=1))
    assert fitted.backend_ == ("native" if native_loops() else "stream")


def native_loops() -> bool:
    from attnpool.methods import native

    return native.available(True, 3)


def test_the_classifier_reports_its_regressors_backend():
    x = np.random.default_rng(1).uniform(size=(5000, 1))
    labels = (x[:, 0] > 0.5).astype(int)
    fitted = attnpool.NadarayaWatsonClassifier(bandwidth=0.05).fit(x, labels)
    assert fitted.backend_ == "fgt"  # two one-hot columns pooled at 5000² pairs


def test_searches_are_exact_not_binned():
    """The binned objective's isolated rows miss its tolerance — in a heavy tail or by a
    far outlier (20 000 lognormal rows, σ = 1.5: local linear CV undefined at every grid
    point, an error, where h = 0.3 gives 0.13), but also in the tails of normal samples
    (5000 rows: a local linear optimum 1.4× too large, an epanechnikov search's error) —
    so no rule takes it, spread out or not."""
    from attnpool.sums.facts import search_facts
    from attnpool.sums.local_model import model_for

    model = model_for(np.linspace(0, 1, 10)[:, None], kernel="gaussian", degree=1)
    for spread_out in (False, True):
        assert plan(search_facts(model, 5000, 1, weighted=True, spread_out=spread_out)) == (
            "compiled", 4)  # fmt: skip
        # unweighted CV of the Gaussian: the compiled loop, exact and faster than the
        # compiled programs; local constant fits keep fgt's O(m) sums
        assert plan(search_facts(model, 5000, 1, spread_out=spread_out)) == ("numpy", 1)
    constant = model._replace(degree=0)
    assert plan(search_facts(constant, 5000, 1, spread_out=True)) == ("fgt", 2)
