"""scikit-learn's estimator protocol without importing scikit-learn.

``import sklearn`` takes longer than JAX and a whole small fit (it loads SciPy's
statistics), so the estimators do not inherit its bases. :class:`BaseEstimator`,
:class:`RegressorMixin`, :class:`ClassifierMixin`, :func:`validate_data` and
:func:`check_is_fitted` follow scikit-learn's contract — parameters from ``__init__``,
``clone``, ``repr``, ``score``, tags, ``n_features_in_`` and ``feature_names_in_``, its
error messages — and scikit-learn's own estimator checks hold them to it in the tests.
scikit-learn is imported only when it asks for the tags; its ``NotFittedError`` and
``DataConversionWarning`` are raised when it is loaded (code that catches them has
imported it), classes of the same names and bases otherwise.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from typing import TYPE_CHECKING, Any, Self, overload

import numpy as np

from .frames import levels_applied
from .units import power_of_two_above

if TYPE_CHECKING:
    from .hints import ArrayLike

__all__ = [
    "BaseEstimator",
    "ClassifierMixin",
    "MultiOutputRegressor",
    "RegressorMixin",
    "check_is_fitted",
    "check_numeric_targets",
    "coefficient_of_determination",
    "column_or_1d",
    "is_dask",
    "validate_data",
]


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit`` (scikit-learn's, when it is not loaded)."""


class DataConversionWarning(UserWarning):
    """Input data were converted (scikit-learn's, when it is not loaded)."""


def _sklearn_class(name: str, fallback: type) -> type:
    if sys.modules.get("sklearn") is not None:
        from sklearn import exceptions

        return getattr(exceptions, name)
    return fallback


class BaseEstimator:
    """Parameters are the ``__init__`` arguments, stored unchanged (scikit-learn's rules)."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        parameters = inspect.signature(cls.__init__).parameters.values()
        return sorted(p.name for p in parameters if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of this estimator (and, with ``deep``, of estimators among them)."""
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> Self:
        """Set parameters (``name__sub`` for nested estimators); returns ``self``."""
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, separator, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for estimator {self}. "
                    f"Valid parameters are: {self._get_param_names()!r}."
                )
            if separator:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            valid[name].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        defaults = inspect.signature(type(self).__init__).parameters
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params(deep=False).items()
            if repr(value) != repr(defaults[name].default)
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(
            estimator_type=None, target_tags=TargetTags(required=False), input_tags=InputTags()
        )


class RegressorMixin:
    """``score``: the coefficient of determination R², averaged over outputs."""

    def __sklearn_tags__(self) -> Any:
        return _supervised(super().__sklearn_tags__(), "regressor")

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """R² of ``predict(X)`` against ``y`` (1 is a perfect fit; 0 the mean's)."""
        predicted = np.asarray(self.predict(X), dtype=float)
        return coefficient_of_determination(y, predicted, sample_weight)


def coefficient_of_determination(y, predicted, sample_weight=None) -> float:
    """scikit-learn's R², ``1 − SS_res / SS_tot`` of ``predicted`` against ``y`` (each
    ``(n,)`` or ``(n, p)``), averaged over outputs."""
    predicted = np.asarray(predicted, dtype=float)
    y = np.asarray(y, dtype=float).reshape(predicted.shape)
    weights = _sample_weight(sample_weight, y.shape[0])
    y2, p2 = y.reshape(y.shape[0], -1), predicted.reshape(y.shape[0], -1)
    # in a power-of-two unit per output (exact): squares of y ~ 1e±200 stay in range
    unit = power_of_two_above(np.max(np.abs(y2), axis=0, initial=0.0))
    y2, p2 = y2 / unit, p2 / unit
    mean = np.average(y2, axis=0, weights=weights)
    residual = np.average((y2 - p2) ** 2, axis=0, weights=weights)
    spread = np.average((y2 - mean) ** 2, axis=0, weights=weights)
    # a constant target scores 1 when fitted exactly, else 0 (scikit-learn's finite form)
    r2 = np.where(spread > 0, 1 - residual / np.where(spread > 0, spread, 1), 0.0)
    r2 = np.where((spread == 0) & (residual == 0), 1.0, r2)
    return float(np.mean(r2))


