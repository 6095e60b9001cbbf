"""Prints a JSON object {workload: sha256 of its outputs} for every CPU kernel that runs
threaded (Numba prange or our own BLAS threads), on inputs big enough to take the parallel
paths. tests/test_determinism.py runs it under several NUMBA_NUM_THREADS and
OPENBLAS_CORETYPE settings and compares the digests.

Each workload runs twice in the process, the second time on copies of its inputs placed at
other byte offsets; a workload whose two runs differ is reported as "unstable: <digests>"."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

import ipu_gpu as tf
from ipu_gpu import ipu


def _shifted(a, offset_bytes):
    """A copy of ``a`` whose data starts ``offset_bytes`` past a 64-byte boundary."""
    a = np.asarray(a)
    raw = np.empty(a.nbytes + 64 + offset_bytes, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset_bytes
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        if a is None:  # no gradient
            h.update(b"None")
            continue
        a = np.ascontiguousarray(a.numpy() if hasattr(a, "numpy") else a)
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _with_grads(fn, inputs, seed):
    """fn's output and the gradients of <fn(inputs), u> for a random u w.r.t. float inputs."""
    ts = [tf.constant(a) for a in inputs]
    with tf.GradientTape() as tape:
        for t in ts:
            if t.dtype.kind == "f":
                tape.watch(t)
        y = fn(*ts)
    u = np.random.default_rng(seed).standard_normal(y.shape).astype(y.dtype)
    floats = [t for t in ts if t.dtype.kind == "f"]
    grads = tape.gradient(y, floats, output_gradients=u)  # gather's: IndexedSlices, densified
    return [y] + [None if g is None else tf.convert_to_tensor(g) for g in grads]


