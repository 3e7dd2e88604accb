"""Each column's least and largest entry, column by column, against NumPy's reduction
along the rows: equal for narrow and wide arrays, every dtype, NaN and infinities."""

from __future__ import annotations

import numpy as np
import pytest

from attnpool._units import column_extremes, midrange


@pytest.mark.parametrize("shape", [(1, 1), (1000, 2), (7, 16), (50, 17), (300, 40)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_column_extremes_equal_numpys(shape, dtype):
    rng = np.random.default_rng(shape[1])
    a = (rng.normal(size=shape) * 1e3).astype(dtype)
    low, high = column_extremes(a)
    np.testing.assert_array_equal(low, a.min(axis=0))
    np.testing.assert_array_equal(high, a.max(axis=0))
    assert low.dtype == a.dtype and high.dtype == a.dtype
    np.testing.assert_array_equal(midrange(a), a.min(axis=0) / 2 + a.max(axis=0) / 2)


def test_column_extremes_keep_nan_and_infinities():
    a = np.array([[1.0, np.nan, 0.0], [2.0, 3.0, np.inf], [-np.inf, 1.0, 5.0]])
    low, high = column_extremes(a)
    np.testing.assert_array_equal(low, a.min(axis=0))
    np.testing.assert_array_equal(high, a.max(axis=0))
    np.testing.assert_array_equal(column_extremes(a[:, 0].copy())[0], a[:, 0].min())