class ClassifierMixin:
    """``score``: the mean accuracy."""

    def __sklearn_tags__(self) -> Any:
        return _supervised(super().__sklearn_tags__(), "classifier")

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """The (weighted) fraction of ``X``'s rows whose class ``predict`` gets right."""
        correct = np.asarray(self.predict(X)) == np.asarray(y)
        return float(np.average(correct, weights=_sample_weight(sample_weight, correct.size)))


def _supervised(tags, kind: str):
    """``tags`` of an estimator of ``kind`` ("regressor" or "classifier"), which needs y."""
    from sklearn import utils

    tags.estimator_type = kind
    setattr(tags, f"{kind}_tags", getattr(utils, f"{kind.capitalize()}Tags")())
    tags.target_tags.required = True
    return tags


def _sample_weight(sample_weight, n: int):
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=float)
    if weights.shape != (n,):
        raise ValueError(f"sample_weight: expected shape ({n},); received {weights.shape}")
    return weights


def check_is_fitted(estimator) -> None:
    """Raise ``NotFittedError`` unless ``fit`` has set an attribute ending in ``_``."""
    if not any(k.endswith("_") and not k.startswith("__") for k in vars(estimator)):
        raise _sklearn_class("NotFittedError", NotFittedError)(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' with "
            "appropriate arguments before using this estimator."
        )


@overload
def validate_data(
    estimator: Any,
    X: Any,
    y: None = None,
    *,
    reset: bool = ...,
    multi_output: bool = ...,
    y_numeric: bool = ...,
    dtype: Any = ...,
    requires_y: bool = ...,
) -> np.ndarray: ...


@overload
def validate_data(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    reset: bool = ...,
    multi_output: bool = ...,
    y_numeric: bool = ...,
    dtype: Any = ...,
    requires_y: bool = ...,
) -> tuple[np.ndarray, np.ndarray]: ...


def validate_data(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    reset: bool = True,
    multi_output: bool = False,
    y_numeric: bool = False,
    dtype: Any = np.float64,
    requires_y: bool = True,
) -> Any:
    """``X`` (and ``y``) as arrays, checked as scikit-learn checks them.

    ``X`` becomes a finite ``(n, d)`` array of ``dtype`` with ``n ≥ 1`` and ``d ≥ 1``;
    ``reset`` records ``n_features_in_`` and ``feature_names_in_`` (a DataFrame's string
    column names), otherwise they are checked against the fitted ones. ``y`` (when
    given) becomes an ``(n,)`` array, ``(n, p)`` with ``multi_output``; ``y_numeric``
    converts object arrays to float64; float targets must be finite.
    """
    name = type(estimator).__name__
    _check_feature_names(estimator, X, reset)
    X = levels_applied(estimator, X, reset)
    X = _as_matrix(X, name, dtype)
    if reset:
        estimator.n_features_in_ = X.shape[1]
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {name} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    if y is None:
        if reset and requires_y:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        return X
    y = _as_targets(y, multi_output, y_numeric)
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{X.shape[0]}, {y.shape[0]}]"
        )
    return X, y


def _as_matrix(X, name: str, dtype) -> np.ndarray:
    if _is_sparse(X):
        raise TypeError(
            "Sparse data was passed for X, but dense data is required. Use '.toarray()' to "
            "convert to a dense numpy array."
        )
    array = np.asarray(X)
    if np.iscomplexobj(array):
        raise ValueError(f"Complex data not supported\n{array}\n")
    if array.dtype.kind in "OUS":
        array = array.astype(dtype)  # text raises numpy's own "could not convert" error
    if array.ndim != 2:
        kind = "scalar" if array.ndim == 0 else f"{array.ndim}D"
        if array.ndim > 2:
            raise ValueError(f"Found array with dim {array.ndim}. {name} expected <= 2.")
        raise ValueError(
            f"Expected 2D array, got {kind} array instead:\narray={array}.\nReshape your data "
            "either using array.reshape(-1, 1) if your data has a single feature or "
            "array.reshape(1, -1) if it contains a single sample."
        )
    n, d = array.shape
    if n < 1 or d < 1:
        counted = "sample" if n < 1 else "feature"
        raise ValueError(
            f"Found array with 0 {counted}(s) (shape={array.shape}) while a minimum of 1 is "
            f"required by {name}."
        )
    array = np.asarray(array, dtype=dtype)
    _check_finite(array, "X")
    return array


