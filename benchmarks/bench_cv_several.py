"""Leave-one-out CV bandwidth selection in several columns, against statsmodels.

Data: ``x ~ U[0, 5]^d``, ``y = Σ_j sin x_j + N(0, 0.5²)`` (seeded). For Nadaraya–Watson
and local linear (Gaussian), d ∈ {2, 3, 5}, n from 1e4 up: the search's time, its
objective evaluations, and its reported objective against a brute-force exact
evaluation at the selected bandwidths (NumPy, every pair; up to 2e4 points); sizes stop
growing once a case passes ``--cap`` seconds. statsmodels ``KernelReg(bw="cv_ls")`` on
small n (it sums every pair at every evaluation of a Nelder–Mead search), with the
objective it reaches evaluated by the same brute force, and at n = 5000 its time
estimated from one timed evaluation. Every case runs in its own process. Usage:
``python benchmarks/bench_cv_several.py [--cap SECONDS] [--against-statsmodels]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np


def sample(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 5, (n, d))
    return x, np.sin(x).sum(axis=1) + rng.normal(0, 0.5, n)


def brute_force_cv(x: np.ndarray, y: np.ndarray, h: np.ndarray, degree: int) -> float:
    """The textbook leave-one-out CV objective, every pair, in row chunks."""
    n = x.shape[0]
    residuals = []
    for start in range(0, n, 256):
        rows = np.arange(start, min(start + 256, n))
        delta = x[None, :, :] - x[rows, None, :]  # (rows, n, d)
        w = np.exp(-0.5 * ((delta / h) ** 2).sum(axis=-1))
        w[np.arange(len(rows)), rows] = 0.0
        if degree == 0:
            fit = (w @ y) / w.sum(axis=1)
        else:  # weighted least squares of y on [1, x − x_i] at each row
            design = np.concatenate([np.ones((*delta.shape[:2], 1)), delta], axis=-1)
            gram = np.einsum("rn,rnj,rnk->rjk", w, design, design)
            moment = np.einsum("rn,rnj,n->rj", w, design, y)
            fit = np.linalg.solve(gram, moment[..., None])[:, 0, 0]
        residuals.append(y[rows] - fit)
    return float(np.mean(np.concatenate(residuals) ** 2))


def case(library: str, n: int, d: int, degree: int) -> dict:
    x, y = sample(n, d)
    start = time.perf_counter()
    if library == "attnpool":
        import attnpool

        found = attnpool.select_bandwidth(x, y, degree=degree)
        h, evaluations = found.bandwidth, found.evaluations
        reported = found.objective
    elif library == "statsmodels":
        reg_type = "lc" if degree == 0 else "ll"
        model = counting_kernel_reg()(y, x, var_type="c" * d, reg_type=reg_type, bw="cv_ls")
        h, evaluations, reported = np.asarray(model.bw), model.evaluations, None
    else:  # one evaluation of statsmodels' objective, at its own starting bandwidths
        h = 1.06 * np.std(x, axis=0) * n ** (-1.0 / (4 + d))
        model = counting_kernel_reg()(y, x, var_type="c" * d, reg_type="lc", bw=h)
        start = time.perf_counter()
        model.cv_loo(h, model.est["lc"])
        return {"seconds": time.perf_counter() - start}
    seconds = time.perf_counter() - start
    exact = brute_force_cv(x, y, h, degree) if n <= 20_000 else None
    return {"seconds": seconds, "h": h.tolist(), "evaluations": evaluations,
            "reported": reported, "exact": exact}  # fmt: skip


def counting_kernel_reg():
    """statsmodels' ``KernelReg``, counting its objective's evaluations."""
    from statsmodels.nonparametric.kernel_regression import KernelReg

    class Counting(KernelReg):
        evaluations = 0

        def cv_loo(self, bw, func):
            self.evaluations += 1
            return super().cv_loo(bw, func)

    return Counting


def run(library: str, n: int, d: int, degree: int) -> dict:
    found = subprocess.run(
        [sys.executable, __file__, "--case", library, str(n), str(d), str(degree)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(found.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=120.0)
    parser.add_argument("--case", nargs=4)
    parser.add_argument("--against-statsmodels", action="store_true",
                        help="only the comparison with statsmodels")  # fmt: skip
    options = parser.parse_args()
    if options.case:
        library, n, d, degree = options.case
        print(json.dumps(case(library, int(n), int(d), int(degree))))
        return
    if not options.against_statsmodels:
        table(options.cap)
    against_statsmodels()


def table(cap: float) -> None:
    print("| fit | d | n | attnpool (s) | evaluations | reported − exact (rel.) |")
    print("|---|---|---|---|---|---|")
    for degree, name in ((0, "Nadaraya–Watson"), (1, "local linear")):
        for d in (2, 3, 5):
            for n in (10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000):
                ours = run("attnpool", n, d, degree)
                gap = (
                    f"{abs(ours['reported'] - ours['exact']) / ours['exact']:.1e}"
                    if ours["exact"] is not None
                    else "—"
                )
                print(f"| {name} | {d} | {n:.0e} | {ours['seconds']:.1f} | "
                      f"{ours['evaluations']} | {gap} |", flush=True)  # fmt: skip
                if ours["seconds"] > cap:
                    break


def against_statsmodels() -> None:
    print("\nstatsmodels KernelReg(bw='cv_ls'), Nadaraya–Watson, d = 3, in the same run:")
    for n in (300, 600):
        theirs, ours = run("statsmodels", n, 3, 0), run("attnpool", n, 3, 0)
        ratio = theirs["seconds"] / ours["seconds"]
        print(f"- n = {n}: statsmodels {theirs['seconds']:.1f} s, {theirs['evaluations']} "
              f"evaluations (objective {theirs['exact']:.6f}), attnpool "
              f"{ours['seconds']:.2f} s (objective {ours['exact']:.6f}): {ratio:.0f}x",
              flush=True)  # fmt: skip
    # n = 5000 (an hour or more of statsmodels): its time estimated as the evaluations its
    # search took at n = 600 times one evaluation at n = 5000, timed
    one, ours = run("statsmodels-evaluation", 5000, 3, 0), run("attnpool", 5000, 3, 0)
    estimate = one["seconds"] * theirs["evaluations"]
    print(f"- n = 5000: statsmodels ~{estimate:.0f} s ({one['seconds']:.2f} s an evaluation "
          f"× {theirs['evaluations']}), attnpool {ours['seconds']:.2f} s: "
          f"~{estimate / ours['seconds']:.0f}x", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
