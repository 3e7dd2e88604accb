"""Backends: ways to compute a :class:`~attnpool.sums.problem.SumProblem`, one module each.

A backend declares what it serves (:class:`Serves`) and implements one function,
``log_sums(problem) -> LogSums``. Registered under a name (:func:`register_backend`),
it is what ``method=`` (pooling, densities) or ``pooling=`` (bandwidth searches,
confidence bands) selects; the front ends build the problem, check it against the
declaration, and finish the answer the same way for every backend
(:mod:`attnpool.sums.layer`): rows a backend leaves unsettled are summed again exactly,
a row with no weight gets the nearest-key limit, and the empty policy decides the rest.

:func:`exact_log_sums` is the reference every answer is finished with: every pair in
NumPy float64, each row about its largest log weight.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, runtime_checkable

from ..kernels import Kernel
from .exact_pairs import exact_log_sums
from .problem import LogSums, SumProblem

__all__ = [
    "NUMPY_PAIRS",
    "Backend",
    "NumpyPairs",
    "Serves",
    "backend_names",
    "exact_log_sums",
    "get_backend",
    "register_backend",
    "unregister_backend",
]


@dataclasses.dataclass(frozen=True)
class Serves:
    """What a backend computes; the front ends refuse the rest, naming the argument.

    Attributes
    ----------
    kernels : tuple of str, optional
        The kernels' names it takes (``None``: every non-negative distance kernel).
    max_columns : int, optional
        The most columns ``d`` (``None``: any).
    weights : bool
        Observation weights.
    leave_one_out : bool
        Rows that leave a key out (bandwidth searches, bands' residuals).
    powers : tuple of int
        The powers ``r`` of ``K^r`` it sums (2: a band's variance).
    var_types : str
        The column types it takes: ``"c"`` continuous, ``"o"``/``"u"`` ordered and
        unordered categorical columns.
    degrees : tuple of int
        The moments it sums: 0 weights and values, 1 local linear's moments.
    bandwidth_by : tuple of str
        Where a pair's bandwidth may come from (``SumProblem.bandwidth_by``):
        ``"fixed"`` (one per column), ``"query"``, ``"key"``.
    signed : bool
        Higher-order kernels, whose weights take either sign.

    Examples
    --------
    >>> import attnpool
    >>> attnpool.Serves(kernels=("gaussian",), weights=False).leave_one_out
    True

    References
    ----------
    scikit-learn's ``KernelDensity(algorithm=…)`` and KeOps' backends: Charlier, B.,
    Feydy, J., Glaunès, J. A., Collin, F.-D. & Durif, G. (2021). Kernel operations on the
    GPU, with autodiff, without memory overflows. *JMLR* 22(74), 1–6.
    """

    kernels: tuple[str, ...] | None = None
    max_columns: int | None = None
    weights: bool = True
    leave_one_out: bool = True
    powers: tuple[int, ...] = (1, 2)
    var_types: str = "c"
    degrees: tuple[int, ...] = (0,)
    bandwidth_by: tuple[str, ...] = ("fixed",)
    signed: bool = False


@runtime_checkable
class Backend(Protocol):
    """A way to compute kernel sums: a ``name``, what it ``serves``, and ``log_sums``.

    A protocol: any object with these attributes is a backend.

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is not instantiated; implement it with a class of your own.

    Attributes
    ----------
    name : str
        What ``method=`` / ``pooling=`` select it by.
    serves : Serves
        What it computes; the front ends refuse the rest.
    log_sums : callable ``(SumProblem) -> LogSums``
        The sums of each query, rows of no weight included (shift finite, sums 0).

    Examples
    --------
    A brute-force backend (every pair, as :func:`attnpool.sums.backends.exact_log_sums`):

    >>> import numpy as np, attnpool
    >>> from attnpool.sums.backends import exact_log_sums
    >>> class Brute:
    ...     name = "brute"
    ...     serves = attnpool.Serves()
    ...     def log_sums(self, problem):
    ...         return exact_log_sums(problem)
    >>> attnpool.register_backend(Brute())
    >>> attnpool.attention_pool([0.5], [0.0, 1.0], [1.0, 3.0], method="brute")
    array([2.])
    >>> attnpool.unregister_backend("brute")

    References
    ----------
    Charlier, B., Feydy, J., Glaunès, J. A., Collin, F.-D. & Durif, G. (2021). Kernel
    operations on the GPU, with autodiff, without memory overflows. *JMLR* 22(74), 1–6.
    """

    @property
    def name(self) -> str:
        """What ``method=`` / ``pooling=`` select it by (an attribute will do)."""
        ...

    @property
    def serves(self) -> Serves:
        """What it computes (an attribute will do)."""
        ...

    def log_sums(self, problem: SumProblem) -> LogSums:
        """The sums of ``problem``, rows of no weight included (shift finite, sums 0)."""
        ...


_REGISTRY: dict[str, Backend] = {}


def register_backend(backend: Backend, *, replace: bool = False) -> None:
    """Make ``backend`` selectable by its name (``method=``, ``pooling=``).

    Parameters
    ----------
    backend : Backend
        An object with ``name`` (str), ``serves`` (:class:`Serves`) and ``log_sums``.
    replace : bool
        Replace a backend registered under the same name.

    Returns
    -------
    None

    Examples
    --------
    >>> import attnpool
    >>> from attnpool.sums.backends import exact_log_sums
    >>> class Pairs:
    ...     name, serves = "pairs", attnpool.Serves()
    ...     def log_sums(self, problem):
    ...         return exact_log_sums(problem)
    >>> attnpool.register_backend(Pairs())
    >>> attnpool.kernel_density([0.0], [0.0], method="pairs").round(4)    # φ(0)
    array([0.3989])
    >>> attnpool.unregister_backend("pairs")

    References
    ----------
    scikit-learn's ``KernelDensity(algorithm=…)``, the choice of a way to sum.
    """
    from ..methods.options import METHODS

    if not isinstance(backend, Backend) or not isinstance(backend.serves, Serves):
        raise TypeError(
            "backend: expected an object with name (str), serves (attnpool.Serves) and "
            f"log_sums(problem); received {backend!r}"
        )
    name = backend.name
    if not isinstance(name, str) or not name or name in METHODS:
        raise ValueError(
            f"backend.name: expected a new name, not one of the built-in methods "
            f"{', '.join(map(repr, METHODS))}; received {name!r}"
        )
    if name in _REGISTRY and not replace:
        raise ValueError(
            f"backend.name: {name!r} is registered already; pass replace=True to replace it"
        )
    _REGISTRY[name] = backend


def unregister_backend(name: str) -> None:
    """Forget the backend registered as ``name``.

    Parameters
    ----------
    name : str

    Returns
    -------
    None

    Examples
    --------
    See :func:`register_backend`.

    >>> import attnpool
    >>> "pairs" in attnpool.backend_names()
    False

    References
    ----------
    scikit-learn's ``KernelDensity(algorithm=…)``, the choice of a way to sum.
    """
    if _REGISTRY.pop(name, None) is None:
        raise ValueError(f"name: no backend is registered as {name!r}")


def backend_names() -> tuple[str, ...]:
    """The names of the registered backends.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> import attnpool
    >>> "pairs" in attnpool.backend_names()     # registered by name, forgotten by name
    False

    References
    ----------
    scikit-learn's ``KernelDensity(algorithm=…)``, the choice of a way to sum.
    """
    return tuple(_REGISTRY)


def get_backend(name: object) -> Backend | None:
    """The backend registered as ``name``, or None (a built-in method, or no name)."""
    return _REGISTRY.get(name) if isinstance(name, str) else None


def refusal(backend: Backend, problem: SumProblem, kernel: Kernel) -> str | None:
    """Why ``backend`` cannot compute ``problem`` (as its declaration says), or None."""
    serves, name = backend.serves, backend.name
    d = problem.keys.shape[1]
    if serves.kernels is not None and kernel.name not in serves.kernels:
        return f"{name!r} takes the kernels {list(serves.kernels)}; received {kernel.name!r}"
    if serves.max_columns is not None and d > serves.max_columns:
        return f"{name!r} takes at most {serves.max_columns} columns; received {d}"
    if problem.weights is not None and not serves.weights:
        return f"{name!r} takes no observation weights"
    if problem.left_out is not None and not serves.leave_one_out:
        return f"{name!r} has no leave-one-out sums"
    if problem.power not in serves.powers:
        return f"{name!r} sums K^r for r in {list(serves.powers)}; K^{problem.power} is needed"
    kinds = set(problem.var_type or "c")
    if not kinds <= set(serves.var_types):
        return (
            f"{name!r} takes the column types {serves.var_types!r}; received "
            f"var_type={problem.var_type!r}"
        )
    if problem.degree not in serves.degrees:
        degrees = list(serves.degrees)
        return f"{name!r} sums the moments of degrees {degrees}; received {problem.degree}"
    if problem.bandwidth_by not in serves.bandwidth_by:
        return (
            f"{name!r} takes bandwidths {' or '.join(map(repr, serves.bandwidth_by))}; "
            f"received bandwidths by {problem.bandwidth_by!r}"
        )
    if problem.signed and not serves.signed:
        return f"{name!r} takes non-negative kernels; received {kernel.name!r}"
    return None


class NumpyPairs:
    """Every pair in NumPy float64 (:func:`exact_log_sums`): the backend of small
    problems and of every exact re-sum they need, serving every problem a kernel NumPy
    evaluates."""

    name = "numpy"
    serves = Serves(var_types="cou", degrees=(0, 1), bandwidth_by=("fixed", "query", "key"),
                    signed=True)  # fmt: skip

    @staticmethod
    def log_sums(problem: SumProblem) -> LogSums:
        return exact_log_sums(problem)


#: The NumPy pairs backend.
NUMPY_PAIRS = NumpyPairs()
