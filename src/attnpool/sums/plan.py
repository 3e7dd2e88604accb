"""The planner: the one place ``"auto"`` chooses how a kernel sum is computed.

A front end describes its problem by :class:`Facts` — what is summed, the sizes, the
kernel, the arrays and the device — and :func:`plan` reads its task's table, first
match wins. It is pure and imports no JAX: a decision costs microseconds, and the
tables are tested as tables. ``auto`` never picks an approximation.

**Pooling** (:func:`attnpool.attention_pool`):

====  ==========================================================  ================
rule  when                                                        backend
====  ==========================================================  ================
1     the weight matrix is asked for                              ``dense``
2     ``block_size`` is given                                     ``stream``
3     NumPy float64, a distance kernel NumPy evaluates, no mask,  ``numpy``
      ``n·m·p ≤ NUMPY_MAX_WORK``
4     ``n·m ≤ DENSE_MAX_PAIRS``                                   ``dense``
5     traced inputs, a key mask, or data beyond 2⁴⁰ bandwidths    ``pallas`` (GPU),
                                                                  else ``stream``
6     one column: the Gaussian / a compact kernel                 ``fgt`` / ``sparse``
7     a compact kernel in 2–4 columns whose sampled               ``sparse``
      neighbourhoods hold ≤ 5 % of the keys
8     a GPU, a kernel the tiled kernel takes                      ``pallas``
9     a CPU, the Gaussian in 2–16 columns, the compiled loops,    ``native``
      within ``LOOP_MAX_EXTENT`` (2¹²) bandwidths
10    otherwise                                                   ``stream``
====  ==========================================================  ================

**Densities** (:func:`attnpool.log_density`):

====  ==========================================================  ================
rule  when                                                        backend
====  ==========================================================  ================
1     JAX arrays: by size (``n·m ≤ DENSE_MAX_PAIRS``)             ``dense`` /
                                                                  ``stream``
2     ``n·m ≤ HOST_PAIRS``, unless rule 3, 5 or 6 pays: the       ``numpy``
      compiled loops, built, from 2¹⁴ pairs; a kernel that
      splits (``sparse``'s prefix sums) from 2¹⁶
3     the Gaussian in one column, within 2⁴⁰ bandwidths           ``fgt``
4     ``n·m ≤ HOST_PAIRS``, unless rule 5 or 6 pays               ``numpy``
5     a compact built-in kernel in one column, within range       ``sparse``
6     a CPU, the Gaussian in 2–16 columns, the compiled loops,    ``native``
      within range and 2¹² bandwidths
7     otherwise: by size                                          ``dense`` /
                                                                  ``stream``
====  ==========================================================  ================

**Local fits** (the regressions' predictions; ``p`` responses, ``w`` numbers a pair
carries: ``p``, or ``B² p`` for the moments of a local polynomial of ``B`` monomials,
``(1 + d)² p`` for local linear):

====  ==========================================================  ================
rule  when                                                        backend
====  ==========================================================  ================
1     no block size, a kernel NumPy evaluates, ``n·m·w ≤ 2²²``    ``numpy``
2     no block size, local linear or polynomial, the Gaussian,    ``native`` (the
      continuous columns, unweighted, the compiled moments loop   moments' loop)
3     local constant, continuous columns                          ``pool``
                                                                  (pooling's table)
4–7   otherwise: the compiled fits' table                         ``stream`` /
                                                                  ``dense`` /
                                                                  ``pallas``
====  ==========================================================  ================

**Compiled fits** (the engine of a local fit's compiled program — a regression
beyond rules 1–3, a compiled CV search's leave-one-out fits; ``b`` the numbers a
block holds per pair: 1 for local constant, ``w`` for the moments):

====  ==========================================================  ================
rule  when                                                        backend
====  ==========================================================  ================
4     ``block_size`` is given                                     ``stream``
5     ``n·m·b ≤ DENSE_MAX_PAIRS``                                 ``dense``
6     a GPU, continuous columns, a kernel the tiled kernel takes  ``pallas``
7     otherwise                                                   ``stream``
====  ==========================================================  ================

**Bandwidth searches** (``select_bandwidth(pooling="auto")`` of ``m`` rows):

====  ==========================================================  ================
rule  when                                                        backend
====  ==========================================================  ================
1     no block size; CV unweighted, the Gaussian of continuous    ``numpy`` (the
      columns on the compiled loop (several columns, local        host search)
      linear, or ``m²`` times the evaluations ≤ 2²⁷); AICc
      unweighted, local
      constant, the Gaussian of one continuous column, no
      heavy tail or far outlier, ``m ≤ FGT_SEARCH_MAX_ROWS``
      (its sums by ``fgt`` beyond NumPy's); else CV or
      unweighted AICc, a kernel NumPy
      evaluates, ``m²·w`` ≤ 2²¹ (one column) or 2¹⁹
2     CV, no block size, local constant, the Gaussian in one      ``fgt`` (its
      continuous column, observation weights spanning at most     leave-one-out
      ``TRUNCATED_MAX_SPAN``                                      sums, exact)
3     the same, unweighted, with a kernel that splits (boxcar,    ``sparse`` (its
      triangular, epanechnikov, cosine: prefix sums)              leave-one-out
                                                                  sums, exact)
4     otherwise                                                   ``compiled``
====  ==========================================================  ================

**Exact re-sums** (the sums layer's finishing step: the rows a backend leaves
unsettled, each over every key; ``w`` the sums' columns, ``1 + p`` or local linear's more):

====  ==========================================================  ================
rule  when                                                        backend
====  ==========================================================  ================
1     signed weights or varying bandwidths (no other backend      ``numpy``
      sums them); a kernel NumPy evaluates, ``n·m·w ≤``
      ``NUMPY_MAX_WORK``, unless rule 2 or 3 pays (as the
      densities' rule 2)
2     ``K`` (not ``K²``) within 2⁴⁰ bandwidths, one column: the   ``fgt`` /
      Gaussian / a compact built-in kernel                        ``sparse``
3     ``K`` within 2¹² bandwidths, a CPU, the Gaussian in 2–16    ``native``
      columns, the compiled loops
4     otherwise, and before rule 2 for categorical columns or     ``dense`` /
      local moments (no host method sums them): by size           ``stream``
      (``n·m ≤ DENSE_MAX_PAIRS``)
====  ==========================================================  ================

(The exact host methods first: a re-sum then imports no JAX.)

**Dask chunks** (the exact sums of one query chunk over one key chunk, a task of
:mod:`attnpool.distributed`: every chunk of a shape runs the same compiled program, so
no rule takes NumPy pairs):

====  ==========================================================  ================
rule  when                                                        backend
====  ==========================================================  ================
1     ``K`` within 2⁴⁰ bandwidths, one column: the Gaussian / a   ``fgt`` /
      compact built-in kernel                                     ``sparse``
2     ``K`` within 2¹² bandwidths, a CPU, the Gaussian in 2–16    ``native``
      columns, the compiled loops
3     otherwise: by size (``n·m ≤ DENSE_MAX_PAIRS``)              ``dense`` /
                                                                  ``stream``
====  ==========================================================  ================

(``fgt`` and ``native`` truncate far keys: observation weights spanning more than
their truncation allows skip the rules that take them; ``native``, which scales the
coordinates before their differences, serves within ``LOOP_MAX_EXTENT`` bandwidths.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .costs import block_width, search_evaluations, work_width
from .thresholds import (
    DENSE_MAX_PAIRS,
    EXPANSION_MIN_PAIRS,
    FGT_SEARCH_MAX_ROWS,
    HOST_PAIRS,
    NATIVE_SEARCH_MAX_WORK,
    NUMPY_MAX_WORK,
    NUMPY_SEARCH_MAX_WORK,
    NUMPY_SEARCH_MAX_WORK_SEVERAL,
    SPARSE_MAX_DIM,
    SPARSE_MAX_FRACTION,
    SPLIT_MIN_PAIRS,
)

__all__ = [
    "DENSE_MAX_PAIRS",
    "HOST_PAIRS",
    "NUMPY_MAX_WORK",
    "Facts",
    "Plan",
    "plan",
]  # fmt: skip


def _always_in_range() -> bool:
    return True


def _all_keys() -> float:
    return 1.0


class Facts(NamedTuple):
    """What the planner reads of a problem: no arrays, only what decides (a tuple: built
    in a microsecond; ``facts._replace(...)`` for another).

    ``in_range``, ``in_loop_range`` and ``neighbour_share`` cost a pass over the data:
    they are callables, asked only by the rules that need them (the extent within
    ``HOST_MAX_EXTENT`` or ``LOOP_MAX_EXTENT`` bandwidths, :mod:`attnpool._support.units`).
    """

    task: str  # "pool", "density", "fit", "compiled", "search", "finish" or "chunk"
    n: int
    m: int
    d: int
    outputs: int = 1
    gaussian: bool = False
    compact: bool = False
    radial: bool = True  # of the Euclidean norm, not a product (``sparse``'s balls)
    split: bool = False  # a compact built-in kernel ``sparse`` sums by prefix sums in 1-D
    builtin: bool = True
    tiled: bool = True  # the tiled Pallas kernel takes it (non-negative)
    host_profile: bool = True  # a distance kernel whose profile NumPy evaluates
    numpy: bool = False  # NumPy arrays (no JAX array, no tracer)
    float64: bool = False
    traced: bool = False
    masked: bool = False
    weight_matrix: bool = False
    block_size: bool = False
    truncating: bool = True  # observation weights leave fgt and native their bound
    device: str = "cpu"  # "cpu", "gpu" or another of JAX's platforms
    loops: bool = False  # the compiled loops sum ``d`` columns here
    expansions_ready: bool = False
    degree: int = 0  # a local fit's polynomial: 0 (local constant), 1 (local linear), …
    categorical: bool = False  # some column is ordered or unordered
    weighted: bool = False  # observation weights
    moments_loops: bool = False  # the compiled loop sums the local fit's moments here
    loo_loops: bool = False  # the compiled loop sums the leave-one-out terms here
    criterion: str = "cv"  # a search's: "cv" or "aicc"
    binnable: bool = False  # a smooth built-in kernel, no heavy tail or far outlier
    power: int = 1  # the sums' power of the kernel (2: a band's K²)
    pairs_only: bool = False  # signed weights or varying bandwidths: NumPy pairs alone
    in_range: Callable[[], bool] = _always_in_range
    in_loop_range: Callable[[], bool] = _always_in_range  # within the compiled loop's extent
    neighbour_share: Callable[[], float] = _all_keys


class Plan(NamedTuple):
    """The backend ``auto`` takes, and the rule of :func:`plan`'s table that chose it."""

    backend: str
    rule: int

    @property
    def by_numpy(self) -> bool:
        """NumPy pairs (searches: with the C loop's leave-one-out sums behind them)."""
        return self.backend == "numpy"

    @property
    def by_loop(self) -> bool:
        """The compiled C loop, ``native``, which sums a local fit's moments."""
        return self.backend == "native"

    @property
    def on_host(self) -> bool:
        """No program: NumPy pairs or the C loop."""
        return self.by_numpy or self.by_loop


