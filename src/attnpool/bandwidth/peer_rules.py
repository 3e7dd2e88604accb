"""The peers' rules of thumb by name, each giving that peer's number.

A rule of thumb is a formula, but every library writes its own: a different spread
(the standard deviation with ``ddof`` 0 or 1, or the smaller of it and the
interquartile range over 1.34 or 1.349), a different constant, a different meaning of
the number (the kernel's standard deviation, R's and SciPy's convention, or the
parameter of the kernel's own formula, scikit-learn's and statsmodels'). Here each is
the peer's own formula, converted to attnpool's bandwidth for the kernel asked for
(``h`` is the Gaussian's standard deviation and a compact kernel's half-width: a
standard deviation ``s`` of kernel ``K`` is ``h = s / √μ₂(K)``):

=========================  =========================================================
name                       the peer's number, for each column of ``x (n, d)``
=========================  =========================================================
``bw.nrd0``                R: ``0.9 min(sd, IQR/1.34) n^(−1/5)``, a standard deviation
``bw.nrd``                 R: ``1.06 min(sd, IQR/1.34) n^(−1/5)``, a standard deviation
``scipy.scott``            SciPy's ``gaussian_kde``: ``sd · n^(−1/5)`` (one column)
``scipy.silverman``        SciPy's: ``sd · (3n/4)^(−1/5)`` (one column)
``sklearn.scott``          scikit-learn's ``KernelDensity``: ``n^(−1/(d+4))`` (not scaled
                           by the data's spread), the kernel's own parameter
``sklearn.silverman``      scikit-learn's: ``(n (d+2)/4)^(−1/(d+4))``, likewise
``statsmodels.scott``      statsmodels' ``KDEUnivariate``: ``1.059 A n^(−1/5)``, ``A =
                           min(sd, IQR/1.349)``, the kernel's own parameter
``statsmodels.silverman``  statsmodels': ``0.9 A n^(−1/5)``, likewise
``statsmodels.normal_      statsmodels': ``C(K) A n^(−1/5)``, ``C(K) = 2 (√π R(K) / (12
reference``                μ₂(K)²))^(1/5)`` (Hansen's constant; 1.0592 for the Gaussian)
``bw.SJ``, ``bw.SJ-ste``   R's Sheather–Jones, solving the equation; ``bw.SJ-dpi`` the
                           direct plug-in (:func:`.r_selectors.sheather_jones_bandwidth`),
                           a standard deviation
``bw.ucv``, ``bw.bcv``     R's unbiased and biased cross-validation on binned distances
                           (:mod:`.r_selectors`), a standard deviation
``dpik``                   KernSmooth's direct plug-in (:mod:`.density_plug_in`), the
                           kernel's own parameter
=========================  =========================================================

(``sd`` with ``ddof=1``; quartiles by linear interpolation, R's type 7.) R's
``"cosine"`` is the raised cosine ``(1 + cos πu)/2``; attnpool's ``"cosine"`` is R's
``"optcosine"``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from .._support.hints import ArrayLike, KernelSpec
from .._support.units import power_of_two_above
from .._support.validation import check_choice, check_points

__all__ = ["PEER_RULES", "peer_rule"]

#: The rules' names, as the peers call them.
PEER_RULES = (
    "bw.nrd0",
    "bw.nrd",
    "bw.SJ",
    "bw.SJ-ste",
    "bw.SJ-dpi",
    "bw.ucv",
    "bw.bcv",
    "dpik",
    "scipy.scott",
    "scipy.silverman",
    "sklearn.scott",
    "sklearn.silverman",
    "statsmodels.scott",
    "statsmodels.silverman",
    "statsmodels.normal_reference",
)


def peer_rule(x: ArrayLike, name: str, kernel: KernelSpec = "gaussian") -> np.ndarray:
    """The bandwidths ``(d,)`` of ``x (n,) | (n, d)`` by the peer's rule ``name``
    (:data:`PEER_RULES`, the table above), as attnpool's bandwidths for ``kernel``."""
    check_choice(name, "method", PEER_RULES)
    x = np.asarray(check_points(x, "x"), np.float64)
    n, d = x.shape
    record = kernels.for_dimensions(kernels.get(kernel), d)
    if not (record.variance and math.isfinite(record.variance) and record.roughness):
        raise ValueError(
            f"kernel: rules of thumb need a kernel of finite variance and roughness; "
            f"received {record.name!r}"
        )
    if n < 2:
        raise ValueError(f"x: a rule of thumb needs at least 2 rows; received {n}")
    if name.startswith("sklearn."):
        factor = n if name == "sklearn.scott" else n * (d + 2) / 4
        return np.full(d, factor ** (-1 / (d + 4)))
    if name.startswith("scipy.") and d > 1:
        raise ValueError(
            f"x: SciPy's {name.split('.')[1]} rule scales the data's whole covariance, a "
            f"bandwidth matrix; attnpool takes one bandwidth per column: received {d} columns"
        )
    if name in _R_SELECTORS:
        return _from_sd(np.array([_r_selector(name, column) for column in x.T]), record)
    if name == "dpik":
        from .density_plug_in import CANONICAL, density_plug_in_bandwidth

        base = record.name.removesuffix("-product")
        if base not in CANONICAL or not kernels.is_builtin(kernels.get(base)):
            raise ValueError(
                f"kernel: 'dpik' (KernSmooth's) takes the kernels {sorted(CANONICAL)}; "
                f"received {record.name!r}"
            )
        return np.array([density_plug_in_bandwidth(column, kernel=base) for column in x.T])
    # each column in a power-of-two unit (exact: the peers' numbers to the last digit),
    # so that the squares in sd of x ~ 1e±200 neither overflow nor vanish
    unit = power_of_two_above(np.max(np.abs(x), axis=0))
    return np.asarray(_spread_rule(x / unit, name, record) * unit)


