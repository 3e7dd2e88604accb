"""LOWESS: robust locally weighted scatterplot smoothing, exact in ``O(n log n)``.

:func:`lowess` takes statsmodels' arguments and gives its numbers, :func:`r_lowess`
R's. Both run one smoother (:mod:`.smoother`) under the peer's rules (:mod:`.rules`),
on window sums from running moments (:mod:`attnpool.engines.window_sums`).
"""

from .functions import LowessCurve, lowess, r_lowess

__all__ = ["LowessCurve", "lowess", "r_lowess"]
