"""A local fit of concrete arrays by the engine its method names or the planner chooses.

The one place a local fit's ``method`` (:data:`attnpool.methods.options.LOCAL_FIT_METHODS`)
becomes a route: small fits that ``"auto"`` or ``"dense"`` may take go to the NumPy
engine (:mod:`.numpy_engine`: no program to build, no JAX), the others to the compiled
fits (:func:`.local_fits.local_fit`) — ``"stream"`` in key blocks, ``"pallas"`` on the
tiled kernel, ``"auto"`` and ``"dense"`` by the planner's compiled fits' table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._support.validation import numpy_dtype
from ..sums.local_model import LocalModel
from . import numpy_engine

#: The methods under which a small fit may run on the NumPy engine (the exact sum it
#: computes is the dense one).
NUMPY_SERVES = ("auto", "dense")
#: The planner's fit backends (:mod:`attnpool.sums.plan`) that are the NumPy engine
#: (``"native"``: local linear's moments on the compiled loop, which the engine calls).
HOST_FITS = ("numpy", "native")


def planned_local_fit(
    x: Any, y: Any, q: Any, h: Any, model: LocalModel, *, method: str, nearest: bool,
    block_size: int | None = None, weights: Any = None,
) -> tuple[Any, Any, Any]:  # fmt: skip
    """``(fit (k, p), slopes (k, d, p), empty (k,))`` of the local fit of ``model`` at the
    queries ``q (k, d)`` from the rows ``x (n, d)``, ``y (n, p)`` with bandwidths
    ``h (d,)``, in the inputs' floating type (float64 for integers): by the NumPy engine
    where ``method`` allows it and the planner's fit table gives it the fit, else by the
    compiled fits (the engine ``method`` names; ``"stream"`` in blocks of
    ``block_size`` keys, by default the stream method's). ``method`` may also be a
    backend the planner's fit table chose already (:data:`HOST_FITS`: the NumPy engine,
    or a compiled fit's engine). ``weights (n,)``: positive observation weights;
    ``nearest``: empty rows take the nearest keys' responses."""
    weighted, dtype = weights is not None, numpy_dtype(x, y, q)
    if method in HOST_FITS or (
        method in NUMPY_SERVES
        and block_size is None
        and numpy_engine.serves(model, q.shape[0], x.shape[0], y.shape[1], weighted=weighted)
    ):
        # computed in float64, returned in the inputs' type
        fit, slopes, empty_rows = numpy_engine.local_fit(
            x, y, q, h, model, nearest=nearest, weights=weights
        )
        return fit.astype(dtype, copy=False), slopes.astype(dtype, copy=False), empty_rows
    from .._support.interop import precision_scope
    from .local_fits import FitRequest, compiled_settings, local_fit

    engine, block_size = compiled_settings(method, block_size)
    request = FitRequest(model, nearest=nearest, block_size=block_size, engine=engine)
    with precision_scope(dtype):
        fit, slopes, _, empty_rows = local_fit(
            *(np.asarray(a, dtype) for a in (x, y, q, h)),
            request,
            weights=None if weights is None else np.asarray(weights, dtype),
        )
        return np.asarray(fit), np.asarray(slopes), np.asarray(empty_rows)