def _spread_rule(x: np.ndarray, name: str, record: kernels.Kernel) -> np.ndarray:
    """The rules of :func:`peer_rule` from the spread of each column of ``x (n, d)``."""
    assert record.variance is not None and record.roughness is not None  # (checked)
    n = x.shape[0]
    sd = x.std(axis=0, ddof=1)
    quartiles = np.percentile(x, [75, 25], axis=0)
    iqr = quartiles[0] - quartiles[1]
    if name == "scipy.scott":
        return _from_sd(sd * n ** (-0.2), record)
    if name == "scipy.silverman":
        return _from_sd(sd * (3 * n / 4) ** (-0.2), record)
    if name.startswith("bw."):
        spread = np.minimum(sd, iqr / 1.34)
        if name == "bw.nrd0":  # R's fallbacks where the spread is 0
            spread = np.where(spread > 0, spread, np.where(sd > 0, sd, np.abs(x[0])))
            spread = np.where(spread > 0, spread, 1.0)
        return _from_sd((0.9 if name == "bw.nrd0" else 1.06) * spread * n ** (-0.2), record)
    spread = np.where(iqr > 0, np.minimum(sd, iqr / 1.349), sd)
    constant = {"statsmodels.scott": 1.059, "statsmodels.silverman": 0.9}.get(name)
    if constant is None:  # Hansen's normal-reference constant of the kernel
        ratio = math.sqrt(math.pi) * record.roughness / (12 * record.variance**2)
        constant = 2 * ratio**0.2
    return np.asarray(constant * spread * n ** (-0.2))


#: R's data-driven selectors (:mod:`.r_selectors`), each column on its own.
_R_SELECTORS = ("bw.SJ", "bw.SJ-ste", "bw.SJ-dpi", "bw.ucv", "bw.bcv")


def _r_selector(name: str, column: np.ndarray) -> float:
    """R's selector ``name`` of one column: a standard deviation."""
    from . import r_selectors

    if name == "bw.ucv":
        return r_selectors.unbiased_cv_bandwidth(column)
    if name == "bw.bcv":
        return r_selectors.biased_cv_bandwidth(column)
    return r_selectors.sheather_jones_bandwidth(column, "dpi" if name == "bw.SJ-dpi" else "ste")


def _from_sd(sd: np.ndarray, record: kernels.Kernel) -> np.ndarray:
    """attnpool's bandwidth of ``record`` whose kernel has standard deviation ``sd``."""
    assert record.variance is not None
    return np.asarray(sd / math.sqrt(record.variance))
