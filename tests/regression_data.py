"""Data for the regression and bandwidth tests: smooth signals in continuous and mixed
columns, with noise."""

import numpy as np


def continuous_data(seed, n=50, d=2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, d))
    y = 2 * np.sin(x[:, 0]) + x[:, -1] + 0.3 * rng.normal(size=n)
    return x, y


def mixed_data(seed, n=60):
    rng = np.random.default_rng(seed)
    x = np.column_stack(
        [rng.uniform(0, 5, n), rng.integers(0, 4, n), rng.integers(0, 3, n)]
    ).astype(float)
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] - x[:, 2] + 0.2 * rng.normal(size=n)
    return x, y
