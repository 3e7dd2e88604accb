"""R ``ks``'s own numbers on attnpool's synthetic data, written down with their source.

Computed with R 4.2.2 and ks 1.14.0 (Debian bookworm's r-base-core and r-cran-ks) on
``w2``: ``attnpool.datasets.wave_data(300, d=2, seed=5)[0]`` and ``w3``:
``attnpool.datasets.wave_data(250, d=3, seed=6)[0]``, written to CSV with 17 significant
digits and read by R (matrices column-major, as R prints them)::

    H <- Hlscv(x, binned = FALSE); Hn <- Hns(x)                   # HLSCV, HNS
    ks:::lscv.mat(x, H); ks:::lscv.mat(x, Hn)                     # LSCV_AT_HLSCV, LSCV_AT_HNS
    kde(x, H = H, eval.points = x[1:6, ], binned = FALSE)$estimate  # KDE_AT_HLSCV

and the plug-in matrix ``Hpi`` with its parts (``ns <- asNamespace("ks")``,
``xs <- ns$pre.sphere(x)``, ``S <- var(xs)``, ``n <- nrow(x)``)::

    Hpi(x, binned = FALSE); Hpi(x, binned = FALSE, amise = TRUE)$PI.star  # HPI, HPI_PI
    Hpi(x, binned = FALSE, nstage = 1)                                     # HPI_ONE_STAGE
    Hpi(x, binned = FALSE, pilot = "dscalar")  # w2: HPI_OTHER_PILOT (w3: pilot = "samse")
    # w2 (samse): the first stage's pilot and the fourth-order pilot
    g6 <- ns$gsamse(S, n = n, modr = 6)                                    # HPI_SIXTH_PILOT
    p6 <- ns$kfe(x = xs, G = g6^2 * diag(2), deriv.order = 6, deriv.vec = TRUE,
                 binned = FALSE, add.index = FALSE)
    g <- ns$gsamse(S, n = n, modr = 4, nstage = 2, psihat = p6)            # HPI_PILOT
    # w3 (dscalar)
    g <- ns$gdscalar(x = xs, r = 0, n = n, d = 3, verbose = FALSE, nstage = 2,
                     binned = FALSE)                                       # HPI_PILOT
    ns$kfe(x = xs, G = g^2 * diag(d), deriv.order = 4, deriv.vec = TRUE, binned = FALSE,
           add.index = FALSE)                      # HPI_FUNCTIONALS (w3: the first ten)

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

HPI: dict[str, list[float]] = {}
HPI_PI: dict[str, float] = {}
HPI_PILOT: dict[str, float] = {}
HPI_FUNCTIONALS: dict[str, list[float]] = {}
HPI_OTHER_PILOT: dict[str, list[float]] = {}
HPI_ONE_STAGE: dict[str, list[float]] = {}
HPI["w2"] = [
    0.010522612160830452,
    0.00027582340550648334,
    0.00027582340550648529,
    0.01028107920041966,
]
HPI_PI["w2"] = 0.0031941774986265154
HPI_PILOT["w2"] = 0.58995123538497729
HPI_FUNCTIONALS["w2"] = [
    0.10678954132568316,
    -0.0081322683742517214,
    -0.0081322683742517214,
    0.025818924064165825,
    -0.0081322683742517214,
    0.025818924064165825,
    0.025818924064165825,
    -0.0063783738554761436,
    -0.0081322683742517214,
    0.025818924064165825,
    0.025818924064165825,
    -0.0063783738554761436,
    0.025818924064165825,
    -0.0063783738554761436,
    -0.0063783738554761436,
    0.11859812310792768,
]
HPI_OTHER_PILOT["w2"] = [
    0.0048294506353121543,
    0.00011194186840190481,
    0.00011194186840190575,
    0.0049454428670101672,
]
HPI_ONE_STAGE["w2"] = [
    0.010931149365511707,
    0.0002509575847071024,
    0.00025095758470710457,
    0.010637368224506838,
]
HPI["w3"] = [
    0.0071185326368827066,
    -8.6457777277426256e-06,
    -0.00023511578569995219,
    -8.6457777277426527e-06,
    0.0070003340371843923,
    0.00093166299268965464,
    -0.00023511578569995295,
    0.00093166299268965475,
    0.0066124528858406313,
]
HPI_PI["w3"] = 0.0066264594371248861
HPI_PILOT["w3"] = 0.42656227916840445
HPI_FUNCTIONALS["w3"] = [
    0.38780142234107118,
    -0.0064944757794195502,
    -0.021865613035141437,
    -0.0064944757794195502,
    0.10249220784110287,
    -0.0022812687223925277,
    -0.021865613035141437,
    -0.0022812687223925277,
    0.098692668493259667,
    -0.0064944757794195502,
]
HPI_OTHER_PILOT["w3"] = [
    0.014319511294589946,
    0.0001633641788367162,
    -0.00053767932312053001,
    0.00016336417883671615,
    0.015302919343546195,
    0.0013507648288750705,
    -0.00053767932312053163,
    0.0013507648288750705,
    0.015024602314539216,
]
HPI_ONE_STAGE["w3"] = [
    0.015575412110552163,
    0.00010703358168117766,
    -0.00067777106663212275,
    0.00010703358168117766,
    0.016924849667965598,
    0.0014522110535344901,
    -0.00067777106663212427,
    0.0014522110535344899,
    0.016698060506463133,
]
HPI_SIXTH_PILOT = 0.69598018192581401  # w2's first stage (samse)
