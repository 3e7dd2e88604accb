"""Binned local polynomial regression on a grid, as KernSmooth's ``locpoly`` computes it.

The data are linearly binned onto ``M`` equally spaced points ``g_j`` of ``[a, b]``
(counts ``c_j`` and response sums ``d_j``); at each grid point the Gaussian weights of the
other grid points, cut at ``τ = 4`` bandwidths (``L = ⌊τ h / δ⌋`` steps of ``δ``), give
the moments

.. math:: s_i(g_j) = \\sum_{|k-j| \\le L} c_k\\, e^{-((k-j)δ/h)^2/2} ((k-j)δ)^i,\\qquad
          t_i(g_j) = \\sum_{|k-j| \\le L} d_k\\, e^{-((k-j)δ/h)^2/2} ((k-j)δ)^i,

and the fit of degree ``p`` solves ``S β = t`` with ``S_ik = s_(i+k)`` (``0 ≤ i, k ≤ p``):
``ν! β_ν`` estimates the ``ν``-th derivative. :func:`smoother_diagonals` gives the binned
smoother matrix's diagonal ``(S⁻¹)₁₁`` and that of ``S Sᵀ``, ``(S⁻¹ U S⁻¹)₁₁`` with ``U``
the moments of the squared weights — what the plug-in bandwidth's variance estimate
needs (:mod:`attnpool.bandwidth.local_linear_plug_in`).
"""

from __future__ import annotations

import math

import numpy as np

from .._support.hints import ArrayLike
from .._support.validation import check_positive_int
from .local_polynomial import hankel

__all__ = ["TRUNCATION", "binned_local_polynomial", "linear_binning", "smoother_diagonals"]

#: The Gaussian weights are cut at this many bandwidths (KernSmooth's ``tau``).
TRUNCATION = 4.0


def linear_binning(
    x: ArrayLike, y: ArrayLike, a: float, b: float, gridsize: int, truncate: bool = True,
    *, last_node: bool = True,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(counts, response_sums)`` ``(gridsize,)``: each point's weight split between its
    two grid neighbours in proportion to its nearness. Points beyond ``[a, b]`` are
    dropped (``truncate``) or given to the end node; a point on ``b`` goes to the last
    node — or, ``last_node=False``, counts as beyond it (KernSmooth's ``linbin`` for
    densities does so, its regression binning ``rlbin`` does not)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    counts, sums = np.zeros(gridsize), np.zeros(gridsize)
    delta = (b - a) / (gridsize - 1)
    position = (x - a) / delta + 1
    left = np.trunc(position).astype(np.int64)  # Fortran's int(): toward zero
    share = position - left
    on_end = (x == b) & last_node
    left, share = np.where(on_end, gridsize - 1, left), np.where(on_end, 1.0, share)
    inside = (left >= 1) & (left < gridsize)
    np.add.at(counts, left[inside] - 1, 1 - share[inside])
    np.add.at(counts, left[inside], share[inside])
    np.add.at(sums, left[inside] - 1, (1 - share[inside]) * y[inside])
    np.add.at(sums, left[inside], share[inside] * y[inside])
    if not truncate:
        for outside, node in ((left < 1, 0), (left >= gridsize, gridsize - 1)):
            counts[node] += np.count_nonzero(outside)
            sums[node] += y[outside].sum()
    return counts, sums


def _steps(bandwidth: float, delta: float, gridsize: int) -> int:
    # (no more than the grid: nodes beyond it hold no counts)
    steps = min(math.floor(TRUNCATION * bandwidth / delta), gridsize - 1)
    if steps == 0:
        raise ValueError(
            f"gridsize: {gridsize} nodes are too coarse for bandwidth {bandwidth:g} (a node "
            f"every {delta:g}); increase gridsize"
        )
    return steps


def _moments(
    counts: np.ndarray,
    delta: float,
    bandwidth: float,
    orders: int,
    steps: int,
    square: bool = False,
) -> np.ndarray:
    """``(M, orders)``: ``Σ_k counts_k K((k − j)δ)^(1+square) (k − j)^i`` for each node ``j``
    — the offsets in grid steps, so that the powers neither underflow nor overflow at
    any scale of the data (the moments in the data's units are these times ``δ^i``)."""
    offsets = np.arange(-steps, steps + 1)
    weights = np.exp(-((delta * offsets / bandwidth) ** 2) / 2)
    if square:
        weights = weights**2
    padded = np.concatenate([np.zeros(steps), counts, np.zeros(steps)])
    # windows[j, o]: the count at node j + offset o
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * steps + 1)
    powers = offsets[None, :].astype(float) ** np.arange(orders)[:, None]
    return np.asarray(windows @ (weights[None, :] * powers).T)


def _nodes_within(occupied: np.ndarray, steps: int) -> np.ndarray:
    """``(M,)``: how many ``occupied`` nodes lie within ``steps`` of each node."""
    running = np.concatenate([[0], np.cumsum(occupied)])
    index = np.arange(occupied.shape[0])
    above, below = np.minimum(index + steps + 1, index.shape[0]), np.maximum(index - steps, 0)
    return np.asarray(running[above] - running[below])


