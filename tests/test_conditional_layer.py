"""Conditional densities on the sums layer: the joint's and ``x``'s densities by the
compiled loops equal the textbook's pooled pairs; rows whose logarithms are too large for
their difference are pooled; copies (a bootstrap resample) set a search's bandwidth, and
a warning names the one with each row's copies left out together."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attnpool import ConditionalDensity, select_conditional_bandwidth
from attnpool.density.conditional import conditional_log_density
from attnpool.density.conditional_selection import conditional_criterion


def _textbook_log_conditional(x, y, qx, qy, hx, hy, leave_out):
    """``log Σ_i K_h(x − x_i) φ_b(y − y_i) − log Σ_i K_h(x − x_i)`` pair by pair, Gaussian
    kernels, in the log domain (``leave_out``: each query is the row of its index)."""
    from scipy.special import logsumexp

    log_w = -0.5 * (((qx[:, None, :] - x[None]) / hx) ** 2).sum(axis=2)
    if leave_out:
        np.fill_diagonal(log_w, -np.inf)
    log_w -= np.max(log_w, axis=1, keepdims=True)  # (the weights' scale cancels)
    log_t = -0.5 * (((qy[:, None, :] - y[None]) / hy) ** 2).sum(axis=2)
    log_t -= np.log(np.sqrt(2 * np.pi) * hy).sum()
    return logsumexp(log_w + log_t, axis=1) - logsumexp(log_w, axis=1)


@pytest.mark.parametrize("dims", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("scale", [0.02, 0.5])
def test_large_samples_summed_by_the_compiled_loops_equal_the_textbook(dims, scale):
    """1500 rows: the joint's and x's Gaussian sums are the sums layer's (the expansions
    of one column, the compiled loop of several) — the leave-one-out criterion and the
    densities are the textbook's pooled pairs."""
    from attnpool.density.methods import mixed_problem
    from attnpool.kernels.mixed import MixedColumns
    from attnpool.sums.facts import finish_facts
    from attnpool.sums.plan import plan

    rng = np.random.default_rng(sum(dims))
    x = rng.normal(size=(1500, dims[0]))
    y = x[:, :1] + 0.5 * rng.normal(size=(1500, dims[1]))
    hx, hy = np.full(dims[0], scale), np.full(dims[1], 2 * scale)
    for sample, h in ((x, hx), (np.hstack([x, y]), np.r_[hx, hy])):
        columns = MixedColumns(sample, "c" * sample.shape[1], "gaussian")
        problem = mixed_problem(sample, sample, h, columns, left_out=np.arange(1500))
        assert plan(finish_facts(problem)).backend in ("fgt", "native")
    want = _textbook_log_conditional(x, y, x, y, hx, hy, leave_out=True)
    assert conditional_criterion(x, y, hx, hy) == pytest.approx(-np.mean(want), rel=1e-12)
    qx, qy = x[:300] + 0.01, y[:300] - 0.02
    np.testing.assert_allclose(
        conditional_log_density(x, y, qx, qy, bandwidth=hx, y_bandwidth=hy),
        _textbook_log_conditional(x, y, qx, qy, hx, hy, leave_out=False), rtol=0, atol=1e-11,
    )  # fmt: skip


