"""The leave-one-out CV objective of a Gaussian fit on the ``native`` loop.

Each row's own pair is masked inside the loop; rows are centred on their midrange
(local linear: moments about each row's heaviest key, as the compiled engines take
them). Besides the objective itself:

- Nadaraya–Watson's objective *and its gradient* in ``θ = log h`` from one pass, the
  keys' coordinates and their squares among the pooled values:
  ``∂ĝ(x_i)/∂θ_j = E_w[(y_k − ĝ)(x_kj − x_ij)²] / h_j²`` (the weights' derivative is
  ``w u_j²``), so a descent step costs one evaluation instead of ``d + 1``;
  (from :data:`SMALL_ESTIMATE_ROWS` points where the gradient pass's loop runs, else
  :data:`ESTIMATE_MIN_ROWS`);
- from the same sizes in several columns, an *estimate*: the mean squared
  leave-one-out error of a fixed random subset of the rows, each still predicted from
  all the others (unbiased for the objective, ``1/8`` of its cost, a fifth below
  :data:`ESTIMATE_MIN_ROWS` points), which ranks a search's coarse grid; the refinement
  and the reported objective are exact.
"""

from __future__ import annotations

import numpy as np

from .._support.units import midrange, value_unit
from ..sums.local_model import LocalModel, solve_moments

__all__ = [
    "ESTIMATE_MIN_ROWS",
    "NativeObjective",
    "estimate_rows",
    "gradient_loop_built",
    "local_linear_of_moments",
]

#: Points from which a search of several columns ranks its grid by the estimate.
ESTIMATE_MIN_ROWS = 2**14
#: Points from which it does so where the gradient pass's loop runs here.
SMALL_ESTIMATE_ROWS = 2**12