def workloads(rng):
    """(name, function of the input arrays, inputs[, differentiable: default True])."""
    f32 = np.float32

    def normal(*shape):
        return rng.standard_normal(shape).astype(f32)

    out = []
    conv_cases = [  # the shapes that showed thread-count-dependent bits, and the other paths
        ("conv2d_shift", (8, 30, 30, 16), (3, 3, 16, 8), 1, (1, 1), "SAME", "NHWC"),
        ("conv2d_im2col_stride2", (4, 33, 17, 24), (5, 3, 24, 12), 2, (1, 1), "SAME", "NHWC"),
        ("conv2d_im2col_narrow", (2, 64, 64, 3), (3, 3, 3, 32), 1, (1, 1), "SAME", "NHWC"),
        ("conv2d_shift_wide", (8, 32, 32, 32), (3, 3, 32, 64), 1, (1, 1), "SAME", "NHWC"),
        ("conv2d_grouped", (2, 20, 20, 32), (3, 3, 16, 32), 1, (1, 1), "VALID", "NHWC"),
        ("conv2d_dilated", (2, 24, 24, 16), (3, 3, 16, 16), 1, (2, 2), "SAME", "NHWC"),
        ("conv2d_nchw", (4, 16, 20, 20), (3, 3, 16, 16), 1, (1, 1), "SAME", "NCHW"),
    ]
    for name, xs, ws, s, d, pad, fmt in conv_cases:
        def conv(x, w, s=s, d=d, pad=pad, fmt=fmt):
            return tf.nn.conv2d(x, w, s, pad, data_format=fmt, dilations=list(d))
        out.append((name, conv, [normal(*xs), normal(*ws)]))
    out.append(("depthwise_conv2d", lambda x, w: tf.nn.depthwise_conv2d(
        x, w, [1, 1, 1, 1], "SAME"), [normal(4, 40, 40, 16), normal(3, 3, 16, 2)]))
    out.append(("conv2d_transpose", lambda x, w: tf.nn.conv2d_transpose(
        x, w, [4, 32, 32, 16], 2, "SAME"), [normal(4, 16, 16, 24), normal(3, 3, 16, 24)]))
    out.append(("max_pool2d", lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"),
                [normal(8, 64, 64, 16)]))
    out.append(("avg_pool2d", lambda x: tf.nn.avg_pool2d(x, 3, 1, "SAME"),
                [normal(8, 64, 64, 16)]))
    ids = rng.integers(0, 5000, 8192).astype(np.int32)  # duplicates: accumulation order
    out.append(("gather", lambda p, i: tf.gather(p, i), [normal(5000, 256), ids]))
    emb_ids = rng.integers(0, 30000, 16384).astype(np.int32)
    out.append(("embedding_lookup", lambda p, i: ipu.embedding_ops.embedding_lookup(p, i),
                [normal(30000, 128), emb_ids]))
    seg = np.sort(rng.integers(0, 1000, 16384)).astype(np.int32)
    out.append(("segment_sum", lambda x, s: ipu.math_ops.segment_sum(x, s, 1000),
                [normal(16384, 128), seg]))
    rows, width = 4096, 512
    k = 64
    out.append(("sequence_slice", lambda dst, src, n, so, do: ipu.slicing_ops.sequence_slice(
        dst, src, n, so, do, False), [normal(rows, width), normal(rows, width),
                                       np.full(k, 48, np.int32),
                                       rng.integers(0, rows - 48, k).astype(np.int32),
                                       rng.integers(0, rows - 48, k).astype(np.int32)]))
    levels = np.sort(rng.standard_normal(255)).astype(f32)
    out.append(("histogram", lambda x, lv: ipu.statistics_ops.histogram(x, lv),
                [normal(1 << 21), levels], False))
    t, b, c, length = 120, 16, 40, 30
    out.append(("ctc_loss", lambda logits, lab, ll, tl: ipu.nn_ops.ctc_loss_v2(
        lab, logits, ll, tl, 0), [normal(t, b, c), rng.integers(1, c, (b, length)).astype(
            np.int32), rng.integers(1, length + 1, b).astype(np.int32),
            rng.integers(2 * length + 1, t + 1, b).astype(np.int32)]))
    out.append(("ctc_beam_search", lambda logits, ln: ipu.nn_ops.ctc_beam_search_decoder(
        logits, ln, beam_width=4, top_paths=2), [normal(64, 8, 4096),
                                                  rng.integers(1, 65, 8).astype(np.int32)],
                False))
    out.append(("serialized_matmul", lambda a, w: ipu.math_ops.serialized_matmul(
        a, w, 4, "a_columns"), [normal(256, 1024), normal(1024, 256)]))
    # a k split big enough for its row tiles (2**28 multiply-adds, two 512-row tiles)
    out.append(("serialized_matmul_k", lambda a, w: ipu.math_ops.serialized_matmul(
        a, w, 4, "a_rows_b_columns"), [normal(1024, 1024), normal(1024, 256)], False))
    # a plain matmul (the MLP bench's first layer) and its two gradient GEMMs: numpy's threaded
    # BLAS would give bits that depend on OpenBLAS's thread count on its Haswell/Zen kernels;
    # ipu_gpu's GEMM (kernels/matmul_cpu) does not: test_determinism runs these under
    # OPENBLAS_NUM_THREADS 1, 2, 3
    out.append(("matmul", lambda a, w: tf.matmul(a, w), [normal(256, 784), normal(784, 512)]))
    # float64 (numpy's differed at 3 OpenBLAS threads), batched, transposed, 2-D tiles
    out.append(("matmul_f64_batched", lambda a, w: tf.matmul(a, w, transpose_b=True),
                [normal(3, 400, 300).astype(np.float64), normal(3, 700, 300).astype(np.float64)]))
    return out


def main() -> None:
    names = set(sys.argv[1:])
    result = {}
    for i, (name, fn, inputs, *grads) in enumerate(workloads(np.random.default_rng(2024))):
        if names and name not in names:
            continue
        grads = grads[0] if grads else True
        first = _digest(_run(fn, inputs, i, grads))
        second = _digest(_run(fn, [_shifted(a, 4 * (i % 15 + 1)) for a in inputs], i, grads))
        result[name] = first if first == second else f"unstable: {first} {second}"
    print(json.dumps(result))


def _run(fn, inputs, seed, grads):
    if grads:
        return _with_grads(fn, inputs, seed)
    y = fn(*inputs)
    return [v for v in y if v is not None] if isinstance(y, (tuple, list)) else [y]


if __name__ == "__main__":
    main()
