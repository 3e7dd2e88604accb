"""The approximate methods against the exact oracle, within their documented tolerances."""

import pytest
from hypothesis import given

from adversarial import ORACLE, check_against_oracle, problems


@pytest.mark.parametrize("method", ["binned", "topk"])
def test_method_meets_the_oracle(method):
    @ORACLE
    @given(problem=problems(method))
    def run(problem):
        check_against_oracle(method, *problem)

    run()
