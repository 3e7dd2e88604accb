"""The host methods and the fused kernel against the exact oracle on adversarial data."""

from adversarial import oracle_test

test_method_meets_the_oracle = oracle_test(["sparse", "fgt", "native", "fused"])
