"""Sequence-slice row copies on the GPU (CuPy raw kernels in cuda/sequence_slice.cu); twin of
sequence_slice_cpu. No host sync: counts and offsets stay on the device."""

from __future__ import annotations

import pathlib

import cupy
import numpy as np

from .sequence_slice_cpu import check_args  # host-side shape checks, shared with the CPU twin

THREADS = 128  # per block: a copy needs no shared memory; enough blocks hide latency
MAX_BLOCKS = 1 << 16  # grid-stride loops cover the rest
_SOURCE = pathlib.Path(__file__).with_name("cuda") / "sequence_slice.cu"
_WORDS = {8: ("u64", np.uint64), 4: ("u32", np.uint32), 2: ("u16", np.uint16)}
_module = None


def _kernel(name):
    global _module
    if _module is None:
        _module = cupy.RawModule(code=_SOURCE.read_text())
    return _module.get_function(name)


def sequence_slice_copy(out, fill, src, num_elems, src_offsets, dst_offsets):
    """Entry i copies rows src[s:s+m] to out[d:d+m] (s, d its offsets, m its count clipped so
    neither tensor overflows; a negative count or offset copies nothing); a row written by
    several entries keeps the last; every other row of ``out`` is ``fill``'s row (zeros when
    ``fill`` is None). ``out``/``fill`` [R, D] and ``src`` [S, D] C-contiguous, one dtype
    (copied bitwise); int32 index vectors of one length, C-contiguous. Deterministic (an
    integer atomicMax picks the last entry); a row-sized int32 table is the only temporary.

    Any count or offset is safe (the kernels clip on the device, as the CPU twin); shapes,
    dtypes and contiguity are checked here, without a sync, with the CPU twin's errors."""
    check_args("sequence_slice_copy", out, fill, src, num_elems, src_offsets, dst_offsets)
    for arg, a in (("out", out), ("fill", fill), ("src", src), ("num_elems", num_elems),
                   ("src_offsets", src_offsets), ("dst_offsets", dst_offsets)):
        if a is not None and not a.flags.c_contiguous:  # a raw kernel sees only the pointer
            raise ValueError(f"sequence_slice_copy: {arg} must be C-contiguous")
    if out.size == 0:
        return out
    n_rows, n_entries = out.shape[0], num_elems.shape[0]
    owner = cupy.full(n_rows, -1, dtype=np.int32)
    if n_entries:  # no entries: every row is the fill's
        chunks = max(1, min(1024, -(-min(n_rows, src.shape[0]) // (n_entries * THREADS))))
        _kernel("ipu_sequence_slice_owner")(
            (n_entries, chunks), (THREADS,),
            (owner, num_elems, src_offsets, dst_offsets, np.int64(src.shape[0]),
             np.int64(n_rows)))
    zero = fill is None
    suffix, o, f, s = _word_views(out, out if zero else fill, src)
    width = o.shape[1]
    blocks = max(1, min(MAX_BLOCKS, -(-(n_rows * width) // THREADS)))
    _kernel(f"ipu_sequence_slice_copy_{suffix}")(
        (blocks,), (THREADS,),
        (o, f, s, owner, src_offsets, dst_offsets, np.int64(n_rows), np.int64(width),
         np.int32(zero)))
    return out


def _address(a):
    data = a.data
    return data.ptr if hasattr(data, "ptr") else a.ctypes.data  # cupy, or numpy standing in


def _word_views(*arrays):
    """The 2-D arrays viewed as the widest words (2, 4 or 8 bytes) dividing every row and
    base address: wider loads per thread for the same coalesced pattern."""
    row_bytes = arrays[0].shape[1] * arrays[0].itemsize
    width = next(w for w in (8, 4, 2)
                 if row_bytes % w == 0 and all(_address(a) % w == 0 for a in arrays))
    suffix, word = _WORDS[width]
    return (suffix, *(a.view(word) for a in arrays))
