"""R ``ks``'s own numbers on attnpool's synthetic data, written down with their source.

Computed with R 4.2.2 and ks 1.14.0 (Debian bookworm's r-base-core and r-cran-ks) on
``w2``: ``attnpool.datasets.wave_data(300, d=2, seed=5)[0]`` and ``w3``:
``attnpool.datasets.wave_data(250, d=3, seed=6)[0]``, written to CSV with 17 significant
digits and read by R (matrices column-major, as R prints them)::

    H <- Hlscv(x, binned = FALSE); Hn <- Hns(x)                   # HLSCV, HNS
    ks:::lscv.mat(x, H); ks:::lscv.mat(x, Hn)                     # LSCV_AT_HLSCV, LSCV_AT_HNS
    kde(x, H = H, eval.points = x[1:6, ], binned = FALSE)$estimate  # KDE_AT_HLSCV

printed with ``sprintf("%.17g")``.
"""

HNS: dict[str, list[float]] = {}
HLSCV: dict[str, list[float]] = {}
LSCV_AT_HLSCV: dict[str, float] = {}
LSCV_AT_HNS: dict[str, float] = {}
KDE_AT_HLSCV: dict[str, list[float]] = {}
HNS["w2"] = [
    0.012296699157778878,
    -0.00063623771786319434,
    -0.00063623771786319434,
    0.012674833754421093,
]
HLSCV["w2"] = [
    0.0093795983363117608,
    -0.00084750400201532921,
    -0.00084750400201532921,
    0.0013060496652898537,
]
LSCV_AT_HLSCV["w2"] = -0.91122798557259488
LSCV_AT_HNS["w2"] = -0.86880518728568756
KDE_AT_HLSCV["w2"] = [
    1.0510684321448607,
    1.2538664115631848,
    0.90762775625047554,
    1.119496461039166,
    0.41264215868331894,
    1.8503758472577101,
]
HNS["w3"] = [
    0.017381085171070721,
    -0.00043123587176163692,
    -0.0015094295218396696,
    -0.00043123587176163692,
    0.015929571107494093,
    0.0018921203790812561,
    -0.0015094295218396696,
    0.0018921203790812561,
    0.015436818477016931,
]
HLSCV["w3"] = [
    0.0036039354377849359,
    0.0042910630299098258,
    0.0088930041313063785,
    0.0042910630299098258,
    0.038515923452502737,
    -0.011111172941102379,
    0.0088930041313063785,
    -0.011111172941102379,
    0.037854987620418432,
]
LSCV_AT_HLSCV["w3"] = -0.81286944530759431
LSCV_AT_HNS["w3"] = -0.76334844965280613
KDE_AT_HLSCV["w3"] = [
    1.5752078401351168,
    1.1448632412053972,
    1.2524891084806209,
    1.6195084203627104,
    1.0822669045762381,
    1.4112348473996335,
]
