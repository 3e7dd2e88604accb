"""A confidence band's sums on a registered backend (:mod:`attnpool.sums.backends`):
:func:`attnpool.confidence_band` of a Nadaraya–Watson fit when ``pooling=`` names one.
The fit, the leave-one-out residuals, the smooth of their squares and the kernel sums
``Σ K`` are each one problem of the sums layer; the bootstrap's refits are one more,
its ``B`` replicates ``B`` value columns of the same weights."""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from .._support.units import value_unit
from ..kernels.calculus import kernel_integrals
from ..sums import layer
from ..sums.backends import Backend
from ..sums.empty_policy import user_stacklevel
from ..sums.exact_pairs import heaviest_keys
from ..sums.local_model import LocalModel
from ..sums.problem import SumProblem

__all__ = ["BandSettings", "BeyondTheDataWarning", "backend_band", "bootstrap_responses",
           "finite_residuals", "host_band", "numpy_band", "warn_beyond_the_data"]  # fmt: skip


class BeyondTheDataWarning(UserWarning):
    """An asymptotic band at queries with less than one training point's weight under
    the kernel: its variance there is no standard error of the fit.

    The formula's variance ``σ̂²(x) ∫K² / (n h f̂(x))`` divides by the density of the
    training points, which beyond (or between) the data tends to 0: twenty bandwidths
    out its standard error is ~1e42 where the fit's own is the noise's size. A wider
    bandwidth reaches those queries, and ``method="bootstrap"`` answers there.

    Examples
    --------
    >>> import warnings, numpy as np, attnpool
    >>> from attnpool.inference import BeyondTheDataWarning
    >>> x = np.linspace(0.0, 1.0, 50); y = np.sin(4 * x)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     band = attnpool.confidence_band(x, y, [0.5, 3.0], bandwidth=0.05)
    >>> [w.category is BeyondTheDataWarning for w in caught]
    [True]

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*,
    section 4.4 (the asymptotic variance, for queries inside the design's support).
    """


class BandSettings(NamedTuple):
    """How a band's standard errors are computed: ``method`` (``"asymptotic"``,
    ``"bootstrap"``), and the bootstrap's replicates, kind (``"wild"``, ``"residual"``)
    and seed."""

    method: str
    n_boot: int
    bootstrap: str
    seed: int


def backend_band(
    name: str, x: np.ndarray, y: np.ndarray, q: np.ndarray, h: np.ndarray, model: LocalModel,
    settings: BandSettings, backend: Backend | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(fit (k, p), std (k, p))`` of the band (checked arguments) by the backend
    registered as ``name`` (a local-constant fit of continuous columns), or by ``backend``
    (a built-in one, chosen by the planner: any fit it serves)."""
    method, n_boot, bootstrap, seed = settings
    if backend is None and (model.degree != 0 or model.categorical):
        raise ValueError(
            f"pooling: backend {name!r} gives bands of a local-constant fit of continuous "
            f"columns (degree=0); received degree={model.degree}, var_type={model.var_type!r}"
        )
    x, y, q, h = layer.host_arrays(name, x, y, q, h)
    sums: str | Backend = name if backend is None else backend

    def fitted(queries: np.ndarray, values: np.ndarray, **options: Any) -> np.ndarray:
        return local_fit(sums, queries, x, values, h, model, **options)

    fit = fitted(q, y)
    residuals = finite_residuals(y - fitted(x, y, leave_out=True))
    if method == "asymptotic":
        noise = fitted(q, residuals**2, degree=0)
        first, second = kernel_integrals(model.kernel, x.shape[1])
        counts = layer.log_kernel_sums(sums, SumProblem(q, x, np.zeros((x.shape[0], 0)), h,
                                                         model.kernel), "pooling")  # fmt: skip
        warn_beyond_the_data(counts, model.kernel)
        return fit, np.sqrt(noise * (second / first) * np.exp(-counts)[:, None])
    from .._support.interop import precision_scope  # the compiled engines' draws, in float64

    with precision_scope(np.float64):
        replicates = np.asarray(bootstrap_responses(fitted(x, y), residuals, n_boot, bootstrap,
                                                    seed))  # fmt: skip
    p = y.shape[1]
    refits = fitted(q, replicates.reshape(x.shape[0], n_boot * p)).reshape(q.shape[0], n_boot, p)
    return fit, refits.std(axis=1, ddof=1)


def local_fit(
    sums: str | Backend, queries: np.ndarray, x: np.ndarray, values: np.ndarray, h: np.ndarray,
    model: LocalModel, *, leave_out: bool = False, degree: int | None = None,
) -> np.ndarray:  # fmt: skip
    """``(k, p)``: the local fit of ``model`` (of ``degree``, where given) at ``queries``
    by ``sums`` through the sums layer — each row's moments about its heaviest key, the
    values in power-of-two units (:func:`~attnpool._support.units.value_unit`); each
    training row leaving itself out where ``leave_out`` — NaN where no key weighs."""
    unit = value_unit(values)
    degree = model.degree if degree is None else degree
    categorical = bool(model.categorical)
    problem = SumProblem(queries, x, values / unit, h, model.kernel,
                         left_out=np.arange(x.shape[0]) if leave_out else None,
                         var_type=model.var_type if categorical else None,
                         levels=model.levels if categorical else (), degree=degree)  # fmt: skip
    if degree:
        problem = problem.replace(origin=heaviest_keys(problem))
    fit, _, empty = layer.local_fit(sums, problem, "pooling")
    if not leave_out and empty.any() and not model.kernel.compact:
        # distances beyond the float range: the formula's limit, as the fits' own
        fit = np.array(fit)
        fit[empty] = layer.nearest_limit(problem, empty)
    return np.asarray(fit * unit)


def host_band(
    x: np.ndarray, y: np.ndarray, q: np.ndarray, h: np.ndarray, model: LocalModel
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(fit, std)`` of the asymptotic band of a local-constant fit of continuous columns
    on the exact host backend (``fgt``, ``sparse``, ``native``) the planner's pooling
    table gives its leave-one-out fits of NumPy float64 data — every sum by the sums
    layer, no JAX — else None."""
    from ..methods.backends import BUILT_IN
    from ..sums.facts import pool_facts
    from ..sums.plan import plan

    if model.degree != 0 or model.categorical:
        return None
    if not all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in (x, y, q, h)):
        return None
    name = plan(pool_facts(model.kernel, x, x, h, values=y, numpy=True)).backend
    if name not in BUILT_IN:
        return None
    return backend_band(name, x, y, q, h, model, BandSettings("asymptotic", 0, "wild", 0),
                        backend=BUILT_IN[name])  # fmt: skip