def test_leave_one_out_rows_far_from_the_others_keep_the_ratios_digits():
    """Rows with no other within 23 bandwidths have leave-one-out log densities below
    −500: their difference would carry more than 2⁻⁵³·512 into the ratio, so each is
    pooled about its largest x weight, leaving its own row out; the twins' rows are the
    compiled loop's joint and marginal densities."""
    from attnpool.density.conditional import _by_densities, sides

    rng = np.random.default_rng(3)
    x = np.r_[rng.uniform(-2000, 2000, 100), np.repeat(np.arange(-5.0, 5.0), 10)][:, None]
    y = rng.normal(size=(200, 1))
    hx, hy = np.array([1.0]), np.array([0.4])
    sample = sides(x, y, None, None, "gaussian", hx, hy)
    pooled = np.isnan(_by_densities(sample, x, y, np.arange(200)))
    assert pooled[:100].sum() > 20 and not pooled[100:].any()  # (36 of them)
    want = _textbook_log_conditional(x, y, x, y, hx, hy, leave_out=True)
    assert conditional_criterion(x, y, hx, hy) == pytest.approx(-np.mean(want), rel=1e-13)
    for bandwidth in (2.0**-20, 2.0**-40):  # tiny: NumPy's pooled pairs
        want = _textbook_log_conditional(x, y, x, y, bandwidth, hy, leave_out=True)
        assert conditional_criterion(x, y, bandwidth, hy) == pytest.approx(-np.mean(want),
                                                                           rel=1e-13)  # fmt: skip


def _copies_left_out_together(x, y, hx, hy, method):
    """The criterion of rows with copies, each row's copies left out together: the
    textbook's pairs (Gaussian kernels), row by row."""
    from scipy import stats

    terms = []
    for row in range(len(x)):
        others = ~((x == x[row]) & (y == y[row]))
        w = stats.norm.pdf((x[row] - x[others]) / hx)
        if method == "cv_ml":
            terms.append(-np.log(w @ stats.norm.pdf(y[row], y[others], hy) / w.sum()))
        else:
            gaps = y[others][:, None] - y[others][None, :]
            square = w @ stats.norm.pdf(gaps, 0.0, np.sqrt(2) * hy) @ w / w.sum() ** 2
            terms.append(square - 2 * w @ stats.norm.pdf(y[row], y[others], hy) / w.sum())
    return np.mean(terms)


@pytest.mark.parametrize("method", ["cv_ml", "cv_ls"])
def test_copies_set_the_bandwidth_and_a_warning_names_theirs_left_out_together(method):
    """A bootstrap resample: each repeated row is predicted by its own copies, and the
    criterion favours a spike in x at them (cv_ml: 0.0094 where the sample gets 0.30).
    The bandwidth stays the criterion's; a TiedDataWarning names the one with each row's
    copies left out together — the distinct rows counted — whose criterion is the
    textbook's of the rows. The sample itself, and values rounded to a resolution, get
    none."""
    from attnpool import TiedDataWarning
    from attnpool.density.conditional import sides
    from attnpool.density.conditional_selection import _criterion
    from attnpool.sums.observation_weights import merged_rows

    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    y = x + rng.normal(size=200)
    pick = rng.integers(0, 200, 400)
    xr, yr = x[pick], y[pick]
    with pytest.warns(TiedDataWarning, match="copies left out together it is") as caught:
        found = select_conditional_bandwidth(xr, yr, method=method)
    apart = np.array([float(v) for v in str(caught[0].message).split("it is ")[1]
                      .split(". Where")[0].split(", ")])  # fmt: skip
    assert np.all(apart / found.bandwidth > 1.5) or apart[0] / found.bandwidth[0] > 5
    mx, my, counts = merged_rows(xr[:, None], yr[:, None], None)
    for hx, hy in ((0.1, 0.4), (0.3, 0.6)):
        got = _criterion(sides(mx, my, None, None, "gaussian", hx, hy), method, counts)
        assert got == pytest.approx(_copies_left_out_together(xr, yr, hx, hy, method), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TiedDataWarning)
        select_conditional_bandwidth(x, y, method=method)
        select_conditional_bandwidth(np.round(x, 2), np.round(y, 2), method=method)


