"""The data a learned attention model trains on: the checked inputs and targets, their
standardisation, and the held-out validation split."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._support.interop import compute_dtype
from .._support.validation import check_points, check_values

__all__ = ["Standardisation", "as_targets", "split", "training_data"]


@dataclass(frozen=True)
class Standardisation:
    """``x ↦ (x − centre) / scale``, from the training inputs.

    Parameters
    ----------
    centre : ndarray of shape (d,)
        The columns' (weighted) means.
    scale : ndarray of shape (d,)
        Their standard deviations (one shared scale with ``of(..., shared=True)``; 1 for a
        constant column).

    Examples
    --------
    >>> import numpy as np
    >>> from attnpool.learn import Standardisation
    >>> x = np.array([[1.0, 10.0], [3.0, 30.0]])
    >>> Standardisation.of(x, shared=False)(x)
    array([[-1., -1.],
           [ 1.,  1.]])
    >>> Standardisation.of(x, shared=True).scale.round(3)   # one scale: the mean variance's
    array([7.106, 7.106])

    References
    ----------
    Hastie, T., Tibshirani, R. & Friedman, J. (2009). *The Elements of Statistical
    Learning*, 2nd ed., section 6.1.1 (standardising inputs before a radial kernel).
    """

    centre: np.ndarray
    scale: np.ndarray

    @classmethod
    def of(
        cls, x: np.ndarray, *, shared: bool, weights: np.ndarray | None = None
    ) -> Standardisation:
        """Column means; column standard deviations, or one common scale if ``shared``
        (rows counted ``weights`` times, if given)."""
        mean = np.average(x, axis=0, weights=weights)
        spread = np.sqrt(np.average((x - mean) ** 2, axis=0, weights=weights))
        if shared:
            spread = np.full_like(spread, np.sqrt(np.mean(spread**2)))
        return cls(mean, np.where(spread > 0, spread, 1.0))

    def __call__(self, x: Any) -> Any:
        return (x - self.centre) / self.scale


def training_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    x = check_points(X, "X")
    values = np.asarray(y) if not hasattr(y, "shape") else y
    y, flat = as_targets(values, x.shape[0])
    dtype = compute_dtype(x, y, numpy=True)
    return np.asarray(x, dtype), np.asarray(y, dtype), flat


def as_targets(y: Any, n: int) -> tuple[np.ndarray, bool]:
    try:
        y, flat = check_values(y, n)
    except ValueError as error:  # the same checks, under the name the caller used
        raise ValueError(str(error).replace("values:", "y:", 1)) from None
    return np.asarray(y), flat


def split(
    x: np.ndarray, y: np.ndarray, validation: Any, seed: int, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, Any, Any, np.ndarray | None, np.ndarray | None]:
    """Training and validation parts ``(x, y, x_val, y_val, weights, val_weights)``: a
    held-out fraction (the weights split alike), a given set (unweighted), or none."""
    if validation is None:
        return x, y, None, None, weights, None
    if isinstance(validation, tuple | list) and len(validation) == 2:
        x_val = np.asarray(check_points(validation[0], "validation", dims=x.shape[1]), x.dtype)
        y_val, _ = as_targets(np.asarray(validation[1]), x_val.shape[0])
        if y_val.shape[1] != y.shape[1]:
            raise ValueError(
                f"validation: expected targets with {y.shape[1]} column(s); "
                f"received shape {y_val.shape}"
            )
        return x, y, x_val, y_val.astype(y.dtype), weights, None
    if isinstance(validation, float) and 0 < validation < 1:
        n = x.shape[0]
        held = round(validation * n)
        if held < 1 or n - held < 2:
            raise ValueError(
                f"validation: a fraction {validation} of {n} samples leaves "
                f"{held} for validation and {n - held} for training; need at least 1 and 2"
            )
        order = np.random.default_rng(seed).permutation(n)
        train, val = np.sort(order[held:]), np.sort(order[:held])
        if weights is None:
            return x[train], y[train], x[val], y[val], None, None
        return x[train], y[train], x[val], y[val], weights[train], weights[val]
    raise ValueError(
        f"validation: expected a fraction in (0, 1) or a pair (X_val, y_val); "
        f"received {validation!r}"
    )