def plan(facts: Facts) -> Plan:
    """The backend for ``facts`` (module docstring: the tables, first match wins)."""
    if facts.task == "pool":
        return _plan_pool(facts)
    if facts.task == "density":
        return _plan_density(facts)
    if facts.task == "fit":
        return _plan_fit(facts)
    if facts.task == "compiled":
        return _plan_compiled_fit(facts)
    if facts.task == "search":
        return _plan_search(facts)
    if facts.task == "finish":
        return _plan_finish(facts)
    if facts.task == "chunk":
        return _plan_chunk(facts)
    raise ValueError(
        "facts.task: expected 'pool', 'density', 'fit', 'compiled', 'search', 'finish' or "
        "'chunk'; "
        f"received {facts.task!r}"
    )


def _plan_fit(f: Facts) -> Plan:
    if not f.block_size and f.host_profile:
        if f.n * f.m * work_width(f) <= NUMPY_MAX_WORK:
            return Plan("numpy", 1)
        moments = f.degree >= 1 and f.gaussian and not f.categorical and not f.weighted
        if moments and f.moments_loops:
            return Plan("native", 2)
    if f.degree == 0 and not f.categorical:
        return Plan("pool", 3)
    return _plan_compiled_fit(f)


def _plan_compiled_fit(f: Facts) -> Plan:
    if f.block_size:
        return Plan("stream", 4)
    if f.n * f.m * block_width(f) <= DENSE_MAX_PAIRS:
        return Plan("dense", 5)
    if f.device == "gpu" and f.tiled and not f.categorical:
        return Plan("pallas", 6)
    return Plan("stream", 7)


