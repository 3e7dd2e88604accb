"""Learnable distance kernels: one bandwidth, one per column, or a linear metric, each
``log K`` of a scaled distance between linearly embedded inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike
from ..sums.geometry import closeness
from .model_base import (
    AttentionModel,
    Params,
    inverse_bandwidth,
    learnable_kernel,
    sample_size,
    scott_factor,
)

__all__ = ["GlobalBandwidth", "LinearMetric", "PerDimensionBandwidth"]


def _initial_bandwidth(
    initial: Any, scale: ArrayLike, n: float, d: int, *, shared: bool
) -> jax.Array:
    """Log-bandwidths in standardised units, from ``initial`` in input units or Scott's rule."""
    if initial is None:
        return jnp.full((1,) if shared else (d,), math.log(scott_factor(n, d)))
    h = np.asarray(initial, dtype=float).reshape(-1)
    size = 1 if shared else d
    if h.shape[0] not in (1, size) or not np.all(np.isfinite(h)) or not np.all(h > 0):
        raise ValueError(
            f"initial: expected a positive number{'' if shared else f' or {d} positive numbers'}"
            f"; received {np.asarray(initial).tolist()!r}"
        )
    reference = np.asarray(scale, dtype=float)[:size]
    return jnp.log(jnp.asarray(np.broadcast_to(h, (size,)) / reference))


@dataclass(frozen=True)
class _ScaledDistance(AttentionModel):
    """Kernel of the distance between linearly embedded inputs (shared by three models)."""

    kernel: str = "gaussian"

    def __post_init__(self) -> Any:
        learnable_kernel(self.kernel)

    def log_weights(self, params: Params, queries: jax.Array, keys: jax.Array) -> jax.Array:
        record = _kernels.get(self.kernel)
        return jnp.asarray(record.log_profile(-closeness(queries, keys, record)))


@dataclass(frozen=True)
class GlobalBandwidth(_ScaledDistance):
    """One learnable bandwidth ``h`` — the classic parametric Nadaraya–Watson.

    .. math:: a(q, k) = \\log K(\\lVert q - k \\rVert / h), \\qquad θ = \\log h

    (the textbook writes ``w = 1/h`` multiplying the distance). ``initial``: the starting
    bandwidth in input units (default: Scott's rule).

    Parameters
    ----------
    kernel : str
        A distance kernel positive everywhere (``"gaussian"``, ``"laplacian"``).
    initial : float, optional
        The starting bandwidth in input units (Scott's rule).

    Examples
    --------
    >>> import attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention(learn.GlobalBandwidth(), data.x_train, data.y_train,
    ...                              steps=60)
    >>> round(fit.parameters()["bandwidth"], 3)
    0.255

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (its parametric attention pooling). Härdle, W. & Marron, J. S. (1985).
    Optimal bandwidth selection in nonparametric regression function estimation.
    *Annals of Statistics* 13(4), 1465–1481 (the leave-one-out error it descends).
    """

    kernel: str = "gaussian"
    initial: float | None = None
    shared_scale: ClassVar[bool] = True

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        log_h = _initial_bandwidth(self.initial, scale, *sample_size(x, rows), shared=True)
        return {"log_bandwidth": log_h.astype(x.dtype)}

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return x * inverse_bandwidth(params["log_bandwidth"])

    embed_keys = embed_queries

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {"bandwidth": float(np.exp(params["log_bandwidth"][0]) * np.asarray(scale)[0])}


@dataclass(frozen=True)
class PerDimensionBandwidth(GlobalBandwidth):
    """One learnable bandwidth per input column (automatic relevance determination).

    .. math:: a(q, k) = \\log K\\Big(\\sqrt{\\textstyle\\sum_j (q_j - k_j)^2 / h_j^2}\\Big)

    An input that does not help predict grows a large ``h_j``: its differences stop
    mattering. ``initial``: a scalar or one bandwidth per column, in input units.

    Parameters
    ----------
    kernel : str
        A distance kernel positive everywhere (``"gaussian"``, ``"laplacian"``).
    initial : float or array of shape (d,), optional
        The starting bandwidths in input units (Scott's rule).

    Examples
    --------
    >>> import numpy as np
    >>> import attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> noise = np.random.default_rng(0).normal(size=80)          # a useless column
    >>> X = np.c_[data.x_train, noise]
    >>> fit = attnpool.fit_attention(learn.PerDimensionBandwidth(), X, data.y_train, steps=60)
    >>> fit.parameters()["bandwidth"].round(3)                     # the noise's grows
    array([0.257, 1.22 ])

    References
    ----------
    Neal, R. M. (1996). *Bayesian Learning for Neural Networks*, section 1.2.3 (automatic
    relevance determination). Hall, P., Li, Q. & Racine, J. S. (2007). Nonparametric
    estimation of regression functions in the presence of irrelevant regressors.
    *Review of Economics and Statistics* 89(4), 784–789.
    """

    initial: Any = None
    shared_scale: ClassVar[bool] = False

    def __post_init__(self) -> Any:
        super().__post_init__()
        if self.initial is not None and np.ndim(self.initial):  # hashable, for jit
            object.__setattr__(self, "initial", tuple(np.ravel(self.initial).tolist()))

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        log_h = _initial_bandwidth(self.initial, scale, *sample_size(x, rows), shared=False)
        return {"log_bandwidth": log_h.astype(x.dtype)}

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {"bandwidth": np.exp(np.asarray(params["log_bandwidth"])) * np.asarray(scale)}


@dataclass(frozen=True)
class LinearMetric(_ScaledDistance):
    """A learned linear map ``W`` (``rank × d``): the kernel of ``‖W (q − k)‖``.

    A Mahalanobis metric ``(q − k)ᵀ WᵀW (q − k)`` for ``rank = d``, a learned projection
    onto ``rank`` directions below. It starts at ``I / h`` (Scott's ``h``), or at the first
    ``rank`` principal-axis rows of it.

    Parameters
    ----------
    kernel : str
        A distance kernel positive everywhere (``"gaussian"``, ``"laplacian"``).
    rank : int, optional
        Rows of ``W`` (``d`` by default): a projection onto ``rank`` directions below.

    Examples
    --------
    >>> import numpy as np
    >>> import attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> X = np.c_[data.x_train, np.random.default_rng(0).normal(size=80)]
    >>> fit = attnpool.fit_attention(learn.LinearMetric(rank=1), X, data.y_train, steps=60)
    >>> fit.parameters()["metric"].round(3)          # one direction, mostly along x₀
    array([[-2.271,  0.119]])

    References
    ----------
    Weinberger, K. Q. & Tesauro, G. (2007). Metric learning for kernel regression.
    *AISTATS*, 612–619.
    """

    kernel: str = "gaussian"
    rank: int | None = None

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        n, d = sample_size(x, rows)
        rank = d if self.rank is None else self.rank
        if not 1 <= rank <= d:
            raise ValueError(f"rank: expected an integer from 1 to {d}; received {self.rank!r}")
        start = jnp.eye(d, dtype=x.dtype)[:rank] / scott_factor(n, d)
        if rank < d:  # a random orthonormal start: no column is preferred
            basis, _ = jnp.linalg.qr(jax.random.normal(key, (d, rank), x.dtype))
            start = basis.T / scott_factor(n, d)
        return {"metric": start}

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return jnp.asarray(x @ params["metric"].T)

    embed_keys = embed_queries

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {"metric": np.asarray(params["metric"]) / np.asarray(scale)[None, :]}
