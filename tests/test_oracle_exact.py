"""The exact engines and ``auto`` against the exact oracle on adversarial data."""

from adversarial import oracle_test

test_method_meets_the_oracle = oracle_test(["dense", "stream", "auto"])