def numpy_band(
    x: np.ndarray, y: np.ndarray, q: np.ndarray, h: np.ndarray, model: LocalModel
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(fit, std)`` of the asymptotic band in NumPy float64 — no JAX, no program — where
    the planner's fit table gives the NumPy engine both the fit at the queries and the
    leave-one-out fits (float64 data), else None (the compiled engines take it)."""
    from ..engines.numpy_engine import local_fit
    from ..sums.backends import exact_log_sums
    from ..sums.facts import fit_facts
    from ..sums.plan import plan

    if not all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in (x, y, q, h)):
        return None
    n, p = y.shape
    if not all(plan(fit_facts(model, rows, n, p)).by_numpy for rows in (q.shape[0], n)):
        return None
    unbounded = not model.kernel.compact  # rows beyond the float range: the limit
    fit = local_fit(x, y, q, h, model, nearest=unbounded)[0]
    residuals = finite_residuals(y - local_fit(x, y, x, h, model, exclude_self=True)[0])
    noise = local_fit(x, residuals**2, q, h, model._replace(degree=0), nearest=unbounded)[0]
    first, second = kernel_integrals(model.kernel, x.shape[1])
    found = exact_log_sums(SumProblem(q, x, np.zeros((n, 0)), h, model.kernel))
    with np.errstate(divide="ignore", over="ignore"):
        counts = found.shift + np.log(found.sums[:, 0])
        warn_beyond_the_data(counts, model.kernel)
        return fit, np.sqrt(noise * (second / first) * np.exp(-counts)[:, None])


def warn_beyond_the_data(log_counts: np.ndarray, kernel: Any) -> None:
    """One warning for the queries with less than one training point's peak weight under
    the kernel (``Σ K < K(0)``; ``log_counts`` ``(k,)``: ``log Σ K``): beyond the data,
    where the asymptotic variance ``σ² (∫K² / ∫K) / Σ K`` grows without bound and is no
    standard error of the fit (queries no key of a compact kernel reaches are reported as
    empty; an unbounded kernel's, beyond the float range, take the nearest-key limit and
    are counted here)."""
    peak = float(np.asarray(kernel.log_profile(np.zeros(1)))[0])
    sparse = (np.isfinite(log_counts) | (not kernel.compact)) & (log_counts < peak)
    if sparse.any():
        warnings.warn(
            f"x_query: {int(sparse.sum())} of {log_counts.shape[0]} queries have less than "
            "one training point's kernel weight under them (beyond or between the data, "
            f"down to {float(np.exp(np.min(log_counts[sparse]) - peak)):.3g}); the asymptotic "
            "variance there grows as 1 / Σ K and is no standard error of the fit; "
            "method='bootstrap' gives one",
            BeyondTheDataWarning,
            stacklevel=user_stacklevel(),
        )


def finite_residuals(residuals: np.ndarray) -> np.ndarray:
    """A point left with no neighbour (compact kernels) has no leave-one-out residual;
    it gets the root mean square of the others, so it neither vanishes nor poisons sums."""
    finite = np.isfinite(residuals)
    count = np.maximum(np.sum(finite, axis=0), 1)
    rms = np.sqrt(np.sum(np.where(finite, residuals, 0.0) ** 2, axis=0) / count)
    return np.where(finite, residuals, rms)


def bootstrap_responses(fit: Any, residuals: Any, n_boot: int, kind: str, seed: int) -> Any:
    """``(n, B, p)`` responses ``ĝ(x_i) + ε*`` for ``B`` replicates (vmapped over keys),
    drawn from ``seed``."""
    import jax
    import jax.numpy as jnp

    key = jax.random.key(seed)
    n = residuals.shape[0]
    centred = residuals - jnp.mean(residuals, axis=0)

    def one(key: Any) -> Any:
        if kind == "wild":
            signs = jax.random.rademacher(key, (n, 1), dtype=fit.dtype)
            return fit + residuals * signs
        rows = jax.random.randint(key, (n,), 0, n)
        return fit + centred[rows]

    draws = jax.vmap(one)(jax.random.split(key, n_boot))  # (B, n, p)
    return jnp.transpose(draws, (1, 0, 2))