def estimate_rows(n: int) -> int:
    """Rows whose errors the estimate averages: an eighth of ``n``, at least 4096 (a fifth
    below 2^14 points, at least 1024) and at most 16384 (enough to rank a coarse grid:
    every point's estimate averages the same rows, so their differences are far more
    precise than each one's ~1%)."""
    if n < ESTIMATE_MIN_ROWS:
        return max(SMALL_ESTIMATE_ROWS // 4, n // 5)
    return min(max(4096, n // 8), 2**14)


def gradient_loop_built(d: int, p: int) -> bool:
    """Whether the loops of the gradient's pass (``p (1 + 2d) + 2d`` values, in passes of
    at most ``native.MAX_VALUES``) for ``d`` columns run here."""
    from ..methods import native

    return native.available(True, d, p * (1 + 2 * d) + 2 * d)


class NativeObjective:
    """The objective of ``x (n, d)``, ``y (n, p)`` at bandwidths ``h (d,)``; each method
    returns None where the loop cannot settle it (scaled coordinates beyond
    ``native.MAX_SCALED``, or a sum not finite)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, model: LocalModel) -> None:
        from ..methods import native

        self.native, self.model = native, model
        n, d = x.shape
        built = model.degree == 0 and gradient_loop_built(d, y.shape[1])
        large = n >= ESTIMATE_MIN_ROWS or (built and n >= SMALL_ESTIMATE_ROWS)
        self.estimates = large and d >= 2
        self.gradients = large and model.degree == 0
        self.rows = estimate_rows(n) if self.estimates else None
        centred = x - midrange(x)
        order = _search_order(centred, self.rows)
        self.x, self.y = centred[order], y[order]
        self.reach = np.max(np.abs(centred), axis=0)
        self.unit = value_unit(y)
        self.scaled = self.y / self.unit

    def value(self, h: np.ndarray, *, estimate: bool = False) -> float | None:
        """The objective (with ``estimate``, its estimate from the subset's rows)."""
        rows = self.rows if estimate else None
        if self.model.degree == 0:
            sums = self.native.leave_one_out_sums(
                self.x, self.scaled, 1.0 / h, rows=rows, ordered=True
            )
            fit = None if sums is None else sums[:, 1:] / sums[:, :1]
        elif np.any(self.reach / h > self.native.MAX_SCALED):
            return None
        else:
            fit = self._local_linear(h, rows)
        if fit is None or not np.all(np.isfinite(fit)):
            return None
        return float(np.mean((self.y[: fit.shape[0]] - fit * self.unit) ** 2))

    def value_and_gradient(self, h: np.ndarray) -> tuple[float, np.ndarray] | None:
        """Nadaraya–Watson's objective and its gradient in ``θ = log h``, one pass."""
        x, scaled = self.x, self.scaled
        n, d = x.shape
        p = scaled.shape[1]
        ys, xs = scaled[:, :, None], x[:, None, :]
        values = np.hstack(
            [scaled, x, x**2, (ys * xs).reshape(n, p * d), (ys * xs**2).reshape(n, p * d)]
        )
        sums = self.native.leave_one_out_sums(x, values, 1.0 / h, ordered=True)
        if sums is None:
            return None
        means = sums[:, 1:] / sums[:, :1]
        fit = means[:, :p, None]
        first, second = means[:, None, p : p + d], means[:, None, p + d : p + 2 * d]
        y_first = means[:, p + 2 * d : p + 2 * d + p * d].reshape(n, p, d)
        y_second = means[:, p + 2 * d + p * d :].reshape(n, p, d)
        # E_w[(y − ĝ)(x_k − x_i)²]: the moments about the origin expanded about x_i
        about_query = (y_second - 2 * xs * y_first + xs**2 * fit) - fit * (
            second - 2 * xs * first + xs**2
        )
        slopes = about_query / h**2  # (n, p, d): ∂ĝ/∂θ
        residuals = scaled - fit[:, :, 0]
        if not (np.all(np.isfinite(residuals)) and np.all(np.isfinite(slopes))):
            return None
        squares = np.broadcast_to(np.asarray(self.unit, float) ** 2, (p,))
        value = float(np.mean(residuals**2 * squares))
        gradient = -2 * np.einsum("np,p,npd->d", residuals, squares, slopes) / residuals.size
        return value, gradient

    def _local_linear(self, h: np.ndarray, rows: int | None) -> np.ndarray | None:
        """Leave-one-out local linear fits of the first ``rows`` points from the loop's
        moments about each row's heaviest key, or None for a row without one."""
        queries = self.x[:rows]
        moments, ref = self.native.native_moments(
            queries, self.x, self.scaled, 1.0 / h, exclude_self=True, ordered=True
        )
        found = local_linear_of_moments(moments, ref, queries, self.x, self.scaled, h)
        return None if found is None else found[0]


def local_linear_of_moments(moments, ref, queries, keys, y, h):
    """``(fit (n, p), slopes (n, d, p))`` of local linear fits at ``queries (n, d)`` from
    :func:`attnpool.methods.native.native_moments` of ``keys``, ``y`` at bandwidths ``h``
    (about each row's heaviest key ``ref``, slopes in the inputs' units), or None where a
    row has no reference key."""
    if np.any(ref < 0):
        return None
    n, d = queries.shape
    p = y.shape[1]
    total = moments[:, :1]
    cross = moments[:, 1 + d + d * d + p :].reshape(n, p, d).transpose(0, 2, 1)
    means = np.concatenate(
        [
            moments[:, 1 + d + d * d : 1 + d + d * d + p],
            moments[:, 1 : 1 + d + d * d],
            cross.reshape(n, d * p),
        ],
        axis=1,
    )
    means /= total
    offset = (keys[ref] - queries) / h  # from each query to its reference key, in bandwidths
    fit, slopes, _ = solve_moments(means, d, p, 1, offset)
    return np.asarray(fit + y[ref]), np.asarray(slopes) / h[None, :, None]


def _search_order(points: np.ndarray, rows: int | None) -> np.ndarray:
    """The rows' order for the search: locality order (so that the loop passes over far
    pairs; columns in units of their ranges, as the bandwidths scale them), the estimate's
    ``rows`` — the first of a fixed shuffle — ahead of the others (the objective, a mean
    over every row, does not depend on the order)."""
    from ..methods import native
    from ..methods.locality import locality_order
    from ..methods.native_layout import BOX

    n = points.shape[0]
    span = np.ptp(points, axis=0)
    standard = points / np.where(span > 0, span, 1.0)
    compiled = native.order_function()
    if rows is None:
        return locality_order(standard, BOX, compiled)
    shuffle = np.random.default_rng(0).permutation(n)
    parts = (shuffle[:rows], shuffle[rows:])
    return np.concatenate([part[locality_order(standard[part], BOX, compiled)] for part in parts])
