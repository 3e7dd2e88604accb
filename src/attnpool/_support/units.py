"""Units for bandwidth selection: the data near the origin, at unit scale.

Selection is equivariant: shifting ``X`` changes nothing, scaling a continuous column
of ``X`` by ``c`` scales its bandwidth by ``c``, and scaling ``y`` by ``c`` multiplies
the CV criterion by ``c²`` (adds ``2 log c`` to AICc) and leaves the bandwidth alone.
So the search runs on ``(X − centre) / scale`` and ``(y − centre_y) / scale_y``, the
centres being midranges and the scales powers of two (exact to undo), and its result
is brought back. Timestamps (``x ≈ 1.7e9``), columns at ``1e±100`` and ``y ≈ 1e300``
are then searched in float32 as easily as data on ``[−1, 1]``, and nothing overflows.
Categorical columns are left as they are: their bandwidths are not lengths.

Pooling itself divides value columns near the dtype's limit by a power of two
(:func:`value_unit`), in NumPy or JAX.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

#: Columns up to which :func:`column_extremes` reduces one column at a time.
NARROW = 16
#: Rows taken as one long row where a narrow array is reduced or shifted by columns.
ROW_STRETCH = 256
#: Entries up to which an array's extremes are found again rather than remembered
#: (finding them costs less than the memo's lookup: a small call's arrays).
REMEMBERED_SIZE = 512


def column_extremes(a) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``, each ``(d,)``: the least and the largest entry of each column of
    a concrete ``(n ≥ 1, d)`` array. A narrow array is reduced by long stretches of
    rows (:func:`_stretched_extremes`) or column by column: NumPy reduces it along its
    rows some thirty times more slowly. Inside
    :func:`remembering_extremes`, an array's extremes are found once (one of more than
    :data:`REMEMBERED_SIZE` entries: a smaller one's again, which costs less)."""
    a = np.asarray(a)
    memo = _remembered.get() if a.size > REMEMBERED_SIZE else None
    if memo is not None:
        # the same object (a cheap key), else the same memory seen through another view
        known = memo.get(id(a)) or memo.get(_identity(a))
        if known is not None:
            return known[1]
    if a.ndim != 2 or a.shape[1] > NARROW:
        found = a.min(axis=0), a.max(axis=0)
    elif a.shape[1] > 1 and a.flags.c_contiguous and a.shape[0] >= ROW_STRETCH:
        found = _stretched_extremes(a)
    else:
        columns = [a[:, j] for j in range(a.shape[1])]
        low = np.array([c.min() for c in columns], a.dtype)
        found = low, np.array([c.max() for c in columns], a.dtype)
    if memo is not None:
        remember_extremes(a, *found)
    return found


