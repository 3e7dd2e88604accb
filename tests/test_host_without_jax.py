"""NumPy calls that the host routes serve import no JAX: approximate pools asked for by
name, densities on the host methods, the layer's exact re-sums, and CV searches on a
host backend's sums — each checked in a fresh interpreter, and equal to what a process
that has JAX computes."""

import os

import numpy as np
import pytest

import attnpool
from fresh_process import python

APPROXIMATE_POOLS = (
    "import sys, numpy as np, attnpool\n"
    "rng = np.random.default_rng(4)\n"
    "k, q = rng.uniform(0, 1, (5000, 2)), rng.uniform(0, 1, (300, 2))\n"
    "v = np.sin(8 * k)\n"
    "out = [attnpool.attention_pool(q, k, v, bandwidth=0.02, method=method) for method in\n"
    "       (attnpool.Tree(rtol=1e-6), attnpool.TopK(k=400), attnpool.Binned(tolerance=1e-5))]\n"
    "np.savez(sys.argv[1], *out)\n"
    "print('jax' in sys.modules)\n"
)


def test_the_approximate_host_methods_asked_for_need_no_jax(tmp_path):
    """``Tree``, ``TopK`` and ``Binned`` pools of NumPy arrays run on the host route: a
    fresh process imports no JAX, and gets what a process that has it gets."""
    run = python(["-c", APPROXIMATE_POOLS, str(tmp_path / "out.npz")])
    assert run.stdout.split() == ["False"]
    import jax  # noqa: F401

    rng = np.random.default_rng(4)
    k, q = rng.uniform(0, 1, (5000, 2)), rng.uniform(0, 1, (300, 2))
    got = np.load(tmp_path / "out.npz")
    for index, method in enumerate([attnpool.Tree(rtol=1e-6), attnpool.TopK(k=400),
                                    attnpool.Binned(tolerance=1e-5)]):  # fmt: skip
        want = attnpool.attention_pool(q, k, np.sin(8 * k), bandwidth=0.02, method=method)
        np.testing.assert_array_equal(got[f"arr_{index}"], want)


DENSITIES = (
    "import sys, numpy as np\n"
    "from attnpool import kernel_density, select_density_bandwidth\n"
    "rng = np.random.default_rng(5)\n"
    "x1, x3 = rng.normal(size=(20000, 1)), rng.normal(size=(3000, 3))\n"
    "out = [kernel_density(x1, np.linspace(-4, 4, 300), bandwidth=0.1),  # fgt\n"
    "       kernel_density(x3, x3[:700] + 0.1, bandwidth=0.4),  # native\n"
    "       kernel_density(x3[:200], x3[:50], bandwidth=0.4),  # NumPy pairs\n"
    "       select_density_bandwidth(x1[:2000], method='cv_ml').bandwidth,\n"
    "       kernel_density(x1, np.linspace(-4, 4, 300), bandwidth=0.1, method='binned'),\n"
    "       kernel_density(x3[:, :2], x3[:300, :2], bandwidth=0.4,\n"
    "                      weights=np.linspace(1, 2, 3000), method='binned')]\n"
    "np.savez(sys.argv[1], *out)\n"
    "print('jax' in sys.modules, 'attnpool.engines.numpy_engine' in sys.modules)\n"
)


def test_densities_on_the_host_methods_need_no_jax(tmp_path):
    """A density summed by the host methods (NumPy pairs, the ``fgt`` expansions, the
    ``native`` loop, ``binned`` with or without observation weights) and likelihood CV
    in one column import no JAX (~1 s of a
    first call), nor the regressions' bandwidth selection and its engines (~2 ms); in a
    process that has JAX they give the same numbers."""
    from attnpool.methods import native

    assert native.available(True, 3, 1), native.unavailable_reason()
    cache = os.environ.get("ATTNPOOL_CACHE")
    run = python(["-c", DENSITIES, str(tmp_path / "out.npz")], cache)
    assert run.stdout.split() == ["False", "False"]
    import jax  # noqa: F401  (this process has it: the same host methods must answer)

    rng = np.random.default_rng(5)
    x1, x3 = rng.normal(size=(20000, 1)), rng.normal(size=(3000, 3))
    want = [attnpool.kernel_density(x1, np.linspace(-4, 4, 300), bandwidth=0.1),
            attnpool.kernel_density(x3, x3[:700] + 0.1, bandwidth=0.4),
            attnpool.kernel_density(x3[:200], x3[:50], bandwidth=0.4),
            attnpool.select_density_bandwidth(x1[:2000], method="cv_ml").bandwidth,
            attnpool.kernel_density(x1, np.linspace(-4, 4, 300), bandwidth=0.1, method="binned"),
            attnpool.kernel_density(x3[:, :2], x3[:300, :2], bandwidth=0.4,
                                    weights=np.linspace(1, 2, 3000), method="binned")]  # fmt: skip
    got = np.load(tmp_path / "out.npz")
    for index, expected in enumerate(want):
        np.testing.assert_array_equal(got[f"arr_{index}"], expected)


