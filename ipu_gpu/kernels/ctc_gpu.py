"""CTC loss on the GPU (CuPy raw kernels from cuda/ctc.cu); twin of ctc_cpu.

The arithmetic is ctc_cpu's exact log-space path (PopLibs ``CTCLoss.cpp``): float32
partials, the finite log-zero -65504 (an infeasible alignment gives a large finite loss),
``logadd(a, b) = max + log1p(exp(min - max))``, and the gradient with respect to the logits
``softmax - posterior occupancy`` (minus ``exp(loss - 65504)``, 0 unless infeasible), 0 at
t >= data_length. ctc_cpu uses a rescaled linear-space fast path for feasible entries, so
the twins agree to float32 rounding, not bit for bit.

``ctc_loss_fwd_bwd`` makes three launches (see cuda/ctc.cu), none of which syncs: the
per-row log-sum-exp and softmax, alpha and beta (one block per batch entry each, running
side by side), and the gradient rows; ``ctc_loss_check_values`` makes one more and syncs.
The gradient uses no atomics: each class of a row is accumulated by one thread in
ascending position order, so results are deterministic. Workspaces (alpha and beta tables
[B, T, 2L+1] for the gradient) are allocated with cupy.empty from CuPy's memory pool.
"""

from __future__ import annotations

import pathlib
import threading

import cupy
import numpy as np

from ._ctc_checks import check_shapes, check_values, first_bad_label

_SOURCE = pathlib.Path(__file__).with_name("cuda") / "ctc.cu"
_LOCK = threading.Lock()
_MODULE = None
_KERNELS: dict = {}

# Grid cap of the per-(t, b) row kernels (they stride over the rest); tests lower it.
ROW_BLOCKS_MAX = 1 << 16
# Dynamic shared memory a block may use without an opt-in.
SHARED_BYTES_MAX = 48 * 1024
# Static shared memory of ipu_ctc_alpha_beta_f32 (its bad_label flag): it counts against the
# same limit as the dynamic rows.
_ALPHA_BETA_STATIC_SHARED = 4

_I32 = np.int32


def _kernel(name):
    """The named kernel of cuda/ctc.cu, compiled once per process (NVRTC, cached by CuPy)."""
    global _MODULE
    k = _KERNELS.get(name)
    if k is None:
        with _LOCK:
            if _MODULE is None:
                _MODULE = cupy.RawModule(code=_SOURCE.read_text())
            k = _KERNELS[name] = _MODULE.get_function(name)
    return k


