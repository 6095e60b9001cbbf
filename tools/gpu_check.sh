#!/bin/bash
# The device check of issue 19, run on the GPU machine from the repository root:
#   OUT=/some/dir bash tools/gpu_check.sh [tests|bench|probe|demo ...]
# Logs and JSON go to $OUT; the end of stdout is a short summary.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
OUT=${OUT:-/tmp/ipu_gpu_out}; mkdir -p "$OUT"
STEPS=${*:-"facts probe tests demo bench"}
T_TESTS=${T_TESTS:-150}; T_BENCH=${T_BENCH:-120}; BENCH_K=${BENCH_K:-"not depthwise and not softmax_xent and not infeed and not fixed_width and not test_matmul"}
for step in $STEPS; do
  t0=$(date +%s)
  case $step in
  facts)
    { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
      python3 -c "import sys,cupy,numba,numpy,torch; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"
      python3 -m pip list 2>/dev/null | grep -i -E "^(pytest|hypothesis|h5py|threadpoolctl|tf-keras|tensorflow) "
    } > "$OUT/facts.txt" 2>&1; cat "$OUT/facts.txt";;
  probe)
    IPU_GPU_BACKEND=gpu timeout 100 python3 tools/gpu_probe.py "$OUT/probe.json" > "$OUT/probe.log" 2>&1
    echo "probe rc=$?"; grep -v '"trace"' "$OUT/probe.log" | cut -c1-400;;
  tests)
    IPU_GPU_BACKEND=gpu NUMBA_BOUNDSCHECK=1 timeout "$T_TESTS" python3 -m pytest -q -m gpu \
      -p no:cacheprovider -n 14 --timeout 120 --tb=short -rfE ${TEST_ARGS:-} > "$OUT/test.log" 2>&1
    echo "tests rc=$?"; grep -E "^(FAILED|ERROR)" "$OUT/test.log" | cut -c1-300 | head -60; tail -3 "$OUT/test.log";;
  demo)
    # offline: the demo runs in the image's own environment (which holds numpy, numba, cupy)
    ENVDIR=$(python3 -c 'import sys; print(sys.prefix)')
    { PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 IPU_GPU_BACKEND=gpu timeout "${T_DEMO:-90}" make demo VENV="$ENVDIR"
      echo "demo rc=$?"; } > "$OUT/demo.log" 2>&1
    tail -8 "$OUT/demo.log";;
  bench)
    IPU_GPU_BACKEND=gpu BENCH_SECONDS=${BENCH_SECONDS:-0.25} timeout "$T_BENCH" python3 -m pytest bench -q -m gpu \
      -k "$BENCH_K" --benchmark-enable --benchmark-only --benchmark-json="$OUT/bench_gpu.json" \
      -p no:cacheprovider > "$OUT/bench.log" 2>&1
    echo "bench rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/bench.log" | cut -c1-300 | head -30;;
  esac
  echo "== $step took $(( $(date +%s) - t0 )) s"
done