def _plan_search(f: Facts) -> Plan:
    if not f.block_size and _host_searches(f):
        return Plan("numpy", 1)
    column = f.d == 1 and not f.categorical
    cv = f.criterion == "cv" and not f.block_size and f.degree == 0
    if cv and column and f.gaussian and f.truncating:  # (weighted: the layer's sums)
        return Plan("fgt", 2)
    if cv and column and f.split and not f.weighted:
        return Plan("sparse", 3)
    return Plan("compiled", 4)


def _host_searches(f: Facts) -> bool:
    if f.criterion == "cv" and not f.weighted and f.loo_loops:  # (the loop's sums: CV's)
        # in one column, fgt (rule 2) wins for local constant where the loop's m² sums
        # cost more; for local linear the loop is the exact search's fastest (5000 rows:
        # 0.3 s; two clusters far apart: 10 s, compiled 21 s)
        small = f.m * f.m * search_evaluations(f) <= NATIVE_SEARCH_MAX_WORK
        return f.d > 1 or small or f.degree > 0
    if f.criterion == "aicc" and f.weighted:
        # the compiled search's exact gradient finds the optimum below the criterion's
        # rounding (scaling every weight moves it by < 1e-8); Brent's, by up to 4e-8
        return False
    column = f.d == 1 and f.gaussian and not f.categorical and f.binnable
    if f.criterion == "aicc" and f.degree == 0 and column and f.m <= FGT_SEARCH_MAX_ROWS:
        # the in-sample fit and its hat diagonal by the fgt backend beyond NumPy's pairs,
        # O(m) an evaluation (5000 rows: 0.04 s, the compiled search 3.3 s); not for a
        # far outlier (not binnable), which can leave fgt's range: NumPy's pairs then
        return True
    limit = NUMPY_SEARCH_MAX_WORK if f.d == 1 else NUMPY_SEARCH_MAX_WORK_SEVERAL
    return f.host_profile and f.m * f.m * work_width(f) <= limit


