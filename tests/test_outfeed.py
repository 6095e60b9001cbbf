"""ipu.ipu_outfeed_queue: the documented examples of section 18.5 (shapes for 1 and several
replicas, tuple and dict outfeeds, LAST mode), values per replica, iteration, synthetic data,
errors.

Replicas are simulated as the engine runs them: R threads, each inside its ReplicaContext;
``repeat`` below is a stand-in for ``loops.repeat`` (the body's outputs feed the next step)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu import errors
from ipu_gpu.emulation import context, system
from ipu_gpu.ipu import config as ipu_config
from ipu_gpu.ipu.ipu_infeed_queue import FeedOperation, IPUInfeedQueue
from ipu_gpu.ipu.ipu_outfeed_queue import IPUOutfeedMode, IPUOutfeedQueue

from test_infeed import Repeating, run_replicas


@pytest.fixture(autouse=True)
def _no_flags(monkeypatch):
    monkeypatch.delenv("TF_POPLAR_FLAGS", raising=False)


def repeat(n, body, v, infeed=None):
    for _ in range(n):
        args = (v,) if infeed is None else (v, infeed._next_element())
        v, op = body(*args)
        assert isinstance(op, FeedOperation)
    return v


def on_replicas(n_rep, fn):
    return run_replicas(n_rep, fn)


# ---- the documented examples -----------------------------------------------------------------

@pytest.mark.parametrize("mode", [IPUOutfeedMode.ALL, IPUOutfeedMode.LAST])
@pytest.mark.parametrize("n_rep", [1, 2])
def test_example_single_tensor(mode, n_rep):
    outfeed_queue = IPUOutfeedQueue(outfeed_mode=mode)

    def body(v):
        output = v + 1
        outfeed = outfeed_queue.enqueue(output)
        return output, outfeed

    on_replicas(n_rep, lambda r: repeat(20, body, ipu_gpu.ones([4, 4])))
    outfed = outfeed_queue.dequeue()
    if mode is IPUOutfeedMode.ALL:
        assert outfed.shape == ((20, 4, 4) if n_rep == 1 else (20, n_rep, 4, 4))
        expect = np.arange(2, 22, dtype=np.float32)[:, None, None] * np.ones((4, 4))
        if n_rep > 1:
            expect = np.repeat(expect[:, None], n_rep, axis=1)
        np.testing.assert_array_equal(outfed.numpy(), expect)
    else:
        assert outfed.shape == ((4, 4) if n_rep == 1 else (n_rep, 4, 4))
        np.testing.assert_array_equal(outfed.numpy(), np.full(outfed.shape, 21.0))
    assert isinstance(outfed, ipu_gpu.Tensor) and outfed.dtype == np.float32


@pytest.mark.parametrize("mode", [IPUOutfeedMode.ALL, IPUOutfeedMode.LAST])
def test_example_tuple(mode):
    outfeed_queue = IPUOutfeedQueue(outfeed_mode=mode)

    def body(v):
        output = v + 1
        total = ipu_gpu.reshape(ipu_gpu.reduce_sum(output), [1])
        outfeed = outfeed_queue.enqueue((output, total))
        return output, outfeed

    on_replicas(1, lambda r: repeat(20, body, ipu_gpu.ones([4, 4])))
    outfed = outfeed_queue.dequeue()
    assert isinstance(outfed, tuple) and len(outfed) == 2
    if mode is IPUOutfeedMode.ALL:
        assert (outfed[0].shape, outfed[1].shape) == ((20, 4, 4), (20, 1))
        np.testing.assert_array_equal(outfed[1].numpy()[:, 0], 16 * np.arange(2, 22))
    else:
        assert (outfed[0].shape, outfed[1].shape) == ((4, 4), (1,))
        assert float(outfed[1][0]) == 16 * 21


@pytest.mark.parametrize("mode", [IPUOutfeedMode.ALL, IPUOutfeedMode.LAST])
def test_example_dict_with_8_replicas(mode):
    outfeed_queue = IPUOutfeedQueue(outfeed_mode=mode)

    def body(v):
        output = v + 1
        total = ipu_gpu.reshape(ipu_gpu.reduce_sum(output), [1])
        outfeed = outfeed_queue.enqueue({"x": output, "y": total})
        return output, outfeed

    on_replicas(8, lambda r: repeat(40, body, ipu_gpu.fill([4, 4], float(r))))
    outfed = outfeed_queue.dequeue()
    assert isinstance(outfed, dict) and sorted(outfed) == ["x", "y"]
    shapes = {k: tuple(v.shape) for k, v in outfed.items()}
    if mode is IPUOutfeedMode.ALL:
        assert shapes == {"x": (40, 8, 4, 4), "y": (40, 8, 1)}
        # replica r started from r: step k of replica r holds r + k + 1
        y = outfed["y"].numpy()[:, :, 0]
        np.testing.assert_array_equal(y, 16 * (np.arange(8)[None, :] + np.arange(1, 41)[:, None]))
    else:
        assert shapes == {"x": (8, 4, 4), "y": (8, 1)}
        np.testing.assert_array_equal(outfed["y"].numpy()[:, 0], 16 * (np.arange(8) + 40))


def test_semantics_doc_data_repeat_20_over_10_elements():
    """repeat(20) over a repeated 10-element increasing dataset, v = v + x from ones:
    outfeed (20, 4, 4), outfed[5] = 16, last = 91."""
    infeed = IPUInfeedQueue(Repeating([np.full((4, 4), i, np.float32) for i in range(10)]))
    outfeed = IPUOutfeedQueue()

    def body(v, x):
        v = v + x
        return v, outfeed.enqueue(v)

    on_replicas(1, lambda r: repeat(20, body, ipu_gpu.ones([4, 4]), infeed))
    outfed = outfeed.dequeue().numpy()
    assert outfed.shape == (20, 4, 4)
    assert (outfed[5] == 16).all() and (outfed[-1] == 91).all()
    infeed.deleter.run()


def test_list_structure_is_kept():
    q = IPUOutfeedQueue()
    q.enqueue([np.float32(1), np.zeros(3, np.int32)])
    out = q.dequeue()
    assert isinstance(out, list) and out[0].shape == (1,) and out[1].shape == (1, 3)
    assert out[1].dtype == np.int32


# ---- dequeue semantics -------------------------------------------------------------------------

def test_dequeue_takes_the_elements():
    q = IPUOutfeedQueue()
    for i in range(3):
        q.enqueue(np.full(2, i, np.float32))
    assert q.dequeue().shape == (3, 2)
    assert q.dequeue().shape == (0, 2)
    q.enqueue(np.full(2, 7, np.float32))
    np.testing.assert_array_equal(q.dequeue().numpy(), [[7, 7]])


def test_last_mode_keeps_only_the_last_and_is_taken():
    q = IPUOutfeedQueue(IPUOutfeedMode.LAST)
    for i in range(5):
        q.enqueue(np.float32(i))
    assert float(q.dequeue()) == 4.0
    with pytest.raises(errors.OutOfRangeError, match="nothing was enqueued since the last"):
        q.dequeue()


def test_dequeue_before_any_enqueue():
    with pytest.raises(ValueError, match="outfeed which has not been enqueued"):
        IPUOutfeedQueue().dequeue()


def test_a_replica_ahead_keeps_its_extra_elements():
    q = IPUOutfeedQueue()

    def replica(r):
        for k in range(3 + r):
            q.enqueue(np.float32(10 * r + k))

    on_replicas(2, replica)
    np.testing.assert_array_equal(q.dequeue().numpy(), [[0, 10], [1, 11], [2, 12]])
    assert q.dequeue().shape == (0, 2)


def test_enqueued_arrays_are_copied():
    q = IPUOutfeedQueue()
    a = np.zeros(3, np.float32)
    q.enqueue(a)
    a[:] = 5
    np.testing.assert_array_equal(q.dequeue().numpy(), [[0, 0, 0]])


# ---- iteration ---------------------------------------------------------------------------------

def test_iteration_yields_one_element_per_enqueue():
    q = IPUOutfeedQueue()
    assert list(q) == []  # empty: StopIteration at once
    on_replicas(2, lambda r: [q.enqueue((np.float32(r), np.full(3, r, np.int32)))
                              for _ in range(4)])
    items = list(q)
    assert len(items) == 4
    for a, b in items:
        assert a.shape == (2,) and b.shape == (2, 3)
        np.testing.assert_array_equal(a.numpy(), [0, 1])
    assert list(q) == []
    single = IPUOutfeedQueue()
    single.enqueue(np.ones((2, 2), np.float32))
    (only,) = list(single)
    assert only.shape == (2, 2)


def test_last_mode_cannot_be_iterated():
    q = IPUOutfeedQueue(IPUOutfeedMode.LAST)
    with pytest.raises(ValueError, match="only an IPUOutfeedMode.ALL outfeed can be iterated"):
        iter(q).__next__()


# ---- synthetic data ----------------------------------------------------------------------------

@pytest.mark.parametrize("flags", ["--use_synthetic_data",
                                   "--synthetic_data_categories=outfeed"])
def test_synthetic_data_all_returns_empty_arrays(monkeypatch, flags):
    monkeypatch.setenv("TF_POPLAR_FLAGS", flags)
    q = IPUOutfeedQueue()
    on_replicas(2, lambda r: [q.enqueue({"x": np.ones((4, 4), np.float32),
                                         "y": np.int32(1)}) for _ in range(5)])
    out = q.dequeue()
    assert sorted(out) == ["x", "y"]
    assert out["x"].shape == (0, 2, 4, 4) and out["y"].shape == (0, 2)
    assert out["y"].dtype == np.int32


def test_synthetic_data_last_raises(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data")
    q = IPUOutfeedQueue(IPUOutfeedMode.LAST)
    q.enqueue(np.ones(2, np.float32))
    with pytest.raises(errors.OutOfRangeError, match="no last element"):
        q.dequeue()


def test_other_synthetic_categories_keep_the_outfeed(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--synthetic_data_categories=infeed")
    q = IPUOutfeedQueue()
    q.enqueue(np.ones(2, np.float32))
    assert q.dequeue().shape == (1, 2)


# ---- wait_for_completion, deleter --------------------------------------------------------------

def test_wait_for_completion_waits_for_work_on_the_device():
    system.reset()
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    try:
        ipu = system.current_system().device(0).ipus[0]
        q = IPUOutfeedQueue()
        started = threading.Event()

        def program():
            ctx = context.ReplicaContext(device=None, replica_index=0, replication_factor=1,
                                         ipus=(ipu,))
            with context.entered(ctx):
                started.set()
                time.sleep(0.05)
                q.enqueue(np.float32(3))

        ipu.executor.submit(program)
        started.wait(5)
        out = q.dequeue(wait_for_completion=True)
        np.testing.assert_array_equal(out.numpy(), [3])
    finally:
        system.reset()


def test_wait_for_completion_errors():
    q = IPUOutfeedQueue()
    q.enqueue(np.float32(1))
    with pytest.raises(TypeError, match="wait_for_completion must be a bool"):
        q.dequeue(wait_for_completion=1)
    ctx = context.ReplicaContext(device=None, replica_index=0, replication_factor=1, ipus=())
    with context.entered(ctx):
        with pytest.raises(RuntimeError, match="would wait for itself"):
            q.dequeue(wait_for_completion=True)
    assert q.dequeue(wait_for_completion=True).shape == (1,)  # no system: nothing to wait on


def test_deleter_clears_elements_and_structure():
    q = IPUOutfeedQueue()
    q.enqueue(np.float32(1))
    assert q.enqueued
    assert isinstance(q.deleter, FeedOperation)
    assert not q.enqueued
    with pytest.raises(ValueError, match="not been enqueued"):
        q.dequeue()
    q.enqueue((np.int32(1), np.int32(2)))  # a new structure is fine after the deleter
    assert len(q.dequeue()) == 2


# ---- errors ------------------------------------------------------------------------------------

def test_constructor_errors():
    with pytest.raises(ValueError, match=r"^Expected `outfeed_mode` value to be of "
                                         r"`ipu_outfeed_queue.IPUOutfeedMode` type, but is "
                                         r"<class 'str'>\.$"):
        IPUOutfeedQueue("all")
    with pytest.raises(ValueError, match="^Outfeed buffer depth cannot be less than 1$"):
        IPUOutfeedQueue(buffer_depth=0)
    with pytest.raises(TypeError, match="Expected int for argument 'buffer_depth' not 1.5"):
        IPUOutfeedQueue(buffer_depth=1.5)
    with pytest.raises(ValueError, match="^Device ordinal must be >= 0$"):
        IPUOutfeedQueue(device_ordinal=-2)
    with pytest.raises(ValueError, match="^Device ordinal must be an integer$"):
        IPUOutfeedQueue(device_ordinal="0")
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        IPUOutfeedQueue(nope=1)
    assert IPUOutfeedQueue(device_ordinal=None)._device_ordinal == 0
    assert IPUOutfeedMode.ALL.value == "all" and IPUOutfeedMode.LAST.value == "get_last"


@pytest.mark.parametrize("kwarg", ["feed_name", "replication_factor", "io_batch_size"])
def test_deprecated_arguments_warn(kwarg):
    with pytest.warns(DeprecationWarning, match=f"with {kwarg} is deprecated"):
        IPUOutfeedQueue(**{kwarg: 1})


def test_enqueue_errors():
    q = IPUOutfeedQueue()
    with pytest.raises(ValueError, match="at least one tensor"):
        q.enqueue(())
    with pytest.raises(TypeError, match="got a object on index 0"):
        q.enqueue(object())
    # a str is a string tensor, as in TF, which no IPU data stream carries
    with pytest.raises(TypeError, match="Unsupported datatype string on index 0"):
        q.enqueue("text")
    with pytest.raises(TypeError, match="Unsupported datatype string on index 1"):
        q.enqueue((np.zeros(2, np.float32), np.array([b"a"], object)))
    q.enqueue((np.zeros(2, np.float32), np.int32(0)))
    with pytest.raises(ValueError, match="structure of the first enqueue"):
        q.enqueue([np.zeros(2, np.float32), np.int32(0)])
    with pytest.raises(ValueError, match="structure of the first enqueue"):
        q.enqueue({"a": np.zeros(2, np.float32)})
    with pytest.raises(ValueError, match=r"tensor 0 must have shape \[2\].*got \[3\]"):
        q.enqueue((np.zeros(3, np.float32), np.int32(0)))
    with pytest.raises(TypeError, match="tensor 1 must have dtype int32.*got float32"):
        q.enqueue((np.zeros(2, np.float32), np.float32(0)))
    with pytest.raises(ValueError, match="replication factor 1.*replication factor 2"):
        on_replicas(2, lambda r: q.enqueue((np.zeros(2, np.float32), np.int32(0))))


def test_values_stay_on_the_backend_device(backend):
    xp = backend
    q = IPUOutfeedQueue()
    on_replicas(2, lambda r: [q.enqueue(ipu_gpu.constant(xp.full(3, r, np.float32)))
                              for _ in range(2)])
    out = q.dequeue()
    assert type(out._value).__module__.split(".")[0] == xp.__name__
    np.testing.assert_array_equal(out.numpy(), np.array([[[0] * 3, [1] * 3]] * 2))