def _checked_points(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as finite float arrays ``(n,)`` of one length ``n ≥ 1``, else a
    ``ValueError`` naming them."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    x, y = (a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a for a in (x, y))
    if x.ndim != 1 or x.shape != y.shape or x.size == 0:
        raise ValueError(
            "x, y: expected two arrays of shape (n,) of one length, at least one point; "
            f"received shapes {np.shape(x)} and {np.shape(y)}"
        )
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x, y: expected finite numbers; received NaN or infinity")
    return x, y


def _range(
    x: ArrayLike, range_x: tuple[float, float] | None, name: str = "range_x"
) -> tuple[float, float]:
    if range_x is None:
        return float(np.min(x)), float(np.max(x))
    a, b = (float(v) for v in range_x)
    if not (np.isfinite(a) and np.isfinite(b) and a < b):
        raise ValueError(f"{name}: expected two finite numbers a < b; received {range_x!r}")
    return a, b


def binned_local_polynomial(
    x: ArrayLike,
    y: ArrayLike,
    *,
    bandwidth: float,
    degree: int | None = None,
    derivative: int = 0,
    gridsize: int = 401,
    range_x: tuple[float, float] | None = None,
    truncate: bool = True,
    binned: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """KernSmooth's ``locpoly``: the binned local polynomial estimate of a regression
    function's ``derivative`` on a grid (Gaussian kernel).

    Parameters
    ----------
    x, y : arrays of shape (n,)
        The data; with ``binned``, the grid counts and response sums themselves.
    bandwidth : float
        The Gaussian kernel's standard deviation.
    degree : int, optional
        The polynomial's degree; by default ``derivative + 1`` (KernSmooth's).
    derivative : int
        Which derivative to estimate (0: the function).
    gridsize : int
        Grid nodes (ignored with ``binned``: the counts' length).
    range_x : (float, float), optional
        The grid's ends; by default the range of ``x`` (required with ``binned``).
    truncate : bool
        Drop points beyond ``range_x`` (else they count at the nearer end).
    binned : bool
        ``x`` and ``y`` are already bin counts and sums.

    Returns
    -------
    grid : ndarray of shape (gridsize,)
    estimate : ndarray of shape (gridsize,)
        NaN where the counts within reach of a node lie on fewer than ``degree + 1``
        nodes (none, for ``degree=0``): there the polynomial is not determined.

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, chapter 5 and appendix D
    (binned local polynomials). KernSmooth 2.23, ``locpoly``.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.linspace(0, 1, 200); y = x**3
    >>> grid, slope = attnpool.binned_local_polynomial(x, y, bandwidth=0.1, derivative=1,
    ...                                                 degree=3, gridsize=11)
    >>> np.round(slope[5], 6)                               # 3 x² at x = 0.5
    np.float64(0.75)
    """
    derivative = check_positive_int(derivative + 1, "derivative", allow_none=False) - 1
    degree = derivative + 1 if degree is None else check_positive_int(degree + 1, "degree") - 1
    if degree < derivative:
        raise ValueError(
            f"degree: expected at least the derivative ({derivative}); received {degree}"
        )
    if not (bandwidth > 0 and np.isfinite(bandwidth)):
        raise ValueError(f"bandwidth: expected a positive number; received {bandwidth!r}")
    if binned:
        if range_x is None:
            raise ValueError("range_x: binned counts need the grid's ends; received None")
        counts, sums = np.asarray(x, float), np.asarray(y, float)
        gridsize = counts.shape[0]
        a, b = _range(x, range_x)
    else:
        x, y = _checked_points(x, y)
        gridsize = check_positive_int(gridsize, "gridsize", allow_none=False)
        if gridsize < 2:
            raise ValueError(f"gridsize: expected at least 2 nodes; received {gridsize}")
        a, b = _range(x, range_x)
        if not b > a:
            raise ValueError(f"x: expected a range of values (or range_x); received all {a!r}")
        counts, sums = linear_binning(x, y, a, b, gridsize, truncate)
    delta = (b - a) / (gridsize - 1)
    steps = _steps(bandwidth, delta, gridsize)
    s = _moments(counts, delta, bandwidth, 2 * degree + 1, steps)
    t = _moments(sums, delta, bandwidth, degree + 1, steps)
    estimate = np.full(gridsize, np.nan)
    solvable = _nodes_within(counts > 0, steps) > degree  # else S is singular
    if solvable.any():
        beta = np.linalg.solve(hankel(s[solvable]), t[solvable][..., None])[..., 0]
        # β in grid steps: the derivative in the data's units divides by δ^ν
        estimate[solvable] = math.factorial(derivative) * beta[:, derivative] / delta**derivative
    return np.linspace(a, b, gridsize), estimate


def smoother_diagonals(
    counts: ArrayLike, a: float, b: float, bandwidth: float, degree: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """``(S_diag, SSᵀ_diag)`` ``(M,)`` of the binned local polynomial smoother on the grid
    counts ``counts`` over ``[a, b]`` (KernSmooth's ``sdiag`` and ``sstdiag``); NaN at a
    node with too few occupied nodes within the kernel's reach for the fit, as
    :func:`binned_local_polynomial`'s estimate there."""
    counts = np.asarray(counts, float)
    gridsize = counts.shape[0]
    delta = (b - a) / (gridsize - 1)
    steps = _steps(bandwidth, delta, gridsize)
    # in grid steps: the intercept's entries of S⁻¹ and S⁻¹ U S⁻¹ do not change
    s = hankel(_moments(counts, delta, bandwidth, 2 * degree + 1, steps))
    u = hankel(_moments(counts, delta, bandwidth, 2 * degree + 1, steps, square=True))
    solvable = _nodes_within(counts > 0, steps) > degree  # else S is singular
    diagonal, product_diagonal = np.full(gridsize, np.nan), np.full(gridsize, np.nan)
    inverse = np.linalg.inv(s[solvable])
    diagonal[solvable] = inverse[:, 0, 0]
    product_diagonal[solvable] = np.einsum(
        "mi,mij,mj->m", inverse[:, 0, :], u[solvable], inverse[:, :, 0]
    )
    return diagonal, product_diagonal
