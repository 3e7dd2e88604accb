"""A fitted model's answer at a point does not depend on the other points asked with it:
one row predicted alone equals the same row in a batch, whatever path each batch takes
(the planner may send a few rows to NumPy and thousands to a compiled engine), for
mixed data too — where a categorical kernel's weights depend on the number of levels
in the *training* data, never in the queries."""

from __future__ import annotations

import numpy as np
import pytest

import attnpool


def mixed_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.normal(size=n), rng.integers(0, 4, n), rng.integers(0, 3, n)])
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] - 0.3 * x[:, 2] + rng.normal(size=n) * 0.1
    return x.astype(float), y


ESTIMATORS = [
    attnpool.NadarayaWatson(bandwidth=[0.5, 0.4, 0.3], var_type="cuo"),
    attnpool.LocalLinear(bandwidth=[0.5, 0.4, 0.3], var_type="cuo"),
    attnpool.NadarayaWatson(bandwidth=[0.5, 0.4, 0.3], var_type="cuo", kernel="epanechnikov"),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: repr(e)[:40])
def test_a_row_alone_is_the_row_in_a_batch(estimator):
    x, y = mixed_data()
    fitted = estimator.fit(x, y)
    queries = np.repeat(x[:40], 60, axis=0)  # 2400 rows: a batch the compiled path may take
    batch = fitted.predict(queries)
    for i in (0, 7, 39):
        alone = fitted.predict(x[i : i + 1])
        np.testing.assert_allclose(alone, batch[i * 60 : i * 60 + 1], rtol=1e-9, atol=1e-12)
        assert np.allclose(batch[i * 60 : (i + 1) * 60], batch[i * 60], rtol=1e-12)


def test_the_classifier_and_densities_do_not_depend_on_the_batch():
    x, y = mixed_data(seed=1)
    labels = (y > np.median(y)).astype(int)
    classifier = attnpool.NadarayaWatsonClassifier(bandwidth=[0.5, 0.4, 0.3],
                                                   var_type="cuo").fit(x, labels)  # fmt: skip
    np.testing.assert_allclose(classifier.predict_proba(x[3:4]),
                               classifier.predict_proba(x[:50])[3:4], rtol=1e-9)  # fmt: skip
    density = attnpool.KernelDensity(bandwidth=[0.5, 0.4, 0.3], var_type="cuo").fit(x)
    np.testing.assert_allclose(density.score_samples(x[3:4]),
                               density.score_samples(x[:50])[3:4], rtol=1e-9)  # fmt: skip
