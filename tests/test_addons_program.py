"""Programs import ipu_tensorflow_addons unmodified: the module paths of Graphcore's package
resolve to ``ipu_gpu.addons``, and tests/programs/addons_keras_layers.py (the style of
Graphcore's docs/example_ipu_specific_keras_layers.py: the add-on Embedding, LSTM,
LayerNormalization, Dropout and RecomputationCheckpoint in a 4-stage pipelined model on
2 IPUs, AdamIpuOptimizer, IPUStrategyV1, steps_per_execution, fit) runs through ``ipu-gpu
run`` on IMDB data read from the Keras cache, and learns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np

from ipu_gpu import aliases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "tests", "programs", "addons_keras_layers.py")

# The fake imdb.npz is not the file Keras publishes: the harness turns the cache's sha256
# check off before running the program (the program itself is untouched).
_IPU_GPU_RUN = (
    "import sys\n"
    "from ipu_gpu.keras.utils import data_utils\n"
    "data_utils.validate_file = lambda *args, **kwargs: True\n"
    "from ipu_gpu.cli import main\n"
    "sys.exit(main(['run', *sys.argv[1:]]))\n")


def test_graphcores_module_paths_resolve_to_ipu_gpu_addons():
    from ipu_gpu.addons.keras import layers, optimizers

    with aliases.installed():
        from ipu_tensorflow_addons.keras import layers as ipu_layers
        from ipu_tensorflow_addons.keras.layers import (LSTM, AssumeEqualAcrossReplicas,
                                                        PopnnGRU, RecomputationCheckpoint)
        from ipu_tensorflow_addons.keras.layers.rnn import PopnnLSTM
        from ipu_tensorflow_addons.keras.optimizers import AdamIpuOptimizer, LAMBIpuOptimizer
        from ipu_tensorflow_addons.keras.optimizers.sgd_optimizer import SGDIpuOptimizer

        assert ipu_layers.Embedding is layers.Embedding
        assert LSTM is PopnnLSTM is layers.PopnnLSTM and PopnnGRU is layers.GRU
        assert RecomputationCheckpoint is layers.RecomputationCheckpoint
        assert AssumeEqualAcrossReplicas is layers.AssumeEqualAcrossReplicas
        assert AdamIpuOptimizer is optimizers.AdamIpuOptimizer
        assert LAMBIpuOptimizer is optimizers.LAMBIpuOptimizer
        assert SGDIpuOptimizer is optimizers.SGDIpuOptimizer


def _write_imdb(path, n_train=64, n_test=8, words=40, seed=16):
    """An ``imdb.npz`` in Keras's layout (object arrays of word-id lists): a review is
    positive when most of its words are in the upper half of the vocabulary."""
    rng = np.random.default_rng(seed)

    def split(n):
        x = np.empty(n, dtype=object)
        y = np.zeros(n, np.int64)
        for i in range(n):
            ids = [int(w) for w in rng.integers(4, words, int(rng.integers(4, 12)))]
            x[i] = ids
            y[i] = int(np.mean(np.array(ids) >= words // 2 + 2) > 0.5)
        return x, y

    (x_train, y_train), (x_test, y_test) = split(n_train), split(n_test)
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


def test_addons_program_runs_unmodified_and_learns(tmp_path):
    home = tmp_path / "keras"
    (home / "datasets").mkdir(parents=True)
    _write_imdb(home / "datasets" / "imdb.npz")
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["KERAS_HOME"] = str(home)
    r = subprocess.run([sys.executable, "-c", _IPU_GPU_RUN, PROGRAM, "--steps-per-epoch",
                        "16", "--epochs", "2"], cwd=os.path.dirname(PROGRAM), env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"^Epoch 1/2$", r.stdout, re.M) and re.search(r"^Epoch 2/2$", r.stdout,
                                                                   re.M)
    assert len(re.findall(r"^16/16 - .* - loss: \d\.\d{4}", r.stdout, re.M)) == 2
    history = json.loads(r.stdout.split("HISTORY ", 1)[1].splitlines()[0])
    losses = history["loss"]
    assert len(losses) == 2 and all(np.isfinite(losses))
    # binary cross-entropy starts near log(2) and falls as the model fits the reviews
    assert 0.5 < losses[0] < 0.75 and losses[1] < losses[0] - 0.05, losses
