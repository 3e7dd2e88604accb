"""What a kernel sum is asked to compute, and what a backend answers.

Every front end — pooling, densities, leave-one-out criteria, confidence bands — needs
the same sums over keys ``k_i`` for each query ``q``:

.. math:: S_0(q) = \\sum_i w_i K\\big((q - k_i)/h\\big)^r, \\qquad
          S_j(q) = \\sum_i w_i K\\big((q - k_i)/h\\big)^r\\, v_{ij}

(``r = 1``; ``r = 2`` for a band's variance, whose sums are of ``K²``). A local
linear fit needs the local moments beside them,

.. math:: \\sum_i w_i K_i \\, [1,\\; r_i,\\; δ_i,\\; δ_i δ_i^T,\\; δ_i r_i^T],
          \\qquad δ_i = (k_i - k_o)/h, \\quad r_i = v_i - v_o,

about a reference key ``o`` of each row (its heaviest: about the query itself, the
covariance ``E[δδᵀ] − E[δ]E[δ]ᵀ`` cancels to rounding once one key carries nearly all
the weight). Categorical columns weigh pairs by their own kernels (Aitchison–Aitken,
Wang–van Ryzin), their bandwidth ``λ``. A :class:`SumProblem` names the sums; a backend
answers with :class:`LogSums`, the sums divided by ``exp(shift)`` so that no weight
underflows however small the bandwidth: the pooling state ``(m, s, t)`` of
:mod:`attnpool.sums.state`, one row per query.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import numpy as np

from ..kernels import Kernel
from .local_model import LocalModel

__all__ = ["LogSums", "SumProblem"]


@dataclasses.dataclass(frozen=True, eq=False)
class SumProblem:
    """The sums one call needs (NumPy float64 arrays).

    Attributes
    ----------
    queries : ndarray of shape (n, d)
    keys : ndarray of shape (m, d)
    values : ndarray of shape (m, p)
        The columns ``v_ij`` summed beside the weights (``p`` may be 0: a density).
    bandwidth : ndarray of shape (d,), (n, d) or (m, d)
        ``h``, per column; with ``bandwidth_by``, each query's or each key's.
    kernel : Kernel
        A distance kernel of ``u = (q − k_i)/h`` (its norm included): non-negative, or a
        higher-order kernel (signed weights: ``S_0`` of any sign, a row whose weights
        cancel exactly has no weight), which only the NumPy pairs backend sums.
    weights : ndarray of shape (m,), optional
        Observation weights ``w_i ≥ 0``; ``None`` for ``w_i = 1``.
    left_out : ndarray of shape (n,), int, optional
        The key each query leaves out (with its weight), ``−1`` for none: a leave-one-out
        criterion's sums, whose queries are the keys, have ``left_out = arange(m)``
        (:meth:`leave_one_out`).
    power : int
        ``r``: 1, or 2 for the sums of ``K²``.
    var_type : str, optional
        One letter per column: ``"c"`` continuous, ``"o"`` ordered, ``"u"`` unordered
        (categorical columns' ``bandwidth`` is their ``λ ∈ (0, 1)``, their codes'
        differences their ``δ``); ``None``: every column continuous.
    levels : tuple of int
        Each unordered column's number of levels (others 0); empty where none is.
    degree : int
        The moments wanted: 0 the weights and values alone, 1 local linear's moments.
    origin : ndarray of shape (n,), int, optional
        Degree 1: the key each row's moments are taken about (``−1``: the query
        itself, as ``None`` takes every row).
    bandwidth_by : {"fixed", "query", "key"}
        Where a pair's bandwidth comes from: ``bandwidth (d,)`` for every pair, row
        ``i`` of ``bandwidth (n, d)`` (a "balloon" estimate, R np's ``generalized_nn``),
        or key ``j``'s row of ``bandwidth (m, d)``, whose kernel is then
        ``K(u) / Π_c h_jc`` (a "sample-point" estimate, ``adaptive_nn``). Varying
        bandwidths take continuous columns, and may be 0: that column's limit
        ``K(Δ/h)/h → δ(Δ)``, a row keeping only its pairs with the most such infinite
        factors. Only the NumPy pairs backend sums them.

    Examples
    --------
    >>> import numpy as np
    >>> from attnpool import SumProblem, kernels
    >>> problem = SumProblem(np.zeros((1, 1)), np.array([[0.0], [1.0]]), np.ones((2, 1)),
    ...                      np.ones(1), kernels.get("gaussian"))
    >>> problem.sizes
    (1, 2, 1, 1)

    References
    ----------
    Nadaraya, E. A. (1964). On estimating regression. *Theory of Probability and Its
    Applications* 9(1), 141–142 (the sums ``S_0``, ``S_j`` of the estimate).
    """

    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    bandwidth: np.ndarray
    kernel: Kernel
    weights: np.ndarray | None = None
    left_out: np.ndarray | None = None
    power: int = 1
    var_type: str | None = None
    levels: tuple[int, ...] = ()
    degree: int = 0
    origin: np.ndarray | None = None
    bandwidth_by: str = "fixed"

    @classmethod
    def leave_one_out(
        cls, keys: np.ndarray, values: np.ndarray, bandwidth: np.ndarray, kernel: Kernel,
        weights: np.ndarray | None = None,
    ) -> SumProblem:  # fmt: skip
        """The sums at every key over the other keys: row ``i`` leaves key ``i`` out."""
        return cls(keys, keys, values, bandwidth, kernel, weights, np.arange(keys.shape[0]))

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """``(n, m, d, p)``: queries, keys, columns, value columns."""
        return (self.queries.shape[0], self.keys.shape[0], self.keys.shape[1],
                self.values.shape[1])  # fmt: skip

    @property
    def width(self) -> int:
        """The sums' columns: ``1 + p``, and ``d + d² + d·p`` more for degree 1."""
        _, _, d, p = self.sizes
        return 1 + p + (d + d * d + d * p if self.degree else 0)

    @property
    def categorical(self) -> bool:
        """Whether some column is ordered or unordered."""
        return self.var_type is not None and self.var_type.count("c") != len(self.var_type)

    def column_kinds(self) -> tuple[list[int], list[int]]:
        """``(continuous, categorical)``: the columns of each kind."""
        if self.var_type is None:
            return list(range(self.keys.shape[1])), []
        kinds = [t == "c" for t in self.var_type]
        return ([j for j, c in enumerate(kinds) if c], [j for j, c in enumerate(kinds) if not c])

    @functools.cached_property
    def model(self) -> LocalModel:
        """The columns' description: kernel, var types, levels and degree."""
        d = self.keys.shape[1]
        var_type = "c" * d if self.var_type is None else self.var_type
        return LocalModel(self.kernel, var_type, self.levels or (0,) * d, self.degree)

    @property
    def varying(self) -> bool:
        """Whether the bandwidth varies by query or by key (:attr:`bandwidth_by`)."""
        return self.bandwidth_by != "fixed"

    @property
    def signed(self) -> bool:
        """Whether the kernel is a higher-order one, its weights of either sign."""
        return self.kernel.base is not None

    def pair_bandwidths(self, rows: slice | np.ndarray) -> np.ndarray:
        """``h`` of the pairs of the query ``rows``, broadcast against their
        ``(rows, m, d)``: ``(1, 1, d)``, ``(rows, 1, d)`` or ``(1, m, d)``."""
        if self.bandwidth_by == "query":
            return self.bandwidth[rows][:, None, :]
        if self.bandwidth_by == "key":
            return self.bandwidth[None, :, :]
        return self.bandwidth[None, None, :]

    @functools.cached_property
    def units(self) -> np.ndarray:
        """``(d,)``, or ``(n, d)`` for varying bandwidths: each column's unit — its
        bandwidth for a continuous column (the query's, or the ``origin`` key's; 1 where
        it is 0), 1 for a categorical one (its codes' differences): the moments' ``δ``
        are in these."""
        if self.bandwidth_by == "query":
            return np.where(self.bandwidth == 0, 1.0, self.bandwidth)
        if self.bandwidth_by == "key":
            about = np.zeros(self.queries.shape[0], int) if self.origin is None else self.origin
            found = np.where((about >= 0)[:, None], self.bandwidth[np.maximum(about, 0)], 1.0)
            return np.where(found == 0, 1.0, found)
        if self.var_type is None:
            return self.bandwidth
        return np.where([t == "c" for t in self.var_type], self.bandwidth, 1.0)

    def reference(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys (n, d), values (n, p))`` each row's moments are taken about: its
        ``origin`` key and that key's values, or the query itself and zeros."""
        return self._reference

    @functools.cached_property
    def _reference(self) -> tuple[np.ndarray, np.ndarray]:
        n, _, _, p = self.sizes
        if self.origin is None:
            return self.queries, np.zeros((n, p))
        about = self.origin >= 0
        if about.all():
            return self.keys[self.origin], self.values[self.origin]
        at = np.where(about, self.origin, 0)
        keys = np.where(about[:, None], self.keys[at], self.queries)
        return keys, np.where(about[:, None], self.values[at], 0.0)

    def replace(self, **changes: object) -> SumProblem:
        """A copy with the fields ``changes``: :func:`dataclasses.replace`'s result without
        its checks of each field, which cost more than a small call's sums."""
        copy = object.__new__(type(self))
        fields = {name: self.__dict__[name] for name in _FIELDS}
        fields.update(changes)
        copy.__dict__.update(fields)
        return copy

    def rows(self, which: np.ndarray) -> SumProblem:
        """The same sums for the queries ``which`` (a boolean mask or indices) alone,
        each leaving out the key it left out and about the key it was about."""
        left_out = None if self.left_out is None else self.left_out[which]
        origin = None if self.origin is None else self.origin[which]
        bandwidth = self.bandwidth[which] if self.bandwidth_by == "query" else self.bandwidth
        return self.replace(queries=self.queries[which], left_out=left_out, origin=origin,
                            bandwidth=bandwidth)  # fmt: skip


_FIELDS = tuple(field.name for field in dataclasses.fields(SumProblem))


class LogSums(NamedTuple):
    """A backend's answer to a :class:`SumProblem` of ``n`` queries and ``p`` values.

    Attributes
    ----------
    shift : ndarray of shape (n,)
        ``m``: each row's reference, at least its largest ``log(w_i K^r)`` (any finite
        number where the row has no weight).
    sums : ndarray of shape (n, 1 + p), or (n, 1 + p + d + d² + d·p) for degree 1
        ``[S_0, S_1 … S_p] · exp(−m)``: column 0 the weights' sum (``≥ 0``; any sign
        for a higher-order kernel, whose shift is its largest ``log|w_i K|``), then the
        weighted values (about the reference's, for degree 1), then the moments
        ``Σ w K δ``, ``Σ w K δδᵀ`` (row-major), ``Σ w K δ rᵀ`` (row-major).
    settled : ndarray of shape (n,), bool
        The rows the backend vouches for; the others are summed again exactly.

    Examples
    --------
    >>> import numpy as np
    >>> from attnpool import SumProblem, kernels
    >>> from attnpool.sums.backends import exact_log_sums
    >>> problem = SumProblem(np.zeros((1, 1)), np.array([[0.0], [1.0]]),
    ...                      np.array([[1.0], [3.0]]), np.ones(1), kernels.get("gaussian"))
    >>> found = exact_log_sums(problem)
    >>> found.shift, found.sums.round(4)          # 1 + e^(-1/2), 1 + 3 e^(-1/2)
    (array([0.]), array([[1.6065, 2.8196]]))

    References
    ----------
    Milakov, M. & Gimelshein, N. (2018). Online normalizer calculation for softmax.
    arXiv:1805.02867 (a reference and sums scaled by it, merged exactly).
    """

    shift: np.ndarray
    sums: np.ndarray
    settled: np.ndarray
