"""ipu.ipu_infeed_queue.IPUInfeedQueue: datasets accepted and refused (the SDK's errors), the
replica split (element step*R + r), exhaustion, prefetching, deleter/initializer.

Replicas are simulated as the engine runs them: R threads, each inside
``context.entered(ReplicaContext(...))``, calling ``queue._next_element()``."""

from __future__ import annotations

import collections
import random
import threading
import time

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu import errors
from ipu_gpu.emulation import context
from ipu_gpu.ipu import ipu_infeed_queue
from ipu_gpu.ipu.ipu_infeed_queue import FeedOperation, IPUInfeedQueue


def run_replicas(n_rep, fn):
    """fn(r) in R threads, each inside its replica context; per-replica results, or the
    first exception re-raised."""
    results, failures = [None] * n_rep, [None] * n_rep

    def body(r):
        ctx = context.ReplicaContext(device=None, replica_index=r, replication_factor=n_rep,
                                     ipus=())
        with context.entered(ctx):
            try:
                results[r] = fn(r)
            except BaseException as e:  # noqa: BLE001 - re-raised below
                failures[r] = e

    threads = [threading.Thread(target=body, args=(r,)) for r in range(n_rep)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive(), "a replica hung"
    for e in failures:
        if e is not None:
            raise e
    return results


def numbered(n, shape=(2, 3), dtype=np.float32):
    """n elements: (x filled with i, label i as int32)."""
    return [(np.full(shape, i, dtype), np.int32(i)) for i in range(n)]


class Repeating:
    """An endless re-iterable over ``items`` (a repeated dataset)."""

    def __init__(self, items, delay=0.0):
        self.items, self.delay = items, delay
        self.reads = 0

    def __iter__(self):
        i = 0
        while True:
            if self.delay:
                time.sleep(self.delay)
            self.reads += 1
            yield self.items[i % len(self.items)]
            i += 1


def labels_of(element):
    return int(element[1])


# ---- replica split ---------------------------------------------------------------------------

@pytest.mark.parametrize("n_rep", [1, 2, 4, 8])
def test_replica_r_gets_element_step_times_r_plus_r(n_rep):
    steps = 5
    q = IPUInfeedQueue(numbered(steps * n_rep))

    def replica(r):
        out = []
        for _ in range(steps):
            time.sleep(random.random() * 1e-3)  # thread timing must not matter
            out.append(labels_of(q._next_element()))
        return out

    got = run_replicas(n_rep, replica)
    for r in range(n_rep):
        assert got[r] == [k * n_rep + r for k in range(steps)]


def test_host_code_is_replica_0_of_1():
    q = IPUInfeedQueue(numbered(3))
    assert context.current() is None
    assert [labels_of(q._next_element()) for _ in range(3)] == [0, 1, 2]


def test_elements_are_tensors_with_the_dataset_structure():
    Point = collections.namedtuple("Point", "x y")
    data = [{"a": np.full((2,), i, np.float32), "b": Point(np.int32(i), [np.float32(i)])}
            for i in range(3)]
    q = IPUInfeedQueue(data)
    e = q._next_element()
    assert isinstance(e, dict) and sorted(e) == ["a", "b"]
    assert isinstance(e["b"], Point) and isinstance(e["b"].y, list)
    assert isinstance(e["a"], ipu_gpu.Tensor)
    np.testing.assert_array_equal(e["a"].numpy(), [0, 0])
    e = q._next_element()
    assert int(e["b"].x) == 1 and e["b"].x.dtype == np.int32
    assert float(e["b"].y[0]) == 1.0
    assert q.number_of_tuple_elements == 2
    assert q.dequeued


def test_leaves_may_be_tensors_and_python_numbers():
    data = [(ipu_gpu.constant([1.0, 2.0]), 3, 0.5, True)] * 2
    q = IPUInfeedQueue(data)
    x, i, f, b = q._next_element()
    assert x.dtype == np.float32 and i.dtype == np.int32 and f.dtype == np.float32
    assert b.dtype == np.bool_
    assert q.element_spec == (((2,), np.float32), ((), np.int32), ((), np.float32),
                              ((), np.bool_))


def test_number_of_tuple_elements():
    assert IPUInfeedQueue([np.zeros(2, np.float32)]).number_of_tuple_elements == 1
    assert IPUInfeedQueue([(np.zeros(2, np.float32),) * 3]).number_of_tuple_elements == 3
    assert IPUInfeedQueue([{"a": np.float32(0), "b": np.float32(1)}]).number_of_tuple_elements \
        == 2


def test_elements_are_copies_in_fresh_buffers():
    src = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    q = IPUInfeedQueue(src)
    e = q._next_element()
    assert not np.shares_memory(np.asarray(e), src[0])
    src[0][...] = -1  # the element was copied before this
    np.testing.assert_array_equal(e.numpy(), np.arange(6).reshape(2, 3))


# ---- exhaustion --------------------------------------------------------------------------------

def test_exhaustion_raises_out_of_range_naming_queue_replica_and_step():
    q = IPUInfeedQueue(numbered(5))

    def replica(r):
        got = [labels_of(q._next_element()) for _ in range(2)]
        with pytest.raises(errors.OutOfRangeError) as info:
            q._next_element()
        return got, str(info.value)

    (g0, m0), (g1, m1) = run_replicas(2, replica)
    assert g0 == [0, 2] and g1 == [1, 3]
    for r, m in ((0, m0), (1, m1)):
        assert m.startswith("End of sequence")
        assert q.name in m and f"replica {r} at step 2" in m
        assert "replication factor 2" in m and "ended after 5 elements" in m
        assert "1 element left, 2 needed" in m
    # nothing is lost: the element of the incomplete step is still there
    assert labels_of(q._next_element()) == 4
    with pytest.raises(errors.OutOfRangeError, match="replica 0 at step 1"):
        q._next_element()
    assert isinstance(errors.OutOfRangeError("x"), errors.OpError)


def test_out_of_range_repeats_until_deleted_then_restarts():
    q = IPUInfeedQueue(numbered(2))
    assert [labels_of(q._next_element()) for _ in range(2)] == [0, 1]
    for _ in range(2):
        with pytest.raises(errors.OutOfRangeError):
            q._next_element()
    assert isinstance(q.deleter, FeedOperation)
    assert [labels_of(q._next_element()) for _ in range(2)] == [0, 1]


def test_replication_change_starts_from_first_unused_element():
    q = IPUInfeedQueue(numbered(10))
    got = run_replicas(4, lambda r: labels_of(q._next_element()))
    assert got == [0, 1, 2, 3]
    assert run_replicas(2, lambda r: labels_of(q._next_element())) == [4, 5]
    assert labels_of(q._next_element()) == 6


def test_replica_ahead_of_the_others_keeps_the_order():
    q = IPUInfeedQueue(numbered(12))
    gate = threading.Event()

    def replica(r):
        if r == 1:
            gate.wait(5)
        out = [labels_of(q._next_element()) for _ in range(4)]
        if r == 0:
            gate.set()
        return out

    assert run_replicas(3, replica) == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]]


