"""The ``method=`` argument's names and records, and the exact engines' size rule:
what the public functions check before anything is traced (no JAX here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..sums import thresholds

if TYPE_CHECKING:
    from ..kernels import Kernel


__all__ = [
    "DENSE_MAX_PAIRS",
    "HOST_METHODS",
    "LEAVE_ONE_OUT_METHODS",
    "LOCAL_FIT_METHODS",
    "METHODS",
    "PAIR_METHODS",
    "TRAITS",
    "Binned",
    "TopK",
    "Traits",
    "Tree",
    "check_applicable",
    "exact_engine",
    "fit_refusal",
    "method_module",
    "refusal",
    "resolve",
    "search_refusal",
]


@dataclass(frozen=True)
class Traits:
    """What a pooling method declares about itself.

    ``exact``: within the rounding of the sum over every pair in the inputs' precision
    (``fgt``'s truncation, 1e-14 of each query's weight, counts; ``fused`` does not:
    its softmax runs in float32 even on float64 inputs); ``traceable``: runs inside
    ``jit``/``grad``/``vmap`` (else on concrete arrays, on the host); ``weights``: forms
    the weight matrix; ``accuracy``: its guarantee, in words; ``search``: the
    ``pooling=`` an estimator's CV search takes with this method — its own
    leave-one-out sums, or ``"auto"`` (which chooses, and takes ``fgt``'s and
    ``native``'s sums where they are the fastest exact ones); ``leave_one_out``: how it
    sums each point over the others — ``"traced"`` inside the compiled criterion (own
    pairs masked, or taken away as binned), ``"host"`` by its backend's sums of a
    leave-one-out problem (:mod:`attnpool.methods.backends`, as a registered backend's),
    ``""`` not at all (a search asked for it is an error naming the methods that
    can); ``fits``: runs local fits of any degree and column type (the others pool
    local-constant fits of continuous columns); ``pairs``: serves what is summed pair by
    pair (a higher-order kernel's signed weights, bandwidths by numbers of neighbours).
    Which kernels and dimensions it serves, each method's module says
    (``refusal(kernel, d)``; ``fit_refusal(model)`` and ``search_refusal(model,
    criterion)`` where it narrows its fits or its own search further).
    """

    exact: bool
    traceable: bool
    weights: bool
    accuracy: str
    search: str = "auto"
    leave_one_out: str = ""
    fits: bool = False
    pairs: bool = False


#: Every method but ``auto``, and what it declares.
TRAITS = {
    "dense": Traits(True, True, True, "exact", "dense", "traced", fits=True, pairs=True),
    "stream": Traits(True, True, True, "exact", "stream", "traced", fits=True, pairs=True),
    "fused": Traits(
        False,
        True,
        False,
        "float32 logits whatever the inputs' precision (jax.nn.dot_product_attention's "
        "softmax): weights within ~eps32·(extent/h)² of the exact ones",
    ),
    "pallas": Traits(True, True, False, "exact", "pallas", "traced", fits=True),
    "sparse": Traits(True, False, False, "exact", "sparse", "host"),
    "fgt": Traits(
        True, False, False, "truncation within 1e-14 of each query's weight", "auto", "host"
    ),
    "native": Traits(True, False, False, "exact", "auto", "host"),
    "binned": Traits(False, False, False, "within tolerance × range(values)", "binned", "traced"),
    "topk": Traits(False, False, False, "left-out weight within tolerance"),
    "tree": Traits(False, False, False, "weight sum within rtol·s + atol"),
}
#: Every method name ``method=`` accepts.
METHODS = ("auto", *TRAITS)
#: Methods with leave-one-out sums of their own: what a CV search's ``pooling=`` names.
LEAVE_ONE_OUT_METHODS = tuple(name for name, traits in TRAITS.items() if traits.leave_one_out)
#: Methods that run on concrete arrays (NumPy, SciPy), not inside ``jit``/``grad``/``vmap``.
HOST_METHODS = frozenset(name for name, traits in TRAITS.items() if not traits.traceable)
#: Methods every local fit (any degree, any column type) runs on: the exact engines
#: (``pallas``: continuous columns).
LOCAL_FIT_METHODS = ("auto", *(name for name, traits in TRAITS.items() if traits.fits))
#: Methods of what is summed pair by pair (higher-order kernels, neighbours' bandwidths).
PAIR_METHODS = ("auto", *(name for name, traits in TRAITS.items() if traits.pairs))
#: The built-in kernels whose binning error falls as (Δ/h)²: the bandwidth search bins
#: these (the boxcar's jump and a kernel of your own are binned where asked for, each
#: row's error bounded as every kernel's is).
BINNED_SMOOTH_KERNELS = frozenset(
    ["gaussian", "laplacian", "triangular", "epanechnikov", "tricube", "cosine", "biweight",
     "triweight"]
)  # fmt: skip
#: Query–key pairs up to which ``auto`` pools densely (the planner's).
DENSE_MAX_PAIRS = thresholds.DENSE_MAX_PAIRS


def exact_engine(pairs: int) -> str:
    """The exact engine for ``pairs`` query–key pairs (times the numbers each pair holds):
    ``"dense"`` — one block, the matrix formed — up to the planner's
    :data:`~attnpool.sums.thresholds.DENSE_MAX_PAIRS`, else ``"stream"``. Every path that pools
    exactly asks here."""
    return "dense" if pairs <= thresholds.DENSE_MAX_PAIRS else "stream"


def check_applicable(name: str, kernel: Kernel, d: int, *, traced: bool, weights: bool) -> None:
    """A clear error when ``name`` cannot pool this kernel, dimension or input: from
    what the method declares (:data:`attnpool.methods.options.TRAITS`) and its module's
    ``refusal(kernel, d)``."""
    traits = TRAITS[name]
    if weights and not traits.weights:
        raise ValueError(
            f"method: {name!r} does not form the weight matrix; use method='dense' "
            "(or 'auto') with return_weights=True"
        )
    if traced and not traits.traceable:
        raise ValueError(
            f"method: {name!r} needs concrete arrays; inside jit, grad or vmap use "
            "'dense', 'stream' or 'fused'"
        )
    reason = refusal(name, kernel, d)
    if reason:
        raise ValueError(f"method: {reason}")


def method_module(name: str) -> Any:
    """The module of the method ``name`` (``attnpool.methods.<name>``): its
    ``refusal(kernel, d)``."""
    import importlib

    return importlib.import_module(f".{name}", __package__)


def refusal(name: str, kernel: Kernel, d: int) -> str | None:
    """Why the method ``name`` cannot pool ``kernel`` in ``d`` dimensions, or None."""
    says = getattr(method_module(name), "refusal", None)
    return says(kernel, d) if says else None


def fit_refusal(name: str, model: Any) -> str | None:
    """Why the method ``name`` cannot compute the local fit ``model`` (a
    :class:`~attnpool.sums.local_model.LocalModel`: its degree,
    column types and kernel), or None: a method without :attr:`Traits.fits` pools
    local-constant fits of continuous columns; one with it, what its module's
    ``fit_refusal(model)`` leaves (every fit, where it has none)."""
    if not TRAITS[name].fits:
        if model.degree == 0 and set(model.var_type) == {"c"}:
            return None
        return (
            f"{name!r} pools local-constant fits of continuous columns; received "
            f"degree={model.degree}, var_type={model.var_type!r}; accepted here: "
            f"{', '.join(map(repr, LOCAL_FIT_METHODS))}"
        )
    says = getattr(method_module(name), "fit_refusal", None)
    return says(model) if says else None


def search_refusal(name: str, model: Any, criterion: str) -> str | None:
    """Why a bandwidth search by ``criterion`` (``"cv"``, ``"aicc"``) of the fit
    ``model`` cannot run on the leave-one-out sums of ``name``
    (:data:`LEAVE_ONE_OUT_METHODS`; another name, such as the planner's ``"compiled"``,
    is no method's), or None: its module's ``search_refusal``."""
    if name not in TRAITS:
        return None
    says = getattr(method_module(name), "search_refusal", None)
    return says(model, criterion) if says else None


@dataclass(frozen=True)
class Binned:
    """Binned pooling (``d ≤ 2``): linear binning, FFT convolution, interpolation.

    Every row is within ``tolerance × range(values)`` of the exact result: a bound on
    binning's error is computed for each row, and rows it cannot settle are pooled
    exactly. ``grid_size``: nodes per dimension (int or one per dimension); by default
    chosen so that the bound settles rows on evenly spread keys. The Gaussian's binning
    takes its own second-order error away and bounds the third-order rest, so it needs
    few nodes (6.6 per bandwidth at 1e-3 in one dimension, 8.7 in two); queries on a
    regular grid (a plotting grid) are summed from each key's moments about its
    nearest node, to the order the tolerance needs, on a grid no finer than theirs.

    Any radial, non-negative kernel of the Euclidean distance is binned: the built-in
    ones and kernels of your own (:meth:`attnpool.kernels.Kernel.from_function`). The
    bound is computed from the kernel's profile sampled sixteen times finer than the
    grid, so a feature of your kernel narrower than that is not seen. A jump (the
    boxcar's edge) makes binning's error first order: rows with keys near their support's
    edge are pooled exactly, so the boxcar gains least.

    Parameters
    ----------
    grid_size : int or tuple of int, optional
        Nodes per dimension.
    tolerance : float
        The bound on each row's error, relative to the values' range, in ``(0, 1)``.

    References
    ----------
    Wand, M. P. (1994). Fast computation of multivariate kernel estimators. *Journal of
    Computational and Graphical Statistics* 3(4), 433–445.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.attention_pool([2.0], data.x_train, data.y_train, bandwidth=0.5,
    ...                         method=attnpool.Binned(tolerance=1e-4)).round(3)
    array([3.576])
    """

    grid_size: int | tuple[int, ...] | None = None
    tolerance: float = 1e-3
    name = "binned"


@dataclass(frozen=True)
class TopK:
    """Each query pools its ``k`` nearest keys; a query whose left-out weight
    could exceed ``tolerance`` of its total (see :mod:`attnpool.methods.topk`)
    is an error. ``tolerance=None`` skips the check.

    Parameters
    ----------
    k : int
        Keys per query.
    tolerance : float or None
        The largest share of a query's weight that may be left out.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.attention_pool([2.0], data.x_train, data.y_train, bandwidth=0.1,
    ...                         method=attnpool.TopK(k=20)).round(3)
    array([3.886])

    References
    ----------
    Johnson, J., Douze, M. & Jégou, H. (2021). Billion-scale similarity search with
    GPUs. *IEEE Transactions on Big Data* 7(3), 535–547 (k-nearest-key attention).
    """

    k: int = 64
    tolerance: float | None = 1e-3
    name = "topk"


@dataclass(frozen=True)
class Tree:
    """Kernel sums by a k-d tree of the keys, each query's weight sum within
    ``rtol · s + atol`` of the exact one (scikit-learn's ``KernelDensity(atol, rtol)``): a
    box of keys whose weights cannot differ by more than its share of that is taken at
    their midpoint (:mod:`attnpool.methods.tree`). A pooled value is then within
    ``rtol / (1 − rtol) · range(values)`` (``atol = 0``); a density within
    ``atol + rtol · f`` (``atol`` in density units). Any dimension; kernels that never grow
    with the distance.

    Parameters
    ----------
    rtol : float
        Relative tolerance, in ``[0, 1)``.
    atol : float
        Absolute tolerance (densities: in density units; pooling: of the weight sum).
    leaf_size : int
        Keys per leaf of the tree.

    References
    ----------
    Gray, A. G. & Moore, A. W. (2003). Nonparametric density estimation: toward
    computational tractability. *SIAM International Conference on Data Mining*.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.attention_pool([2.0], data.x_train, data.y_train, bandwidth=0.5,
    ...                         method=attnpool.Tree(rtol=1e-4)).round(3)
    array([3.576])
    """

    rtol: float = 1e-3
    atol: float = 0.0
    leaf_size: int = 32
    name = "tree"


def resolve(method: str | Binned | TopK | Tree) -> tuple[str, Binned | TopK | Tree | None]:
    """``(name, options)`` of a ``method`` argument, or a ``ValueError`` naming what is accepted."""
    if isinstance(method, Binned | TopK | Tree):
        _check_options(method)
        return method.name, method
    if isinstance(method, str) and method in METHODS:
        defaults: dict[str, Binned | TopK | Tree] = {
            "binned": Binned(), "topk": TopK(), "tree": Tree()
        }  # fmt: skip
        return method, defaults.get(method)
    raise ValueError(
        f"method: expected one of {', '.join(map(repr, METHODS))} or a Binned/TopK/Tree "
        f"record; received {method!r}"
    )


def _check_options(options: Any) -> None:
    if isinstance(options, Tree):
        _check_tree(options)
        return
    if isinstance(options, TopK) and not (
        isinstance(options.k, int | np.integer) and options.k > 0
    ):
        raise ValueError(f"TopK.k: expected a positive integer; received {options.k!r}")
    optional = isinstance(options, TopK)  # TopK(tolerance=None) skips its check
    if not (optional and options.tolerance is None) and not (
        isinstance(options.tolerance, float | int) and 0 < options.tolerance < 1
    ):
        raise ValueError(
            f"{type(options).__name__}.tolerance: expected a number in (0, 1); "
            f"received {options.tolerance!r}"
        )
    grid = getattr(options, "grid_size", None)
    if grid is not None and not np.all(np.asarray(grid) >= 4):
        raise ValueError(f"Binned.grid_size: expected at least 4 nodes; received {grid!r}")


def _check_tree(options: Tree) -> None:
    if not (isinstance(options.rtol, float | int) and 0 <= options.rtol < 1):
        raise ValueError(f"Tree.rtol: expected a number in [0, 1); received {options.rtol!r}")
    if not (isinstance(options.atol, float | int) and options.atol >= 0):
        raise ValueError(f"Tree.atol: expected a non-negative number; received {options.atol!r}")
    if options.rtol == 0 and options.atol == 0:
        raise ValueError("Tree: expected rtol > 0 or atol > 0; received both 0 (use 'auto')")
    if not (isinstance(options.leaf_size, int | np.integer) and options.leaf_size > 0):
        raise ValueError(
            f"Tree.leaf_size: expected a positive integer; received {options.leaf_size!r}"
        )
