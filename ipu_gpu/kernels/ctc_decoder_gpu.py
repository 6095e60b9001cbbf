"""CTC prefix beam-search decoding on the GPU (CuPy); twin of ctc_decoder_cpu.

The CUDA kernel is ``kernels/cuda/ctc_decoder.cu`` (``ipu_ctc_beam_search_f32``): one block
per batch item, its threads cooperating on the copy / extend / merge / select step
(block-wide radix select of the top ``beam_width`` candidates by unique (pTotal, index)
keys). The result equals the CPU twin's: same beams in the same order, same lengths and
decoded symbols; probabilities to float32 rounding (the device's expf/log1pf are not
glibc's, so a near-tie decided by the last bit could rank differently).
"""

from __future__ import annotations

import pathlib

import cupy
import numpy as np

from ._ctc_beams import effective_beam_width

_SOURCE = pathlib.Path(__file__).with_name("cuda") / "ctc_decoder.cu"
_KERNELS: dict = {}

MAX_THREADS = 1024
MIN_THREADS = 32  # the kernel's radix select uses 16 threads for its group sums


def _kernel(name: str):
    if name not in _KERNELS:
        if "module" not in _KERNELS:
            _KERNELS["module"] = cupy.RawModule(code=_SOURCE.read_text())
        _KERNELS[name] = _KERNELS["module"].get_function(name)
    return _KERNELS[name]


def block_threads(beam_width: int, num_classes: int, limit: int = MAX_THREADS) -> int:
    """Threads per block: the power of two covering the W * C candidates of a step, in
    [32, 1024], and at most ``limit`` (the kernel's ``max_threads_per_block`` on the device:
    its register use caps it below 1024 on some GPUs; every loop strides by the block)."""
    cap = 1 << (max(min(limit, MAX_THREADS), MIN_THREADS).bit_length() - 1)
    n = min(beam_width * num_classes, cap)
    return max(MIN_THREADS, 1 << max(n - 1, 0).bit_length())


def ctc_beam_search(log_probs, lengths, beam_width, blank, probs, out_lengths, decoded):
    """Beam search over float32 C-contiguous ``log_probs`` [T, B, C] (log-softmaxed) with
    int32 ``lengths`` [B] (each in [0, T]) and blank class ``blank`` in [0, C). Writes the
    first P = probs.shape[1] beams: ``probs`` [B, P] float32 (log P, <= 0; -65504 for
    dummy beams), ``out_lengths`` [B, P] int32, ``decoded`` [B, P, T] int32 (positions past
    the length set to ``blank``). All outputs preallocated (C-contiguous), fully
    overwritten. Deterministic."""
    max_t, batch, c = log_probs.shape
    top_paths = probs.shape[1]
    if batch == 0:
        return probs, out_lengths, decoded
    w = effective_beam_width(int(beam_width), c, max_t)
    if w * (c + 1) >= 2**31:
        raise ValueError(f"ctc_beam_search_decoder: beam_width * (num_classes + 1) must be "
                         f"< 2**31 on the GPU, got {w} * {c + 1}")
    cap = max(max_t, 1)
    prefix_ws = cupy.empty((batch, 2, w, cap), cupy.int32)
    plen_ws = cupy.empty((batch, 2, w), cupy.int32)
    hash_ws = cupy.empty((batch, 2, 2, w), cupy.uint64)
    state_ws = cupy.empty((batch, 9, w), cupy.float32)
    int_ws = cupy.empty((batch, c * w + c + 2 * w), cupy.int32)
    key_ws = cupy.empty((batch, w), cupy.uint64)
    kernel = _kernel("ipu_ctc_beam_search_f32")
    kernel(
        (batch,), (block_threads(w, c, getattr(kernel, "max_threads_per_block", MAX_THREADS)),),
        (log_probs, lengths, np.int32(max_t), np.int32(batch), np.int32(c), np.int32(w),
         np.int32(blank), np.int32(top_paths), prefix_ws, plen_ws, hash_ws, state_ws,
         int_ws, key_ws, probs, out_lengths, decoded))
    return probs, out_lengths, decoded
