"""scikit-learn's own estimator checks, for attnpool's estimators."""

import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks


def scikit_learn_checks(estimators, replaced=()):
    """``parametrize_with_checks`` without its warning that the estimators do not inherit
    ``sklearn.base.BaseEstimator``: they implement its protocol on purpose (importing
    scikit-learn costs more than a small fit), and these checks hold them to it.

    ``replaced``: ``(estimator class name, check name)`` pairs left to a test of ours that
    holds the same property on data where it is defined (each names that test)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Estimator .* does not inherit from", category=UserWarning
        )
        mark = parametrize_with_checks(estimators)
    names, cases = mark.mark.args
    ids = mark.mark.kwargs["ids"]
    kept = [
        (estimator, check)
        for estimator, check in cases
        if (type(estimator).__name__, check.func.__name__) not in replaced
    ]
    return pytest.mark.parametrize(names, kept, ids=ids)
