"""Likelihood cross-validation set by a heavy tail or far outliers (each isolated row's
leave-one-out density must reach its nearest other row): the bandwidth is the
criterion's, with a HeavyTailWarning where it is many times the robust rule of thumb
(:func:`attnpool.density.criterion_checks.warn_where_tails_decide`); samples without such rows
get no warning."""

import re
import warnings

import numpy as np
import pytest
from scipy import stats

import attnpool
from attnpool import HeavyTailWarning, select_density_bandwidth

MESSAGE = "likelihood cross-validation is set by the sample's most isolated rows"


def _samples():
    rng = np.random.default_rng(0)
    bulk = rng.normal(size=499)
    return {
        "a row at 30σ": np.r_[bulk, 30.0],
        "a row at 1000σ": np.r_[bulk, 1e3],
        "Cauchy": rng.standard_cauchy(500),
    }


def _lcv(x: np.ndarray, h: float) -> float:
    """The mean negative leave-one-out log density, brute force in the log domain."""
    from scipy.special import logsumexp

    log_k = stats.norm.logpdf((x[:, None] - x[None, :]) / h) - np.log(h)
    np.fill_diagonal(log_k, -np.inf)
    return float(-np.mean(logsumexp(log_k, axis=1) - np.log(x.size - 1)))


@pytest.mark.parametrize("name", ["a row at 30σ", "a row at 1000σ", "Cauchy"])
def test_a_heavy_tail_or_an_outlier_that_sets_the_likelihood_bandwidth_says_so(name):
    x = _samples()[name]
    with pytest.warns(HeavyTailWarning, match=MESSAGE) as caught:
        found = select_density_bandwidth(x, method="cv_ml")
    assert caught[0].filename == __file__
    h = found.bandwidth[0]
    # the bandwidth is the criterion's optimum (brute force), unchanged
    assert _lcv(x, h) <= min(_lcv(x, h * 0.97), _lcv(x, h / 0.97)) + 1e-12
    robust = attnpool.rule_of_thumb(x, method="silverman")[0]
    assert h > 4 * robust
    with warnings.catch_warnings():  # least squares is not set so: 0.35–0.41, quietly
        warnings.simplefilter("error")
        assert select_density_bandwidth(x, method="cv_ls").bandwidth[0] < 2 * robust


