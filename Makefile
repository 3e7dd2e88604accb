# Quick start: `make demo` and `make test` on a machine with only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
OUT ?= demo-output

.PHONY: demo test lint bench docs docs-images clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The package is installed editable and compiled (meson.build: the C loops, once per
# instruction set) in build/dev, with its build requirements in the environment:
# importing it rebuilds whatever C changed. Re-installed whenever pyproject.toml or
# meson.build changes. The demo needs the command line (and with it the pictures):
# the [cli] extra.
BUILD_REQUIRES := 'meson-python>=0.18' 'meson>=1.3' 'ninja>=1.11'
INSTALL := PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pip install -q \
	--no-build-isolation -Cbuild-dir=build/dev -e

$(VENV)/.build-requires: | $(BIN)/python
	$(BIN)/python -m pip install -q $(BUILD_REQUIRES)
	touch $@

$(VENV)/.installed: pyproject.toml meson.build | $(VENV)/.build-requires
	$(INSTALL) '.[cli]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml meson.build | $(VENV)/.build-requires
	$(INSTALL) '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/attnpool demo --out $(OUT)
	@echo "Pictures written to $(OUT)/: fit.png heatmaps.png kernels.png lookup.png"

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks docs examples
	$(BIN)/ruff format --check src tests benchmarks docs examples
	$(BIN)/mypy

$(VENV)/.installed-bench: pyproject.toml $(VENV)/.installed-dev
	$(INSTALL) '.[dev,bench]'
	touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/bench_pooling.py
	$(BIN)/python benchmarks/bench_regression.py --large
	$(BIN)/python benchmarks/bench_distributed.py
	$(BIN)/python benchmarks/bench_first_call.py
	$(BIN)/python benchmarks/bench_density.py
	$(BIN)/python benchmarks/bench_cv_several.py
	$(BIN)/python benchmarks/bench_lowess.py
	$(BIN)/python benchmarks/bench_smoothers_dask.py
	$(BIN)/python benchmarks/bench_tree.py
	$(BIN)/python benchmarks/bench_wheel.py
	$(BIN)/python benchmarks/bench_overhead.py

$(VENV)/.installed-docs: pyproject.toml $(VENV)/.installed-dev
	$(INSTALL) '.[dev,docs]'
	touch $@

# The site: warnings are errors; then every internal link and image is checked, and the
# pages are looked at in headless Chromium, offline (figures drawn, maths typeset).
docs: $(VENV)/.installed-docs
	rm -rf docs/_build docs/api/generated docs/auto_examples docs/sg_execution_times.rst
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html
	$(BIN)/python docs/check_links.py docs/_build/html
	$(BIN)/python docs/check_pages.py docs/_build/html

# The README's pictures.
docs-images: $(VENV)/.installed-dev
	$(BIN)/attnpool demo --out docs/images
	$(BIN)/attnpool learn-demo --out docs/images

clean:
	rm -rf $(VENV) build dist $(OUT) .pytest_cache .ruff_cache docs/_build docs/api/generated docs/auto_examples
