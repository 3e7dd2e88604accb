"""Bad input: a ValueError/TypeError naming the argument, what was received and what is accepted."""

import numpy as np
import pytest

import attnpool
from attnpool import attention_pool, attention_weights

Q = np.linspace(0, 1, 4)
K = np.linspace(0, 1, 5)
V = np.arange(5.0)
K2 = np.zeros((5, 2))


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        (
            {"values": np.arange(4.0)},
            ValueError,
            r"values: expected one row per key \(5 rows\); received shape \(4,\)",
        ),
        (
            {"queries": np.zeros((4, 2))},
            ValueError,
            r"queries: expected 1 feature column\(s\) .* received shape \(4, 2\)",
        ),
        (
            {"keys": np.zeros((0,)), "values": np.zeros(0)},
            ValueError,
            r"keys: expected at least one key",
        ),
        (
            {"keys": np.array([0.0, np.nan, 1, 2, 3])},
            ValueError,
            r"keys: expected finite numbers; received 1 NaN .* index \(1, 0\)",
        ),
        ({"queries": np.array([0.0, np.inf])}, ValueError, r"queries: expected finite numbers"),
        (
            {"values": np.array([0.0, 1, 2, 3, np.nan])},
            ValueError,
            r"values: expected finite numbers",
        ),
        (
            {"bandwidth": 0.0},
            ValueError,
            r"bandwidth: expected positive finite number\(s\); received 0.0",
        ),
        ({"bandwidth": -1.0}, ValueError, r"bandwidth: expected positive finite"),
        (
            {"bandwidth": np.nan},
            ValueError,
            r"bandwidth: expected positive finite number\(s\); received nan",
        ),
        (
            {"bandwidth": [1.0, 2.0, 3.0]},
            ValueError,
            r"bandwidth: expected a positive scalar or a vector of length 1 .* shape \(3,\)",
        ),
        (
            {"bandwidth": "wide"},
            TypeError,
            r"bandwidth: expected a positive number .* received the string 'wide'",
        ),
        (
            {"kernel": "gauss"},
            ValueError,
            r"kernel: unknown kernel 'gauss'; accepted names: gaussian, boxcar",
        ),
        (
            {"kernel": 3},
            TypeError,
            r"kernel: expected a kernel name, a Kernel record or a callable; received int",
        ),
        (
            {"queries": np.array(["a", "b"])},
            TypeError,
            r"queries: expected a numeric .* received dtype <U1",
        ),
        (
            {"keys": np.array([True, False])},
            TypeError,
            r"keys: expected a numeric .* received dtype bool",
        ),
        (
            {"queries": np.zeros((2, 2, 2))},
            ValueError,
            r"queries: expected shape \(n,\) or \(n, d\); received an array of shape \(2, 2, 2\)",
        ),
        ({"values": np.zeros((5, 2, 2))}, ValueError, r"values: expected shape \(m,\) or \(m, p\)"),
        (
            {"queries": 1.0},
            ValueError,
            r"queries: expected shape \(n,\) or \(n, d\); received an array of shape \(\)",
        ),
        (
            {"empty": "zero"},
            ValueError,
            r"empty: expected one of 'nan', 'nearest', 'warn', 'raise'; received 'zero'",
        ),
        (
            {"block_size": 0},
            ValueError,
            r"block_size: expected a positive integer or None; received 0",
        ),
        ({"block_size": 2.5}, ValueError, r"block_size: expected a positive integer"),
    ],
)
def test_bad_input_is_named(kwargs, error, pattern):
    arguments = {"queries": Q, "keys": K, "values": V, **kwargs}
    with pytest.raises(error, match=pattern):
        attention_pool(
            arguments.pop("queries"), arguments.pop("keys"), arguments.pop("values"), **arguments
        )


def test_ragged_lists_are_rejected():
    with pytest.raises(TypeError, match="queries: expected a numeric array"):
        attention_pool([[0.0], [1.0, 2.0]], K, V)


def test_weights_check_dimensions_too():
    with pytest.raises(ValueError, match="queries: expected 2 feature column"):
        attention_weights(Q, K2)


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: attnpool.local_regression(np.zeros((0, 1)), np.zeros(0), [0.5], bandwidth=0.1),
         r"x_train: expected at least 1 row\(s\); received shape \(0, 1\)"),
        (lambda: attnpool.confidence_band(np.zeros((0, 1)), np.zeros(0), [0.5], bandwidth=0.1),
         r"x_train: expected at least 1 row\(s\)"),
        (lambda: attnpool.local_polynomial(np.zeros((0, 1)), np.zeros(0), [0.5], bandwidth=0.1),
         r"x_train: expected at least 1 row\(s\)"),
        (lambda: attnpool.rule_of_thumb(np.zeros((0, 1))), r"x: expected at least 1 row\(s\)"),
        (lambda: attnpool.binned_local_polynomial(np.zeros(0), np.zeros(0), bandwidth=0.1),
         r"x, y: expected two arrays of shape \(n,\) of one length, at least one point"),
        (lambda: attnpool.binned_local_polynomial(K, V[:4], bandwidth=0.1),
         r"received shapes \(5,\) and \(4,\)"),
        (lambda: attnpool.binned_local_polynomial(K, np.r_[V[:4], np.nan], bandwidth=0.1),
         r"x, y: expected finite numbers"),
        (lambda: attnpool.binned_local_polynomial(np.ones(5), V, bandwidth=0.1),
         r"x: expected a range of values \(or range_x\); received all 1.0"),
        (lambda: attnpool.binned_local_polynomial(K, V, bandwidth=0.1, gridsize=1),
         r"gridsize: expected at least 2 nodes; received 1"),
        # weights float64 cannot pool: their span beyond the float range is said so
        (lambda: attnpool.nadaraya_watson(K, V, [0.5], weights=[1e300, 1e100, 1, 1e-100, 1e-300]),
         r"weights: the positive weights span more than 1\.8e\+308 \(largest 1e\+300 / "
         r"smallest 1e-300\), beyond 6\.7e\+153"),
        (lambda: attnpool.nadaraya_watson(K, V, [0.5], weights=[1e200, 1, 1, 1, 1]),
         r"weights: the positive weights span 1e\+200 \(largest"),
    ],
)  # fmt: skip
def test_empty_and_mismatched_training_data_are_named(call, pattern):
    """These raised numpy's own errors ("zero-size array to reduction operation",
    "boolean index did not match", a division by zero), or — a NaN response in the
    binned fit — answered with numbers."""
    with pytest.raises(ValueError, match=pattern):
        call()


@pytest.mark.parametrize("estimator", ["NadarayaWatson", "LocalLinear"])
def test_estimators_refuse_a_categorical_bandwidth_of_one_or_more(estimator):
    # the functions refused λ = 1.5; the estimators fitted with it and predicted numbers
    X = np.c_[np.arange(10.0), np.arange(10) % 3]
    model = getattr(attnpool, estimator)(bandwidth=[1.0, 1.5], var_type="cu")
    pattern = r"bandwidth: column 1 is categorical \('u'\); its bandwidth λ must lie in \(0, 1\)"
    with pytest.raises(ValueError, match=pattern + r"; received 1\.5"):
        model.fit(X, np.arange(10.0))
