"""What a kernel sum is asked to compute, and what a backend answers.

Every front end — pooling, densities, leave-one-out criteria, confidence bands — needs
the same sums over keys ``k_i`` for each query ``q``:

.. math:: S_0(q) = \\sum_i w_i K\\big((q - k_i)/h\\big)^r, \\qquad
          S_j(q) = \\sum_i w_i K\\big((q - k_i)/h\\big)^r\\, v_{ij}

(``r = 1``; ``r = 2`` for a band's variance, whose sums are of ``K²``). A
:class:`SumProblem` names them; a backend answers with :class:`LogSums`, the sums
divided by ``exp(shift)`` so that no weight underflows however small the bandwidth:
the pooling state ``(m, s, t)`` of :mod:`attnpool.sums.state`, one row per query.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from ..kernels import Kernel

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
    bandwidth : ndarray of shape (d,)
        ``h``, per column.
    kernel : Kernel
        A non-negative distance kernel of ``u = (q − k_i)/h`` (its norm included).
    weights : ndarray of shape (m,), optional
        Observation weights ``w_i ≥ 0``; ``None`` for ``w_i = 1``.
    left_out : ndarray of shape (n,), int, optional
        The key each query leaves out (with its weight), ``−1`` for none: a leave-one-out
        criterion's sums, whose queries are the keys, have ``left_out = arange(m)``
        (:meth:`leave_one_out`).
    power : int
        ``r``: 1, or 2 for the sums of ``K²``.

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

    def rows(self, which: np.ndarray) -> SumProblem:
        """The same sums for the queries ``which`` (a boolean mask or indices) alone,
        each leaving out the key it left out."""
        left_out = None if self.left_out is None else self.left_out[which]
        return dataclasses.replace(self, queries=self.queries[which], left_out=left_out)


class LogSums(NamedTuple):
    """A backend's answer to a :class:`SumProblem` of ``n`` queries and ``p`` values.

    Attributes
    ----------
    shift : ndarray of shape (n,)
        ``m``: each row's reference, at least its largest ``log(w_i K^r)`` (any finite
        number where the row has no weight).
    sums : ndarray of shape (n, 1 + p)
        ``[S_0, S_1 … S_p] · exp(−m)``: column 0 the weights' sum (``≥ 0``), then the
        weighted values.
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