LAYER_RESUMS = (
    "import sys, numpy as np, attnpool\n"
    "class Lazy:  # settles nothing: every row is the layer's\n"
    "    name, serves = 'lazy', attnpool.Serves()\n"
    "    def log_sums(self, problem):\n"
    "        n, p = problem.queries.shape[0], problem.values.shape[1]\n"
    "        return attnpool.LogSums(np.zeros(n), np.zeros((n, 1 + p)), np.zeros(n, bool))\n"
    "attnpool.register_backend(Lazy())\n"
    "rng = np.random.default_rng(9)\n"
    "x, x3 = rng.normal(size=(20000, 1)), rng.normal(size=(3000, 3))\n"
    "out = [attnpool.attention_pool(x[:3000], x, np.sin(x), bandwidth=0.05, method='lazy'),\n"
    "       attnpool.attention_pool(x[:3000], x, np.sin(x), kernel='tricube',\n"
    "                               bandwidth=0.05, method='lazy'),\n"
    "       attnpool.kernel_density(x3, x3[:1500] + 0.1, bandwidth=0.4, method='lazy')]\n"
    "np.savez(sys.argv[1], *out)\n"
    "print('jax' in sys.modules)\n"
)


def test_the_layer_sums_many_rows_again_on_exact_host_backends_without_jax(tmp_path):
    """Rows a backend leaves, too many pairs for NumPy, are summed again by the
    finishing table's exact host backends — ``fgt`` (a Gaussian column), ``sparse`` (a
    compact one), ``native`` (the Gaussian in three) — with no JAX; the same numbers as
    the textbook's sums."""
    from attnpool.methods import native
    from attnpool.sums.backends import exact_log_sums
    from attnpool.sums.problem import SumProblem

    assert native.available(True, 3, 1), native.unavailable_reason()
    run = python(["-c", LAYER_RESUMS, str(tmp_path / "out.npz")], os.environ.get("ATTNPOOL_CACHE"))
    assert run.stdout.split() == ["False"]
    rng = np.random.default_rng(9)
    x, x3 = rng.normal(size=(20000, 1)), rng.normal(size=(3000, 3))
    got = np.load(tmp_path / "out.npz")
    for index, kernel in enumerate(["gaussian", "tricube"]):
        want = exact_log_sums(SumProblem(x[:3000], x, np.sin(x), np.array([0.05]),
                                         attnpool.kernels.get(kernel)))  # fmt: skip
        np.testing.assert_allclose(got[f"arr_{index}"], want.sums[:, 1:] / want.sums[:, :1],
                                   rtol=0, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(
        got["arr_2"], attnpool.kernel_density(x3, x3[:1500] + 0.1, bandwidth=0.4), rtol=1e-12
    )


HOST_SEARCHES = (
    "import sys, numpy as np\n"
    "from attnpool import select_bandwidth\n"
    "rng = np.random.default_rng(6)\n"
    "x1, x2 = rng.normal(size=(3000, 1)), rng.normal(size=(1500, 2))\n"
    "y1, y2 = np.sin(x1[:, 0]) + 0.1 * x1[:, 0] ** 2, np.sin(x2[:, 0]) + x2[:, 1]\n"
    "w = rng.uniform(0.5, 2.0, 3000)\n"
    "out = [select_bandwidth(x1, y1, kernel='epanechnikov', pooling='sparse').bandwidth,\n"
    "       select_bandwidth(x1, y1, pooling='fgt').bandwidth,\n"
    "       select_bandwidth(x2, y2, pooling='native').bandwidth,\n"
    "       select_bandwidth(x1, y1).bandwidth,  # auto: fgt's sums\n"
    "       select_bandwidth(x1, y1, weights=w).bandwidth,  # fgt's, through the layer\n"
    "       select_bandwidth(x1, y1, degree=1).bandwidth,  # the compiled loop's\n"
    "       select_bandwidth(x1, y1, kernel='epanechnikov').bandwidth]  # sparse's\n"
    "np.savez(sys.argv[1], *out)\n"
    "print('jax' in sys.modules)\n"
)


def test_searches_on_a_host_backends_sums_need_no_jax(tmp_path):
    """A CV search with ``pooling="sparse"``, ``"fgt"`` or ``"native"`` sums on the host
    backend and imports no JAX (its compiled program is only the fallback for a bandwidth
    the sums leave), as does ``"auto"``'s of one column beyond the NumPy engine (``fgt``'s
    sums, weighted too; the loop's for local linear; ``sparse``'s for the epanechnikov);
    in a process that has JAX it finds the same bandwidths."""
    run = python(["-c", HOST_SEARCHES, str(tmp_path / "out.npz")], os.environ.get("ATTNPOOL_CACHE"))
    assert run.stdout.split() == ["False"]
    import jax  # noqa: F401

    rng = np.random.default_rng(6)
    x1, x2 = rng.normal(size=(3000, 1)), rng.normal(size=(1500, 2))
    y1, y2 = np.sin(x1[:, 0]) + 0.1 * x1[:, 0] ** 2, np.sin(x2[:, 0]) + x2[:, 1]
    w = rng.uniform(0.5, 2.0, 3000)
    sparse = attnpool.select_bandwidth(x1, y1, kernel="epanechnikov", pooling="sparse")
    want = [sparse.bandwidth,
            attnpool.select_bandwidth(x1, y1, pooling="fgt").bandwidth,
            attnpool.select_bandwidth(x2, y2, pooling="native").bandwidth,
            attnpool.select_bandwidth(x1, y1, pooling="fgt").bandwidth,
            attnpool.select_bandwidth(x1, y1, weights=w).bandwidth,
            attnpool.select_bandwidth(x1, y1, degree=1).bandwidth,
            sparse.bandwidth]  # fmt: skip
    got = np.load(tmp_path / "out.npz")
    for index, expected in enumerate(want):
        np.testing.assert_array_equal(got[f"arr_{index}"], expected)


HOST_AICC = (
    "import sys, numpy as np, attnpool\n"
    "rng = np.random.default_rng(8)\n"
    "x = rng.uniform(0, 1, (200, 1)); y = np.sin(6 * x[:, 0]) + 0.3 * rng.normal(size=200)\n"
    "xm = np.stack([rng.uniform(0, 1, 150), rng.integers(0, 3, 150)], axis=1)\n"
    "ym = xm[:, 0] + xm[:, 1] + 0.2 * rng.normal(size=150)\n"
    "found = [attnpool.select_bandwidth(x, y, method='aicc', degree=d) for d in (0, 1)]\n"
    "found += [attnpool.select_bandwidth(xm, ym, method='aicc', degree=1, var_type='cu')]\n"
    "curves = [attnpool.cv_curve(x, y, [0.05, 0.2]),\n"
    "          attnpool.aicc_curve(xm, ym, [[0.1, 0.0], [0.3, 0.5]], var_type='cu')]\n"
    "np.savez(sys.argv[1], *[s.bandwidth for s in found], [s.objective for s in found], *curves)\n"
    "print('jax' in sys.modules)\n"
)


def test_a_small_aicc_search_and_the_curves_need_no_jax_and_equal_the_compiled_ones(tmp_path):
    # AICc's in-sample fits and smoother diagonals by NumPy pairs through the sums layer
    # (a first 200-row fit: 0.13 s, against 2.2 s when it built its program); cv_curve
    # and aicc_curve of small fits too. (Weighted AICc searches stay compiled: the plan.)
    run = python(["-c", HOST_AICC, str(tmp_path / "out.npz")], os.environ.get("ATTNPOOL_CACHE"))
    assert run.stdout.split() == ["False"]
    got = np.load(tmp_path / "out.npz")
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 1, (200, 1))
    y = np.sin(6 * x[:, 0]) + 0.3 * rng.normal(size=200)
    xm = np.stack([rng.uniform(0, 1, 150), rng.integers(0, 3, 150)], axis=1)
    ym = xm[:, 0] + xm[:, 1] + 0.2 * rng.normal(size=150)
    compiled = [attnpool.select_bandwidth(x, y, method="aicc", degree=d, block_size=64)
                for d in (0, 1)]  # fmt: skip
    compiled += [attnpool.select_bandwidth(xm, ym, method="aicc", degree=1, var_type="cu",
                                           block_size=64)]  # fmt: skip
    for index, want in enumerate(compiled):
        np.testing.assert_allclose(got[f"arr_{index}"], want.bandwidth, rtol=1e-4)
        assert got["arr_3"][index] <= want.objective + 1e-9 * abs(want.objective)
    # the curves (a λ of 0 included) on the host, as the compiled criterion gives them
    np.testing.assert_allclose(got["arr_4"], attnpool.cv_curve(x, y, [0.05, 0.2], block_size=64),
                               rtol=1e-12)  # fmt: skip
    compiled_curve = attnpool.aicc_curve(xm, ym, [[0.1, 0.0], [0.3, 0.5]], var_type="cu",
                                         block_size=64)  # fmt: skip
    np.testing.assert_allclose(got["arr_5"], compiled_curve, rtol=1e-12)


