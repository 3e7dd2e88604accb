"""Local polynomial fits of Dask arrays: :func:`attnpool.local_polynomial` with the keys
(and the queries) chunked along rows.

A fit needs four sums over each query's keys (:mod:`attnpool.regression.polynomial_blocks`):
the heaviest key (the reference), the weighted mean offset from it, the spread about
that, and the moments of the monomials. For each query chunk, every pass is one task per
key chunk, its results summed (the heaviest taken) before the next pass starts; the
last step solves. The numbers
are the NumPy engine's, up to the order of the sums. Tasks hold one query chunk and one
key chunk (``q · b`` pairs at a time); the graph has ``4 · I · J`` such tasks for ``I``
query and ``J`` key chunks.

>>> import numpy as np, dask.array as da, attnpool
>>> x = np.linspace(0, 2, 400)
>>> keys, y = da.from_array(x, chunks=150), da.from_array(x**3, chunks=150)
>>> attnpool.local_polynomial(keys, y, [1.0], bandwidth=0.2, degree=3,
...                           derivative=1).compute().round(6)       # 3x², lazily
array([3.])
"""

from __future__ import annotations

from functools import reduce
from typing import Any, NamedTuple

import numpy as np

from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .._support.optional import require
from ..kernels.record import Kernel
from ..regression import polynomial_blocks as blocks
from ..regression.monomials import (
    checked_options,
    derivatives_in_data_units,
    monomials,
    shaped,
    span_units,
)
from ..regression.polynomial_blocks import Index
from . import prepare_arrays

require("dask", "Dask support (attnpool.distributed)")
import dask.array as da  # noqa: E402
from dask.delayed import delayed  # noqa: E402

__all__ = ["local_polynomial"]


def local_polynomial(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    bandwidth: Bandwidth,
    degree: int = 2,
    derivative: int = 0,
    kernel: KernelSpec = "gaussian",
    chunk_rows: int | None = None,
) -> da.Array:
    """:func:`attnpool.local_polynomial` of Dask (or NumPy) arrays: a lazy Dask array.

    Parameters
    ----------
    x_train : array (n,) or (n, d), Dask or NumPy (chunked along rows)
    y_train : array (n,) or (n, p); re-chunked to the keys' row chunks if they differ
    x_query : array (k,) or (k, d), Dask or NumPy
    bandwidth, degree, derivative, kernel : as :func:`attnpool.local_polynomial`
    chunk_rows : int, optional
        Rows per chunk for NumPy inputs.

    Returns
    -------
    dask.array.Array
        Shaped as :func:`attnpool.local_polynomial`'s result; queries whose keys cannot
        carry the polynomial are NaN (``empty="nan"``). NaN or infinite inputs raise
        ``ValueError`` at ``compute()``.

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*.
    Chapman & Hall.

    Examples
    --------
    >>> import numpy as np, dask.array as da, attnpool
    >>> x = da.from_array(np.linspace(-1, 1, 300), chunks=100)
    >>> from attnpool.distributed.polynomial import local_polynomial
    >>> local_polynomial(x, x**2, [0.0, 0.5], bandwidth=0.3, degree=2).compute().round(6)
    array([0.  , 0.25])
    """
    queries, keys, values, h, _, flat = prepare_arrays(
        x_query, x_train, y_train, bandwidth, kernel, chunk_rows,
        names=("x_query", "x_train", "y_train"),
    )  # fmt: skip
    d = keys.shape[1]
    record, orders = checked_options(degree, derivative, kernel, d)
    exponents = monomials(d, degree)
    key_chunks = keys.to_delayed().ravel()
    # columns of x ~ 1e±155 and beyond in a power-of-two unit, as in memory: from the
    # keys' span (each chunk's extremes, no pass of its own), applied inside the tasks
    unit = delayed(_span_units)([delayed(_extremes)(k) for k in key_chunks], h)
    parts = list(zip([delayed(_in_unit)(k, unit) for k in key_chunks],
                     values.to_delayed().ravel(), strict=True))  # fmt: skip
    h_unit = delayed(_bandwidth_in_unit)(h, unit)
    pieces = []
    for chunk, rows in zip(queries.to_delayed().ravel(), queries.chunks[0], strict=True):
        q = delayed(_in_unit)(delayed(_checked)(chunk, "x_query"), unit)
        fit = _chunk_fit(q, parts, h_unit, record, exponents, orders)
        fit = delayed(derivatives_in_data_units)(fit, unit, orders)
        pieces.append(da.from_delayed(fit, shape=(rows, len(orders), values.shape[1]),
                                      dtype=np.float64))  # fmt: skip
    fitted: da.Array = shaped(da.concatenate(pieces), d, derivative, flat)
    return fitted


