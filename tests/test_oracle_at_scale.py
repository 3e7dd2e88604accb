"""``auto`` beyond the dense path against the exact oracle on adversarial data."""

from hypothesis import given, settings
from hypothesis import strategies as st

from adversarial import ORACLE, check_against_oracle, problems
from attnpool.sums import plan


def test_auto_beyond_the_dense_path_meets_the_oracle(monkeypatch):
    # with a low dense limit, auto takes fgt, sparse, native or stream on problems small
    # enough for the oracle, several key blocks long
    monkeypatch.setattr(plan, "DENSE_MAX_PAIRS", 2**10)

    @ORACLE
    @given(problem=problems("auto", n=8, m=2500))
    def run(problem):
        check_against_oracle("auto", *problem)

    run()


@settings(max_examples=12, deadline=None, derandomize=True)
@given(data=st.data())
def test_auto_at_scale_meets_the_oracle(data):
    # large enough that auto leaves the dense path unaided
    problem = data.draw(problems("auto", n=48, m=50_000))
    check_against_oracle("auto", *problem)
