"""IPUInfeedQueue: who reads the dataset. A pipeline that runs no user code (slices, batches,
repeats, shuffles: ``ipu_gpu.data`` without map/filter/generators) is topped up by the
consumer itself after each dequeue, on the CPU backend; anything else is read by the prefetch
thread. Either way the elements, their order, the replica split, the prefetch depth and the
end of the dataset are the same."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu import errors
from ipu_gpu.core import backend
from ipu_gpu.emulation import context
from ipu_gpu.ipu import ipu_infeed_queue
from ipu_gpu.ipu.ipu_infeed_queue import IPUInfeedQueue

pytestmark = pytest.mark.skipif(backend.backend_name() != "cpu",
                                reason="the consumer reads only where copies are host copies")

X = np.arange(40, dtype=np.float32).reshape(20, 2)
Y = np.arange(20, dtype=np.int32)


def pure(repeat=True):
    ds = ipu_gpu.data.Dataset.from_tensor_slices((X, Y)).batch(2, drop_remainder=True)
    return ds.repeat() if repeat else ds


def batch(k):
    """Batch k of ``pure()``: rows 2k and 2k+1 (modulo the 10 batches of an epoch)."""
    rows = [2 * (k % 10), 2 * (k % 10) + 1]
    return X[rows], Y[rows]


def wait_ready(q, n, timeout=5.0):
    t0 = time.perf_counter()
    while q._ready() < n:
        assert time.perf_counter() - t0 < timeout, "prefetching did not fill the queue"
        time.sleep(0.002)


def record_readers(monkeypatch):
    """The names of the threads that read each element, in order."""
    names = []
    read = ipu_infeed_queue._Prefetcher._read

    def recording(self):
        names.append(threading.current_thread().name)
        return read(self)
    monkeypatch.setattr(ipu_infeed_queue._Prefetcher, "_read", recording)
    return names


def test_a_pipeline_without_user_code_is_topped_up_by_the_consumer(monkeypatch):
    readers = record_readers(monkeypatch)
    q = IPUInfeedQueue(pure(), prefetch_depth=3)
    q.initializer.run()
    wait_ready(q, 3)
    assert q._prefetcher.inline
    first_fill = list(readers)
    assert len(first_fill) == 3 and all(n.endswith("-prefetch") for n in first_fill)
    for k in range(25):  # past the end of two epochs
        x, y = q._next_element()
        assert isinstance(x, ipu_gpu.Tensor) and isinstance(y, ipu_gpu.Tensor)
        np.testing.assert_array_equal(x.numpy(), batch(k)[0])
        np.testing.assert_array_equal(y.numpy(), batch(k)[1])
        assert q._ready() == 3  # already topped up, no waiting
    assert readers[3:] == [threading.current_thread().name] * 25
    q.deleter.run()


def test_a_pipeline_with_a_function_is_read_by_the_prefetch_thread(monkeypatch):
    called_in = []

    def scale(x, y):
        called_in.append(threading.current_thread().name)
        return x * 2.0, y
    q = IPUInfeedQueue(pure().map(scale), prefetch_depth=2)
    made = len(called_in)  # calls while the queue learnt the element spec
    for k in range(6):
        x, y = q._next_element()
        np.testing.assert_array_equal(x.numpy(), batch(k)[0] * 2.0)
        np.testing.assert_array_equal(y.numpy(), batch(k)[1])
    assert not q._prefetcher.inline
    assert len(called_in) > made + 6
    assert set(called_in[made:]) == {q._prefetcher.thread.name}
    q.deleter.run()


@pytest.mark.parametrize("inline", [True, False])
def test_replica_split_and_end_of_dataset_do_not_depend_on_the_reader(inline):
    """Two replicas over the 10 batches of one epoch: replica r gets batch 2k + r at step k;
    the sixth step ends the dataset for both, naming the replica and the step."""
    q = IPUInfeedQueue(pure(repeat=False), prefetch_depth=2)
    q.initializer.run()
    q._prefetcher.inline = inline
    got = [[], []]
    failures = [None, None]
    barrier = threading.Barrier(2)

    def replica(r):
        ctx = context.ReplicaContext(device=None, replica_index=r, replication_factor=2,
                                     ipus=())
        with context.entered(ctx):
            for _ in range(5):
                got[r].append(int(q._next_element()[1].numpy()[0]))
            barrier.wait()
            try:
                q._next_element()
            except errors.OutOfRangeError as e:
                failures[r] = str(e)

    threads = [threading.Thread(target=replica, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive()
    for r in range(2):
        assert got[r] == [2 * (2 * k + r) for k in range(5)]  # each batch's first label
        assert failures[r] is not None and f"replica {r} at step 5" in failures[r]
        assert "ended after 10 elements" in failures[r]
    q.deleter.run()


def test_reading_restarts_after_the_deleter():
    q = IPUInfeedQueue(pure(), prefetch_depth=1)
    q.initializer.run()
    for k in range(4):
        np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(k)[0])
    q.deleter.run()
    q.initializer.run()
    np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(0)[0])
    q.deleter.run()


def test_a_consumer_faster_than_the_first_fill_reads_what_it_needs():
    """Dequeuing before the thread filled anything: the consumer reads the element itself
    (or takes the thread's), never waits for the thread, and the order holds."""
    q = IPUInfeedQueue(pure(), prefetch_depth=5)
    for k in range(12):
        np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(k)[0])
    wait_ready(q, 5)
    np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(12)[0])
    q.deleter.run()
