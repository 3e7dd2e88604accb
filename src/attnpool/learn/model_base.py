"""The interface every learnable attention model implements, and what the built-in
models share: Scott's starting bandwidth, the kernels that can be learned, the sample size
(the models themselves are in :mod:`attnpool.learn.models`)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike

Params = dict[str, Any]


def scott_factor(n: float, d: int) -> float:
    """Scott's rule on standardised data, ``n^(−1/(d + 4))``: where bandwidths start."""
    return float(float(n) ** (-1.0 / (d + 4)))


def inverse_bandwidth(log_bandwidth: Any) -> jax.Array:
    """``1 / h = exp(−θ)``, at most ``√(largest float) / 64``: standardised inputs times
    it, and their squared differences, stay finite (a float32 ``θ`` below −88 made them
    ``inf − inf = NaN``), so that however small ``h`` each query takes its nearest keys'
    values (below ``h ≈ 3.5e−18`` in float32, ``1e−152`` in float64, nothing moves)."""
    theta = jnp.asarray(log_bandwidth)
    least = math.log(64.0) - 0.5 * math.log(float(np.finfo(theta.dtype).max))
    return jnp.asarray(jnp.exp(-jnp.maximum(theta, least)))


def learnable_kernel(kernel: Any) -> _kernels.Kernel:
    record = _kernels.get(kernel)
    if record.similarity != "distance" or record.compact or record.name == "constant":
        raise ValueError(
            f"kernel: expected a distance kernel that is positive everywhere (so that every "
            f"point has neighbours when it is left out and the bandwidth has a gradient), such "
            f"as 'gaussian' or 'laplacian'; received {record.name!r}"
        )
    return record


def sample_size(x: Any, rows: Any) -> tuple[float, int]:
    """``(n, d)`` of the inputs ``x``, ``n`` replaced by ``rows`` if given."""
    return (x.shape[0] if rows is None else rows), x.shape[1]


class AttentionModel:
    """Interface of a learnable attention model: a score ``a(q, k; θ)`` whose softmax over
    the keys gives the weights.

    A model is a frozen dataclass of hyperparameters with pure functions of a parameter
    pytree: ``init(key, x, scale)``, ``embed_queries(params, x)``,
    ``embed_keys(params, x)``, ``log_weights(params, queries, keys)`` (a block of
    embedded queries over embedded keys, up to a per-query constant) and
    ``readable(params, scale)`` (:mod:`attnpool.learn.models`). Subclass it for a new
    score; :func:`attnpool.fit_attention` trains any of them.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> import jax.numpy as jnp, attnpool
    >>> from attnpool.learn import AttentionModel
    >>> @dataclass(frozen=True)
    ... class Cauchy(AttentionModel):                 # a learned Cauchy kernel
    ...     def init(self, key, x, scale):
    ...         return {"log_width": jnp.zeros(1, x.dtype)}
    ...     def log_weights(self, params, queries, keys):
    ...         r2 = ((queries[:, None, :] - keys[None, :, :]) ** 2).sum(-1)
    ...         return -jnp.log1p(r2 * jnp.exp(-2 * params["log_width"]))
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)
    >>> fit = attnpool.fit_attention(Cauchy(), data.x_train, data.y_train, steps=60)
    >>> bool(fit.loo_error() < 0.3)
    True

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2. Vaswani, A. et al. (2017). Attention is all you need. *NeurIPS* 30.
    """

    #: columns share one standardisation scale (a single bandwidth in input units)
    shared_scale: ClassVar[bool] = False
    #: values per query–key pair in a block's intermediate (sizes the streamed blocks)
    pair_width: ClassVar[int] = 1

    def init(self, key: jax.Array, x: jax.Array, scale: ArrayLike) -> Params:
        """Initial parameters for standardised inputs ``x (n, d)`` of column scales
        ``scale``. Built-in models also take ``rows``, the sample size their rules of
        thumb use (with observation weights, their sum; default ``n``)."""
        raise NotImplementedError

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return x

    def embed_keys(self, params: Params, x: jax.Array) -> jax.Array:
        return x

    def log_weights(self, params: Params, queries: jax.Array, keys: jax.Array) -> jax.Array:
        raise NotImplementedError

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {name: np.asarray(value) for name, value in params.items()}
