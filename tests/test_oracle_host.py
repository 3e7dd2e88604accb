"""The host methods, the fused kernel and the NumPy engine (the estimators' small fits)
against the exact oracle on adversarial data."""

from adversarial import oracle_test

test_method_meets_the_oracle = oracle_test(["sparse", "fgt", "native", "fused", "numpy"])