def test_a_dataset_error_reaches_the_consumer():
    class Broken:
        def __iter__(self):
            yield np.zeros(2, np.float32)
            yield np.zeros(2, np.float32)
            raise RuntimeError("disk on fire")

    q = IPUInfeedQueue(Broken())
    q._next_element()
    q._next_element()
    with pytest.raises(RuntimeError, match="disk on fire"):
        q._next_element()


# ---- datasets refused --------------------------------------------------------------------------

def test_int64_is_refused_with_the_sdk_message():
    with pytest.raises(TypeError, match=r"^Unsupported datatype int64 on index 0 of feed "
                                        r"operation$"):
        IPUInfeedQueue([np.zeros(3, np.int64)])
    with pytest.raises(TypeError, match="Unsupported datatype float64 on index 1 of feed"):
        IPUInfeedQueue([(np.zeros(3, np.float32), np.zeros(3))])
    with pytest.raises(TypeError, match="Unsupported datatype string on index 0"):
        IPUInfeedQueue([("abc",)])


def test_ragged_leaf_is_a_nested_shape():
    class Ragged:
        def __iter__(self):
            yield (np.zeros(2, np.float32), np.array([[1, 2], [3]], dtype=object))

    with pytest.raises(TypeError, match="Unsupported datatype object on index 1"):
        IPUInfeedQueue(Ragged())