def _stretched_extremes(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`column_extremes` of a narrow row-major array, :data:`ROW_STRETCH` rows taken
    as one long row: the reduction runs along rows of hundreds of numbers, not two."""
    n, d = a.shape
    whole = n - n % ROW_STRETCH
    long_rows = a[:whole].reshape(-1, ROW_STRETCH * d)
    low = long_rows.min(axis=0).reshape(ROW_STRETCH, d).min(axis=0)
    high = long_rows.max(axis=0).reshape(ROW_STRETCH, d).max(axis=0)
    if whole < n:
        low, high = np.minimum(low, a[whole:].min(axis=0)), np.maximum(high, a[whole:].max(axis=0))
    return low, high


#: The extremes found inside :func:`remembering_extremes`, by array: ``identity →
#: (array, (low, high))`` (the array kept alive, so its memory is not another's).
_remembered: ContextVar[dict | None] = ContextVar("attnpool_extremes", default=None)


@contextmanager
def remembering_extremes() -> Iterator[None]:
    """Within the block, :func:`column_extremes` reduces each array once: one call's
    several checks and grids over 10⁶ points pass over them once (the arrays must not
    change inside the block)."""
    token = _remembered.set({})
    try:
        yield
    finally:
        _remembered.reset(token)


def remembering() -> bool:
    """Whether :func:`column_extremes` is inside :func:`remembering_extremes`."""
    return _remembered.get() is not None


def remember_extremes(a, low, high) -> None:
    """Records ``a``'s column extremes inside :func:`remembering_extremes` (say, those of
    a shifted copy: rounding is monotone, so they are the shifted extremes)."""
    memo = _remembered.get() if np.size(a) > REMEMBERED_SIZE else None
    if memo is not None:
        memo[_identity(a)] = memo[id(a)] = (a, (low, high))  # (kept alive: ids not reused)


def _identity(a: np.ndarray) -> tuple:
    return (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)


#: Largest centred coordinate, in bandwidths, that the host methods (KD-trees, Taylor
#: boxes, prefix sums in float64) take; beyond it (a bandwidth 1e-12 of the data's
#: extent and less) only the exact engines pool.
HOST_MAX_EXTENT = 2.0**40
#: Largest centred coordinate, in bandwidths, that the compiled Gaussian loop takes
#: (``native``): it scales the coordinates before it takes their differences, so each
#: carries ``2⁻⁵³`` of its size; beyond (a log density 4e-12 off at 5·10⁴ bandwidths,
#: 4e-11 at 5·10⁵), the exact paths sum.
LOOP_MAX_EXTENT = 2.0**12


def extent_in_bandwidths(queries, keys, bandwidth) -> float:
    """The largest coordinate of queries and keys centred on the keys' midrange, in
    bandwidths (inf if it overflows float64). Concrete arrays only."""
    # the extremes in the inputs' own precision (exact), then in float64: no copies
    q, k = (np.asarray(a) for a in (queries, keys))
    low, high = (np.asarray(e, np.float64) for e in column_extremes(k))
    centre = low / 2 + high / 2
    q_low, q_high = (np.asarray(e, np.float64) for e in column_extremes(q))
    with np.errstate(over="ignore", invalid="ignore"):
        # rounding is monotone: the largest |x − centre| is at an extreme of x
        below = np.minimum(low, q_low)
        above = np.maximum(high, q_high)
        largest = np.maximum(above - centre, centre - below)
        extent = np.max(largest / np.asarray(bandwidth, np.float64))
    return float(extent) if np.isfinite(extent) else float("inf")


def midrange(a) -> np.ndarray:
    """``(d,)``: the midpoint of each column's range (exact to rounding: half each end)."""
    low, high = column_extremes(a)
    return low / 2 + high / 2


def rows_less(a: np.ndarray, row) -> np.ndarray:
    """``a (n, d) − row (d,)``, the same numbers: NumPy broadcasts a short row with a
    call of its inner loop per row of ``a`` (~7 ns a row), so stretches of
    :data:`ROW_STRETCH` rows are taken as one row less the row repeated."""
    a, row = np.asarray(a), np.asarray(row)
    n, d = a.shape
    whole = n - n % ROW_STRETCH
    out = np.empty(a.shape, np.result_type(a, row))
    if a.flags.c_contiguous and whole:
        long_rows = (-1, ROW_STRETCH * d)
        np.subtract(a[:whole].reshape(long_rows), np.tile(row, ROW_STRETCH),
                    out=out[:whole].reshape(long_rows))  # fmt: skip
        np.subtract(a[whole:], row, out=out[whole:])
    else:
        np.subtract(a, row, out=out)
    return out


def _floating(a: np.ndarray):
    return a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float64)


def power_of_two_above(magnitude: np.ndarray) -> np.ndarray:
    """The least power of two ``>= magnitude`` (1 where the magnitude is 0)."""
    _, exponent = np.frexp(np.where(magnitude > 0, magnitude, 1.0))
    return np.ldexp(1.0, exponent)