def _plan_pool(f: Facts) -> Plan:
    if f.weight_matrix:
        return Plan("dense", 1)
    if f.block_size:
        return Plan("stream", 2)
    if f.numpy and f.float64 and f.host_profile and not f.masked:
        if f.n * f.m * f.outputs <= NUMPY_MAX_WORK:
            return Plan("numpy", 3)
    if f.n * f.m <= DENSE_MAX_PAIRS:
        return Plan("dense", 4)
    tiled = f.device == "gpu" and f.tiled
    if f.traced or f.masked or not f.in_range():
        return Plan("pallas" if tiled else "stream", 5)
    if f.d == 1 and f.gaussian and f.truncating:
        return Plan("fgt", 6)
    ball = f.compact and f.radial
    if f.d == 1 and ball:
        return Plan("sparse", 6)
    if ball and f.d <= SPARSE_MAX_DIM and f.neighbour_share() <= SPARSE_MAX_FRACTION:
        return Plan("sparse", 7)
    if tiled:
        return Plan("pallas", 8)
    loop = f.device == "cpu" and f.gaussian and f.d >= 2 and f.loops and f.truncating
    if loop and f.in_loop_range():
        return Plan("native", 9)
    return Plan("stream", 10)


def _plan_density(f: Facts) -> Plan:
    pairs = f.n * f.m
    by_size = "dense" if pairs <= DENSE_MAX_PAIRS else "stream"
    if not f.numpy:
        return Plan(by_size, 1)
    small = pairs <= HOST_PAIRS
    gaussian_column = f.d == 1 and f.gaussian and f.truncating
    expansions_pay = pairs > HOST_PAIRS or (pairs >= EXPANSION_MIN_PAIRS and f.expansions_ready)
    native = f.d >= 2 and f.device == "cpu" and f.gaussian and f.truncating and f.loops
    host_pays = (native and pairs >= EXPANSION_MIN_PAIRS and f.in_loop_range()) or (
        f.d == 1 and f.split and pairs >= SPLIT_MIN_PAIRS and f.in_range()
    )
    if small and not (gaussian_column and expansions_pay) and not host_pays:
        return Plan("numpy", 2)
    in_range_column = f.d == 1 and f.in_range()
    if gaussian_column and in_range_column:
        return Plan("fgt", 3)
    if small and not host_pays:
        return Plan("numpy", 4)
    if in_range_column and f.compact and f.builtin:
        return Plan("sparse", 5)
    if native and f.in_range() and f.in_loop_range():
        return Plan("native", 6)
    return Plan(by_size, 7)


