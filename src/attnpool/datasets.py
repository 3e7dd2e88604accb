"""Synthetic data sets, reproducible from a seed."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._support.hints import ArrayLike, NDArray

__all__ = ["SineData", "sine_data", "sine_truth", "wave_data", "wave_truth"]


class SineData(NamedTuple):
    """Noisy training sample and noise-free validation grid of ``f(x) = 2 sin x + x``.

    Parameters
    ----------
    x_train : ndarray of shape (n,)
        Sorted.
    y_train : ndarray of shape (n,)
    x_val : ndarray of shape (n_val,)
        An even grid on ``[0, 5]``.
    y_val : ndarray of shape (n_val,)
        The truth on the grid.

    Examples
    --------
    >>> from attnpool.datasets import sine_data
    >>> x_train, y_train, x_val, y_val = sine_data(n=50)      # a tuple, unpacked
    >>> x_train.shape, x_val.shape
    ((50,), (100,))

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (``f(x) = 2 sin x + x``, noise of standard deviation 0.5).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def sine_truth(x: ArrayLike) -> NDArray:
    """The regression function ``f(x) = 2 sin(x) + x``.

    Parameters
    ----------
    x : array-like

    Returns
    -------
    ndarray of x's shape

    Examples
    --------
    >>> import numpy as np
    >>> sine_truth([0.0, np.pi / 2])
    array([0.        , 3.57079633])

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (``f(x) = 2 sin x + x``, noise of standard deviation 0.5).
    """
    x = np.asarray(x, dtype=float)
    return np.asarray(2.0 * np.sin(x) + x)


def sine_data(n: int = 40, noise: float = 0.5, seed: int = 0, n_val: int = 100) -> SineData:
    """The classic attention-pooling example (Dive into Deep Learning, §11.2).

    ``x`` uniform on ``[0, 5]`` and sorted, ``y = 2 sin(x) + x + ε`` with
    ``ε ~ N(0, noise²)`` (default standard deviation 0.5), and a noise-free grid of
    ``n_val`` evenly spaced validation points on ``[0, 5]``.

    Parameters
    ----------
    n : int
        Training points.
    noise : float
        The noise's standard deviation.
    seed : int
    n_val : int
        Validation grid points.

    Returns
    -------
    SineData

    Examples
    --------
    >>> data = sine_data(n=5, seed=1)
    >>> data.x_train.shape, bool(np.all(np.diff(data.x_train) >= 0))
    ((5,), True)

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (``f(x) = 2 sin x + x``, noise of standard deviation 0.5).
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: expected a positive integer; received {n!r}")
    if isinstance(n_val, bool) or not isinstance(n_val, int | np.integer) or n_val < 1:
        raise ValueError(f"n_val: expected a positive integer; received {n_val!r}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: expected a finite number >= 0; received {noise!r}")
    rng = np.random.default_rng(seed)
    x_train = np.sort(rng.uniform(0.0, 5.0, n))
    y_train = sine_truth(x_train) + noise * rng.standard_normal(n)
    x_val = np.linspace(0.0, 5.0, n_val)
    return SineData(x_train, y_train, x_val, sine_truth(x_val))


def wave_truth(x: ArrayLike) -> NDArray:
    """``g(x) = Σ_j sin(2π x_j) / √d`` for ``x (n, d)`` — the same variance in every ``d``.

    Parameters
    ----------
    x : array of shape (n, d)

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> wave_truth(np.array([[0.25], [0.75]]))
    array([ 1., -1.])

    References
    ----------
    Stone, C. J. (1982). Optimal global rates of convergence for nonparametric
    regression. *Annals of Statistics* 10(4), 1040–1053 (the ``n^(−4/(4+d))`` rates a
    smooth function in ``d`` dimensions is estimated at).
    """
    x = np.asarray(x, dtype=float)
    return np.asarray(np.sin(2 * np.pi * x).sum(axis=1) / np.sqrt(x.shape[1]))


def wave_data(n: int, d: int = 1, noise: float = 0.5, seed: int = 0) -> tuple[NDArray, NDArray]:
    """``x`` uniform on ``[0, 1]^d`` (``(n, d)``) and ``y = wave_truth(x) + N(0, noise²)``.

    Parameters
    ----------
    n : int
    d : int
    noise : float
        The noise's standard deviation.
    seed : int

    Returns
    -------
    x : ndarray of shape (n, d)
    y : ndarray of shape (n,)

    Examples
    --------
    >>> x, y = wave_data(4, d=3, seed=2)
    >>> x.shape, y.shape
    ((4, 3), (4,))

    References
    ----------
    Stone, C. J. (1982). Optimal global rates of convergence for nonparametric
    regression. *Annals of Statistics* 10(4), 1040–1053 (the ``n^(−4/(4+d))`` rates a
    smooth function in ``d`` dimensions is estimated at).
    """
    for value, name in ((n, "n"), (d, "d")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name}: expected a positive integer; received {value!r}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: expected a finite number >= 0; received {noise!r}")
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, (n, d))
    return x, wave_truth(x) + noise * rng.standard_normal(n)
