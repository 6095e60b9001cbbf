"""Outputs that cannot be allocated raise TF's ResourceExhaustedError naming the op and the
shape ("<op>: OOM when allocating tensor with shape[...] and type float on CPU"), chained from
the allocator's MemoryError, promptly and without touching memory; the emulated IPU's own
out-of-memory error (GraphMemoryAllocationError) passes through unchanged.

The sizes here exceed any address space (>= 2**57 bytes), so numpy refuses them at once
whatever the machine and its overcommit setting; zero-stride views stand in for large inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import errors
from ipu_gpu.core import allocation, registry
from ipu_gpu.emulation import memory
from ipu_gpu.ipu import config, embedding_ops, ipu_compiler, scopes

HUGE = [2**40, 2**20]  # 2**60 elements
HUGE_SHAPE = r"shape\[1099511627776,1048576\]"


def _view(*shape):
    """A float32 array of ``shape`` that takes no memory (all strides 0)."""
    return np.broadcast_to(np.float32(1), shape)


# ---- the error classes ---------------------------------------------------------------------
def test_errors_module_exports_tf_names():
    assert {"OpError", "OutOfRangeError", "ResourceExhaustedError",
            "InvalidArgumentError"} <= set(errors.__all__)
    assert tf.errors.ResourceExhaustedError is errors.ResourceExhaustedError
    assert issubclass(errors.ResourceExhaustedError, errors.OpError)
    assert not issubclass(errors.ResourceExhaustedError, MemoryError)  # as TF's
    # TF's InvalidArgumentError, also the house ValueError for bad values
    assert issubclass(errors.InvalidArgumentError, errors.OpError)
    assert issubclass(errors.InvalidArgumentError, ValueError)
    e = errors.ResourceExhaustedError("x: OOM")
    assert e.message == "x: OOM" and str(e) == "x: OOM"


def test_tf_has_the_same_classes(real_tf):
    for name in ("OpError", "OutOfRangeError", "ResourceExhaustedError", "InvalidArgumentError"):
        assert hasattr(real_tf.errors, name)
    assert issubclass(real_tf.errors.ResourceExhaustedError, real_tf.errors.OpError)


# ---- creation functions (checked before allocating) ---------------------------------------
@pytest.mark.parametrize("make,op,tf_type", [
    (lambda: tf.zeros(HUGE), "zeros", "float"),
    (lambda: tf.ones(HUGE, tf.float64), "ones", "double"),
    (lambda: tf.zeros(HUGE, tf.float16), "zeros", "half"),
    (lambda: tf.fill(HUGE, 1.0), "fill", "float"),
    (lambda: tf.fill(HUGE, 7), "fill", "int32"),
    (lambda: tf.constant(1.5, shape=HUGE), "constant", "float"),
    (lambda: tf.constant(True, shape=HUGE), "constant", "bool"),
    (lambda: embedding_ops.create_host_embedding("huge_table", HUGE, tf.float32),
     "create_host_embedding", "float"),
], ids=["zeros", "ones", "zeros-f16", "fill", "fill-int", "constant", "constant-bool",
        "create_host_embedding"])
def test_creation_ops_raise_resource_exhausted(make, op, tf_type):
    with pytest.raises(errors.ResourceExhaustedError,
                       match=rf"^{op}: OOM when allocating tensor with {HUGE_SHAPE} and type "
                             rf"{tf_type} on CPU \("):
        make()


def test_range_of_2_to_the_40_is_int64_and_raises_at_once():
    # TF: ResourceExhaustedError "OOM when allocating tensor with shape[1099511627776] and
    # type int64"; 8 TiB that numpy could reserve under overcommit and then write
    with pytest.raises(errors.ResourceExhaustedError,
                       match=r"^range: OOM when allocating tensor with shape\[1099511627776\] "
                             r"and type int64 on CPU \(8.00 TiB"):
        tf.range(0, 2**40)
    with pytest.raises(errors.ResourceExhaustedError, match=r"^range: .* and type float "):
        tf.range(0.0, 1e18, 1.0)


def test_host_limit_is_checked_before_allocating(monkeypatch):
    monkeypatch.setattr(allocation, "_host_memory", [1 << 20])  # a 1 MiB host
    assert allocation.host_memory_bytes() == 1 << 20
    assert tf.zeros([1 << 18]).shape == (1 << 18,)  # exactly 1 MiB fits
    with pytest.raises(errors.ResourceExhaustedError,
                       match=r"^zeros: OOM when allocating tensor with shape\[262145\] and type "
                             r"float on CPU \(1.00 MiB; the host has 1.00 MiB\)$") as e:
        tf.zeros([(1 << 18) + 1])
    assert e.value.__cause__ is None  # refused before numpy was asked
    for make, op in [(lambda: tf.ones([1 << 19]), "ones"),
                     (lambda: tf.fill([1 << 19], 2.0), "fill"),
                     (lambda: tf.range(1 << 18, dtype=tf.int64), "range"),
                     (lambda: tf.constant(1.0, shape=[1 << 19]), "constant")]:
        with pytest.raises(errors.ResourceExhaustedError, match=rf"^{op}: OOM when allocating"):
            make()


def test_host_memory_bytes_reads_the_machine():
    n = allocation.host_memory_bytes()
    assert n is None or n > 1 << 26


# ---- registered ops: numpy's MemoryError mapped in Op.__call__ ------------------------------
@pytest.mark.parametrize("make,op,shape", [
    (lambda: tf.matmul(tf.ones([1024, 1]), _view(1, 2**48)), "matmul",
     r"\[1024,281474976710656\]"),
    (lambda: tf.add(tf.ones([2**20, 1]), _view(1, 2**38)), "add", r"\[1048576,274877906944\]"),
    (lambda: tf.ones([2**20, 1]) * _view(2**38), "multiply", r"\[1048576,274877906944\]"),
    (lambda: tf.concat([_view(2**28, 2**28)] * 2, 0), "concat", r"\[536870912,268435456\]"),
    (lambda: tf.stack([_view(2**28, 2**28)] * 2), "stack", r"\[2,268435456,268435456\]"),
    (lambda: tf.one_hot([1, 2], depth=2**56), "one_hot", r"\[\d+(,\d+)*\]"),
    (lambda: tf.zeros_like(_view(*HUGE)), "zeros_like", HUGE_SHAPE[5:]),
    (lambda: tf.ones_like(_view(*HUGE)), "ones_like", HUGE_SHAPE[5:]),
], ids=["matmul", "add-broadcast", "multiply-broadcast", "concat", "stack", "one_hot",
        "zeros_like", "ones_like"])
def test_ops_raise_resource_exhausted_chained_from_memory_error(make, op, shape):
    with pytest.raises(errors.ResourceExhaustedError,
                       match=rf"^{op}: OOM when allocating tensor with shape{shape} and type "
                             rf"\w+ on CPU \([\d.]+ [KMGTPE]iB\)$") as e:
        make()
    cause = e.value.__cause__
    while isinstance(cause, errors.ResourceExhaustedError):  # stack names the op called
        cause = cause.__cause__
    assert isinstance(cause, MemoryError)


def test_numpy_size_overflow_is_resource_exhausted_too():
    # numpy's ValueError when the byte count overflows its index type (2**63 bytes here)
    for make, op in [(lambda: tf.cast(_view(*HUGE), tf.float64), "cast"),
                     (lambda: tf.gather(np.ones((3, 2), np.float32),
                                        np.broadcast_to(np.int32(0), HUGE)), "gather")]:
        with pytest.raises(errors.ResourceExhaustedError,
                           match=rf"^{op}: OOM when allocating a tensor on CPU: array is too "
                                 r"big") as e:
            make()
        assert type(e.value.__cause__) is ValueError


def test_constant_of_a_huge_array_names_constant():
    with pytest.raises(errors.ResourceExhaustedError,
                       match=rf"^constant: OOM when allocating tensor with {HUGE_SHAPE} and "
                             r"type float on CPU \(4.00 EiB\)$"):
        tf.constant(_view(*HUGE))
    with pytest.raises(ValueError, match="^constant: value must hold integers in int64 range"):
        tf.constant(2**64)  # other ValueErrors are unchanged


def _op(forward):
    return registry.Op("test_oom_op", ("x",), lambda x: None, forward, None, None, False, False)


class _OtherMemoryError(MemoryError):
    """A MemoryError subclass of no allocator: not an allocation failure."""


def test_plain_memory_error_names_the_op():
    def forward(k, xp, x):
        raise MemoryError("Allocation failed (probably too large).")  # Numba's text

    with pytest.raises(errors.ResourceExhaustedError,
                       match=r"^test_oom_op: OOM when allocating a tensor on CPU: Allocation "
                             r"failed \(probably too large\)\.$") as e:
        _op(forward)(np.zeros(2, np.float32))
    assert type(e.value.__cause__) is MemoryError


@pytest.mark.parametrize("error", [
    memory.GraphMemoryAllocationError("Out of memory on IPU 0", report=None),
    _OtherMemoryError("other"),
    ValueError("test_oom_op: x must be positive, got -1"),
], ids=["GraphMemoryAllocationError", "other-subclass", "ValueError"])
def test_other_memory_errors_pass_through_unchanged(error):
    def forward(k, xp, x):
        raise error

    with pytest.raises(type(error)) as e:
        _op(forward)(np.zeros(2, np.float32))
    assert e.value is error


def test_ipu_out_of_memory_in_a_program_stays_graph_memory_allocation_error(fresh_ipu_system):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipu_model.tiles_per_ipu = 1  # 624 KiB
    cfg.configure_ipu_system()

    def comp():
        return tf.matmul(tf.ones([512, 1]), tf.ones([1, 1024]))  # 2 MiB output

    with scopes.ipu_scope("/device:IPU:0"):
        with pytest.raises(memory.GraphMemoryAllocationError, match="Out of memory on IPU 0"):
            ipu_compiler.compile(comp)
