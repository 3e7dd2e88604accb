"""Where a density search's criterion is set by a few rows, and says so: **copies** — rows
that repeat exactly at values on no lattice of a recording resolution (a bootstrap
resample, data given twice), each predicted by its own twins —, **near ties** — values
in tight groups (ties jittered apart), each predicted by its group — and **isolated
rows** — a heavy tail or far outliers, whose leave-one-out densities likelihood
cross-validation must reach. The bandwidth stays the criterion's (statsmodels' and R np's too); a
:class:`~attnpool.TiedDataWarning` or :class:`HeavyTailWarning` names the better
answer. (Values recorded to a resolution, whose ties are distinct observations, are
the floor's: :mod:`attnpool.bandwidth.resolution`.)"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._support.hints import KernelSpec
from ..bandwidth.resolution import FLOOR_REACHED, TiedDataWarning, bandwidth_floor, on_lattice
from ..bandwidth.search import BandwidthSelection
from ..sums.empty_policy import user_stacklevel
from ..sums.observation_weights import merged_rows

__all__ = [
    "COPIES_ADVICE",
    "COPIES_DECIDE",
    "NEAR_TIE_GROUPS",
    "NEAR_TIE_SEPARATION",
    "TAILS_DECIDE",
    "TIES_ADVICE",
    "BlockWarnings",
    "HeavyTailWarning",
    "columns_on_floor",
    "near_tie_groups",
    "warn_at_floor",
    "warn_where_copies_decide",
    "warn_where_near_ties_decide",
    "warn_where_tails_decide",
]


#: What to do where rows repeat as copies (not values recorded to a resolution).
COPIES_ADVICE = (
    "where the repeats are copies of one observation (a bootstrap resample, data given "
    "twice), give each distinct row once with its count as its weight"
)
#: What to do where tied values, recorded to a resolution, leave a search at its floor.
TIES_ADVICE = "with so many ties prefer 'normal_reference' or 'cv_ml'"
#: A cross-validated bandwidth this many times below the one with each repeated row's
#: copies left out together is set by the copies.
COPIES_DECIDE = 1.5


def columns_on_floor(found: BandwidthSelection, x: np.ndarray, model: Any) -> list[int]:
    """The continuous columns of ``x (n, d)`` whose searched bandwidth in ``found`` is at
    the floor that their tied values set (:mod:`attnpool.bandwidth.resolution`)."""
    cont = list(model.continuous)
    floor = np.zeros(x.shape[1])
    floor[cont] = bandwidth_floor(x[:, cont])
    return np.flatnonzero((floor > 0) & (found.bandwidth <= floor * FLOOR_REACHED)).tolist()


def warn_at_floor(
    found: BandwidthSelection, x: np.ndarray, model: Any, copies_advice: str = COPIES_ADVICE
) -> None:
    """A :class:`TiedDataWarning` where the search ``found`` of ``x (n, d)`` stopped at
    the floor of a column's tied values: its criterion has no optimum above it. Its
    advice: ``copies_advice`` where the ties are copies (off any lattice of a
    resolution), else :data:`TIES_ADVICE`."""
    columns = columns_on_floor(found, x, model)
    if not columns:
        return
    copies = not all(on_lattice(x[:, j]) for j in columns)
    warnings.warn(
        f"bandwidth: the {found.method} criterion still falls at half the resolution of the "
        f"tied values of column(s) {columns} (bandwidth "
        f"{', '.join(f'{h:.4g}' for h in found.bandwidth[columns])}): that is the search's "
        f"floor, not an optimum; {copies_advice if copies else TIES_ADVICE}",
        TiedDataWarning,
        stacklevel=user_stacklevel(),
    )


def warn_where_copies_decide(
    found: BandwidthSelection,
    given: tuple[np.ndarray, np.ndarray | None],
    model: Any,
    kernel: KernelSpec,
    select: Callable[..., BandwidthSelection],
    advice: str | None = None,
    at_floor: bool = False,
) -> bool:
    """A :class:`TiedDataWarning` where rows of ``given = (x (n, d), weights)`` repeat
    exactly and set the cross-validated bandwidth ``found``: each repeated row is then
    predicted by its own copies, and the criterion favours spikes at them — a bootstrap
    resample of a normal sample chose a fifth of the sample's bandwidth. The search is
    run again with each row's copies merged into one of their total weight (left out
    together: ``select(merged, method=, kernel=, var_type=, weights=counts)``) and
    compared; ``advice``: the warning's last sentence (None: give the counts as weights,
    :data:`COPIES_ADVICE`). Not where every continuous column's values lie on the
    lattice of its resolution (values recorded to a precision, whose ties are distinct
    observations: leaving them out together would predict each from the next recorded
    values), nor — unless ``at_floor`` — where the search stopped at the floor that tied
    values set (:func:`warn_at_floor` says so). Whether it warned."""
    x, weights = given
    cont = list(model.continuous)
    relative = None if weights is None else weights / np.max(weights)  # (totals finite)
    merged, _, counts = merged_rows(x, x[:, :0], relative)
    if not cont or merged.shape[0] == x.shape[0] or merged.shape[0] < 3:
        return False
    if not at_floor and columns_on_floor(found, x, model):
        return False
    if all(on_lattice(x[:, j]) for j in cont):  # values recorded to a resolution: their
        return False  # ties are distinct observations (the floor's case), not copies
    with warnings.catch_warnings():  # (the search of the copies merged: its own warnings
        warnings.simplefilter("ignore", HeavyTailWarning)  # are the sample's, said below)
        apart = select(merged, method=found.method, kernel=kernel, var_type=model.var_type,
                       weights=counts)  # fmt: skip
    ratio = apart.bandwidth[cont] / found.bandwidth[cont]
    if not np.any(ratio > COPIES_DECIDE):
        return False
    shown = ", ".join(f"{h:.4g}" for h in found.bandwidth)  # (λ too: what to pass)
    apart_shown = ", ".join(f"{h:.4g}" for h in apart.bandwidth)
    if advice is None:
        advice = COPIES_ADVICE[0].upper() + COPIES_ADVICE[1:] + ", which selects that"
    warnings.warn(
        f"bandwidth: {x.shape[0] - merged.shape[0]} of the {x.shape[0]} rows repeat another "
        f"exactly, and they set the {found.method} bandwidth ({shown}): each is predicted "
        f"by its own copies; with each row's copies left out together it is "
        f"{apart_shown}. {advice}",
        TiedDataWarning,
        stacklevel=user_stacklevel(),
    )
    return True


#: Near ties: groups whose widest gap inside is at most this share of the narrowest
#: gap between them, at least this many groups, the largest with at most half the rows.
NEAR_TIE_SEPARATION, NEAR_TIE_GROUPS = 0.01, 5


def near_tie_groups(column: np.ndarray) -> tuple[int, float, float] | None:
    """``(groups, width, gap)`` where the values of ``column (n,)`` lie in tight groups
    — tied values jittered apart, copies with noise: each group's values within ``width``
    of the next, the groups at least ``gap`` apart, ``width ≤``
    :data:`NEAR_TIE_SEPARATION` ``· gap`` (the largest such ratio between consecutive
    sorted gaps, at least half of them inside groups), at least
    :data:`NEAR_TIE_GROUPS` groups, the largest with at most half the rows — else None
    (exact ties are the floor's, :mod:`attnpool.bandwidth.resolution`)."""
    values = np.sort(np.asarray(column, np.float64))
    gaps = np.diff(values)
    n = values.size
    if n < 2 * NEAR_TIE_GROUPS:
        return None
    ordered = np.sort(gaps)
    inside = np.arange((n - 1) // 2, n - 1)  # candidate counts of gaps inside groups
    below, above = ordered[inside - 1], ordered[inside]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(below > 0, above / below, 0.0)
    best = int(np.argmax(ratio))
    width, gap = float(below[best]), float(above[best])
    if not width > 0 or width > NEAR_TIE_SEPARATION * gap:
        return None
    sizes = np.diff(np.flatnonzero(np.r_[True, gaps >= gap, True]))
    if sizes.size < NEAR_TIE_GROUPS or sizes.max() > n / 2:
        return None
    return int(sizes.size), width, gap


def warn_where_near_ties_decide(found: BandwidthSelection, x: np.ndarray, model: Any) -> None:
    """A :class:`TiedDataWarning` where a continuous column's values lie in tight groups
    (:func:`near_tie_groups`) and its cross-validated bandwidth in ``found`` is below half
    the gap between them — where tied values would have stopped the search: each row is
    predicted by its group, and the criterion favours spikes at them (integers jittered
    by 1e-6: ``cv_ls`` 5.4e-7, ``cv_ml`` 0.089, where as ties both stop at 0.5)."""
    for j in model.continuous:
        groups = near_tie_groups(x[:, j])
        if groups is None or not found.bandwidth[j] < groups[2] / 2:
            continue
        count, width, gap = groups
        warnings.warn(
            f"bandwidth: the values of column {j} lie in {count} tight groups, each within "
            f"{width:.3g} of the next, at least {gap:.4g} apart — tied values jittered "
            f"apart, or copies with noise? — and they set the {found.method} bandwidth "
            f"({found.bandwidth[j]:.4g}): each row is predicted by its group; as ties the "
            f"search would stop at {gap / 2:.4g}. Where they are ties, prefer "
            "'normal_reference'",
            TiedDataWarning,
            stacklevel=user_stacklevel(),
        )
        return


class BlockWarnings:
    """The warnings of a subsampled search's blocks (:mod:`attnpool.bandwidth.subsample`),
    said once: each block's search runs inside :meth:`kept`; :meth:`say` then gives the
    first :class:`TiedDataWarning` with how many blocks gave one, and every other
    warning once — a :class:`HeavyTailWarning` is the whole sample's, said by its caller.
    """

    def __init__(self) -> None:
        self.blocks = 0
        self.caught: list[warnings.WarningMessage] = []

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """Run one block's search, keeping its warnings back."""
        self.blocks += 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        self.caught += [w for w in caught if not issubclass(w.category, HeavyTailWarning)]

    def say(self) -> None:
        """The blocks' warnings, once."""
        tied = [w for w in self.caught if issubclass(w.category, TiedDataWarning)]
        if tied:
            warnings.warn(
                f"in {len(tied)} of the {self.blocks} blocks of rows searched: {tied[0].message}",
                TiedDataWarning,
                stacklevel=user_stacklevel(),
            )
        said = set()
        for caught in self.caught:
            if issubclass(caught.category, TiedDataWarning) or str(caught.message) in said:
                continue
            said.add(str(caught.message))
            warnings.warn(caught.message, stacklevel=user_stacklevel())


class HeavyTailWarning(UserWarning):
    """A likelihood cross-validated density bandwidth (``cv_ml``) many times the robust
    rule of thumb: the criterion is set by the sample's most isolated rows — a heavy tail
    or far outliers, each of whose leave-one-out densities must reach its nearest other
    row — and smooths the rest of the sample out. Least-squares cross-validation
    (``cv_ls``) and the plug-in (``isj``) are not so set.

    Examples
    --------
    >>> import warnings, numpy as np, attnpool
    >>> x = np.random.default_rng(0).standard_cauchy(500)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     found = attnpool.select_density_bandwidth(x, method="cv_ml")
    >>> caught[0].category.__name__
    'HeavyTailWarning'

    References
    ----------
    Hall, P. (1987). On Kullback–Leibler loss and density estimation. *Annals of
    Statistics* 15(4), 1491–1519 (likelihood cross-validation on heavy tails).
    Schuster, E. F. & Gregory, G. G. (1981). On the nonconsistency of maximum likelihood
    nonparametric density estimators. *Computer Science and Statistics: 13th Symposium
    on the Interface*, 295–298.
    """


#: A ``cv_ml`` bandwidth this many times Silverman's robust rule is set by the tails.
TAILS_DECIDE = 4.0


def warn_where_tails_decide(
    found: BandwidthSelection,
    given: tuple[np.ndarray, np.ndarray | None],
    model: Any,
    kernel: KernelSpec,
    side: str = "",
) -> None:
    """A :class:`HeavyTailWarning` where a continuous column's ``cv_ml`` bandwidth is more
    than :data:`TAILS_DECIDE` times Silverman's robust rule of thumb (``0.9 min(σ,
    IQR/1.349) n^(−1/5)``, which a tail or an outlier barely moves): a normal sample's is
    ~1.1 times it, one with a row at 30σ 6.4 times, a Cauchy sample's 20 times. ``side``:
    the name of the sample's columns in the message (``"y "``: a conditional density's
    responses)."""
    from ..bandwidth.rules import rule_of_thumb

    x, weights = given
    cont = list(model.continuous)
    if not cont:
        return
    relative = None
    if weights is not None:  # (n: the rows; the largest first, weights near 2¹⁰²³ too)
        relative = weights / np.max(weights)
        relative = relative / np.mean(relative)
    robust = rule_of_thumb(x, method="silverman", kernel=model.kernel, var_type=model.var_type,
                           weights=relative)[cont]  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = found.bandwidth[cont] / robust
    wide = np.flatnonzero(ratio > TAILS_DECIDE)
    if not wide.size:
        return
    columns = [cont[j] for j in wide]
    shown = ", ".join(f"{found.bandwidth[c]:.4g}" for c in columns)
    times = ", ".join(f"{r:.3g}" for r in ratio[wide])
    warnings.warn(
        f"bandwidth: the cv_ml bandwidth of {side}column(s) {columns} ({shown}) is {times} times "
        "Silverman's robust rule of thumb: likelihood cross-validation is set by the "
        "sample's most isolated rows (a heavy tail or far outliers, each of whose "
        "leave-one-out densities must reach its nearest other row) and smooths the rest "
        "out; 'cv_ls' or 'isj' are not so set",
        HeavyTailWarning,
        stacklevel=user_stacklevel(),
    )