def _as_targets(y, multi_output: bool, numeric: bool) -> np.ndarray:
    y = np.asarray(y)
    if numeric and y.dtype.kind == "O":
        y = y.astype(np.float64)
    if multi_output:
        if y.ndim not in (1, 2):
            raise ValueError(f"y: expected shape (n,) or (n, n_outputs); received {y.shape}")
    else:
        y = column_or_1d(y)
    if y.dtype.kind in "fc":
        _check_finite(y, "y")
    return y


def column_or_1d(y) -> np.ndarray:
    """``y`` as ``(n,)``; a column vector is raveled with a ``DataConversionWarning``."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            _sklearn_class("DataConversionWarning", DataConversionWarning)(
                "A column-vector y was passed when a 1d array was expected. Please change the "
                "shape of y to (n_samples, ), for example using ravel()."
            ),
            stacklevel=3,
        )
        return y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape} instead.")
    return y


def _check_finite(array: np.ndarray, label: str) -> None:
    if np.isfinite(array).all():
        return
    if np.isnan(array).any():
        raise ValueError(f"Input {label} contains NaN.")
    raise ValueError(f"Input {label} contains infinity or a value too large for {array.dtype!r}.")


def _is_sparse(X) -> bool:
    return type(X).__module__.startswith("scipy.sparse") or hasattr(X, "tocsr")


def _feature_names(X):
    """A DataFrame's column names as an object array when all are strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "shape"):
        return None
    names = np.asarray(list(columns), dtype=object)
    kinds = {type(n).__name__ for n in names}
    if kinds == {"str"}:
        return names
    if len(kinds) > 1 and "str" in kinds:
        raise TypeError(
            "Feature names are only supported if all input features have string names, but "
            f"your input has {sorted(kinds)} as feature name / column name types. Convert "
            "them all to strings, e.g. X.columns = X.columns.astype(str)."
        )
    return None


def _check_feature_names(estimator, X, reset: bool) -> None:
    names = _feature_names(X)
    name = type(estimator).__name__
    if reset:
        if names is None:
            estimator.__dict__.pop("feature_names_in_", None)
        else:
            estimator.feature_names_in_ = names
        return
    fitted = getattr(estimator, "feature_names_in_", None)
    if names is None and fitted is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=3)  # fmt: skip
        return
    if names is None:
        warnings.warn(
            f"X does not have valid feature names, but {name} was fitted with feature names",
            UserWarning,
            stacklevel=3,
        )
        return
    if len(names) == len(fitted) and np.all(names == fitted):
        return
    message = "The feature names should match those that were passed during fit.\n"
    unseen, missing = sorted(set(names) - set(fitted)), sorted(set(fitted) - set(names))
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    if unseen:
        message += "Feature names unseen at fit time:\n" + _listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + _listed(missing)
    raise ValueError(message)


def _listed(names, most: int = 5) -> str:
    lines = [f"- {n}\n" for n in names[:most]]
    return "".join(lines) + ("- ...\n" if len(names) > most else "")


def check_numeric_targets(y: Any) -> None:
    """A ``ValueError`` unless ``y`` holds numbers (``validate_data``'s ``y_numeric``
    converts object arrays, not text ones)."""
    kind = np.asarray(y).dtype.kind
    if kind not in "biuf":
        raise ValueError(
            f"y: expected numeric targets; received an array of dtype {np.asarray(y).dtype}"
            " (for class labels use NadarayaWatsonClassifier)"
        )


def is_dask(*arrays: Any) -> bool:
    """Whether any of ``arrays`` is a Dask collection (False without importing Dask)."""
    if sys.modules.get("dask") is None:  # a Dask array cannot exist without dask imported
        return False
    from dask.base import is_dask_collection

    return any(is_dask_collection(a) for a in arrays)


class MultiOutputRegressor(RegressorMixin, BaseEstimator):
    """Regressors whose ``y`` may be ``(n,)`` or ``(n, p)``."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags
