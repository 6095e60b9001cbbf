"""poptorch.DataLoader and poptorch.AsynchronousDataAccessor (research/poptorch_semantics.md
section 4): combined batches, lengths and what is dropped, against a plain torch DataLoader
and hand-computed expectations; Async / AsyncRebatched against Sync; the accessor's
prefetching, resets, termination and errors. Anything that could hang runs under a
deadline."""

from __future__ import annotations

import gc
import logging
import math
import threading
import time

import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402
from ipu_gpu.poptorch import DataLoaderMode  # noqa: E402

ASYNC_MODES = [DataLoaderMode.Async, DataLoaderMode.AsyncRebatched]
ALL_MODES = [DataLoaderMode.Sync, *ASYNC_MODES]
# Python 3.12+ warns when a process with threads forks (torch workers under the accessor's
# thread); the fork is torch's DataLoader's own choice of start method
FORK_OK = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:"
                                     "DeprecationWarning")


# ---- datasets --------------------------------------------------------------------------------
class Increment(torch.utils.data.Dataset):
    """Element i is a [2, 3] tensor full of i; counts the reads."""

    def __init__(self, n, dtype=torch.float32):
        self.n, self.dtype, self.reads = n, dtype, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        self.reads += 1
        return torch.full((2, 3), i, dtype=self.dtype)


class IncrementWithLabel(Increment):
    def __getitem__(self, i):
        return super().__getitem__(i), torch.tensor([i])


class IncrementDict(Increment):
    def __getitem__(self, i):
        return {"data": super().__getitem__(i), "label": torch.tensor([i])}


class IncrementStream(torch.utils.data.IterableDataset):
    """Yields [2, 3] tensors full of start, start+1, ...; ``split`` divides it between torch
    workers (the worker_init_fn of PopTorch's tests, in our words)."""

    def __init__(self, n, start=0):
        self.n, self.start = n, start

    def __iter__(self):
        for i in range(self.start, self.start + self.n):
            yield torch.full((2, 3), float(i))

    def __len__(self):
        return self.n

    @staticmethod
    def split(worker_id):
        info = torch.utils.data.get_worker_info()
        ds = info.dataset
        per = math.ceil(ds.n / info.num_workers)
        total = ds.n
        ds.start = per * worker_id
        ds.n = per if worker_id < info.num_workers - 1 else total - per * worker_id


class Broken(torch.utils.data.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        raise ValueError("broken dataset")


class BreaksAt(Increment):
    def __init__(self, n, bad):
        super().__init__(n)
        self.bad = bad

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"element {i} is broken")
        return super().__getitem__(i)


def values(batch):
    """The element indices in a batch of Increment data."""
    t = batch["data"] if isinstance(batch, dict) else (
        batch[0] if isinstance(batch, (list, tuple)) else batch)
    return [int(v) for v in t[:, 0, 0]]


