# ipu_gpu — the commands a new user runs; see README.md
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test

.PHONY: demo test test-gpu test-slow bench lint venv clean

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e ".[test,ref]"
	touch $(STAMP)

venv: $(STAMP)

DEMO_STAMP := $(VENV)/.installed-base
$(DEMO_STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e .
	touch $(DEMO_STAMP)

## make demo: install into .venv and train a small MLP with the TF-shaped core
demo: $(DEMO_STAMP)
	$(VPY) examples/train_mlp.py
	$(VENV)/bin/ipu-gpu run examples/ipu_train.py

## make test: install the test extras into .venv and run the CPU test suite
# Bounds-checked Numba kernels are slow, and Numba's cache key ignores NUMBA_BOUNDSCHECK, so
# test runs keep their compiled kernels apart from the ones `make demo`/`make bench` load.
# Hypothesis runs derandomized there (the `ci` profile), so a verdict never depends on chance.
CHECKED := NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=$(CURDIR)/.numba-cache-boundscheck \
	IPU_GPU_HYPOTHESIS_PROFILE=ci

test: $(STAMP)
	$(CHECKED) $(VPY) -m pytest -q -m "not gpu and not slow"

## make test-slow: the tests marked slow
lint: $(STAMP)
	$(VPY) -m ruff check ipu_gpu tests bench examples

test-slow: $(STAMP)
	$(CHECKED) $(VPY) -m pytest -q -m "slow"

## make test-gpu: on a GPU machine, with the interpreter already there (numpy, numba, cupy, pytest)
test-gpu:
	IPU_GPU_BACKEND=gpu NUMBA_BOUNDSCHECK=1 $(PY) -m pytest -q -m gpu -p no:cacheprovider

## make bench: run bench/ and rewrite bench/README.md with the ratio table
bench:
	@if [ -x $(VPY) ]; then B=$(VPY); else B=$(PY); fi; \
	$$B -m pytest bench -q --benchmark-enable --benchmark-only --benchmark-json=bench/.last.json -p no:cacheprovider && \
	$$B bench/report.py bench/.last.json bench/README.md

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .numba-cache-boundscheck