def test_shape_that_changes_is_not_static():
    data = [np.zeros((4, 2), np.float32)] * 3 + [np.zeros((3, 2), np.float32)]
    q = IPUInfeedQueue(data)
    for _ in range(3):
        q._next_element()
    with pytest.raises(ValueError, match=r"element 3 of the dataset has shape \[3, 2\] on "
                                         r"index 0, but the first element had \[4, 2\]"):
        q._next_element()


def test_dtype_or_structure_that_changes_is_refused():
    q = IPUInfeedQueue([np.zeros(2, np.float32), np.zeros(2, np.int32)])
    q._next_element()
    with pytest.raises(TypeError, match="dtype int32 on index 0"):
        q._next_element()
    q = IPUInfeedQueue([(np.float32(0),), (np.float32(0), np.float32(0))])
    q._next_element()
    with pytest.raises(ValueError, match="has 2 tensors, but the first element had 1"):
        q._next_element()


def test_bad_datasets_and_arguments():
    with pytest.raises(TypeError, match="re-iterable"):
        IPUInfeedQueue(iter(numbered(2)))
    with pytest.raises(TypeError, match="re-iterable"):
        IPUInfeedQueue(x for x in numbered(2))
    with pytest.raises(TypeError, match="must be a tf.data.Dataset"):
        IPUInfeedQueue(42)
    with pytest.raises(ValueError, match="at least one element"):
        IPUInfeedQueue([])
    with pytest.raises(TypeError, match="dataset elements must be nested structures"):
        IPUInfeedQueue([object()])
    with pytest.raises(ValueError, match="^prefetch_depth must be greater than zero, but it "
                                         "is -1$"):
        IPUInfeedQueue(numbered(1), prefetch_depth=-1)
    with pytest.raises(ValueError, match="^prefetch_depth must be less than 256, but it is "
                                         "256$"):
        IPUInfeedQueue(numbered(1), prefetch_depth=256)
    with pytest.raises(TypeError, match="Expected int for argument 'prefetch_depth' not 2.0"):
        IPUInfeedQueue(numbered(1), prefetch_depth=2.0)
    with pytest.raises(ValueError, match="^Device ordinal must be >= 0$"):
        IPUInfeedQueue(numbered(1), device_ordinal=-1)
    with pytest.raises(ValueError, match="^Device ordinal must be an integer$"):
        IPUInfeedQueue(numbered(1), device_ordinal="0")
    # SDK 3.x: prefetch_depth 0 is the default, unknown keyword arguments are ignored
    assert IPUInfeedQueue(numbered(1), prefetch_depth=0).prefetch_depth == 3
    assert labels_of(IPUInfeedQueue(numbered(2), bogus=1)._next_element()) == 0


@pytest.mark.parametrize("kwarg", ["feed_name", "replication_factor", "data_to_prefetch"])
def test_deprecated_arguments_warn_and_are_ignored(kwarg):
    with pytest.warns(DeprecationWarning, match=f"with {kwarg} is deprecated"):
        q = IPUInfeedQueue(numbered(4), **{kwarg: 2})
    assert labels_of(q._next_element()) == 0


def test_get_next_is_obsolete():
    with pytest.raises(ValueError, match=r"^`get_next\(\)` is now obsolete as the "
                                         r"IPUInfeedQueue is now automatically dequeued by "
                                         r"the loop\.$"):
        IPUInfeedQueue(numbered(1)).get_next()