@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("var_type, weighted", [("c", False), ("cc", True), ("cou", True)])
def test_the_host_aicc_is_the_compiled_criterion(var_type, weighted, degree):
    from attnpool.bandwidth.compiled import criterion_curve
    from attnpool.engines.numpy_search import aicc_objective
    from attnpool.sums.local_model import bandwidth_of, model_for

    rng = np.random.default_rng(len(var_type) + degree)
    columns = [rng.normal(size=120) if t == "c" else rng.integers(0, 4, 120) for t in var_type]
    x = np.stack(columns, axis=1).astype(float)
    y = np.stack([x[:, 0] ** 2 + np.sin(3 * x[:, -1]), np.cos(x[:, 0])], axis=1)
    y += 0.1 * rng.normal(size=y.shape)
    w = rng.uniform(0.2, 3.0, 120) if weighted else None
    model = model_for(x, kernel="gaussian", var_type=var_type, degree=degree)
    objective = aicc_objective(x, y, model, w)
    thetas = rng.uniform(-1.5, 0.5, (5, len(var_type)))
    bandwidths = np.stack([bandwidth_of(theta, model) for theta in thetas])
    want = criterion_curve(x, y, bandwidths, model, None, "aicc", w)
    got = np.array([objective(theta) for theta in thetas])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