class Frame(NamedTuple):
    """Where a query chunk's moments are taken: each query's heaviest key (the
    ``reference``), the offsets' weighted ``mean`` about it and their ``spread``."""

    reference: Any
    mean: Any
    spread: Any


def _chunk_fit(q: Any, parts: list[Any], h: np.ndarray, kernel: Kernel, exponents: list[Index],
               orders: list[Index]) -> Any:  # fmt: skip
    """The delayed fit of one query chunk ``q`` over the key chunks ``parts``."""
    heaviest = [delayed(_heaviest)(q, k, v, h, kernel) for k, v in parts]
    reference = delayed(reduce)(blocks.heavier, heaviest)
    sums = [delayed(_mean_sums)(q, k, h, kernel, reference) for k, _ in parts]
    mean = delayed(_mean)(sums)
    squares = [delayed(_spread_sums)(q, k, h, kernel, reference, mean) for k, _ in parts]
    frame = delayed(Frame)(reference, mean, delayed(_spread)(squares, mean))
    moments = [delayed(_moment_sums)(q, k, v, h, kernel, frame, exponents) for k, v in parts]
    return delayed(_solve)(moments, q, frame, exponents, orders)


def _extremes(rows: Any) -> np.ndarray:
    rows = np.asarray(rows, np.float64)
    return np.stack([rows.min(axis=0), rows.max(axis=0)])


def _span_units(extremes: list[np.ndarray], h: np.ndarray) -> np.ndarray | None:
    low = np.min([e[0] for e in extremes], axis=0)
    return span_units(np.max([e[1] for e in extremes], axis=0) - low, h)


def _in_unit(rows: Any, unit: np.ndarray | None) -> Any:
    return rows if unit is None else np.asarray(rows, np.float64) / unit


def _bandwidth_in_unit(h: np.ndarray, unit: np.ndarray | None) -> np.ndarray:
    if unit is None:
        return h
    with np.errstate(over="ignore"):  # (a bandwidth ≫ the span: alike to rounding at 2^500)
        return np.asarray(np.minimum(h / unit, 2.0**500))


def _checked(rows: np.ndarray, name: str) -> np.ndarray:
    rows = np.asarray(rows, np.float64)
    if not np.all(np.isfinite(rows)):
        raise ValueError(f"{name}: expected finite values; received NaN or infinite ones")
    return rows


def _terms(q: Any, k: Any, h: Any, kernel: Kernel, reference: Any) -> tuple[Any, Any, Any]:
    """``(log weights, offsets from the reference, shift)`` of a query and a key chunk."""
    k = np.asarray(k, np.float64)
    log_w = blocks.log_weights(k, q, h, kernel)
    return log_w, blocks.offsets_from(k, reference), blocks.shift_of(reference[0])


def _heaviest(q: Any, k: Any, v: Any, h: Any, kernel: Kernel) -> Any:
    k, v = _checked(k, "x_train"), _checked(v, "y_train")
    return blocks.heaviest(blocks.log_weights(k, q, h, kernel), k, v)


def _mean_sums(q: Any, k: Any, h: Any, kernel: Kernel, reference: Any) -> np.ndarray:
    return blocks.mean_sums(*_terms(q, k, h, kernel, reference))


def _mean(sums: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return blocks.mean_of(reduce(np.add, sums))


def _spread_sums(q: Any, k: Any, h: Any, kernel: Kernel, reference: Any, mean: Any) -> np.ndarray:
    return blocks.spread_sums(*_terms(q, k, h, kernel, reference), mean[1])


def _spread(squares: list[np.ndarray], mean: Any) -> np.ndarray:
    return blocks.spread_of(reduce(np.add, squares), mean[0])


def _moment_sums(q: Any, k: Any, v: Any, h: Any, kernel: Kernel, frame: Frame,
                 exponents: list[Index]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    reference, mean = frame.reference, frame.mean
    log_w, offsets, shift = _terms(q, k, h, kernel, reference)
    y = np.asarray(v, np.float64)
    return blocks.moment_sums(log_w, offsets, shift, mean[1], frame.spread, y, reference[2],
                              exponents)  # fmt: skip


def _solve(moments: list[Any], q: Any, frame: Frame, exponents: list[Index],
           orders: list[Index]) -> np.ndarray:  # fmt: skip
    gram = reduce(np.add, [m[0] for m in moments])
    t = reduce(np.add, [m[1] for m in moments])
    summed = blocks.Moments(gram, t, frame.mean[0], frame.mean[1], frame.spread)
    return blocks.solve(summed, q, frame.reference, exponents, orders)[0]
