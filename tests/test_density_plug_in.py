"""KernSmooth's direct plug-in bandwidth of a density (``dpik``) and its binned functional
estimates (``bkfe``): KernSmooth's own numbers, the functionals against every pair in
float64, and the bandwidth's invariances."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnpool
from attnpool import density_plug_in_bandwidth
from attnpool.bandwidth.density_plug_in import binned_functional
from attnpool.smoothers.binned_polynomial import linear_binning
from kernsmooth_reference import DPIK, DPIK_LEVEL, DPIK_OPTIONS

NAMES = {"normal": "gaussian", "box": "boxcar", "epanech": "epanechnikov",
         "biweight": "biweight", "triweight": "triweight"}  # fmt: skip


def column(name: str) -> np.ndarray:
    if name == "sine":
        return attnpool.datasets.sine_data(n=300, seed=3).x_train
    return attnpool.datasets.wave_data(500, seed=4)[0][:, 0]


@pytest.mark.parametrize("theirs", list(NAMES))
def test_each_kernel_equals_kernsmooths_dpik(theirs):
    got = density_plug_in_bandwidth(column("sine"), kernel=NAMES[theirs])
    assert got == pytest.approx(DPIK["sine", theirs], rel=1e-13)


@pytest.mark.parametrize("level", range(6))
def test_each_level_equals_kernsmooths_dpik(level):
    got = density_plug_in_bandwidth(column("wave"), level=level)
    assert got == pytest.approx(DPIK_LEVEL["wave", level], rel=1e-13)


def test_the_options_equal_kernsmooths_dpik():
    wave = density_plug_in_bandwidth(column("wave"), scale="stdev", gridsize=101, canonical=True)
    assert wave == pytest.approx(DPIK_OPTIONS["wave"], rel=1e-13)
    sine = density_plug_in_bandwidth(column("sine"), scale="iqr", range_x=(-1, 6))
    assert sine == pytest.approx(DPIK_OPTIONS["sine"], rel=1e-13)


@pytest.mark.parametrize("order", [4, 6, 8])
def test_the_binned_functional_is_near_the_sum_over_every_pair(order):
    # ψ_r = n⁻² Σ_ij φ_g^(r)(x_i − x_j): binning and the cut at 4 + r bandwidths aside
    x = np.random.default_rng(2).normal(size=400)
    g = 0.5
    counts, _ = linear_binning(x, np.zeros(400), x.min(), x.max(), 2001)
    binned = binned_functional(counts, order, g, x.min(), x.max())
    u = (x[:, None] - x[None, :]) / g
    hermite = np.polynomial.hermite_e.hermeval(u, [0] * order + [1])
    exact = np.sum(hermite * np.exp(-(u**2) / 2)) / math.sqrt(2 * math.pi) / g ** (order + 1)
    assert binned == pytest.approx(exact / 400**2, rel=2e-3)


def test_by_name_and_invariances():
    x = column("sine")
    model = attnpool.KernelDensity(kernel="epanechnikov", bandwidth="dpik").fit(x[:, None])
    assert model.bandwidth_[0] == pytest.approx(DPIK["sine", "epanech"], rel=1e-13)
    assert attnpool.rule_of_thumb(x, method="dpik")[0] == pytest.approx(
        DPIK["sine", "normal"], rel=1e-13
    )
    assert density_plug_in_bandwidth(3 * x - 7) == pytest.approx(
        3 * density_plug_in_bandwidth(x), rel=1e-12
    )
    with pytest.raises(ValueError, match="kernel: 'dpik'"):
        attnpool.rule_of_thumb(x, method="dpik", kernel="laplacian")
    with pytest.raises(ValueError, match="level: expected an integer from 0 to 5"):
        density_plug_in_bandwidth(x, level=6)
    with pytest.raises(ValueError, match="scale estimate"):
        density_plug_in_bandwidth(np.ones(10))


@pytest.mark.parametrize("scale, shift", [(1e-200, 0.0), (1e200, 0.0), (1.0, 1e9)])
def test_dpik_follows_the_data_at_any_scale_and_shift(scale, shift):
    x = column("wave")
    got = density_plug_in_bandwidth(x * scale + shift) / scale
    assert got == pytest.approx(density_plug_in_bandwidth(x), rel=1e-6)
