"""tf.data throughput on MNIST-shaped arrays (60000x28x28 uint8 images, int32 labels):

* ``slices_shuffle_batch``: ``from_tensor_slices((x, y)).shuffle(10000).batch(32,
  drop_remainder=True).repeat().prefetch(AUTOTUNE)`` (target: ipu_gpu >= 1.0x tf.data's
  elements/s);
* ``slices_shuffle_map_batch``: the same with ``map(lambda x, y: (cast(x, float32) / 255, y))``
  before ``batch``, a per-element function call (target: >= 0.5x).

ipu_gpu (``ipu_gpu.data``) against real tf.data, each iterated with ``for`` semantics
(``next()`` on ``iter(dataset)``: ipu_gpu Tensors / EagerTensors). One call takes BATCHES
batches from an iterator made once, warmed up first. ipu_gpu's row interleaves tf.data in
blocks (``paired``), so the ratio does not depend on load drifting between rows;
``extra_info["elements_per_second"]`` holds each row's throughput.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import impl_params, paired_with, require, rng

import ipu_gpu
import ipu_gpu.data

BATCH = 32
BATCHES = 64  # batches per timed call
IMPLS = impl_params(cpu=("ipu_gpu", "tensorflow"), gpu=())
CASES = ("slices_shuffle_batch", "slices_shuffle_map_batch")


def _mnist():
    g = rng(11)
    x = g.integers(0, 256, (60000, 28, 28), dtype=np.uint8)
    y = g.integers(0, 10, 60000).astype(np.int32)
    return x, y


def _pipeline(impl, case, x, y):
    if impl == "ipu_gpu":
        tf, data = ipu_gpu, ipu_gpu.data
    else:
        tf = require("tensorflow").tf
        data = tf.data
    ds = data.Dataset.from_tensor_slices((x, y)).shuffle(10000, seed=1)
    if case == "slices_shuffle_map_batch":
        ds = ds.map(lambda a, b: (tf.cast(a, tf.float32) / 255.0, b))
    return ds.batch(BATCH, drop_remainder=True).repeat().prefetch(data.AUTOTUNE)


def _taker(impl, case, x, y):
    it = iter(_pipeline(impl, case, x, y))

    def take():
        out = None
        for _ in range(BATCHES):
            out = next(it)
        return out
    return take


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.benchmark(
    group=f"data-{c}-mnist-b{BATCH}")) for c in CASES])
def test_data_throughput(run, ipu_backend, benchmark, case, impl):
    x, y = _mnist()
    take = _taker(impl, case, x, y)
    images, labels = take()
    shape = (BATCH, 28, 28)
    assert tuple(np.asarray(images).shape) == shape and tuple(np.asarray(labels).shape) == (
        BATCH,)
    if case == "slices_shuffle_map_batch":
        got = np.asarray(images)
        assert got.dtype == np.float32 and 0.0 <= got.min() and got.max() <= 1.0
    else:
        assert np.asarray(images).dtype == np.uint8
    paired = paired_with(impl, lambda peer: _taker(peer, case, x, y), peer="tensorflow")
    run(take, impl=impl, paired=paired, warmup=5,
        sizes={"images": [60000, 28, 28], "batch": BATCH, "batches_per_call": BATCHES,
               "elements_per_call": BATCH * BATCHES})
    stats = getattr(benchmark, "stats", None)
    if stats is not None and getattr(stats, "stats", None) is not None:
        benchmark.extra_info["elements_per_second"] = BATCH * BATCHES / stats.stats.median
        pair = benchmark.extra_info.get("paired")
        if pair:
            benchmark.extra_info["paired"]["elements_per_second"] = (
                BATCH * BATCHES / pair["median"])


# ---- TFRecord files: the framing and its CRC-32C kernel ------------------------------------------
RECORDS, RECORD_BYTES = 2000, 4096


@pytest.fixture(scope="module")
def tfrecord_file(tmp_path_factory):
    """RECORDS records of RECORD_BYTES random bytes, written by ipu_gpu (TF reads them too)."""
    path = str(tmp_path_factory.mktemp("tfrecord") / "data.tfrecord")
    g = rng(12)
    with ipu_gpu.io.TFRecordWriter(path) as w:
        for _ in range(RECORDS):
            w.write(g.integers(0, 256, RECORD_BYTES, dtype=np.uint8).tobytes())
    return path


def _reader(impl, path):
    data = ipu_gpu.data if impl == "ipu_gpu" else require("tensorflow").tf.data

    def read():
        n = 0
        for _record in data.TFRecordDataset(path):
            n += 1
        return n
    return read


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.benchmark(group=f"data-tfrecord_read-{RECORDS}x{RECORD_BYTES}B")
def test_tfrecord_read(run, ipu_backend, tfrecord_file, impl):
    """Reading every record (each checksum verified) of one file, against tf.data."""
    read = _reader(impl, tfrecord_file)
    assert read() == RECORDS
    run(read, impl=impl, paired=paired_with(impl, lambda peer: _reader(peer, tfrecord_file),
                                            peer="tensorflow"),
        sizes={"records": RECORDS, "record_bytes": RECORD_BYTES})
