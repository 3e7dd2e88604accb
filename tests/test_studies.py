"""The simulation studies: their claims hold at a small size, and they are reproducible."""

import numpy as np
import pytest

from attnpool.studies import consistency_study, kernel_study, run_study


def test_consistency_slopes_approach_the_theoretical_rate():
    result = consistency_study(dims=(1,), sizes=(100, 400, 1600, 6400), repeats=2, n_test=500)
    slopes = result.numbers["slopes"][1]
    assert slopes["theory"] == pytest.approx(-0.8)
    assert slopes["rate"] == pytest.approx(-0.8, abs=0.2)
    assert slopes["cv"] == pytest.approx(-0.8, abs=0.25)
    assert "consistency.png" in result.figures


def test_bandwidth_matters_more_than_the_kernel():
    result = kernel_study(quick=True)
    numbers = result.numbers
    assert numbers["across_scales"] > 20 * numbers["across_kernels"]
    # on the common scale every kernel's best bandwidth is about the same
    best = numbers["scales"][np.argmin(numbers["mse"], axis=1)]
    assert best.max() / best.min() < 1.5


def test_studies_are_seeded():
    first, second = (kernel_study(quick=True, seed=3).numbers["mse"] for _ in range(2))
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, kernel_study(quick=True, seed=4).numbers["mse"])


def test_run_study_reports_progress_and_rejects_unknown_names():
    calls = []
    run_study("kernels", quick=True, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    with pytest.raises(ValueError, match="study: expected one of 'consistency', 'kernels'"):
        run_study("bootstrap")
    with pytest.raises(ValueError, match="kernels: 'constant' has no finite variance"):
        kernel_study(kernels=("gaussian", "constant"), quick=True)
