"""Local fits whose weights only NumPy pairs sum (:mod:`attnpool.sums.pairs`):
higher-order kernels, and bandwidths by nearest neighbours (R np's ``bwtype``).

- ``"fixed"``: one bandwidth per column, chosen as usual (here by CV).
- ``"generalized_nn"``: at a query, column ``c``'s bandwidth is the distance from the
  query's ``c``-th coordinate to the ``k_c``-th nearest of the training points' (a
  "balloon" estimate: narrow where the data are dense, wide where they are sparse).
- ``"adaptive_nn"``: each training point carries its own bandwidth, the distance to its
  ``k_c``-th nearest *other* training point, and its kernel ``K(u) / Π_c H_c`` (a
  "sample-point" estimate).

Distances are per column, as np computes them, so ``k`` is an integer per column. The
integers are chosen by leave-one-out CV (a grid of ``k`` shared by the columns, then a
golden-section search over the integers of each column in turn); a left-out point's
bandwidths are those of the other points. A bandwidth of zero (``k`` within a run of
repeated values) is its limit: the kernel of that column becomes exact lookup, the pairs
equal in it outweighing every other (:class:`~attnpool.sums.problem.SumProblem`'s
``bandwidth_by``).
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels as _kernels
from .._support.units import objective_in_data_units, response_unit
from ..methods.options import PAIR_METHODS
from ..sums.pairs import local_fit
from ..sums.problem import SumProblem
from .options import FitOptions

__all__ = [
    "BANDWIDTH_TYPES",
    "estimator_prediction",
    "fitted_setting",
    "is_pair_fit",
    "neighbour_distances",
    "predict",
    "refuse",
    "select",
]

BANDWIDTH_TYPES = ("fixed", "generalized_nn", "adaptive_nn")
_SOURCE = {"fixed": "fixed", "generalized_nn": "query", "adaptive_nn": "key"}
#: Values of ``k`` the coarse search tries (shared by the columns).
GRID_SIZE = 12
#: Most sweeps over the columns (each searches every column once, the others held).
SWEEPS = 8
#: Brackets of at most this many integers are searched exhaustively.
EXHAUSTIVE = 32


def neighbour_distances(
    x_train, points, k, *, exclude_self: bool = False, weights=None, whole_row: bool = True
):
    """``(n, d)``: per column ``c``, the distance from ``points[:, c]`` to its ``k_c``-th
    nearest value of ``x_train[:, c]`` — with observation ``weights``, the least distance
    within which the training points weigh ``k_c`` (row ``i`` counts as ``w_i`` copies, so
    integer weights give the repeated rows' distances). ``exclude_self``: ``points`` are
    ``x_train`` and a point leaves itself out: all of its weight (``whole_row``, a
    leave-one-out fit), or one copy (a key's own neighbourhood, in which its other copies
    are neighbours). Zero where ``k`` values repeat the point's."""
    k = np.broadcast_to(np.asarray(k), (x_train.shape[1],))
    if weights is not None:
        own = (1.0 if whole_row else 0.0) if exclude_self else None
        return _weighted_distances(x_train, points, k, own, np.asarray(weights, float))
    distances = np.empty(points.shape)
    for c in range(x_train.shape[1]):
        rank = int(k[c]) + int(exclude_self)
        distances[:, c] = _kth_distance(np.sort(x_train[:, c]), points[:, c], rank)
    return distances


def _kth_distance(values: np.ndarray, points: np.ndarray, rank: int) -> np.ndarray:
    """``(n,)``: the distance ``|p − v|`` from each point to its ``rank``-th nearest of the
    sorted ``values`` (ties counted, rank ≥ 1). The ``rank`` nearest are a run
    ``values[s : s + rank]``, whose farthest is ``max(p − values[s], values[s + rank − 1]
    − p)``: the first term falls and the second rises with ``s`` (as rounded too), so the
    least is at the first ``s`` where the second reaches the first, or just before it —
    found by bisection, ``O(n log m)``, each distance one rounded difference."""
    m = values.size
    low, high = np.zeros(points.shape, int), np.full(points.shape, m - rank + 1)
    while np.any(low < high):
        middle = (low + high) // 2
        at = np.minimum(middle, m - rank)
        reached = values[at + rank - 1] - points >= points - values[at]
        reached |= middle > m - rank
        high = np.where(reached & (low < high), middle, high)
        low = np.where(~reached & (low < high), middle + 1, low)
    after = np.minimum(low, m - rank)
    before = np.maximum(low - 1, 0)
    farthest = [
        np.maximum(points - values[s], values[s + rank - 1] - points) for s in (after, before)
    ]
    return np.minimum(*farthest)


def _weighted_distances(x_train, points, k, own, weights) -> np.ndarray:
    """:func:`neighbour_distances` with weights: each row's sorted distances and their
    cumulative weights, in blocks of rows (``O(n m log m)``). ``own``: None, or the
    points are ``x_train`` and each leaves out its whole weight (1.0) or one copy (0.0)."""
    n, m = points.shape[0], x_train.shape[0]
    distances = np.empty(points.shape)
    block = max(1, 2**22 // m)
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        counts = np.broadcast_to(weights, (rows.size, m)).copy()
        if own is not None:
            mine = counts[np.arange(rows.size), rows]
            counts[np.arange(rows.size), rows] = 0.0 if own else np.maximum(mine - 1.0, 0.0)
        for c in range(x_train.shape[1]):
            gaps = np.abs(points[rows, c, None] - x_train[None, :, c])
            order = np.argsort(gaps, axis=1, kind="stable")
            reached = np.cumsum(np.take_along_axis(counts, order, axis=1), axis=1) >= k[c]
            first = np.argmax(reached, axis=1)
            distances[rows, c] = np.take_along_axis(gaps, order, axis=1)[
                np.arange(rows.size), first
            ]
    return distances


def check_neighbours(k, d: int, m: float) -> np.ndarray:
    """``k`` as ``(d,)`` integers in ``[1, m − 1]`` (``m`` training points, or their total
    weight), or a clear error."""
    if m < 2:
        raise ValueError(
            f"X: nearest-neighbour bandwidths need at least 2 training points; received "
            f"n_samples = {m:g}"
        )
    array = np.asarray(k)
    if array.ndim > 1 or array.size not in (1, d) or array.dtype.kind not in "iuf":
        raise ValueError(
            f"bandwidth: nearest-neighbour bandwidths are numbers of neighbours, one or one "
            f"per column ({d}); received {k!r}"
        )
    array = np.broadcast_to(array, (d,))
    if not (np.all(array == np.round(array)) and np.all(array >= 1) and np.all(array < m)):
        raise ValueError(
            f"bandwidth: expected whole numbers of neighbours in [1, {math.floor(m - 1)}] "
            f"(n_samples = {m:g}); received {k!r}"
        )
    return array.astype(np.int64)


def _bandwidths(x_train, x, setting, bandwidth_type: str, exclude_self: bool, weights):
    if bandwidth_type == "fixed":
        return np.asarray(setting, np.float64)
    if bandwidth_type == "generalized_nn":
        return neighbour_distances(x_train, x, setting, exclude_self=exclude_self,
                                   weights=weights)  # fmt: skip
    # each key's own neighbourhood: its other copies are neighbours
    return neighbour_distances(x_train, x_train, setting, exclude_self=True, weights=weights,
                               whole_row=False)  # fmt: skip


def predict(x_train, y, x, setting, options: FitOptions, *, weights=None, exclude_self=False,
            nearest=True):  # fmt: skip
    """``(fit (n, p), slopes (n, d, p), empty (n,))``: the fit at ``x (n, d)`` for
    ``y (m, p)`` with ``options``' kernel, degree and bandwidth type, ``setting`` the
    bandwidths ``(d,)`` or the numbers of neighbours ``(d,)``: the sums of a
    :class:`~attnpool.sums.problem.SumProblem` of each pair's bandwidth, solved by
    :func:`attnpool.sums.pairs.local_fit`."""
    x_train, x = np.asarray(x_train, np.float64), np.asarray(x, np.float64)
    bandwidth_type = options.bandwidth_type
    problem = SumProblem(
        x, x_train, np.asarray(y, np.float64),
        _bandwidths(x_train, x, setting, bandwidth_type, exclude_self, weights),
        _kernels.get(options.kernel),
        weights=None if weights is None else np.asarray(weights, np.float64),
        left_out=np.arange(x.shape[0]) if exclude_self else None,
        degree=options.degree, bandwidth_by=_SOURCE[bandwidth_type],
    )  # fmt: skip
    return local_fit(problem, nearest=nearest)


def cv_score(x, y, *, kernel, setting, bandwidth_type, degree, weights=None) -> float:
    """The leave-one-out mean squared error (rows counted ``w_i`` times); ``inf`` where a
    left-out point has no weight."""
    options = FitOptions(kernel=kernel, degree=degree, bandwidth_type=bandwidth_type)
    fit, _, empty = predict(x, y, x, setting, options, weights=weights, exclude_self=True,
                            nearest=not kernel.compact)  # fmt: skip
    residuals = np.mean((y - fit) ** 2, axis=1)
    if (empty.any() and kernel.compact) or not np.all(np.isfinite(residuals)):
        return math.inf
    return float(np.average(residuals, weights=weights))


def select(x, y, *, kernel, bandwidth_type, degree, weights=None, progress=None):
    """``(setting (d,), cv score, evaluations)``: bandwidths (``"fixed"``) or numbers of
    neighbours chosen by leave-one-out CV (identical rows merged into one of their total
    weight, left out together: :mod:`attnpool.sums.observation_weights`)."""
    from ..bandwidth.flat_criteria import FlatSettings, response_variance, smoothest_flat, warn_flat
    from ..bandwidth.rules import search_start
    from ..bandwidth.search import SMOOTHED_OUT, constant_response
    from ..sums.observation_weights import merged_rows, sorted_rows

    flat = np.ndim(y) == 1
    x, y, weights = sorted_rows(*merged_rows(x, np.reshape(y, (x.shape[0], -1)), weights))
    total = math.floor(x.shape[0] if weights is None else float(np.sum(weights)))
    if bandwidth_type != "fixed":
        check_neighbours(1, x.shape[1], total)  # at least two points
    if constant_response(y, "cv", "the rule of thumb" if bandwidth_type == "fixed"
                         else "the largest number of neighbours"):  # fmt: skip
        if bandwidth_type == "fixed":
            return search_start(x, kernel=kernel.base or kernel, weights=weights), 0.0, 0
        return np.full(x.shape[1], total - 1), 0.0, 0
    unit = response_unit(y)  # (y ~ 1e±200: squared residuals neither overflow nor vanish)
    y = y[:, 0] / unit if flat else y / unit

    def score(setting):
        return cv_score(x, y, kernel=kernel, setting=setting, bandwidth_type=bandwidth_type,
                        degree=degree, weights=weights)  # fmt: skip

    below_grid = False  # (numbers of neighbours: the nearest is the grid's first)
    if bandwidth_type == "fixed":
        setting, value, tried, below_grid = _select_bandwidth(x, score, kernel, weights,
                                                              progress)  # fmt: skip
    else:
        setting, value, tried = _select_neighbours((total, x.shape[1]), score, progress)

    if bandwidth_type == "fixed":  # (each column at most, and alone, smoothed out)
        half = np.max(x, axis=0) / 2 - np.min(x, axis=0) / 2
        caps = SMOOTHED_OUT * np.where(half > 0, half, 1.0)
        smoothed = caps
    else:  # (numbers of neighbours: at most every other row)
        caps, smoothed = np.full(x.shape[1], total - 1.0), None

    def settled(settings):
        return settings if bandwidth_type == "fixed" else np.round(settings)

    flat_checks = []

    def criterion(settings):
        flat_checks.extend(settings)
        return np.array([score(settled(setting)) for setting in settings])

    flat_settings = FlatSettings(np.asarray(setting, np.float64), criterion, caps, smoothed)
    moved = smoothest_flat("cv", value, tried, response_variance(y, weights), flat_settings,
                           below_grid)  # fmt: skip
    if moved is not None:
        setting, value = settled(moved[0]), moved[1]
        warn_flat("cv", setting, moved[2])
    evaluations = len(tried) + len(flat_checks)
    return setting, float(objective_in_data_units(value, "cv", unit)), evaluations


def _select_bandwidth(x, score, kernel, weights, progress):
    """``(bandwidths, value, values tried, whether below the grid)``: log-bandwidths from the
    base kernel's rule of thumb, the search of the other fits."""
    from ..bandwidth.grid import search_line
    from ..bandwidth.rules import search_start
    from ..bandwidth.search import SearchObjective, host_search

    start = search_start(x, kernel=kernel.base or kernel, weights=weights)
    line = search_line(np.log(start), x, range(x.shape[1]), weights)
    tried: list[float] = []

    def objective(theta):
        tried.append(score(np.exp(theta)))
        return tried[-1]

    search = SearchObjective(objective, smooth=not kernel.compact)
    theta, value, _ = host_search(search, line, progress)
    below_grid = bool(np.all(theta < line.thetas.min(axis=0)))
    return np.exp(theta), value, np.array(tried), below_grid


def _select_neighbours(shape, score, progress):
    m, d = shape  # m: the training points (their total weight)
    cache: dict[tuple, float] = {}

    def evaluate(setting) -> float:
        key = tuple(int(v) for v in setting)
        if key not in cache:
            cache[key] = score(np.array(key))
        return cache[key]

    grid = np.unique(np.round(np.geomspace(1, m - 1, min(GRID_SIZE, m - 1))).astype(int))
    values = [evaluate(np.full(d, k)) for k in grid]
    if progress:
        progress(1, 2)
    if not np.isfinite(values).any():
        raise ValueError(
            f"bandwidth: the cv criterion is undefined for every number of neighbours from "
            f"1 to {m - 1} (repeated values, or a compact kernel that leaves points alone)"
        )
    setting = np.full(d, grid[int(np.argmin(values))])
    step = (m - 1) ** (1.0 / (len(grid) - 1)) if len(grid) > 1 else 1.0
    for _ in range(SWEEPS if d > 1 else 1):  # each column within a grid step of where it is
        before = setting.copy()
        for c in range(d):
            low = max(1, math.floor(setting[c] / step))
            high = min(m - 1, math.ceil(setting[c] * step))
            setting[c] = _integer_minimum(
                lambda k, c=c: evaluate(np.where(np.arange(d) == c, k, setting)), low, high
            )
        if np.array_equal(before, setting):
            break
    if progress:
        progress(2, 2)
    return setting, evaluate(setting), np.array(list(cache.values()))


def _integer_minimum(function, low: int, high: int) -> int:
    """A local minimum of ``function`` over the integers of ``[low, high]``: golden-section
    steps while the bracket is wider than :data:`EXHAUSTIVE`, then every integer left (the
    criterion is rough in k: a golden search alone stops at a nearby local minimum)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = int(low), int(high)
    while b - a > EXHAUSTIVE:
        left = b - round(ratio * (b - a))
        right = a + round(ratio * (b - a))
        if function(left) <= function(right):
            b = right
        else:
            a = left
    return min(range(a, b + 1), key=function)


def check_supported(kernel: _kernels.Kernel, bandwidth_type: str, var_type, method, what: str):
    """Refuse what the pair fits do not serve, naming the argument."""
    if var_type and set(var_type) != {"c"}:
        raise ValueError(
            f"var_type: {what} take continuous columns; received var_type={var_type!r}"
        )
    name = getattr(method, "name", method)
    if name not in PAIR_METHODS:
        raise ValueError(
            f"method: {what} are computed pair by pair ({', '.join(map(repr, PAIR_METHODS))}); "
            f"received {name!r}"
        )
    if kernel.similarity == "dot":
        raise ValueError(f"kernel: {what} take a distance kernel; received 'dot'")


def is_pair_fit(kernel, bandwidth_type) -> bool:
    """Whether an estimator with these parameters fits pair by pair (checked names)."""
    from .._support.validation import check_choice

    check_choice(bandwidth_type, "bandwidth_type", BANDWIDTH_TYPES)
    record = kernel if isinstance(kernel, _kernels.Kernel) else None
    if isinstance(kernel, str):
        record = _kernels.get(kernel)
    return bandwidth_type != "fixed" or (record is not None and record.base is not None)


def refuse(kernel, bandwidth_type: str, what: str) -> None:
    """A ``ValueError`` naming ``what`` if an estimator with these parameters fits pair by
    pair: the features those fits do not have (bands, weight matrices, the local-constant
    fit's marginal effects)."""
    if is_pair_fit(kernel, bandwidth_type):
        raise ValueError(
            f"{what}: not available for fits with kernel={kernel!r} and "
            f"bandwidth_type={bandwidth_type!r} (higher-order kernels and "
            "nearest-neighbour bandwidths give predictions, scores and summaries)"
        )


def _described(bandwidth_type: str, kernel: _kernels.Kernel) -> str:
    if bandwidth_type == "fixed":
        return f"higher-order kernels ({kernel.name!r})"
    return f"nearest-neighbour bandwidths ({bandwidth_type!r})"


def fitted_setting(x, y, bandwidth, options: FitOptions, *, weights=None):
    """``(setting (d,), scores)`` of an estimator's pair fit (``options``' kernel, degree,
    var_type, method and bandwidth_type): bandwidths or numbers of neighbours, given or
    chosen by CV (``scores``: ``{"cv_score_": …}``); ``weights``: observation weights."""
    from .._support.validation import check_bandwidth

    kernel, degree, bandwidth_type = (
        _kernels.get(options.kernel),
        options.degree,
        options.bandwidth_type,
    )
    what = _described(bandwidth_type, kernel)
    check_supported(kernel, bandwidth_type, options.var_type, options.method, what)
    y = y.reshape(y.shape[0], -1)
    if isinstance(bandwidth, str):
        if bandwidth != "cv":
            raise ValueError(
                f"bandwidth: {what} are chosen by 'cv' or given as numbers; received "
                f"{bandwidth!r} (rules of thumb and AICc are for fixed second-order fits)"
            )
        setting, value, _ = select(x, y, kernel=kernel, bandwidth_type=bandwidth_type,
                                   degree=degree, weights=weights)  # fmt: skip
        return setting, {"cv_score_": value}
    if bandwidth_type == "fixed":
        return np.array(check_bandwidth(bandwidth, x.shape[1]), dtype=float), {}
    total = x.shape[0] if weights is None else float(np.sum(weights))
    setting = check_neighbours(bandwidth, x.shape[1], total)
    return setting, {}


def estimator_prediction(x_train, y_train, x, setting, options: FitOptions, *, weights=None,
                         return_slopes=False):  # fmt: skip
    """An estimator's pair-fit predictions (or slopes) at ``x``, shaped like ``y_train``,
    with ``options``' empty policy, as its other fits take it; ``setting``: the
    bandwidths or numbers of neighbours of :func:`fitted_setting`."""
    from ..sums.empty_policy import fills_empty, report_empty

    kernel = _kernels.get(options.kernel)
    y = y_train.reshape(y_train.shape[0], -1)
    nearest = fills_empty(kernel, options.empty)
    fit, slopes, empty_rows = predict(x_train, y, x, setting, options, weights=weights,
                                      nearest=nearest)  # fmt: skip
    report_empty(kernel, options.empty, empty_rows, stacklevel=4)
    if y_train.ndim == 1:
        fit, slopes = fit[:, 0], slopes[..., 0]
    return slopes if return_slopes else fit
