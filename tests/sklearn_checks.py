"""scikit-learn's own estimator checks, for attnpool's estimators."""

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks


def scikit_learn_checks(estimators):
    """``parametrize_with_checks`` without its warning that the estimators do not inherit
    ``sklearn.base.BaseEstimator``: they implement its protocol on purpose (importing
    scikit-learn costs more than a small fit), and these checks hold them to it."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Estimator .* does not inherit from", category=UserWarning
        )
        return parametrize_with_checks(estimators)
