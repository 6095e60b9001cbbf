"""The embedded runtime runs each step as a program on the emulated IPU device (one replica
taking all its IPUs), as ipu_compiler.compile programs run: in a replica context, charged to
the IPU's memory ledger (an executable too big for the IPU fails with InternalError caused by
GraphMemoryAllocationError, and runs on the host when no system is configured; a call
from inside a program runs in its replica), with numpy's results."""

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import errors
from ipu_gpu.emulation import memory, system
from ipu_gpu.ipu import (application_compile_op, config, embedded_runtime, ipu_infeed_queue,
                         ipu_outfeed_queue, loops)
from ipu_gpu.ipu.ops import replication_ops


def _program(n):
    ds = tf.data.Dataset.from_tensors(np.zeros(2, np.float32)).repeat()
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

    def body(x):
        big = tf.tile(x * 0.0 + 1.0, [n // 2])  # n float32s made inside the step
        index = replication_ops.replication_index()
        return outfeed.enqueue([x * 2.0 + tf.reduce_sum(big), tf.cast(index, tf.float32)])

    return lambda: loops.repeat(3, body, [], infeed)


def _configure(tiles=None, ipus=2):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = ipus
    if tiles is not None:
        cfg.ipu_model.tiles_per_ipu = tiles
    cfg.configure_ipu_system()
    return system.current_system()


def test_steps_run_as_a_replica_charged_to_the_ipu(tmp_path, fresh_ipu_system):
    s = _configure()
    ledgers = [ipu.memory for ipu in s.devices[0].ipus]
    path = str(tmp_path / "app")
    application_compile_op.experimental_application_compile_op(_program(1000),
                                                               output_path=path)
    ctx = embedded_runtime.embedded_runtime_start(path, [], "dev_replica")
    seen = []
    for i in range(4):
        x = np.float32([i, -i])
        y, index = embedded_runtime.embedded_runtime_call([x], ctx)
        np.testing.assert_allclose(y.numpy(), x * 2 + 1000)
        assert index.numpy() == 0
        seen.append([ledger.peak for ledger in ledgers])
    assert seen[-1][0] >= 4000  # the step's 1000 floats were on the first IPU
    assert [ledger.used for ledger in ledgers] == [0, 0]  # released after each step


def test_a_step_too_big_for_the_ipu_fails_and_the_host_has_room(tmp_path, fresh_ipu_system):
    path = str(tmp_path / "big")
    application_compile_op.experimental_application_compile_op(_program(1 << 20),
                                                               output_path=path)
    _configure(tiles=1, ipus=1)  # 624 KiB: the step's 4 MiB do not fit
    ctx = embedded_runtime.embedded_runtime_start(path, [], "dev_big")
    with pytest.raises(errors.InternalError, match="GraphMemoryAllocationError") as e:
        embedded_runtime.embedded_runtime_call([np.float32([1, 2])], ctx)
    assert isinstance(e.value.__cause__, memory.GraphMemoryAllocationError)
    system.reset()  # no IPU system: the step runs on the host
    ctx = embedded_runtime.embedded_runtime_start(path, [], "dev_big_host")
    y, _ = embedded_runtime.embedded_runtime_call([np.float32([1, 2])], ctx)
    np.testing.assert_allclose(y.numpy(), np.float32([1, 2]) * 2 + (1 << 20))


def test_a_call_from_inside_a_program_runs_in_its_replica(tmp_path, fresh_ipu_system):
    """A program holding the device that calls the runtime gets its answer (the step runs
    in the caller's replica instead of waiting for the device the caller holds)."""
    from ipu_gpu.ipu import ipu_compiler, scopes

    _configure(ipus=1)
    path = str(tmp_path / "inner")
    application_compile_op.experimental_application_compile_op(_program(4),
                                                               output_path=path)
    ctx = embedded_runtime.embedded_runtime_start(path, [], "dev_inner")

    def program():
        return embedded_runtime.embedded_runtime_call([np.float32([1, 2])], ctx)[0]

    with scopes.ipu_scope("/device:IPU:0"):
        (y,) = ipu_compiler.compile(program)
    np.testing.assert_allclose(y.numpy(), np.float32([1, 2]) * 2 + 4)
