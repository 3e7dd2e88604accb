"""For every test and doctest (tests/, src/, the guide): the pictures a test draws are
pyplot figures, which pyplot keeps until they are closed; each test closes its own."""

import sys

import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
