"""Right-censored responses: Kaplan–Meier observation weights for the regressors.

A response ``y_i`` is right-censored when only ``y_i ≤ true response`` is known. Stute's
(1993) weights make the least-squares criterion of the observed data an unbiased
estimate of the uncensored one: with the rows sorted by ``y`` (at a tie, uncensored
first) and ``δ_i = 1`` for an observed response,

.. math:: W_{(i)} = \\frac{δ_{(i)}}{n - i + 1}
          \\prod_{j < i} \\left(\\frac{n - j}{n - j + 1}\\right)^{δ_{(j)}}

the jumps of the Kaplan–Meier estimate of the response's distribution (``1/n`` each
without censoring; 0 for censored rows, whose mass moves to the larger responses).
:func:`censoring_weights` returns ``n W``: as observation weights (which count copies of
a row) the uncensored data then fit as without weights, and a row that took over
censored mass counts as more than one. Fit any regressor with them as
``sample_weight`` — statsmodels' ``KernelCensoredReg`` is the local linear fit with these
weights (the fit does not see their scale):

>>> import numpy as np
>>> from attnpool import LocalLinear, censoring_weights
>>> y = np.array([2.0, 3.0, 3.0, 5.0]); censored = np.array([False, True, False, False])
>>> censoring_weights(y, censored)       # the censored row's mass moves to y = 5
array([1., 0., 1., 2.])
"""

from __future__ import annotations

import numpy as np

from .._support.hints import ArrayLike
from .._support.validation import check_values

__all__ = ["censoring_weights"]


def censoring_weights(y: ArrayLike, censored: ArrayLike) -> np.ndarray:
    """Kaplan–Meier (Stute) weights times ``n``, ``(n,)``, of responses ``y (n,)`` whose
    rows ``censored (n,)`` (booleans) are right-censored, in the rows' own order.

    Parameters
    ----------
    y : array of shape (n,)
    censored : bool array of shape (n,)

    Returns
    -------
    ndarray of shape (n,)
        ``n`` times the Kaplan–Meier estimate's mass at each uncensored row; 0 at a
        censored one.

    References
    ----------
    Stute, W. (1993). Consistent estimation under random censorship when covariables
    are present. *Journal of Multivariate Analysis* 45(1), 89–103.

    Examples
    --------
    >>> import numpy as np
    >>> from attnpool import censoring_weights
    >>> censoring_weights(np.array([3.0, 1.0, 2.0, 4.0]), np.array([False, False, True, False]))
    array([1.5, 1. , 0. , 1.5])
    """
    values, flat = check_values(y, np.shape(y)[0] if np.ndim(y) else 0)
    if not flat:
        raise ValueError(f"y: expected one response per row, shape (n,); received {np.shape(y)}")
    values = np.asarray(values, np.float64)[:, 0]
    mask = np.asarray(censored)
    if mask.shape != values.shape or mask.dtype != bool:
        raise ValueError(
            f"censored: expected booleans of shape {values.shape} (True where the response is "
            f"right-censored); received {mask.dtype} of shape {mask.shape}"
        )
    n = values.size
    observed = (~mask).astype(np.float64)
    order = np.lexsort((mask, values))  # by y; at a tie the observed response first
    delta = observed[order]
    ranks = np.arange(1, n + 1, dtype=np.float64)
    factors = ((n - ranks) / (n - ranks + 1)) ** delta  # the j-th factor of the product
    survival = np.concatenate([[1.0], np.cumprod(factors[:-1])])
    weights = np.empty(n)
    weights[order] = survival * delta / (n - ranks + 1)
    return n * weights
