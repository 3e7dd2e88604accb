"""Kernel density estimates on the pooling engines: attention pooling's denominator.

.. math:: \\hat f(x) = \\frac{1}{\\sum_i w_i} \\sum_i w_i \\,
          \\frac{K((x - x_i) / h)}{\\prod_j h_j \\int K}

(``w_i = 1`` without observation weights). ``Σ_i w_i K(u_i)`` is the pooling state of
the values ``w`` — ``m + log t`` in the log domain — on the exact engines (dense or
streamed key blocks, a compact kernel's edge decided as pooling decides it), so a
density far from the data is a finite log density, not 0 or ``log 0``. ``∫K`` is over
``ℝ^d``: radial kernels by radial quadrature, product kernels the one-dimensional
integral to the power ``d`` (:func:`kernel_integrals`). The estimator is in
:mod:`attnpool.density.estimator`, the bandwidth selectors in
:mod:`attnpool.density.selection`, distribution functions in
:mod:`attnpool.density.distribution`.

>>> import numpy as np
>>> from attnpool.density import kernel_density
>>> kernel_density(np.zeros(1), np.array([0.0, 1.0]), bandwidth=1.0).round(4)  # φ(0), φ(1)
array([0.3989, 0.242 ])
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike, Bandwidth, KernelSpec, MethodSpec
from .._support.units import remembering_extremes
from .._support.validation import check_bandwidth, check_points, is_jax, numpy_dtype
from ..kernels.calculus import density_integral, kernel_integrals
from ..kernels.sphere import is_haversine, to_chords
from . import matrix_bandwidth

if TYPE_CHECKING:
    from ..kernels.mixed import MixedColumns
from ..sums.backends import get_backend
from ..sums.observation_weights import check_weights, in_weight_unit

__all__ = [
    "density_band",
    "kernel_density",
    "kernel_integrals",
    "log_density",
]


#: How :func:`log_density` sums: ``"auto"`` (exact: NumPy pairs for small problems, the
#: ``fgt`` expansions for a Gaussian column of many points, else the compiled engines),
#: ``"dense"``/``"stream"`` (the compiled engines), ``"fgt"`` (the Gaussian in one column),
#: ``"sparse"`` (compact radial kernels: only the keys inside the support; prefix sums in
#: one column, a KD-tree above; exact), ``"native"`` (the Gaussian by the compiled C loop,
#: every core, any dimension; exact), ``"binned"`` or a :class:`~attnpool.Binned` record
#: (``d ≤ 2``: relative error of each density at most its ``tolerance``, rows the bound
#: cannot settle summed exactly). ``"auto"`` takes ``"sparse"`` for a compact kernel in
#: one column beyond :data:`attnpool.density.methods.HOST_PAIRS` pairs, and ``"native"``
#: for the Gaussian in several columns there (on a CPU, where its loop builds).
DENSITY_METHODS = ("auto", "dense", "stream", "fgt", "sparse", "native", "binned", "tree")


def log_density(
    x_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    weights: ArrayLike | None = None,
    var_type: str | None = None,
    method: MethodSpec = "auto",
) -> np.ndarray:
    """``log f̂`` at ``x_query (k,) | (k, d)`` of the sample ``x_train (n,) | (n, d)``:
    ``(k,)`` in float64 (the inputs' precision if narrower), ``−inf`` where a compact
    kernel covers no training point. ``weights (n,)``: observation weights.
    ``var_type``: one letter per column, ``c`` continuous, ``o`` ordered, ``u`` unordered
    (statsmodels' ``KDEMultivariate``; :mod:`attnpool.kernels.mixed`): a categorical
    column's bandwidth is its ``λ ∈ (0, 1)``. ``method``: one of :data:`DENSITY_METHODS`
    (continuous columns).

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    x_query : array of shape (k,) or (k, d)
    kernel : str or Kernel
    bandwidth : float, array of shape (d,) or (d, d)
        A matrix ``H`` (radial kernels, continuous columns): the kernel ``K_H(u) =
        |H|^(−1/2) K(H^(−1/2) u)``, R's ``ks`` convention (``diag(h²)`` is ``h``).
    weights : array of shape (n,), optional
    var_type : str, optional
    method : str or Binned

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Silverman, B. W. (1986). *Density Estimation for Statistics and Data Analysis*.
    Chapman & Hall. Aitchison, J. & Aitken, C. G. G. (1976). Multivariate binary
    discrimination by the kernel method. *Biometrika* 63(3), 413–420.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.log_density(data.x_train, [2.5], bandwidth=0.5).round(4)
    array([-1.5889])
    """
    with remembering_extremes():  # the checks and grids reduce each array once
        return _log_density(x_train, x_query, kernel, bandwidth, weights, var_type, method)


def _log_density(
    x_train: Any, x_query: Any, kernel: Any, bandwidth: Any, weights: Any, var_type: Any,
    method: Any,
) -> np.ndarray:  # fmt: skip
    from ..methods.options import HOST_METHODS, Binned, Tree

    if is_haversine(kernel):  # (latitude, longitude) rows: the chords of unit vectors
        if var_type is not None and set(var_type) != {"c"}:
            raise ValueError(
                f"var_type: the haversine distance takes continuous columns; received {var_type!r}"
            )
        x_query, x_train, arc = to_chords(
            x_query, x_train, kernel, bandwidth, names=("x_query", "x_train")
        )  # the arc kernel's mass is per h² (finite for any h): its log here
        per_square = _log_density(x_train, x_query, arc, 1.0, weights, None, method)
        return np.asarray(per_square - 2 * math.log(float(np.ravel(bandwidth)[0])))
    if get_backend(method) is not None:
        from .by_backend import log_density_by_backend

        x, q = _checked_rows(x_train, x_query)
        return log_density_by_backend(method, x, q, kernel, bandwidth, weights, var_type)
    name = method.name if isinstance(method, Binned | Tree) else method
    if name not in DENSITY_METHODS:
        raise ValueError(
            f"method: expected one of {', '.join(map(repr, DENSITY_METHODS))} or a Binned "
            f"or Tree record; received {method!r}"
        )
    record = _kernels.get(kernel)
    x, q = _checked_rows(x_train, x_query)
    if matrix_bandwidth.is_matrix(bandwidth):
        return _matrix_log_density(x, q, record, bandwidth, weights, var_type, method)
    if var_type is not None and set(var_type) != {"c"}:
        if name != "auto":
            raise ValueError(
                f"method: mixed data (var_type={var_type!r}) are summed pair by pair, by "
                f"'auto'; received {name!r}"
            )
        return _mixed_log_density(x, q, record, bandwidth, weights, var_type)
    record = _kernels.for_dimensions(record, x.shape[1])
    first = density_integral(record, x.shape[1])
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    dtype = numpy_dtype(x, q)
    w = None if weights is None else check_weights(weights, x.shape[0], dtype)
    if w is not None and not is_jax(w):  # (the density is Σ w K / Σ w: w in a unit)
        w = in_weight_unit(w)
        if not np.all(w > 0):
            x, w = x[w > 0], w[w > 0]  # weight 0 counts nowhere: never a row's nearest key
    n, m = q.shape[0], x.shape[0]
    if n == 0:
        return np.zeros(0)
    host = not (is_jax(x) or is_jax(q))
    if host and (name == "auto" or name in HOST_METHODS):
        found = _host_log_density(x, q, record, h, w, method)
        if found is not None:  # no program to build
            total = x.shape[0] if w is None else float(np.sum(w))
            return np.asarray(found - math.log(total))
    elif name in HOST_METHODS:
        raise ValueError(f"method: {name!r} sums concrete NumPy arrays; received JAX arrays")
    # the compiled engines (JAX is imported here, not for the host methods above), in the
    # inputs' precision, finished by the sums layer
    from ..engines.compiled_backends import ENGINES
    from ..sums import layer
    from ..sums.problem import SumProblem

    keys, queries = (np.asarray(a, dtype) for a in (x, q))
    w = None if w is None else np.asarray(w, np.float64)
    problem = SumProblem(queries, keys, np.zeros((m, 0), dtype), h, record, w)
    engine = ENGINES[_compiled_method(name, record, x, q)]
    return layer.log_density(engine, problem, first)


def _compiled_method(name: str, record: Any, x: Any, q: Any) -> str:
    """The compiled engine: ``name``, or for ``"auto"`` the planner's (by size)."""
    if name != "auto":
        return name
    from ..sums.facts import density_facts
    from ..sums.plan import plan

    return plan(density_facts(record, x, q, None, numpy=False)).backend


def _checked_rows(x_train: Any, x_query: Any) -> tuple[Any, Any]:
    x = check_points(x_train, "x_train")
    if x.shape[0] == 0:
        raise ValueError(f"x_train: expected at least one row; received shape {x.shape}")
    return x, check_points(x_query, "x_query", dims=x.shape[1])


def _matrix_log_density(
    x: Any, q: Any, record: Any, bandwidth: Any, weights: Any, var_type: Any, method: Any
) -> np.ndarray:
    """:func:`log_density` with a full bandwidth matrix (:mod:`.matrix_bandwidth`)."""
    if var_type is not None and set(var_type) != {"c"}:
        raise ValueError(
            "bandwidth: a bandwidth matrix takes continuous columns; received "
            f"var_type={var_type!r}"
        )
    if is_jax(x) or is_jax(q):
        raise ValueError("bandwidth: a bandwidth matrix takes NumPy arrays; received JAX arrays")
    factor = matrix_bandwidth.cholesky_factor(bandwidth, x.shape[1], record)
    x, q = (matrix_bandwidth.whitened(a, factor) for a in (x, q))
    found = _log_density(x, q, record, 1.0, weights, None, method)
    return np.asarray(found - np.sum(np.log(np.diag(factor))))


def _host_log_density(
    x: Any, q: Any, record: Any, h: Any, w: Any, method: Any
) -> np.ndarray | None:
    """The unnormalised log sums of :func:`log_density` by the host methods (NumPy arrays),
    or None where ``"auto"`` takes the compiled engines."""
    from ..methods.options import resolve
    from .methods import host_log_sums, method_log_sums

    # (not centred here: each backend centres on the keys' midrange, the expansions on
    # each cluster's, which centring on the whole sample's would round first)
    x64, q64 = np.asarray(x, np.float64), np.asarray(q, np.float64)
    w64 = None if w is None else np.asarray(w, np.float64)
    if method == "auto":
        found = host_log_sums(x64, q64, record, h, w64)
        return None if found is None else np.asarray(found)
    return np.asarray(method_log_sums(x64, q64, record, h, w64, *resolve(method)))


def mixed_columns(
    x: np.ndarray, kernel: KernelSpec, bandwidth: Bandwidth, var_type: str
) -> tuple[MixedColumns, np.ndarray]:
    """``(columns, h)``: the :class:`~attnpool.kernels.mixed.MixedColumns` of the sample
    ``x (n, d)`` and its checked bandwidths (``λ < 1`` for categorical columns)."""
    from ..kernels.mixed import MixedColumns
    from ..regression import validated
    from ..sums.local_model import model_for

    model_for(x, kernel=kernel, var_type=var_type)  # the letters
    h = validated(x, x[:, 0], None, bandwidth, kernel, var_type, 0)[3]
    columns = MixedColumns(np.asarray(x, np.float64), var_type, kernel)
    if columns.continuous:
        density_integral(columns.kernel, len(columns.continuous))
    return columns, h


def _mixed_log_density(
    x: Any, q: Any, kernel: Any, bandwidth: Any, weights: Any, var_type: Any
) -> np.ndarray:
    from .methods import exact_normalised_log_sums, mixed_problem

    x, q = np.asarray(x, np.float64), np.asarray(q, np.float64)
    columns, h = mixed_columns(x, kernel, bandwidth, var_type)
    w = in_weight_unit(None if weights is None else check_weights(weights, x.shape[0]))
    total = x.shape[0] if w is None else float(np.sum(w))
    found = exact_normalised_log_sums(mixed_problem(q, x, h, columns, w))
    return np.asarray(found - math.log(total))


def kernel_density(x_train: ArrayLike, x_query: ArrayLike, **options: Any) -> np.ndarray:
    """The density ``f̂`` at ``x_query``: ``exp`` of :func:`log_density` (same options).

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    x_query : array of shape (k,) or (k, d)
    **options
        ``kernel``, ``bandwidth``, ``weights``, ``var_type``, ``method``.

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Silverman, B. W. (1986). *Density Estimation for Statistics and Data Analysis*.
    Chapman & Hall.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.kernel_density(data.x_train, [2.5], bandwidth=0.5).round(4)
    array([0.2041])
    """
    return np.asarray(np.exp(log_density(x_train, x_query, **options)))


def density_band(
    x_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    level: float = 0.95,
    weights: ArrayLike | None = None,
    var_type: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A pointwise ``level`` band of the density at ``x_query``: ``f̂ ± z s``, ``s²`` the
    variance of the mean of the i.i.d. terms ``K_h(x − X_i)`` estimated from them,
    ``(mean(K_h²) − f̂²) / n_e`` (``n_e = (Σw)² / Σw²``, the effective sample size; the
    weighted means with observation weights) — the estimate's own spread, with no
    small-bandwidth approximation (``f̂ R(K) / (n h)`` overstates it by the ``f̂² / n``
    it drops, a quarter at ``h = 0.3`` on a standard normal). The bias is not bounded, as
    by no such band; the lower end is clipped at 0. ``var_type`` as
    :func:`log_density` takes it.

    Parameters
    ----------
    x_train : array (n,) or (n, d)
    x_query : array (k,) or (k, d)
    kernel, bandwidth, weights, var_type
        As :func:`attnpool.kernel_density`.
    level : float in (0, 1)

    Returns
    -------
    lower, upper : ndarray (k,)

    Examples
    --------
    >>> import attnpool
    >>> from attnpool.density import density_band
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # x uniform on [0, 5]
    >>> lower, upper = density_band(data.x_train, [2.5], bandwidth=0.4)
    >>> lower.round(3), upper.round(3)     # around the estimate 0.215
    (array([0.139]), array([0.292]))

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, section 2.5 (the estimate's
    variance). Hall, P. (1992). Effect of bias estimation on coverage accuracy of
    bootstrap confidence intervals for a probability density. *Annals of Statistics*
    20(2), 675–694 (why the bias is left out).
    """
    from scipy import stats

    from .methods import exact_normalised_log_sums, mixed_problem

    if not 0 < level < 1:
        raise ValueError(f"level: expected a number strictly between 0 and 1; received {level!r}")
    x = np.asarray(check_points(x_train, "x_train"), np.float64)
    q = np.asarray(check_points(x_query, "x_query", dims=x.shape[1]), np.float64)
    columns, h = mixed_columns(x, kernel, bandwidth, var_type or "c" * x.shape[1])
    w = in_weight_unit(None if weights is None else check_weights(weights, x.shape[0]))
    problem = mixed_problem(q, x, h, columns, w)  # the sums of K_h, then of K_h²
    log_total = math.log(x.shape[0] if w is None else float(np.sum(w)))
    density = np.exp(exact_normalised_log_sums(problem) - log_total)
    second = np.exp(exact_normalised_log_sums(problem.replace(power=2)) - log_total)
    share = np.full(x.shape[0], 1.0 / x.shape[0]) if w is None else w / np.sum(w)
    effective = 1.0 / np.sum(share**2)
    spread = np.sqrt(np.maximum(second - density**2, 0.0) / effective)
    z = stats.norm.ppf(0.5 + level / 2)
    return np.maximum(density - z * spread, 0.0), density + z * spread