@dataclass(frozen=True)
class SearchUnits:
    """Centres and power-of-two scales of the continuous columns of ``X`` (``(d,)``) and
    of ``y`` (one scale for all outputs: the CV criterion sums them)."""

    centre: np.ndarray
    scale: np.ndarray
    y_centre: np.ndarray
    y_scale: float

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray, continuous) -> SearchUnits:
        d = x.shape[1]
        centre, scale = np.zeros(d), np.ones(d)
        columns = list(continuous)
        if columns:
            part = x[:, columns].astype(np.float64)
            centre[columns] = midrange(part)
            scale[columns] = power_of_two_above(np.max(np.abs(part - centre[columns]), axis=0))
        y = np.asarray(y, np.float64).reshape(y.shape[0], -1)
        y_centre = midrange(y)
        y_scale = float(power_of_two_above(np.max(np.abs(y - y_centre))))
        return cls(centre, scale, y_centre, y_scale)

    def apply(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(X, y)`` in search units, in their own floating dtypes."""
        x_units = ((x - self.centre) / self.scale).astype(_floating(x))
        y_units = (y - self.y_centre.reshape((-1,) if y.ndim > 1 else ())) / self.y_scale
        return x_units, y_units.astype(_floating(y))

    def bandwidth(self, bandwidth: np.ndarray) -> np.ndarray:
        """A bandwidth found in search units, in the data's units."""
        return np.asarray(bandwidth, np.float64) * self.scale

    def objective(self, value, method: str):
        """A criterion value (or array of them) found in search units, in the data's units."""
        return objective_in_data_units(value, method, self.y_scale)


@dataclass(frozen=True)
class DensityUnits:
    """Midrange centres and power-of-two scales (``2^exponent``) of a sample's continuous
    columns, for a density's bandwidth search.

    A density's criteria are equivariant too: shifting a column changes nothing, scaling
    it by ``c`` scales its bandwidth by ``c``, and the density itself by ``1/c`` where
    the column is one the density is of (all of them; ``y``'s for a conditional
    density) — likelihood CV (``cv_ml``, a mean of ``−log f̂``) gains ``log c``, least
    squares (``cv_ls``, ``∫f̂² − 2 mean f̂₋ᵢ``) is divided by ``c``. The search runs at
    unit scale, where neither the densities nor ``∫f̂²`` leave the float range, and
    its result is brought back. Categorical columns are left as they are."""

    centre: np.ndarray
    exponent: np.ndarray
    density_columns: tuple[int, ...]

    @classmethod
    def of(cls, x: np.ndarray, continuous, density_columns=None) -> DensityUnits:
        """Units of ``x (n, d)``'s ``continuous`` columns; ``density_columns``: those the
        density is of (None: every continuous column)."""
        columns = list(continuous)
        centre, exponent = np.zeros(x.shape[1]), np.zeros(x.shape[1], int)
        if columns:
            centre[columns] = midrange(x[:, columns])
            spread = np.max(np.abs(x[:, columns] - centre[columns]), axis=0)
            exponent[columns] = np.frexp(power_of_two_above(spread))[1] - 1
        of_density = columns if density_columns is None else density_columns
        return cls(centre, exponent, tuple(j for j in of_density if j in columns))

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``x`` in search units: ``(x − centre) · 2^−exponent``."""
        return np.ldexp(x - self.centre, -self.exponent)

    def bandwidth(self, bandwidth: np.ndarray) -> np.ndarray:
        """A bandwidth found in search units, in the data's units."""
        return np.ldexp(np.asarray(bandwidth, np.float64), self.exponent)

    def objective(self, value, method: str):
        """A criterion value (or array of them) found in search units, in the data's
        units (``cv_ls``: 0 or ``inf`` beyond float64)."""
        shift = int(np.sum(self.exponent[list(self.density_columns)]))
        with np.errstate(over="ignore", under="ignore"):
            if method == "cv_ml":
                return np.asarray(value, np.float64) + shift * math.log(2.0)
            if method == "cv_ls":
                return np.ldexp(np.asarray(value, np.float64), -shift)
        return value


def units_beyond(magnitudes, ordinary: tuple[float, float]) -> np.ndarray | None:
    """Powers of two at or above ``magnitudes`` (an array), or None where every one lies
    within ``ordinary``: data to compute in a power-of-two unit (exact to undo) only
    where their own units would leave the float range, so that ordinary data keep their
    arithmetic to the last digit."""
    magnitudes = np.asarray(magnitudes, np.float64)
    if np.all((ordinary[0] <= magnitudes) & (magnitudes <= ordinary[1])):
        return None
    return power_of_two_above(magnitudes)


def response_unit(y) -> float:
    """The power of two at or above the largest magnitude of ``y`` (1 for a zero ``y``):
    ``y`` divided by it lies in ``[−1, 1]``, exactly, so that squares of its residuals
    neither overflow (``y ~ 1e200``) nor underflow (``1e−200``)."""
    return float(power_of_two_above(np.max(np.abs(y))))


def objective_in_data_units(value, method: str, y_scale: float):
    """A criterion ``value`` (or array of them) of a response divided by ``y_scale``, in
    the response's own units: CV's mean square times ``y_scale²`` (0 or ``inf`` beyond
    float64), AICc's log variance plus ``2 log y_scale``; others as they are."""
    with np.errstate(over="ignore", under="ignore"):  # a criterion beyond float64 is inf
        if method == "cv":
            return np.asarray(value, np.float64) * np.float64(y_scale) * np.float64(y_scale)
        if method == "aicc":
            return np.asarray(value, np.float64) + 2 * np.log(y_scale)
    return value


#: ``(smallest, largest)`` column maxima that need no unit, per float dtype.
_ORDINARY = {
    np.dtype(t): (2.0 ** (np.finfo(t).minexp // 2), 2.0 ** (np.finfo(t).maxexp // 2))
    for t in (np.float16, np.float32, np.float64)
}


def value_unit(values):
    """A power of two ``(p,)`` per value column: 1, or for a column whose largest
    magnitude exceeds the square root of the dtype's largest number, or is below the
    square root of its smallest normal one, the power of two at most it (``largest /
    unit`` in [1, 2)).

    Pooling ``values / unit`` and scaling the result back is exact, and the weighted
    sums ``Σ w v`` (weights up to 1 after the log-domain shift) then neither overflow
    for values near the dtype's largest nor fall below its smallest normal number for
    values near that (a product of ``2^−1000`` and a weight of ``2^−30`` is subnormal:
    digits lost, or flushed to 0 where the processor flushes them, as XLA on a CPU
    does). Other columns are left alone; one-hot weights return each value exactly.
    """
    if isinstance(values, np.ndarray):
        xp = np
        largest = np.abs(values).max(axis=0)
        low, high = _ORDINARY.get(values.dtype, (np.inf, 0.0))
        if largest.size == 1:  # (one column: the common case, without the steps below)
            if low <= largest[0] < high:
                return np.ones_like(largest)
        elif largest.size == 0 or (largest.min() >= low and largest.max() < high):
            return np.ones_like(largest)
    else:
        import jax.numpy as xp

        largest = xp.max(xp.abs(values), axis=0)
    _, exponent = xp.frexp(xp.where(largest > 0, largest, 1.0))
    info = xp.finfo(values.dtype)
    extreme = (exponent > info.maxexp // 2) | (exponent < info.minexp // 2)
    exponent = xp.where(extreme, exponent - 1, 0)
    unit = xp.ldexp(xp.ones_like(largest), exponent)
    if xp is np:
        return unit
    import jax

    return jax.lax.stop_gradient(unit)


#: A sample whose midrange is within this fraction of its half-range counts as centred.
CENTRED = 1 / 64


def centred_on_keys(keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, queries)`` less the keys' midrange (a kernel sum is translation invariant):
    the host methods scale coordinates by ``1/h``, and data far from the origin (Unix
    times) would lose their low digits scaled first. Keys already about the origin (their
    midrange within :data:`CENTRED` of their half-range) are left as they are: their
    coordinates are at most that much larger, and 10⁶ of them are not copied."""
    low, high = column_extremes(keys)
    centre = low / 2 + high / 2
    if np.all(np.abs(centre) <= CENTRED * (high / 2 - low / 2)):
        return keys, queries
    centred = rows_less(keys, centre)
    remember_extremes(centred, low - centre, high - centre)  # rounding is monotone
    return centred, queries - centre