def test_initializer_once_until_deleted():
    q = IPUInfeedQueue(numbered(3))
    op = q.initializer
    assert isinstance(op, FeedOperation) and op.run() is None and op() is None
    with pytest.raises(ValueError, match="`initializer` function can only be accessed once"):
        q.initializer.run()
    assert labels_of(q._next_element()) == 0
    q.deleter.run()
    q.initializer.run()  # allowed again after the deleter
    assert labels_of(q._next_element()) == 0
    q.deleter.run()


# ---- prefetching -------------------------------------------------------------------------------

def _wait_ready(q, n, timeout=5.0):
    t0 = time.perf_counter()
    while q._ready() < n:
        assert time.perf_counter() - t0 < timeout, "prefetching did not fill the queue"
        time.sleep(0.002)


@pytest.mark.parametrize("depth", [1, 3, 7])
def test_prefetch_depth_elements_are_read_ahead_and_no_more(depth):
    ds = Repeating(numbered(4))
    q = IPUInfeedQueue(ds, prefetch_depth=depth)
    ds.reads = 0  # the first element was read once to learn the element spec
    q.initializer.run()
    _wait_ready(q, depth)
    time.sleep(0.02)
    assert q._ready() == depth
    assert ds.reads <= depth + 1  # plus the element waiting for room
    q._next_element()
    _wait_ready(q, depth)
    assert ds.reads <= depth + 2
    q.deleter.run()


def test_prefetch_overlaps_reading_with_the_consumer():
    """Reading an element and consuming one take 30 ms each; with prefetching, 10 steps take
    about 330 ms rather than 600 ms (the bound leaves room for a loaded machine)."""
    ds = Repeating(numbered(4), delay=0.03)
    q = IPUInfeedQueue(ds, prefetch_depth=2)

    def replica(r):
        t0 = time.perf_counter()
        for _ in range(10):
            q._next_element()
            time.sleep(0.03)  # the "computation" of one step
        return time.perf_counter() - t0

    (elapsed,) = run_replicas(1, replica)
    assert elapsed < 0.48, elapsed
    q.deleter.run()


def test_deleter_stops_a_blocked_prefetch_thread():
    q = IPUInfeedQueue(Repeating(numbered(2)), prefetch_depth=1)
    q.initializer.run()
    _wait_ready(q, 1)
    thread = q._prefetcher.thread
    q.deleter.run()
    assert not thread.is_alive()


# ---- synthetic data (TF_POPLAR_FLAGS) ----------------------------------------------------------

class Counted:
    """A re-iterable of ``n`` elements (x float32 [2, 3], y int32 [4], h float16 [], m bool
    [2]) filled with the element's number; counts the elements read."""

    def __init__(self, n=2):
        self.n, self.reads = n, 0

    def __iter__(self):
        for i in range(self.n):
            self.reads += 1
            yield {"x": np.full((2, 3), i + 1, np.float32), "y": np.full(4, i + 1, np.int32),
                   "h": np.float16(i + 1), "m": np.ones(2, bool)}


SPEC = {"x": ((2, 3), np.float32), "y": ((4,), np.int32), "h": ((), np.float16),
        "m": ((2,), np.bool_)}


def arrays(element):
    return {k: v.numpy() for k, v in element.items()}


def check_spec(element):
    for k, (shape, dtype) in SPEC.items():
        assert element[k].shape == shape and element[k].dtype == dtype, k


@pytest.mark.parametrize("flags", [
    "--use_synthetic_data", "--synthetic_data_categories=infeed",
    "--synthetic_data_categories='outfeed, infeed'", "--null_data_feed",
    "--use_ipu_model --use_synthetic_data=true --executable_cache_path=/nonexistent/cache"])
def test_synthetic_infeed_gives_zeros_without_reading_the_dataset(monkeypatch, flags):
    monkeypatch.setenv("TF_POPLAR_FLAGS", flags)
    ds = Counted(2)
    q = IPUInfeedQueue(ds)
    assert ds.reads == 1  # the first element, for the structure, when the queue is made
    q.initializer.run()
    for _ in range(10):  # more than the dataset holds: the infeed never ends
        element = arrays(q._next_element())
        check_spec(element)
        assert not any(v.any() for v in element.values())
    assert ds.reads == 1 and q._ready() == 0 and q.dequeued


