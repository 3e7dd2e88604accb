"""
Attention pooling, the textbook chapter step by step
====================================================

Dive into Deep Learning's chapter on attention pooling by similarity, with attnpool's
calls: the data, average pooling, Nadaraya–Watson pooling with several kernels and
bandwidths, the attention weights as heatmaps on one colour scale, and a bandwidth
that is learned instead of chosen.
"""

import numpy as np

import attnpool
from attnpool.plotting import plot_fit, plot_history, plot_kernels, show_heatmaps

# %%
# The data
# --------
# Forty noisy samples of :math:`f(x) = 2 \sin x + x` on :math:`[0, 5]` are the keys
# and values; a noise-free grid of 100 points are the queries.
data = attnpool.datasets.sine_data(n=40, seed=0)
keys, values, queries = data.x_train, data.y_train, data.x_val

# %%
# Average pooling is attention with a constant kernel: every key gets weight 1/40.
average = attnpool.attention_pool(queries, keys, values, kernel="constant")
print(f"average pooling: {average[0]:.3f} everywhere (mean of y: {values.mean():.3f})")

# %%
# Attention pooling by similarity
# -------------------------------
# The weight of key :math:`x_i` for query :math:`x` is
# :math:`K((x - x_i)/h) / \sum_j K((x - x_j)/h)`. Four kernels at one bandwidth:
kernels = ("gaussian", "boxcar", "constant", "epanechnikov")
fits = {
    name: attnpool.nadaraya_watson(keys, values, queries, kernel=name, bandwidth=1.0)
    for name in kernels
}
for name, fit in fits.items():
    print(f"{name:>13}: validation MSE {np.mean((fit - data.y_val) ** 2):.3f}")
plot_kernels(
    kernels,
    fits=fits,
    x_grid=queries,
    data=(keys, values),
    truth=attnpool.datasets.sine_truth(queries),
)

# %%
# The chapter's own kernel functions work as printed, passed fourth; here written with
# ``jax.numpy``. Each new function costs one small program of its own the first time
# (~0.1 s), not a pooling program:
import jax.numpy as jnp  # noqa: E402


def gaussian(x):
    return jnp.exp(-(x**2) / 2)


def boxcar(x):
    return jnp.abs(x) < 1.0


for kernel in (gaussian, boxcar):
    y_hat = attnpool.nadaraya_watson(keys, values, queries, kernel)
    print(f"{kernel.__name__:>13}: validation MSE {np.mean((y_hat - data.y_val) ** 2):.3f}")

# %%
# The weights are a queries × keys matrix — the transpose of the textbook's
# ``attention_w``, whose columns are the queries; the textbook draws them with
# ``show_heatmaps(matrices, xlabel, ylabel, titles)``, a grid of shape
# ``(rows, columns, queries, keys)`` with one title per column. attnpool takes the same
# call and puts every panel on one colour scale, so the panels compare.
bandwidths = (0.1, 0.5, 2.0)
weights = np.stack([attnpool.attention_weights(queries, keys, bandwidth=h) for h in bandwidths])[
    None
]
show_heatmaps(
    weights,
    "Sorted training inputs",
    "Sorted validation inputs",
    titles=[f"h = {h}" for h in bandwidths],
)

# %%
# The bandwidth decides: small ones interpolate the noise, large ones flatten the
# function. Far smaller ones do not break: the log-domain sum gives each query its
# nearest key's value, exact lookup, instead of 0/0.
estimates = {
    f"h = {h}": attnpool.nadaraya_watson(keys, values, queries, bandwidth=h)
    for h in (*bandwidths, 1e-6)
}
plot_fit(keys, values, queries, estimates, truth=data.y_val)

# %%
# A learned bandwidth
# -------------------
# Pooling is differentiable, so the bandwidth can be trained by gradient descent. The
# loss must leave each training point out of its own prediction: with the plain MSE
# every point would attend only to itself (bandwidth → 0, training error → 0).
fit = attnpool.fit_attention("bandwidth", keys, values, steps=200)
print(
    f"learned bandwidth {fit.parameters()['bandwidth']:.3f}, "
    f"leave-one-out MSE {fit.loo_error():.4f}"
)
cv = attnpool.NadarayaWatson().fit(keys[:, None], values)
print(f"cross-validated bandwidth {cv.bandwidth_[0]:.3f}, CV score {cv.cv_score_:.4f}")
plot_history({"leave-one-out MSE": fit.history}, reference=("CV optimum", cv.cv_score_))

# %%
# The learned attention weights, beside the fixed ones at h = 0.5, on one scale:
learned = fit.attention_weights(queries[:, None])
fixed = attnpool.attention_weights(queries, keys, bandwidth=0.5)
show_heatmaps(
    np.stack([fixed, learned])[None],
    "Sorted training inputs",
    "Sorted validation inputs",
    titles=["fixed h = 0.5", "learned"],
)