def _plan_finish(f: Facts) -> Plan:
    small = f.n * f.m * f.outputs <= NUMPY_MAX_WORK
    if f.pairs_only or (f.host_profile and small and not _host_pays(f)):
        return Plan("numpy", 1)
    if f.degree or f.categorical:  # (no host method sums moments or categorical columns)
        return Plan("dense" if f.n * f.m <= DENSE_MAX_PAIRS else "stream", 4)
    found = _plan_exact_host(f)
    return Plan(found.backend, found.rule + 1)


def _host_pays(f: Facts) -> bool:
    """Whether an exact host backend re-sums ``f`` faster than NumPy: the Gaussian's
    compiled loops, where built, from ``EXPANSION_MIN_PAIRS`` pairs; ``sparse``'s prefix
    sums of a kernel that splits from ``SPLIT_MIN_PAIRS`` (:mod:`.thresholds`)."""
    if f.n * f.m < EXPANSION_MIN_PAIRS or f.degree or f.categorical or f.power != 1:
        return False
    if f.d == 1 and f.split:
        return f.n * f.m >= SPLIT_MIN_PAIRS and f.in_range()
    if f.d == 1:
        return f.gaussian and f.truncating and f.power == 1 and f.expansions_ready and f.in_range()
    # (float32 problems: the loop sums in float32, NumPy's pairs in float64)
    loop = f.gaussian and f.truncating and f.float64 and f.loops and f.device == "cpu"
    return loop and f.in_loop_range()


def _plan_chunk(f: Facts) -> Plan:
    return _plan_exact_host(f)


def _plan_exact_host(f: Facts) -> Plan:
    """The exact host methods where they serve, else the compiled exact engine."""
    host = f.power == 1 and f.in_range()
    if host and f.d == 1 and f.gaussian and f.truncating:
        return Plan("fgt", 1)
    if host and f.d == 1 and f.compact and f.radial and f.builtin:
        return Plan("sparse", 1)
    loop = f.device == "cpu" and f.gaussian and f.d >= 2 and f.loops and f.truncating
    if host and loop and f.in_loop_range():
        return Plan("native", 2)
    return Plan("dense" if f.n * f.m <= DENSE_MAX_PAIRS else "stream", 3)