def test_samples_without_isolated_rows_get_no_warning():
    rng = np.random.default_rng(1)
    for x in (
        rng.normal(size=500),
        np.r_[rng.normal(size=499), 10.0],  # 2.5 times the rule: LCV's usual pull
        rng.standard_t(3, 500),
        rng.exponential(size=500),
        np.r_[rng.normal(0, 1, 250), rng.normal(100, 1, 250)],
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            select_density_bandwidth(x, method="cv_ml")


def test_the_warning_names_the_column_and_takes_weights():
    rng = np.random.default_rng(2)
    X = np.c_[rng.normal(size=400), rng.standard_cauchy(400)]
    with pytest.warns(HeavyTailWarning, match=r"column\(s\) \[1\]"):
        select_density_bandwidth(X, method="cv_ml")
    x = _samples()["Cauchy"]
    for weight in (3.0, 2.0**1022):  # (a rule of thumb's n = Σ w overflowed there)
        with pytest.warns(HeavyTailWarning, match=MESSAGE):
            attnpool.KernelDensity(bandwidth="cv_ml").fit(
                x[:, None], sample_weight=np.full(500, weight)
            )


def test_a_conditional_density_names_the_responses_a_tail_sets():
    # one response at 1000 beside 300 near sin x: y's cv_ml bandwidth 57.6 (0.20 without
    # it), x smoothed out; a far x, or an x of no effect (smoothed out), is no tail of y
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 300)
    y = np.sin(x) + 0.3 * rng.normal(size=300)
    with pytest.warns(HeavyTailWarning, match=r"of y column\(s\) \[0\]"):
        attnpool.select_conditional_bandwidth(np.r_[x, 5.0], np.r_[y, 1e3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attnpool.select_conditional_bandwidth(np.r_[x, 1e3], np.r_[y, 0.0])
        found = attnpool.select_conditional_bandwidth(x, rng.normal(size=300))
    assert found.bandwidth[0] > 1e3  # (x of no effect: smoothed out, quietly)


def test_a_subsampled_search_says_so_once_of_the_whole_sample():
    # each block's search warned alone: ten warnings for ten blocks of a Cauchy sample
    from attnpool.bandwidth.subsample import Subsampled

    rng = np.random.default_rng(2)
    x = rng.standard_cauchy(3000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        select_density_bandwidth(x, method="cv_ml", subsample=Subsampled(n_sub=300))
        attnpool.select_conditional_bandwidth(rng.uniform(size=3000), x,
                                              subsample=Subsampled(n_sub=300))  # fmt: skip
    tails = [w for w in caught if w.category is HeavyTailWarning]
    assert len(tails) == 2 and "of y column(s) [0]" in str(tails[1].message)


def test_the_command_line_says_so_in_one_line_naming_its_option(tmp_path, monkeypatch, capsys):
    from attnpool.cli import main

    monkeypatch.chdir(tmp_path)
    x = _samples()["Cauchy"]
    (tmp_path / "cauchy.csv").write_text("x\n" + "".join(f"{a:.17g}\n" for a in x))
    code = main(["density", "cauchy.csv", "--x", "x", "--out", "density.csv"])
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert code == 0 and (tmp_path / "density.csv").exists()
    assert len(warning) == 1 and warning[0].startswith("attnpool: warning: bandwidth: the cv_ml")
    assert warning[0].endswith("--bandwidth cv_ls or isj are not so set")


def test_a_compact_kernel_that_reaches_no_isolated_row_says_why():
    # a Cauchy sample's far rows have no neighbour within 5 times the rule of thumb
    x = _samples()["Cauchy"]
    with pytest.raises(ValueError, match="an isolated one: a far outlier, a heavy tail"):
        select_density_bandwidth(x, method="cv_ml", kernel="epanechnikov")


def test_ties_jittered_apart_are_named_where_they_set_the_bandwidth(tmp_path, monkeypatch, capsys):
    """Integers jittered by 1e-6 to break their ties: each row is predicted by its group,
    and cross-validation follows them to spikes (cv_ls 5e-7, cv_ml 0.089), where as ties
    the search stops at half their spacing. A TiedDataWarning names the groups; samples
    spread continuously get none (normal, Cauchy, lognormal, exponential, t₂), and the
    command line says it in its own words."""
    from attnpool import TiedDataWarning
    from attnpool.cli import main
    from attnpool.density.criterion_checks import near_tie_groups

    rng = np.random.default_rng(0)
    x = np.round(3 * rng.normal(size=500)) + 1e-6 * rng.normal(size=500)
    for method in ("cv_ml", "cv_ls"):
        with pytest.warns(TiedDataWarning, match=r"lie in 21 tight groups.* stop at 0\.5"):
            found = select_density_bandwidth(x, method=method)
        assert found.bandwidth[0] < 0.1
    with pytest.warns(TiedDataWarning, match="lie in 21 tight groups"):
        attnpool.select_conditional_bandwidth(rng.normal(size=500), x)
    assert near_tie_groups(np.round(rng.normal(size=500), 1) * (1 + 1e-15 * rng.normal(size=500)))
    for seed in range(100):
        draw = np.random.default_rng(seed)
        for sample in (draw.normal(size=200), draw.standard_cauchy(200), draw.lognormal(0, 2, 200),
                       draw.exponential(size=50), draw.standard_t(2, size=1000)):  # fmt: skip
            assert near_tie_groups(sample) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", TiedDataWarning)
        select_density_bandwidth(np.round(3 * rng.normal(size=500)) + 0.01 * rng.normal(size=500))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jittered.csv").write_text("x\n" + "".join(f"{a:.17g}\n" for a in x))
    assert main(["density", "jittered.csv", "--x", "x", "--bandwidth", "cv_ls"]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].endswith("prefer --bandwidth normal_reference")


def test_a_subsampled_search_says_its_blocks_ties_once():
    """Each block's search of tied (or jittered) values stops at their floor (or their
    groups' spikes) and says so: the subsampled search gives one TiedDataWarning, with
    how many of its blocks did — it gave one per block."""
    from attnpool import TiedDataWarning
    from attnpool.bandwidth.subsample import Subsampled

    rng = np.random.default_rng(0)
    tied = np.round(3 * rng.normal(size=3000))
    jittered = tied + 1e-6 * rng.normal(size=3000)
    for x, said in ((tied, "half the resolution"), (jittered, "tight groups")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            select_density_bandwidth(x, method="cv_ls", subsample=Subsampled(n_sub=300))
            attnpool.select_conditional_bandwidth(rng.normal(size=3000), x, method="cv_ls",
                                                  subsample=Subsampled(n_sub=300))  # fmt: skip
        assert [w.category for w in caught] == [TiedDataWarning, TiedDataWarning]
        assert str(caught[0].message).startswith("in 10 of the 10 blocks of rows searched")
        for w in caught:
            assert re.match(r"in \d+ of the 10 blocks of rows searched: ", str(w.message))
            assert said in str(w.message)
