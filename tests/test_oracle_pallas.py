"""The tiled Pallas kernel (in Pallas' interpret mode on this CPU) against the exact oracle
on adversarial data: every non-negative kernel, d from 1 to 8, float32 and float64."""

from adversarial import oracle_test

test_method_meets_the_oracle = oracle_test(["pallas"])
