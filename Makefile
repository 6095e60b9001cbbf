# ipu_gpu — the commands a new user runs; see README.md
PY ?= python3
# extra flags for `python -m venv`: `make demo VENV_FLAGS=--system-site-packages` uses the
# system python's numpy/numba/cupy (a machine without network; see README.md)
VENV_FLAGS ?=
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test

.PHONY: demo test test-gpu test-slow bench bench-part bench-report lint venv clean

$(VPY):
	$(PY) -m venv $(VENV_FLAGS) $(VENV)
	-$(VPY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e ".[test,ref]"
	touch $(STAMP)

venv: $(STAMP)

# `make demo` installs the demo extra (PyTorch, matplotlib, scikit-learn, tqdm; no TensorFlow).
# Offline (no index to fetch setuptools or deps from), the install falls back to the build
# tools and packages already there, and when those cannot build it either (setuptools < 77
# rejects the SPDX license string), to a .pth line for the repository and an ipu-gpu script.
DEMO_STAMP := $(VENV)/.installed-demo
$(DEMO_STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e ".[demo]" || \
	    $(VPY) -m pip install -q --no-build-isolation -e ".[demo]" || \
	    $(VPY) -m pip install -q --no-build-isolation --no-deps -e . || \
	    { echo "pip could not install ipu_gpu: linking the repository into $(VENV) instead"; \
	      echo "$(CURDIR)" > "$$($(VPY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/ipu_gpu_repo.pth" && \
	      printf '#!%s\nimport sys\nfrom ipu_gpu.cli import main\nsys.exit(main())\n' \
	        "$(CURDIR)/$(VPY)" > $(VENV)/bin/ipu-gpu && chmod +x $(VENV)/bin/ipu-gpu; }
	touch $(DEMO_STAMP)

## make demo: install into .venv and train three unmodified IPU programs (Keras, TF1, PopTorch)
## on scikit-learn's digits, each on four emulated IPUs, with a report in reports/<program>/
# PyTorch's OpenMP pool spin-waits: on a busy 2-core machine one thread runs these tiny
# models many times faster (OMP_NUM_THREADS=... overrides).
OMP_NUM_THREADS ?= 1
DEMO_RUN = $(VENV)/bin/ipu-gpu run --report reports/$(1) examples/$(1).py
demo: $(DEMO_STAMP)
	$(call DEMO_RUN,demo_keras)
	$(call DEMO_RUN,demo_tf1)
	OMP_NUM_THREADS=$(OMP_NUM_THREADS) $(call DEMO_RUN,demo_poptorch)

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
# The CPU run is kept, compacted, as bench/results/cpu.json (partial reruns as
# bench/results/cpu-part-*.json); GPU_JSON: the `-m gpu` bench run of a GPU machine,
# PROBE_JSON: tools/gpu_probe.py's output (by default the H200 run kept in bench/results);
# their rows and measurements join the report (GPU columns, GPU machine table).
RESULTS = bench/results
GPU_JSON ?= $(wildcard $(RESULTS)/gpu-h200.json)
PROBE_JSON ?= $(wildcard $(RESULTS)/probe-h200.json)
REPORT_FLAGS = $(if $(GPU_JSON),--gpu $(GPU_JSON)) $(if $(PROBE_JSON),--probe $(PROBE_JSON))
PARTS = $(sort $(wildcard $(RESULTS)/cpu-part-*.json))
BENCH_PY = if [ -x $(VPY) ]; then B=$(VPY); else B=$(PY); fi
bench:
	@$(BENCH_PY); \
	$$B -m pytest bench -q --benchmark-enable --benchmark-only --benchmark-json=bench/.last.json -p no:cacheprovider && \
	cp bench/.last.json $(RESULTS)/cpu.json && rm -f $(RESULTS)/cpu-part-*.json && \
	$$B bench/report.py $(RESULTS)/cpu.json bench/README.md --compact $(REPORT_FLAGS)

## make bench-part FILES="bench/test_bench_x.py ...": rerun some bench files on the machine of
## the last full run; their groups replace that run's in bench/README.md
bench-part:
	@test -n "$(FILES)" || { echo 'make bench-part FILES="bench/test_bench_x.py ..."'; exit 2; }
	@$(BENCH_PY); P=$(RESULTS)/cpu-part-$$(date -u +%Y%m%dT%H%M%S).json; \
	$$B -m pytest $(FILES) -q --benchmark-enable --benchmark-only --benchmark-json=$$P -p no:cacheprovider && \
	$$B bench/report.py $(RESULTS)/cpu.json bench/README.md --compact \
	  $(addprefix --also ,$(PARTS)) --also $$P $(REPORT_FLAGS)

## make bench-report: rewrite bench/README.md from the kept runs without rerunning the benches
bench-report:
	@$(BENCH_PY); \
	$$B bench/report.py $(RESULTS)/cpu.json bench/README.md $(addprefix --also ,$(PARTS)) $(REPORT_FLAGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .numba-cache-boundscheck