@pytest.mark.parametrize("initializer, expected", [
    ("7", {"x": 7.0, "y": 7, "h": 7.0, "m": True}),
    ("-2.5", {"x": -2.0, "y": -2, "h": -2.0, "m": True}),
    ("0", {"x": 0.0, "y": 0, "h": 0.0, "m": False}),
    ("normal", {"y": 1, "m": True}),
])
def test_synthetic_infeed_initializers(monkeypatch, initializer, expected):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--synthetic_data_categories=infeed "
                                          f"--synthetic_data_initializer={initializer}")
    ds = Counted(1)
    q = IPUInfeedQueue(ds)
    first = arrays(q._next_element())
    check_spec(first)
    for k, v in expected.items():
        assert (first[k] == v).all(), k
    for _ in range(3):  # the SDK sets the tensor's initial value once: every step sees it
        again = arrays(q._next_element())
        for k in SPEC:
            np.testing.assert_array_equal(again[k], first[k])
    assert ds.reads == 1


def test_synthetic_infeed_uniform_is_random_over_the_dtype_and_fixed_per_start(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data "
                                          "--synthetic_data_initializer=uniform")
    data = [(np.zeros((64, 64), np.float32), np.zeros(4096, np.int32))]
    q = IPUInfeedQueue(data)
    x, y = (t.numpy() for t in q._next_element())
    assert np.isfinite(x).all() and (x > 0).all() and x.max() > 1e37
    assert y.min() < -(2 ** 30) and y.max() > 2 ** 30 and len(np.unique(y)) > 4000
    x2, _ = (t.numpy() for t in q._next_element())
    np.testing.assert_array_equal(x, x2)
    q.deleter.run()  # a new start makes a new element
    x3, _ = (t.numpy() for t in q._next_element())
    assert not np.array_equal(x, x3)


def test_synthetic_infeed_replicas_each_get_the_element_every_step(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data "
                                          "--synthetic_data_initializer=3")
    ds = Counted(2)
    q = IPUInfeedQueue(ds)
    got = run_replicas(4, lambda r: [arrays(q._next_element()) for _ in range(5)])
    for per_replica in got:
        assert len(per_replica) == 5
        for element in per_replica:
            check_spec(element)
            assert (element["x"] == 3).all() and (element["y"] == 3).all()
    assert ds.reads == 1