def bounded(fn, seconds=20.0):
    """``fn()``'s result, failing the test (instead of hanging) if it takes longer."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"did not finish within {seconds} s (hang)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def opts(s=1, r=1, a=1):
    o = poptorch.Options().deviceIterations(s).replicationFactor(r)
    o.Training.gradientAccumulation(a)
    return o


# ---- the combined batch ----------------------------------------------------------------------
@pytest.mark.parametrize("s, r, a, b", [(1, 1, 1, 1), (4, 1, 1, 2), (2, 2, 3, 2), (5, 2, 1, 3)])
def test_combined_batch_and_length_match_torch_with_the_combined_batch(s, r, a, b):
    data = IncrementWithLabel(100)
    loader = poptorch.DataLoader(opts(s, r, a), data, batch_size=b)
    combined = b * s * r * a
    assert loader.combinedBatchSize == combined
    assert len(loader) == 100 // combined
    ref = torch.utils.data.DataLoader(data, batch_size=combined, drop_last=True)
    got = list(loader)
    want = list(ref)
    assert len(got) == len(want) == 100 // combined
    for (x, y), (wx, wy) in zip(got, want):
        assert x.shape == (combined, 2, 3) and y.shape == (combined, 1)
        assert torch.equal(x, wx) and torch.equal(y, wy)


def test_input_replica_grouping_divides_the_replicas():
    o = poptorch.Options().deviceIterations(2).replicationFactor(4)
    o.inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
    loader = poptorch.DataLoader(o, Increment(50), batch_size=3)
    assert loader.combinedBatchSize == 3 * 2 * (4 // 2)
    assert len(loader) == 50 // 12


def test_defaults_drop_the_tail_and_do_not_shuffle():
    loader = poptorch.DataLoader(opts(s=3), Increment(20), batch_size=2)
    got = [values(b) for b in loader]
    assert got == [list(range(0, 6)), list(range(6, 12)), list(range(12, 18))]
    assert loader.drop_last is True and len(loader) == 3


def test_dataset_smaller_than_one_combined_batch_is_empty():
    loader = poptorch.DataLoader(opts(s=10), Increment(7), batch_size=1)
    assert len(loader) == 0 and list(loader) == []


def test_drop_last_false_warns_and_keeps_the_short_last_batch(caplog):
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        loader = poptorch.DataLoader(opts(s=2), Increment(11), batch_size=2, drop_last=False)
    assert ("The number of elements in the dataset (11) is not divisible by the number of "
            "elements processed per step (4) and drop_last=False. The last tensor will have a "
            "batch size of 3.") in caplog.text
    got = [values(b) for b in loader]
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]] and len(loader) == 3


def test_drop_last_false_without_remainder_does_not_warn(caplog):
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        poptorch.DataLoader(opts(s=2), Increment(12), batch_size=2, drop_last=False)
    assert caplog.text == ""


def test_shuffle_is_a_permutation_per_epoch():
    torch.manual_seed(3)
    loader = poptorch.DataLoader(opts(s=2), Increment(40), batch_size=5, shuffle=True)
    first = [v for b in loader for v in values(b)]
    second = [v for b in loader for v in values(b)]
    assert sorted(first) == sorted(second) == list(range(40))
    assert first != second and first != list(range(40))


def test_batch_size_none_yields_the_elements():
    loader = poptorch.DataLoader(opts(), Increment(5), batch_size=None, drop_last=False)
    assert loader.combinedBatchSize is None
    got = list(loader)
    assert [t.shape for t in got] == [torch.Size([2, 3])] * 5


def test_options_are_frozen_and_kept():
    o = opts(s=2)
    loader = poptorch.DataLoader(o, Increment(8), batch_size=1)
    assert loader.options is o
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        o.deviceIterations(3)


def test_options_must_be_poptorch_options():
    with pytest.raises(AssertionError):
        poptorch.DataLoader({"device_iterations": 2}, Increment(8))


def test_torch_errors_pass_through():
    with pytest.raises(ValueError, match="persistent_workers"):
        poptorch.DataLoader(opts(), Increment(8), persistent_workers=True)
    with pytest.raises(ValueError, match="drop_last"):
        poptorch.DataLoader(opts(), Increment(8), batch_size=None)  # drop_last=True default


@FORK_OK
def test_workers_keep_the_order_and_persist():
    loader = poptorch.DataLoader(opts(s=2), Increment(40), batch_size=3, num_workers=2)
    assert loader.persistent_workers is True
    for _ in range(2):
        got = [values(b) for b in loader]
        assert got == [list(range(i, i + 6)) for i in range(0, 36, 6)]


# ---- batch_sampler ---------------------------------------------------------------------------
@pytest.mark.parametrize("drop_last", [True, False])
def test_batch_sampler_batches_are_concatenated(drop_last):
    data = Increment(23)
    sampler = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(data),
                                            batch_size=2, drop_last=drop_last)
    loader = poptorch.DataLoader(opts(s=3), data, batch_sampler=sampler, drop_last=drop_last)
    assert loader.combinedBatchSize == 6
    got = [values(b) for b in loader]
    full = [list(range(i, i + 6)) for i in range(0, 18, 6)]
    if drop_last:  # the sampler drops 22; 2 of its 11 batches are left over and dropped
        assert got == full and len(loader) == 3
    else:  # 12 sampler batches (the last is [22]): 4 combined, the last 18..22
        assert got == [*full, [18, 19, 20, 21, 22]] and len(loader) == 4


@pytest.mark.parametrize("n, drop_last, warns", [(21, False, True), (21, True, False),
                                                 (24, False, False)])
def test_batch_sampler_remainder_warning(n, drop_last, warns, caplog):
    data = Increment(n)
    sampler = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(data),
                                            batch_size=2, drop_last=False)
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        poptorch.DataLoader(opts(s=3), data, batch_sampler=sampler, drop_last=drop_last)
    text = ("The number of batches generated by the batch sampler (11) is not divisible by the "
            "number of batches elements processed per step (3) and drop_last=False. The last "
            "tensor will have a batch size of 4.")
    assert (text in caplog.text) == warns and (caplog.text == "") == (not warns)


def test_batch_sampler_without_len_warns(caplog):
    def batches():
        yield [0, 1]
        yield [2, 3]
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        loader = poptorch.DataLoader(opts(s=2), Increment(4), batch_sampler=batches(),
                                     drop_last=False)
    assert ("The `batch_sampler` __len__ method is not implemented and drop_last=False. The "
            "last tensor may be incomplete - batch size < 2.") in caplog.text
    assert [values(b) for b in loader] == [[0, 1, 2, 3]]


def test_batch_sampler_errors():
    sampler = torch.utils.data.BatchSampler(range(8), 2, False)
    with pytest.raises(poptorch.Error, match="mutually exclusive with batch_size, shuffle"):
        poptorch.DataLoader(opts(), Increment(8), batch_size=2, batch_sampler=sampler)
    with pytest.raises(poptorch.Error, match="mutually exclusive with batch_size, shuffle"):
        poptorch.DataLoader(opts(), Increment(8), shuffle=True, batch_sampler=sampler)
    o = opts()
    o.Distributed.configureProcessId(0, 2)
    with pytest.raises(poptorch.Error,
                       match="mutually exclusive with auto_distributed_partitioning=True"):
        poptorch.DataLoader(o, Increment(8), batch_sampler=sampler)


# ---- iterable datasets -----------------------------------------------------------------------
def _expected_per_worker(n, workers, batch):
    per = math.ceil(n / workers)
    sizes = [per] * (workers - 1) + [n - per * (workers - 1)]
    return sum(s // batch for s in sizes), sizes


@FORK_OK
@pytest.mark.parametrize("mode", ALL_MODES)
def test_iterable_dataset_split_between_workers(mode):
    n, workers, batch = 41, 3, 4
    loader = poptorch.DataLoader(opts(), IncrementStream(n), batch_size=batch,
                                 num_workers=workers, worker_init_fn=IncrementStream.split,
                                 mode=mode)
    for _ in range(2):
        batches = bounded(lambda: list(loader))
        assert all(b.shape == (batch, 2, 3) for b in batches)
        seen = [v for b in batches for v in values(b)]
        assert len(seen) == len(set(seen))
        if mode == DataLoaderMode.AsyncRebatched:
            # the accessor re-cuts the workers' short batches: only n % batch rows are lost
            assert len(batches) == n // batch
        else:  # each worker drops its own short batch
            assert len(batches) == _expected_per_worker(n, workers, batch)[0]
    loader.terminate()


@FORK_OK
def test_iterable_leftovers_without_drop_last():
    n, workers, batch = 41, 3, 6
    loader = poptorch.DataLoader(opts(), IncrementStream(n), batch_size=batch,
                                 num_workers=workers, worker_init_fn=IncrementStream.split,
                                 drop_last=False, mode=DataLoaderMode.AsyncRebatched)
    assert len(loader) == math.ceil(n / batch)
    sizes = [b.shape[0] for b in bounded(lambda: list(loader))]
    assert sizes == [batch] * (n // batch) + [n % batch]
    sync = poptorch.DataLoader(opts(), IncrementStream(n), batch_size=batch,
                               num_workers=workers, worker_init_fn=IncrementStream.split,
                               drop_last=False)
    _, per_worker = _expected_per_worker(n, workers, batch)
    short = sorted(s % batch for s in per_worker if s % batch)
    sizes = [b.shape[0] for b in sync]
    assert sorted(s for s in sizes if s != batch) == short
    loader.terminate()


def test_iterable_workers_without_init_fn_warn(caplog):
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        poptorch.DataLoader(opts(), IncrementStream(8), num_workers=2)
    assert ("IterableDataset used with num_workers=2 but no worker_init_fn specified: as a "
            "result the DataLoader will return 2 times each element") in caplog.text


def test_iterable_dataset_with_distributed_partitioning_is_refused():
    o = opts()
    o.Distributed.configureProcessId(1, 2)
    with pytest.raises(AssertionError,
                       match="auto_distributed_partitioning not supported for IterableDataset"):
        poptorch.DataLoader(o, IncrementStream(8))
    loader = poptorch.DataLoader(o, IncrementStream(8), auto_distributed_partitioning=False)
    assert len(list(loader)) == 8


# ---- distributed partitioning ----------------------------------------------------------------
@pytest.mark.parametrize("mode", [DataLoaderMode.Sync, DataLoaderMode.Async])
def test_processes_read_consecutive_blocks(mode):
    n, procs, batch, s = 100, 3, 4, 2
    seen = []
    for pid in range(procs):
        o = opts(s=s)
        o.Distributed.configureProcessId(pid, procs)
        loader = poptorch.DataLoader(o, Increment(n), batch_size=batch, mode=mode)
        per = 8 * (n // (8 * procs))
        assert len(loader) == n // (8 * procs)
        got = [v for b in bounded(lambda loader=loader: list(loader)) for v in values(b)]
        assert got == list(range(pid * per, (pid + 1) * per))
        seen += got
        loader.terminate()
    assert seen == list(range(procs * (n // (8 * procs)) * 8))


def test_processes_without_drop_last_share_out_every_element():
    got = []
    for pid in range(3):
        o = opts()
        o.Distributed.configureProcessId(pid, 3)
        loader = poptorch.DataLoader(o, Increment(10), batch_size=2, drop_last=False)
        got.append([v for b in loader for v in values(b)])
    assert got == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_distributed_shuffle_is_global_disjoint_and_covers_the_leftovers():
    n, procs = 50, 3
    epochs = [[], []]
    for pid in range(procs):
        o = opts()
        o.randomSeed(7)
        o.Distributed.configureProcessId(pid, procs)
        loader = poptorch.DataLoader(o, Increment(n), batch_size=4, shuffle=True)
        assert len(loader) == n // (4 * procs)
        for e in range(2):
            epochs[e].append([v for b in loader for v in values(b)])
    for e in range(2):
        flat = [v for part in epochs[e] for v in part]
        assert len(flat) == len(set(flat)) == 48  # disjoint between processes
    assert epochs[0] != epochs[1]
    # the 2 leftovers of epoch 1 are read in epoch 2 (the block shifts by them)
    assert set(v for part in epochs[0] + epochs[1] for v in part) == set(range(n))


def test_distributed_shuffle_needs_a_seed_and_a_batch_size():
    o = opts()
    o.Distributed.configureProcessId(0, 2)
    with pytest.raises(AssertionError, match="you must set poptorch.Options.randomSeed"):
        poptorch.DataLoader(o, Increment(8), shuffle=True)
    with pytest.raises(AssertionError, match="batch_size=None not allowed"):
        poptorch.DataLoader(o, Increment(8), batch_size=None, drop_last=False)


# ---- Async modes against Sync ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("dataset", [Increment, IncrementWithLabel, IncrementDict])
def test_async_yields_what_sync_yields(mode, dataset):
    def read(m):
        loader = poptorch.DataLoader(opts(s=2, r=2), dataset(53), batch_size=3, mode=m)
        out = bounded(lambda: [list(loader), list(loader)])
        assert len(loader) == 53 // 12
        loader.terminate()
        return out
    want, got = read(DataLoaderMode.Sync), read(mode)
    for w_epoch, g_epoch in zip(want, got):
        assert len(w_epoch) == len(g_epoch) == 4
        for w, g in zip(w_epoch, g_epoch):
            if isinstance(w, torch.Tensor):
                assert torch.equal(w, g)
            elif isinstance(w, dict):
                assert isinstance(g, dict) and list(g) == list(w)
                assert all(torch.equal(w[k], g[k]) for k in w)
            else:  # PopTorch's accessor hands a tuple element back as a list
                assert isinstance(g, list) and all(map(torch.equal, w, g))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_async_without_drop_last_rebatches_the_tail(dtype):
    loader = poptorch.DataLoader(opts(s=2), Increment(11, dtype), batch_size=2,
                                 drop_last=False, mode=DataLoaderMode.Async)
    assert loader._accessor.rebatched_size == 4 and len(loader) == 3
    batches = bounded(lambda: list(loader))
    assert [values(b) for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert all(b.dtype == dtype for b in batches)
    loader.terminate()


@pytest.mark.parametrize("worker_size", [1, 2, 3, 6])
@pytest.mark.parametrize("drop_last", [True, False])
def test_rebatched_worker_size(worker_size, drop_last):
    loader = poptorch.DataLoader(opts(s=3), Increment(20), batch_size=2, drop_last=drop_last,
                                 mode=DataLoaderMode.AsyncRebatched,
                                 rebatched_worker_size=worker_size)
    assert loader.batch_size == worker_size  # what the torch workers batch
    got = [values(b) for b in bounded(lambda: list(loader))]
    want = [list(range(i, i + 6)) for i in range(0, 18, 6)]
    assert got == (want if drop_last else [*want, [18, 19]])
    assert len(loader) == len(got)
    loader.terminate()


def test_rebatched_worker_size_above_the_combined_batch_is_refused():
    with pytest.raises(AssertionError, match=r"The rebatched_worker_size \(7\) must be <= to "
                                             r"the combined batch size \(6\)"):
        poptorch.DataLoader(opts(s=3), Increment(20), batch_size=2,
                            mode=DataLoaderMode.AsyncRebatched, rebatched_worker_size=7)


def test_async_options_are_validated():
    def make(**async_options):
        return poptorch.DataLoader(opts(), Increment(8), mode=DataLoaderMode.Async,
                                   async_options=async_options)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bufer_size'"):
        make(bufer_size=2)
    with pytest.raises(AssertionError, match="cannot use DataLoaderMode.AsyncRebatched and "
                                             "manually specify the rebatched_size"):
        make(rebatched_size=4)
    with pytest.raises(ValueError, match="buffer_size must be >= 1, got 0"):
        make(buffer_size=0)
    with pytest.raises(TypeError, match="buffer_size must be an int"):
        make(buffer_size=2.0)
    with pytest.raises(ValueError, match="miss_sleep_time_in_ms must be >= 0"):
        make(miss_sleep_time_in_ms=-1)
    with pytest.raises(TypeError, match="load_indefinitely must be a bool"):
        make(load_indefinitely=1)
    with pytest.raises(TypeError, match="early_preload must be a bool"):
        make(early_preload="yes")
    with pytest.raises(TypeError, match="sharing_strategy must be a poptorch.SharingStrategy"):
        make(sharing_strategy="fork")
    for strategy in poptorch.SharingStrategy:
        loader = make(sharing_strategy=strategy, buffer_size=1, miss_sleep_time_in_ms=0,
                      load_indefinitely=False, early_preload=True)
        assert [values(b) for b in bounded(lambda loader=loader: list(loader))] == [
            [i] for i in range(8)]
        loader.terminate()


# ---- AsynchronousDataAccessor ----------------------------------------------------------------
def test_accessor_len_and_reiteration():
    acc = poptorch.AsynchronousDataAccessor(Increment(10))
    assert len(acc) == 10
    for _ in range(3):
        assert [int(t[0, 0]) for t in bounded(lambda: list(acc))] == list(range(10))
    acc.terminate()


def test_accessor_over_a_sync_loader():
    loader = poptorch.DataLoader(opts(s=2), Increment(21), batch_size=2)
    acc = poptorch.AsynchronousDataAccessor(loader)
    assert len(acc) == len(loader) == 5
    got = [values(b) for b in bounded(lambda: list(acc))]
    assert got == [values(b) for b in loader]
    acc.terminate()


def test_accessor_rebatched_size_outside_a_loader():
    loader = poptorch.DataLoader(opts(), Increment(10), batch_size=1)
    acc = poptorch.AsynchronousDataAccessor(loader, rebatched_size=4)
    assert len(acc) == 10 // 4
    assert [values(b) for b in bounded(lambda: list(acc))] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    acc.terminate()


def test_interrupted_epoch_restarts_from_the_beginning():
    acc = poptorch.AsynchronousDataAccessor(Increment(10), buffer_size=2)
    for i, _ in enumerate(acc):
        if i == 4:
            break
    assert [int(t[0, 0]) for t in bounded(lambda: list(acc))] == list(range(10))
    acc.terminate()


def test_elements_are_fresh_tensors():
    acc = poptorch.AsynchronousDataAccessor(Increment(4))
    kept = bounded(lambda: list(acc))
    assert [int(t[0, 0]) for t in kept] == [0, 1, 2, 3]  # not overwritten by later elements
    acc.terminate()


@pytest.mark.parametrize("preload", [False, True])
def test_prefetch_is_bounded_by_the_buffer(preload):
    data = Increment(20)
    acc = poptorch.AsynchronousDataAccessor(data, buffer_size=5, early_preload=preload)
    deadline = time.time() + 5
    want = 5 if preload else 1
    while data.reads < want and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # give an unbounded worker the chance to read more
    # (as PopTorch's, the worker reads the next element before it waits for a free slot)
    assert acc._worker.prefetched() == want and data.reads == (6 if preload else 1)
    it = iter(acc)
    first = bounded(lambda: next(it))
    assert int(first[0, 0]) == 0
    deadline = time.time() + 5
    while data.reads < 6 and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    # the element in the caller's hands still holds its slot
    assert acc._worker.prefetched() == 4 and data.reads == 6
    acc.terminate()


def test_load_indefinitely_preloads_the_next_epoch():
    data = Increment(4)
    acc = poptorch.AsynchronousDataAccessor(data, buffer_size=3)
    assert len(bounded(lambda: list(acc))) == 4
    deadline = time.time() + 5
    while acc._worker.prefetched() < 3 and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    # 3 elements of the next epoch are loaded while nobody reads (and a 4th is in hand)
    assert acc._worker.prefetched() == 3 and data.reads == 8
    assert [int(t[0, 0]) for t in bounded(lambda: list(acc))] == [0, 1, 2, 3]
    acc.terminate()


def test_without_load_indefinitely_the_worker_waits_for_iter():
    data = Increment(4)
    acc = poptorch.AsynchronousDataAccessor(data, buffer_size=3, load_indefinitely=False)
    assert len(bounded(lambda: list(acc))) == 4
    time.sleep(0.2)
    assert data.reads == 4
    assert [int(t[0, 0]) for t in bounded(lambda: list(acc))] == [0, 1, 2, 3]
    acc.terminate()


def test_stop_iteration_repeats_until_iter():
    acc = poptorch.AsynchronousDataAccessor(Increment(2))
    it = iter(acc)
    assert len(bounded(lambda: list(it))) == 2
    for _ in range(2):
        with pytest.raises(StopIteration):
            bounded(lambda: next(it))
    acc.terminate()


def test_terminate_stops_the_worker():
    acc = poptorch.AsynchronousDataAccessor(Increment(100), buffer_size=2)
    next(iter(acc))
    thread = acc._worker._thread
    bounded(acc.terminate)
    assert not thread.is_alive()
    with pytest.raises(AssertionError):
        iter(acc)
    acc.terminate()  # twice is fine


def test_dropping_the_loader_stops_its_worker():
    loader = poptorch.DataLoader(opts(), Increment(100), mode=DataLoaderMode.Async)
    next(iter(loader))
    thread = loader._accessor._worker._thread
    del loader
    gc.collect()
    thread.join(10)
    assert not thread.is_alive()


def test_one_accessor_per_loader():
    loader = poptorch.DataLoader(opts(), Increment(8), mode=DataLoaderMode.Async)
    with pytest.raises(poptorch.Error, match="The DataLoader already uses an "
                                             "AsynchronousDataAccessor internally"):
        poptorch.AsynchronousDataAccessor(loader)
    loader.terminate()


def test_accessor_refuses_a_short_last_batch_without_rebatching():
    loader = poptorch.DataLoader(opts(s=2), Increment(9), batch_size=2, drop_last=False)
    with pytest.raises(AssertionError, match="only works if 'rebatched_size' is specified"):
        poptorch.AsynchronousDataAccessor(loader)
    with pytest.raises(AssertionError, match="rebatched_size must be None or greater than 1"):
        poptorch.AsynchronousDataAccessor(Increment(4), rebatched_size=1)


def test_a_dataset_failing_at_the_start():
    loader = poptorch.DataLoader(opts(), Broken(), batch_size=1)
    with pytest.raises(poptorch.Error, match="worker thread failed to start") as info:
        bounded(lambda: poptorch.AsynchronousDataAccessor(loader))
    assert isinstance(info.value.__cause__, ValueError)
    assert "broken dataset" in str(info.value.__cause__)


def test_an_empty_dataset():
    with pytest.raises(poptorch.Error, match="worker thread failed to start") as info:
        bounded(lambda: poptorch.AsynchronousDataAccessor([]))
    assert str(info.value.__cause__) == "The Dataset is empty"


def test_a_dataset_failing_later():
    acc = poptorch.AsynchronousDataAccessor(BreaksAt(10, 6))
    got = []
    with pytest.raises(AssertionError, match="An error occurred in the data fetcher") as info:
        bounded(lambda: [got.append(int(t[0, 0])) for t in acc])
    assert got == list(range(6))
    assert "element 6 is broken" in str(info.value.__cause__)
    acc.terminate()


def test_elements_must_be_flat_tensors_of_one_shape():
    with pytest.raises(poptorch.Error, match="worker thread failed to start") as info:
        bounded(lambda: poptorch.AsynchronousDataAccessor([(torch.ones(2), "label")]))
    assert "Tensor at index 1 is not a torch tensor" in str(info.value.__cause__)
    acc = poptorch.AsynchronousDataAccessor([torch.ones(2), torch.ones(3)])
    with pytest.raises(AssertionError, match="An error occurred in the data fetcher"):
        bounded(lambda: list(acc))
    acc.terminate()


# ---- through a model -------------------------------------------------------------------------
class _Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(6, 1)

    def forward(self, x, y):
        out = self.fc(x.flatten(1))
        return out, torch.nn.functional.mse_loss(out, y.float())


def test_training_on_an_async_loader_equals_training_on_a_sync_one():
    def train(mode):
        model = _Regression()
        o = opts(s=2, a=2)
        loader = poptorch.DataLoader(o, IncrementWithLabel(40), batch_size=2, mode=mode)
        training = poptorch.trainingModel(model, o, torch.optim.SGD(model.parameters(),
                                                                    lr=1e-3))
        losses = bounded(lambda: [float(training(x / 40, y / 40)[1]) for x, y in loader])
        loader.terminate()
        return losses, [p.detach().clone() for p in model.parameters()]
    want_losses, want = train(DataLoaderMode.Sync)
    for mode in ASYNC_MODES:
        losses, got = train(mode)
        assert losses == want_losses
        assert all(torch.equal(g, w) for g, w in zip(got, want))