LARGE_AICC = (
    "import sys, numpy as np, attnpool\n"
    "rng = np.random.default_rng(9)\n"
    "x = rng.uniform(0, 10, 4000); y = np.sin(x) + 0.3 * rng.normal(size=4000)\n"
    "found = attnpool.select_bandwidth(x, y, method='aicc')\n"
    "np.savez(sys.argv[1], found.bandwidth, [found.objective])\n"
    "print('jax' in sys.modules)\n"
)


def test_a_large_aicc_search_of_one_gaussian_column_sums_on_fgt_without_jax(tmp_path):
    # beyond NumPy's pairs the in-sample fits and hat diagonals by the fgt backend, O(n)
    # (4000 rows: the compiled search 3.3 s before; now 0.05 s), the compiled optimum
    run = python(["-c", LARGE_AICC, str(tmp_path / "out.npz")], os.environ.get("ATTNPOOL_CACHE"))
    assert run.stdout.split() == ["False"]
    got = np.load(tmp_path / "out.npz")
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 10, 4000)
    y = np.sin(x) + 0.3 * rng.normal(size=4000)
    compiled = attnpool.select_bandwidth(x, y, method="aicc", block_size=1024)
    np.testing.assert_allclose(got["arr_0"], compiled.bandwidth, rtol=1e-4)
    assert got["arr_1"][0] <= compiled.objective + 1e-9 * abs(compiled.objective)
