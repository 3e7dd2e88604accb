"""Each column's least and largest entry, column by column or by long stretches of rows,
against NumPy's reduction along the rows: equal for narrow and wide arrays, every dtype,
NaN and infinities; and rows less a row, by stretches, against NumPy's broadcast."""

from __future__ import annotations

import numpy as np
import pytest

from attnpool._support.units import ROW_STRETCH, column_extremes, midrange, rows_less

SHAPES = [(1, 1), (1000, 2), (7, 16), (50, 17), (300, 40), (2 * ROW_STRETCH, 3), (999, 16)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_column_extremes_equal_numpys(shape, dtype):
    rng = np.random.default_rng(shape[1])
    a = (rng.normal(size=shape) * 1e3).astype(dtype)
    low, high = column_extremes(a)
    np.testing.assert_array_equal(low, a.min(axis=0))
    np.testing.assert_array_equal(high, a.max(axis=0))
    assert low.dtype == a.dtype and high.dtype == a.dtype
    np.testing.assert_array_equal(midrange(a), a.min(axis=0) / 2 + a.max(axis=0) / 2)


@pytest.mark.parametrize("rows", [3, 3 * ROW_STRETCH + 5])  # column by column, by stretches
def test_column_extremes_keep_nan_and_infinities(rows):
    a = np.random.default_rng(rows).normal(size=(rows, 3))
    a[[0, 1, 2]] = [[1.0, np.nan, 0.0], [2.0, 3.0, np.inf], [-np.inf, 1.0, 5.0]]
    a = a[::-1].copy()  # the last rows: beyond the whole stretches
    low, high = column_extremes(a)
    np.testing.assert_array_equal(low, a.min(axis=0))
    np.testing.assert_array_equal(high, a.max(axis=0))
    np.testing.assert_array_equal(column_extremes(a[:, 0].copy())[0], a[:, 0].min())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_less_a_row_equal_numpys_broadcast(shape, dtype):
    rng = np.random.default_rng(shape[0])
    a = (rng.normal(size=shape) * 1e9).astype(dtype)
    row = rng.normal(size=shape[1]) * 1e9
    for array in (a, a[::-1]):  # row-major, and not
        got = rows_less(array, row)
        np.testing.assert_array_equal(got, array - row)
        assert got.dtype == (array - row).dtype


def test_remembered_extremes_are_found_once_per_array_and_view():
    from attnpool._support.units import remember_extremes, remembering, remembering_extremes

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