def test_other_synthetic_categories_keep_the_host_data(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--synthetic_data_categories=outfeed,seed")
    q = IPUInfeedQueue(numbered(2))
    assert [labels_of(q._next_element()) for _ in range(2)] == [0, 1]
    with pytest.raises(errors.OutOfRangeError):
        q._next_element()


def test_synthetic_flags_are_read_when_the_queue_starts(monkeypatch):
    monkeypatch.delenv("TF_POPLAR_FLAGS", raising=False)
    q = IPUInfeedQueue(numbered(3))
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data")  # before the start: honoured
    q.initializer.run()
    assert labels_of(q._next_element()) == 0 and float(q._next_element()[0].numpy().sum()) == 0
    monkeypatch.delenv("TF_POPLAR_FLAGS")  # after the start: not until deleter
    assert [labels_of(q._next_element()) for _ in range(5)] == [0] * 5
    q.deleter.run()
    assert [labels_of(q._next_element()) for _ in range(3)] == [0, 1, 2]
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data")
    with pytest.raises(errors.OutOfRangeError):  # still the host data, which has ended
        q._next_element()
    q.deleter.run()
    assert [labels_of(q._next_element()) for _ in range(5)] == [0] * 5


def test_malformed_flags_fail_the_start_which_can_be_retried(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data --max_infeed_threads=two")
    q = IPUInfeedQueue(numbered(2))
    with pytest.raises(ValueError, match="^TF_POPLAR_FLAGS: --max_infeed_threads must be an "
                                         "integer, got 'two'$"):
        q.initializer.run()
    with pytest.raises(ValueError, match="TF_POPLAR_FLAGS: --max_infeed_threads"):
        q._next_element()
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data --max_infeed_threads=2")
    q.initializer.run()
    assert labels_of(q._next_element()) == 0


def test_synthetic_tf_dataset_is_never_read(real_tf, monkeypatch):
    tf = real_tf

    def gen():
        raise RuntimeError("the host dataset was read")
        yield  # pragma: no cover

    ds = tf.data.Dataset.from_generator(gen, output_signature=(
        tf.TensorSpec([4, 2], tf.float32), tf.TensorSpec([4], tf.int32)))
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data")
    q = IPUInfeedQueue(ds)
    q.initializer.run()
    x, y = q._next_element()
    assert x.numpy().shape == (4, 2) and x.numpy().dtype == np.float32 and not x.numpy().any()
    assert y.numpy().shape == (4,) and y.numpy().dtype == np.int32


@pytest.mark.usefixtures("fresh_ipu_system")
def test_synthetic_loop_runs_past_the_end_of_the_dataset(monkeypatch):
    from ipu_gpu.ipu import config, ipu_compiler, loops, scopes

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data "
                                          "--synthetic_data_initializer=2")
    q = IPUInfeedQueue([(np.ones((2, 2), np.float32),)] * 2)

    def net(acc):
        return loops.repeat(7, lambda acc, x: acc + x, [acc], infeed_queue=q)

    with scopes.ipu_scope("/device:IPU:0"):
        out = ipu_compiler.compile(net, [np.zeros((2, 2), np.float32)])
    np.testing.assert_array_equal(np.asarray(out[0]), np.full((2, 2), 14, np.float32))


def test_synthetic_infeed_benchmark_reads_the_host_dataset(monkeypatch):
    from ipu_gpu.ipu import dataset_benchmark

    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data")
    ds = Repeating(numbered(3))
    q = IPUInfeedQueue(ds)
    stats = dataset_benchmark.infeed_benchmark(q, 2, 5, print_stats=False)
    assert '"elements_processed": 5' in stats
    assert ds.reads == 1 + 10  # the SDK's infeed_benchmark always reads the host dataset
    assert not q.dequeued


def test_synthetic_elements_land_on_the_backend_device(backend, monkeypatch):
    xp = backend
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data --synthetic_data_initializer=5")
    q = IPUInfeedQueue([(xp.zeros((2, 3), np.float32), np.int32(0))])
    got = run_replicas(2, lambda r: [q._next_element() for _ in range(2)])
    for per_replica in got:
        for x, lab in per_replica:
            assert type(x._value).__module__.split(".")[0] == xp.__name__
            np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 5, np.float32))
            assert int(lab) == 5
    assert got[0][0][0]._value is not got[0][1][0]._value  # a fresh buffer per dequeue


# ---- peers: tf.data and torch ------------------------------------------------------------------

def test_tf_data_dataset(real_tf):
    tf = real_tf
    ds = tf.data.Dataset.range(8).map(
        lambda i: {"x": tf.fill([2, 2], tf.cast(i, tf.float32)), "y": tf.cast(i, tf.int32)})
    q = IPUInfeedQueue(ds)
    assert q.number_of_tuple_elements == 2
    got = run_replicas(2, lambda r: [int(q._next_element()["y"]) for _ in range(4)])
    assert got == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_tf_data_errors(real_tf):
    tf = real_tf
    ds = tf.data.Dataset.from_tensor_slices(np.zeros((10, 3), np.float32))
    with pytest.raises(ValueError, match=r"^Output shape \(None, 3\) is not fully defined\. "
                                         r"If using tf\.Dataset\.batch, set "
                                         r"`drop_remainder=True`\.$"):
        IPUInfeedQueue(ds.batch(4))
    q = IPUInfeedQueue(ds.batch(4, drop_remainder=True))
    assert tuple(q._next_element().shape) == (4, 3)
    with pytest.raises(TypeError, match="^Unsupported datatype int64 on index 0 of feed "
                                        "operation$"):
        IPUInfeedQueue(tf.data.Dataset.range(4))
    ragged = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1.0, 2.0], [3.0]]))
    with pytest.raises(ValueError, match="Nested list/tuple input shapes are not supported"):
        IPUInfeedQueue(ragged)