def _position_block(n):
    """Threads for ``n`` extended positions: the next multiple of 32, at most 1024."""
    return min(1024, max(32, -(-n // 32) * 32))


def _row_block(n_c):
    """Threads for a row of ``n_c`` classes: a power of two in [32, 256]."""
    b = 32
    while b < min(n_c, 256):
        b *= 2
    return b


def ctc_loss_fwd_bwd(data, labels, label_length, data_length, blank_index, logits, loss, grad):
    """CTC loss per batch entry into ``loss`` [B] and, unless ``grad`` is None, the gradient
    of the loss with respect to the logits (softmax - posterior occupancy) into ``grad``
    [T, B, C], 0 at t >= data_length[b].

    ``data`` [T, B, C] float32 C-contiguous cupy array: logits when ``logits`` is True (a
    log-softmax over classes is applied first), else log-probabilities used as they are.
    ``labels`` [B, Lmax] int32, lengths [B] int32. Outputs preallocated float32 C-contiguous,
    fully overwritten. Deterministic; no device sync.

    Shapes, dtypes, contiguity and ``blank_index`` are checked here (ValueError/TypeError
    naming ``ctc_loss_fwd_bwd``, as the CPU twin); the values are the caller's to check
    (``ctc_loss_check_values``, one sync). An entry whose lengths or labels are out of range
    anyway gets a NaN loss and NaN gradient rows, never an out-of-bounds access (the CPU
    twin raises instead).
    """
    check_shapes("ctc_loss_fwd_bwd", data, labels, label_length, data_length, loss, grad)
    n_t, n_b, n_c = data.shape
    if not 0 <= blank_index < n_c:
        raise ValueError(f"ctc_loss_fwd_bwd: blank_index must be in [0, {n_c}) (num_classes), "
                         f"got {blank_index}")
    _check_raw("ctc_loss_fwd_bwd", data=data, loss=loss, grad=grad, labels=labels,
               label_length=label_length, data_length=data_length)
    if n_b == 0:
        return loss, grad
    want_grad = grad is not None
    logits = bool(logits)
    labels = cupy.ascontiguousarray(labels)
    label_length = cupy.ascontiguousarray(label_length)
    data_length = cupy.ascontiguousarray(data_length)
    max_label = labels.shape[1]
    s_max = 2 * max_label + 1
    n_rows = n_t * n_b
    f32_dummy = cupy.empty(1, np.float32)
    dims = (_I32(n_t), _I32(n_b), _I32(n_c), _I32(max_label), _I32(blank_index), _I32(logits))

    lse = cupy.empty(n_rows, np.float32) if logits else f32_dummy
    if n_rows and (logits or want_grad):
        _kernel("ipu_ctc_rows_f32")(
            (min(n_rows, ROW_BLOCKS_MAX),), (_row_block(n_c),),
            (data, data_length, _I32(n_t), _I32(n_b), _I32(n_c), _I32(logits),
             _I32(want_grad), lse, grad if want_grad else f32_dummy))

    threads = _position_block(s_max)
    use_shared = 2 * s_max * 4 + _ALPHA_BETA_STATIC_SHARED <= SHARED_BYTES_MAX
    if want_grad:
        alpha = cupy.empty(n_b * n_t * s_max, np.float32)
        beta = cupy.empty(n_b * n_t * s_max, np.float32)
        links = cupy.empty(n_b * 2 * s_max, np.int32)
    else:
        alpha = f32_dummy if use_shared else cupy.empty(n_b * 2 * s_max, np.float32)
        beta, links = f32_dummy, cupy.empty(1, np.int32)
    _kernel("ipu_ctc_alpha_beta_f32")(
        (n_b, 2 if want_grad else 1), (threads,),
        (data, lse, labels, label_length, data_length, *dims, _I32(want_grad),
         _I32(use_shared), alpha, beta, links, loss),
        shared_mem=2 * s_max * 4 if use_shared else 0)

    if want_grad and n_rows:
        occ_shared = s_max * 4 <= SHARED_BYTES_MAX
        _kernel("ipu_ctc_grad_f32")(
            (min(n_rows, ROW_BLOCKS_MAX),), (threads,),
            (data, lse, labels, label_length, data_length, *dims, _I32(occ_shared), alpha,
             beta, links, loss, grad),
            shared_mem=s_max * 4 if occ_shared else 0)
    return loss, grad


def _check_raw(name, **arrays):
    """What a raw kernel takes on trust: int32 index arrays, float32 C-contiguous data and
    outputs (the index arrays are made contiguous by the callers)."""
    for arg, a in arrays.items():
        if a is None:
            continue
        want = np.float32 if arg in ("data", "loss", "grad") else np.int32
        if a.dtype != want:
            raise TypeError(f"{name}: {arg} must be {np.dtype(want).name}, got {a.dtype}")
        if want == np.float32 and not a.flags.c_contiguous:
            raise ValueError(f"{name}: {arg} must be C-contiguous")


def ctc_loss_check_values(name, labels, label_length, data_length, max_time, num_classes):
    """Raise ValueError unless 0 <= data_length <= max_time, 0 <= label_length <=
    max_label_length and labels[b, :label_length[b]] lie in [0, num_classes). One kernel
    flags a problem and one int comes back (a device sync); only then are the arrays copied
    to the host to build ctc_cpu's exact message."""
    if (labels.ndim != 2 or label_length.shape != (labels.shape[0],)
            or data_length.shape != (labels.shape[0],)):
        raise ValueError(f"{name}: labels must be [B, Lmax] and the lengths [B], got shapes "
                         f"{list(labels.shape)}, {list(label_length.shape)} and "
                         f"{list(data_length.shape)}")
    _check_raw(name, labels=labels, label_length=label_length, data_length=data_length)
    n_b, max_label = labels.shape
    if n_b == 0:
        return
    labels = cupy.ascontiguousarray(labels)
    label_length = cupy.ascontiguousarray(label_length)
    data_length = cupy.ascontiguousarray(data_length)
    bad = cupy.zeros(1, np.int32)
    threads = min(128, -(-n_b // 32) * 32)
    _kernel("ipu_ctc_check_i32")(
        (min(-(-n_b // threads), 1024),), (threads,),
        (labels, label_length, data_length, _I32(n_b), _I32(max_label), _I32(max_time),
         _I32(num_classes), bad))
    if int(bad[0]):  # syncs the device
        check_values(name, cupy.asnumpy(labels), cupy.asnumpy(label_length),
                     cupy.asnumpy(data_length), max_time, num_classes, first_bad_label)