def test_the_command_line_names_the_copies_bandwidth_in_its_order(tmp_path, monkeypatch, capsys):
    """``attnpool density --given`` says the copies' warning in one line, in its own
    words; the bandwidths it names, passed back in the command line's order, are taken
    as they are (no search, no warning)."""
    from attnpool.cli import main

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    y = x + rng.normal(size=200)
    pick = rng.integers(0, 200, 400)
    lines = "".join(f"{a:.17g},{b:.17g}\n" for a, b in zip(x[pick], y[pick], strict=True))
    (tmp_path / "resample.csv").write_text("x,y\n" + lines)
    code = main(["density", "resample.csv", "--x", "y", "--given", "x", "--out", "f.csv"])
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert code == 0 and len(warning) == 1
    assert warning[0].endswith("the --x columns' first (listed here after the --given columns')")
    given_first = warning[0].split("it is ")[1].split(". Where")[0].split(", ")
    code = main(["density", "resample.csv", "--x", "y", "--given", "x", "--out", "g.csv",
                 "--bandwidth", f"{given_first[1]},{given_first[0]}"])  # fmt: skip
    assert code == 0 and not [line for line in capsys.readouterr().err.splitlines()
                              if "warning" in line]  # fmt: skip


def test_the_copies_warning_names_every_columns_bandwidth_to_pass():
    """With a categorical column the warning names its λ too, x's columns then y's: the
    numbers ``ConditionalDensity`` takes, whose criterion there is below the one at the
    copies' bandwidths once each row's copies are left out together."""
    from attnpool import TiedDataWarning
    from attnpool.density.conditional import sides
    from attnpool.density.conditional_selection import _criterion
    from attnpool.sums.observation_weights import merged_rows

    rng = np.random.default_rng(3)
    x = np.c_[rng.normal(size=200), rng.integers(0, 3, 200)]
    y = x[:, 0] + x[:, 1] + rng.normal(size=200)
    pick = rng.integers(0, 200, 400)
    with pytest.warns(TiedDataWarning, match="copies left out together") as caught:
        found = select_conditional_bandwidth(x[pick], y[pick], x_var_type="cu")
    message = str(caught[0].message)
    shown = [float(v) for v in message.split("bandwidth (")[1].split(")")[0].split(", ")]
    apart = [float(v) for v in message.split("it is ")[1].split(". Where")[0].split(", ")]
    assert len(shown) == len(apart) == 3
    np.testing.assert_allclose(shown, found.bandwidth, rtol=1e-3)
    mx, my, counts = merged_rows(x[pick], y[pick, None], None)

    def counted(h):
        return _criterion(sides(mx, my, "cu", "c", "gaussian", h[:2], h[2:]), "cv_ml", counts)

    assert counted(np.array(apart)) < counted(found.bandwidth)
    model = ConditionalDensity(bandwidth=apart, x_var_type="cu").fit(x[pick], y[pick])
    np.testing.assert_allclose([*model.bandwidth_, *model.y_bandwidth_], apart)


def test_a_key_far_in_x_but_near_in_y_still_counts():
    """The nearest x (0.05 closer) has its y 10 away; the next, 50 x bandwidths out, has
    y itself: its weight e^-1250 underflows as a share of the nearest's, but its term
    beats the nearest's e^-5e7, so f̂(y | x) is that term's, log −1244.2, not −5e7. The
    criterion of 1500 rows at both bandwidths 1e-3 was 5.6 times the textbook's."""
    from scipy import stats

    x = np.array([[0.0], [0.05], [3.0], [4.0]])
    y = np.array([[10.0], [0.0], [1.0], [2.0]])
    got = conditional_log_density(x, y, [[0.0]], [[0.0]], bandwidth=1e-3, y_bandwidth=1e-3)
    want = -0.5 * (0.05 / 1e-3) ** 2 + np.log(stats.norm.pdf(0.0, 0.0, 1e-3))
    np.testing.assert_allclose(got, [want], rtol=1e-13)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1500, 1))
    y = x + rng.normal(size=(1500, 1))
    h = np.array([1e-3])
    want = -np.mean(_textbook_log_conditional(x, y, x, y, h, h, leave_out=True))
    assert conditional_criterion(x, y, h, h) == pytest.approx(want, rel=1e-12)