def test_torch_dataloader():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    x = torch.arange(40, dtype=torch.float32).reshape(10, 4)
    y = torch.arange(10, dtype=torch.int32)
    q = IPUInfeedQueue(DataLoader(TensorDataset(x, y), batch_size=2))
    a, b = q._next_element()
    np.testing.assert_array_equal(a.numpy(), x[:2].numpy())
    np.testing.assert_array_equal(b.numpy(), [0, 1])
    with pytest.raises(ValueError, match="not fully defined.*drop_last=True"):
        IPUInfeedQueue(DataLoader(TensorDataset(x, y), batch_size=3))
    q = IPUInfeedQueue(DataLoader(TensorDataset(x, y), batch_size=3, drop_last=True))
    assert tuple(q._next_element()[0].shape) == (3, 4)
    with pytest.raises(TypeError, match="Unsupported datatype int64 on index 1"):
        IPUInfeedQueue(DataLoader(TensorDataset(x, y.long()), batch_size=2))


# ---- GPU ---------------------------------------------------------------------------------------

def test_elements_land_on_the_backend_device(backend):
    xp = backend
    data = [(xp.full((2, 3), i, np.float32), np.int32(i)) for i in range(4)]
    q = IPUInfeedQueue(data)
    got = run_replicas(2, lambda r: [q._next_element() for _ in range(2)])
    for r in range(2):
        for k, (x, lab) in enumerate(got[r]):
            assert int(lab) == 2 * k + r
            assert type(x._value).__module__.split(".")[0] == xp.__name__
            np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 2 * k + r))


def test_module_exports():
    assert ipu_infeed_queue.__all__ == ["FeedOperation", "IPUInfeedQueue"]


# ---- the GPU copier's logic, with a stand-in for cupy ------------------------------------------

class _FakeDeviceArray(np.ndarray):
    def set(self, host, stream=None):
        assert stream is not None  # the upload goes on the copier's own stream
        self[...] = host


def _fake_cupy(log):
    import types

    class Ctx:
        def __init__(self, *a, **k):
            log.append(("ctx", type(self).__name__, k))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def synchronize(self):
            log.append(("synchronize",))

    class Device(Ctx):
        pass

    class Stream(Ctx):
        pass

    def alloc_pinned_memory(n):
        log.append(("pinned", n))
        return bytearray(n)

    cuda = types.SimpleNamespace(Device=Device, Stream=Stream,
                                 alloc_pinned_memory=alloc_pinned_memory)
    return types.SimpleNamespace(
        cuda=cuda, empty=lambda shape, dtype: np.empty(shape, dtype).view(_FakeDeviceArray),
        array=lambda a, copy=True: np.array(a, copy=copy))


def test_gpu_copier_stages_in_pinned_memory_on_its_own_stream(monkeypatch):
    log = []
    monkeypatch.setattr(ipu_infeed_queue._backend, "default_xp", lambda: _fake_cupy(log))
    copier = ipu_infeed_queue._GpuCopier()
    for i in range(3):
        host = [np.full((2, 3), i, np.float32), np.int32(i) * np.ones((), np.int32)]
        out = copier(host)
        assert all(isinstance(a, _FakeDeviceArray) for a in out)
        np.testing.assert_array_equal(out[0], host[0])
        assert int(out[1]) == i
    assert [e for e in log if e[0] == "pinned"] == [("pinned", 24), ("pinned", 4)]  # reused
    assert sum(e[0] == "synchronize" for e in log) == 3  # once per element
    streams = [e for e in log if e[:2] == ("ctx", "Stream")]
    assert streams == [("ctx", "Stream", {"non_blocking": True})]  # one private stream
    copier.close()


