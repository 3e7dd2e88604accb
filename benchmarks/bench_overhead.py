"""What a small call costs beyond its arithmetic, against the textbook and scikit-learn.

A 100-key, 10-query problem: ``NadarayaWatson.predict``, ``attention_pool`` and
``kernel_density`` against the textbook's four NumPy lines (distances → kernel →
normalise → weighted sum) and scikit-learn's ``KernelDensity.score_samples``; and the
planner's decision for each task (``sums/plan.py``: the facts read from the arguments,
then its table). Best of seven rounds, in this process, ratios of the same run.

    python benchmarks/bench_overhead.py
"""

from __future__ import annotations

import timeit

import numpy as np

import attnpool
from attnpool import kernels
from attnpool.sums.facts import density_facts, fit_facts, pool_facts, search_facts
from attnpool.sums.local_model import model_for
from attnpool.sums.plan import plan


def best_ms(function, number: int = 2000) -> float:
    function()
    return min(timeit.repeat(function, number=number, repeat=7)) / number * 1e3


def main() -> None:
    from sklearn.neighbors import KernelDensity

    rng = np.random.default_rng(0)
    x, q = rng.uniform(size=100), rng.uniform(size=10)
    y = np.sin(6 * x)
    X, Q, h = x[:, None], q[:, None], 0.1
    fitted = attnpool.NadarayaWatson(bandwidth=h).fit(X, y)
    sklearn_kde = KernelDensity(bandwidth=h).fit(X)

    def four_lines():
        weights = np.exp(-0.5 * ((q[:, None] - x[None, :]) / h) ** 2)
        return weights @ y / weights.sum(axis=1)

    np.testing.assert_allclose(fitted.predict(Q), four_lines(), rtol=1e-12)
    np.testing.assert_allclose(
        attnpool.log_density(x, q, bandwidth=h), sklearn_kde.score_samples(Q), rtol=1e-12
    )
    textbook = best_ms(four_lines)
    scikit = best_ms(lambda: sklearn_kde.score_samples(Q))
    print("100 keys, 10 queries (ms, best of 7)")
    print(f"{'call':<34}{'ms':>9}{'× four lines':>14}{'× sklearn':>11}")
    print(f"{'the four NumPy lines':<34}{textbook:>9.4f}{1.0:>14.1f}{'':>11}")
    print(f"{'sklearn score_samples':<34}{scikit:>9.4f}{scikit / textbook:>14.1f}{1.0:>11.2f}")
    for name, call in [
        ("NadarayaWatson.predict", lambda: fitted.predict(Q)),
        ("attention_pool", lambda: attnpool.attention_pool(q, x, y, bandwidth=h)),
        ("kernel_density", lambda: attnpool.kernel_density(x, q, bandwidth=h)),
    ]:
        ms = best_ms(call)
        print(f"{name:<34}{ms:>9.4f}{ms / textbook:>14.1f}{ms / scikit:>11.2f}")

    gaussian, model = kernels.get("gaussian"), model_for(X)
    print("\nthe planner: facts read and the table applied (µs, best of 7)")
    for task, decide in [
        (
            "pool",
            lambda: plan(pool_facts(gaussian, Q, X, np.ones(1), values=y[:, None], numpy=True)),
        ),
        ("density", lambda: plan(density_facts(gaussian, X, Q, np.ones(1), numpy=True))),
        ("fit", lambda: plan(fit_facts(model, 10, 100, 1))),
        ("search", lambda: plan(search_facts(model, 100, 1))),
    ]:
        print(f"{task:<34}{best_ms(decide, 20000) * 1e3:>9.2f}  -> {decide().backend}")


if __name__ == "__main__":
    main()
