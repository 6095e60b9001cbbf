"""IPUInfeedQueue: who reads the dataset (issue 17's speed row). An in-memory ``ipu_gpu.data``
pipeline (slices, batches, repeats, shuffles: no map/filter function, generator, file or
prefetch of its own) is read by the consumer itself on the CPU backend, with no thread; any
other dataset by the prefetch thread. The elements, their order, the replica split, the end
of the dataset, the restart after ``deleter`` and the undo of a rolled-back run are the same
either way."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu import errors
from ipu_gpu.core import backend
from ipu_gpu.emulation import context, rollback
from ipu_gpu.ipu import ipu_infeed_queue
from ipu_gpu.ipu.ipu_infeed_queue import IPUInfeedQueue

pytestmark = pytest.mark.skipif(backend.backend_name() != "cpu",
                                reason="the consumer reads only where copies are host copies")

TMP: list = []  # the running test's tmp_path, for datasets made in parametrize lambdas
X = np.arange(40, dtype=np.float32).reshape(20, 2)
Y = np.arange(20, dtype=np.int32)


def pipeline(repeat=True, shuffle=False):
    ds = ipu_gpu.data.Dataset.from_tensor_slices((X, Y))
    if shuffle:
        ds = ds.shuffle(7, seed=3)
    ds = ds.batch(2, drop_remainder=True)
    return ds.repeat() if repeat else ds


def batch(k):
    """Batch k of ``pipeline()``: rows 2k and 2k+1 (modulo the 10 batches of an epoch)."""
    rows = [2 * (k % 10), 2 * (k % 10) + 1]
    return X[rows], Y[rows]


def threaded(monkeypatch):
    """Make every queue use the prefetch thread, as before the in-consumer reader."""
    monkeypatch.setattr(IPUInfeedQueue, "_reader", lambda self: ipu_infeed_queue._Prefetcher(
        self._source, self._prefetch_depth, self._name))


def prefetch_threads() -> int:
    return sum(t.name.endswith("-prefetch") and t.name.startswith("ipu_gpu-infeed")
               and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize("make", [
    pipeline,
    lambda: pipeline(repeat=False).cache().repeat(),
    lambda: ipu_gpu.data.Dataset.zip((ipu_gpu.data.Dataset.from_tensor_slices(X),
                                      ipu_gpu.data.Dataset.from_tensor_slices(Y))).batch(
        2, drop_remainder=True).take(10).concatenate(pipeline()),
], ids=["slices", "memory_cache", "zip_take_concatenate"])
def test_an_in_memory_pipeline_is_read_by_the_consumer_without_a_thread(make):
    before = prefetch_threads()
    q = IPUInfeedQueue(make(), prefetch_depth=3)
    q.initializer.run()
    assert isinstance(q._prefetcher, ipu_infeed_queue._InlineReader)
    assert prefetch_threads() == before
    for k in range(25):  # past the end of two epochs
        x, y = q._next_element()
        assert isinstance(x, ipu_gpu.Tensor) and isinstance(y, ipu_gpu.Tensor)
        np.testing.assert_array_equal(x.numpy(), batch(k)[0])
        np.testing.assert_array_equal(y.numpy(), batch(k)[1])
        assert x._value.flags.c_contiguous and x._value.base is None  # a fresh buffer
    assert q._ready() == 0 and prefetch_threads() == before
    q.deleter.run()


@pytest.mark.parametrize("make", [
    lambda: pipeline().map(lambda x, y: (x * 2.0, y)),
    lambda: pipeline().prefetch(2),
    lambda: ipu_gpu.data.Dataset.from_generator(
        lambda: iter([(X[:2], Y[:2])] * 3), output_signature=(
            ipu_gpu.TensorSpec([2, 2], ipu_gpu.float32), ipu_gpu.TensorSpec([2],
                                                                            ipu_gpu.int32))),
    lambda: [(X[:2], Y[:2])] * 3,
    lambda: pipeline(repeat=False).cache(str(TMP[0] / "cache")).repeat(),
], ids=["map", "prefetch", "generator", "list", "file_cache"])
def test_other_datasets_are_read_by_the_prefetch_thread(make, tmp_path):
    TMP[:] = [tmp_path]
    q = IPUInfeedQueue(make(), prefetch_depth=2)
    q.initializer.run()
    assert isinstance(q._prefetcher, ipu_infeed_queue._Prefetcher)
    assert q._prefetcher.thread.is_alive() or q._ready() > 0
    q._next_element()
    q.deleter.run()


@pytest.mark.parametrize("shuffle", [False, True])
def test_the_consumer_reads_what_the_thread_reads(monkeypatch, shuffle):
    """The same elements in the same order, and the same end of the dataset."""
    def elements():
        q = IPUInfeedQueue(pipeline(repeat=False, shuffle=shuffle))
        got = [tuple(t.numpy() for t in q._next_element()) for _ in range(10)]
        with pytest.raises(errors.OutOfRangeError) as e:
            q._next_element()
        with pytest.raises(errors.OutOfRangeError) as again:  # stays ended
            q._next_element()
        kind = type(q._prefetcher).__name__
        q.deleter.run()
        return got, *(str(x.value).replace(q.name, "Q") for x in (e, again)), kind
    inline = elements()
    threaded(monkeypatch)
    thread = elements()
    assert (inline[3], thread[3]) == ("_InlineReader", "_Prefetcher")
    for (xa, ya), (xb, yb) in zip(inline[0], thread[0]):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    assert inline[1:3] == thread[1:3]
    assert "replica 0 at step 10" in inline[1] and "ended after 10 elements" in inline[1]


def test_replica_split_and_end_of_dataset_with_the_consumer_reading():
    """Two replicas over the 10 batches of one epoch: replica r gets batch 2k + r at step k;
    the sixth step ends the dataset for both, naming the replica and the step."""
    q = IPUInfeedQueue(pipeline(repeat=False), prefetch_depth=2)
    q.initializer.run()
    assert isinstance(q._prefetcher, ipu_infeed_queue._InlineReader)
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
    q = IPUInfeedQueue(pipeline(), prefetch_depth=1)
    q.initializer.run()
    for k in range(4):
        np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(k)[0])
    q.deleter.run()
    q.initializer.run()
    np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(0)[0])
    q.deleter.run()
    np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(0)[0])  # lazy start
    q.deleter.run()


def test_an_undone_run_hands_the_same_elements_out_again():
    q = IPUInfeedQueue(pipeline())
    device = object()
    ctx = context.ReplicaContext(device=device, replica_index=0, replication_factor=1,
                                 ipus=())
    with context.entered(ctx):
        np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(0)[0])
        with rollback.undoable(device) as point:
            for k in (1, 2, 3):
                np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(k)[0])
            point.undo()
        for k in (1, 2, 3, 4):
            np.testing.assert_array_equal(q._next_element()[0].numpy(), batch(k)[0])
    assert isinstance(q._prefetcher, ipu_infeed_queue._InlineReader)
    q.deleter.run()


def test_a_bad_element_is_raised_by_the_consumer_and_stays():
    """A dataset whose reading fails (here: an element of another shape, which the queue
    refuses) fails the dequeue that reads it, and every later one, as the thread's error."""
    ds = ipu_gpu.data.Dataset.from_tensor_slices(X).batch(3)  # last batch: 2 rows
    with pytest.raises(ValueError, match="not fully defined"):
        IPUInfeedQueue(ds)
    q = IPUInfeedQueue(ipu_gpu.data.Dataset.from_tensor_slices(X[:4]).batch(2, True))
    q._source.spec.shapes[0] = (3, 2)  # the spec the elements no longer match
    for _ in range(2):
        with pytest.raises(ValueError, match="element 0 of the dataset has shape"):
            q._next_element()
    q.deleter.run()
