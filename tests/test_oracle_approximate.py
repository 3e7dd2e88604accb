"""The approximate methods against the exact oracle, within their documented tolerances."""

from adversarial import oracle_test

test_method_meets_the_oracle = oracle_test(["binned", "topk"])
