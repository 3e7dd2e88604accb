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


def test_remembered_extremes_are_found_once_per_array_and_view():
    from attnpool._units import remember_extremes, remembering, remembering_extremes

    rng = np.random.default_rng(4)
    a = rng.normal(size=(1000, 2))
    assert not remembering()
    with remembering_extremes():
        assert remembering()
        low, high = column_extremes(a)
        a[0] = 100.0  # inside the block the arrays must not change: the first answer stays
        np.testing.assert_array_equal(column_extremes(a)[1], high)
        # another view of the same memory is another array
        np.testing.assert_array_equal(column_extremes(a[::2])[1], a[::2].max(axis=0))
        # a temporary is kept alive: its memory is not the next temporary's
        for value in (1.0, 2.0, 3.0):
            np.testing.assert_array_equal(column_extremes(np.full((10, 2), value))[0], value)
        shifted = a - 1.0
        remember_extremes(shifted, low - 1.0, high - 1.0)
        np.testing.assert_array_equal(column_extremes(shifted)[0], low - 1.0)
    assert not remembering()
    np.testing.assert_array_equal(column_extremes(a)[1], a.max(axis=0))  # found again


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_densities_name_a_non_finite_row_inside_the_remembered_block(bad):
    from attnpool import kernel_density

    x = np.random.default_rng(5).normal(size=(3000, 2))
    x[1234, 1] = bad
    with pytest.raises(ValueError, match=r"x_train: expected finite numbers.*\(1234, 1\)"):
        kernel_density(x, x[:10], bandwidth=0.3)
    with pytest.raises(ValueError, match=r"x_query: expected finite numbers.*\(1234, 1\)"):
        kernel_density(x[:10], x, bandwidth=0.3)
