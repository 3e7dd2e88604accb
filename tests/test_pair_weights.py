"""The host pair engines' shared core (:mod:`attnpool.sums.pair_weights`): blocks of rows
that cover every query once within their budget, log weights equal to the textbook's
kernel and categorical kernels, and shifted weights that leave a row's own key out,
multiply observation weights after the shift and mark empty rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnpool import kernels
from attnpool.sums.pair_weights import log_weights, row_blocks, shifted_weights


@given(n=st.integers(0, 300), m=st.integers(0, 300), width=st.integers(1, 9),
       budget=st.integers(1, 5000))  # fmt: skip
def test_blocks_cover_every_row_once_within_the_budget(n, m, width, budget):
    blocks = list(row_blocks(n, m, width, budget))
    covered = np.concatenate([np.arange(b.start, b.stop) for b in blocks]) if blocks else []
    assert np.array_equal(covered, np.arange(n))
    for block in blocks:
        rows = block.stop - block.start
        assert rows >= 1 and (rows == 1 or rows * m * width <= budget)


def test_log_weights_are_the_textbook_kernels_with_categorical_columns():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(7, 3)), rng.normal(size=(11, 3))
    q[:, 2], k[:, 2] = rng.integers(0, 4, 7), rng.integers(0, 4, 11)  # an unordered column
    h, lam = np.array([0.7, 1.3]), 0.2
    us = [(q[:, j, None] - k[None, :, j]) / h[j] for j in range(2)]
    same = q[:, 2, None] == k[None, :, 2]
    want = -0.5 * (us[0] ** 2 + us[1] ** 2) + np.log(np.where(same, 1 - lam, lam / 3))
    got = log_weights(us, kernels.get("gaussian"), [(q[:, 2, None], k[None, :, 2], lam, "u", 4)])
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    alone = log_weights([], kernels.get("gaussian"), [(q[:, 2, None], k[None, :, 2], lam, "u", 4)],
                        shape=(7, 11))  # fmt: skip
    np.testing.assert_allclose(alone, np.log(np.where(same, 1 - lam, lam / 3)), rtol=1e-14)


def test_a_compact_kernels_edge_is_decided_exactly():
    # 0.1 + 0.2 − 0.3 ≠ 0 in floats: keys exactly one bandwidth away sit on the edge
    q, k = np.array([[0.0]]), np.array([[-1.0], [1.0], [0.999999], [1.000001]])
    got = log_weights([(q - k.T) / 1.0], kernels.get("boxcar"))
    assert np.isfinite(got[0, 2]) and got[0, 3] == -np.inf
    assert np.isfinite(got[0, 0]) == np.isfinite(got[0, 1])


@pytest.mark.parametrize("weighted", [False, True])
def test_shifted_weights_leave_a_row_out_and_weigh_after_the_shift(weighted):
    rng = np.random.default_rng(1)
    log_w = rng.normal(size=(5, 6)) * 1e3 - 1e6  # far below the float range as weights
    log_w[3] = -np.inf  # an empty row
    omega = 2.0 ** rng.uniform(-900, 900, 6) if weighted else None
    left_out = np.array([0, -1, 5, 2, 4])
    w, shift, empty = shifted_weights(log_w.copy(), left_out=left_out, weights=omega)
    assert np.array_equal(empty, [False, False, False, True, False])
    assert np.all(w[[0, 2, 4], [0, 5, 4]] == 0) and np.all(w[3] == 0) and shift[3] == 0
    for i in (0, 1, 2, 4):  # Σ ω e^{l} = e^{shift} Σ w, each term against the textbook's
        kept = np.arange(6) != left_out[i]
        logs = log_w[i, kept] + (0 if omega is None else np.log(omega[kept]))
        want = logs.max() + math.log(np.sum(np.exp(logs - logs.max())))
        assert math.isclose(shift[i] + math.log(w[i].sum()), want, rel_tol=1e-15, abs_tol=1e-9)
        assert shift[i] == np.max(log_w[i, kept])


def test_shifted_weights_take_a_read_only_array():
    log_w = np.zeros((2, 3))
    log_w.flags.writeable = False
    w, shift, empty = shifted_weights(log_w)
    assert np.all(w == 1.0) and np.all(shift == 0) and not empty.any()