def test_synthetic_element_is_uploaded_once_per_gpu_and_copied_per_dequeue(monkeypatch):
    import types

    log = []

    class Device:
        def __init__(self, gpu=0):
            self.id = gpu

        def __enter__(self):
            log.append(("device", self.id))
            return self

        def __exit__(self, *exc):
            return False

    def asarray(a):
        log.append(("upload", a.shape))
        return np.array(a)

    def array(a, copy=True):
        log.append(("copy", a.shape))
        return np.array(a, copy=copy)

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=Device), asarray=asarray,
                                 array=array)
    monkeypatch.setattr(ipu_infeed_queue._backend, "backend_name", lambda: "gpu")
    monkeypatch.setattr(ipu_infeed_queue._backend, "default_xp", lambda: fake)
    spec = ipu_infeed_queue._Spec(None, [(2, 3), (4,)], [np.float32, np.int32])
    synthetic = ipu_infeed_queue._Synthetic(spec, "4")

    def on_gpu(gpu):
        ipu = types.SimpleNamespace(executor=types.SimpleNamespace(gpu=gpu))
        return types.SimpleNamespace(ipus=(ipu,))

    for ctx in (on_gpu(1), on_gpu(1), None, on_gpu(1)):  # None: host code, the current GPU
        x, y = synthetic.element(ctx)
        assert (x == 4).all() and x.shape == (2, 3) and (y == 4).all()
    uploads = [e for e in log if e[0] == "upload"]
    assert uploads == [("upload", (2, 3)), ("upload", (4,))] * 2  # GPU 1 once, GPU 0 once
    assert sum(e[0] == "copy" for e in log) == 8  # every dequeue gets its own buffers
    assert {e[1] for e in log if e[0] == "device"} == {0, 1}


def test_ipu_gpu_datasets_feed_programs(fresh_ipu_system):
    """tf.data under `ipu-gpu run` is ipu_gpu.data: the queue reads its element_spec and its
    elements, and refuses a batch dimension that is not static, as the SDK does."""
    import ipu_gpu as tf
    from ipu_gpu.ipu import config, ipu_compiler, ipu_infeed_queue, loops, scopes

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.configure_ipu_system()
    x = np.arange(24, dtype=np.float32).reshape(12, 2)
    ds = tf.data.Dataset.from_tensor_slices({"x": x, "i": np.arange(12, dtype=np.int32)})
    with pytest.raises(ValueError, match="not fully defined"):
        ipu_infeed_queue.IPUInfeedQueue(ds.batch(2))
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds.batch(2, drop_remainder=True))
    assert list(infeed.element_spec["x"][0]) == [2, 2]

    def body(total):
        def step(total, x, i):
            return total + tf.reduce_sum(x) + tf.cast(tf.reduce_sum(i), tf.float32)
        return loops.repeat(3, step, inputs=[total], infeed_queue=infeed)

    with scopes.ipu_scope("/device:IPU:0"):
        (total,) = ipu_compiler.compile(body, [tf.constant(0.0)])
    # replica 0 takes batches 0, 2 and 4: rows 0-1, 4-5 and 8-9
    rows = [0, 1, 4, 5, 8, 9]
    assert float(total.numpy()) == float(x[rows].sum() + sum(rows))


def test_large_leaves_are_staged_in_parallel_chunks_bit_for_bit():
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(3)
    rng = np.random.default_rng(5)
    try:
        for a in (rng.random((2048, 1024)).astype(np.float32),  # 8 MiB: chunked
                  rng.integers(0, 255, 5_000_011).astype(np.uint8),  # odd length
                  rng.random((6000, 999))[:, ::2],  # not contiguous: one copy
                  rng.random((3, 4))):  # small: one copy
            staging = np.empty(a.shape, a.dtype)
            ipu_infeed_queue._stage(pool, staging, a)
            assert staging.tobytes() == np.ascontiguousarray(a).tobytes()
    finally:
        pool.shutdown()
