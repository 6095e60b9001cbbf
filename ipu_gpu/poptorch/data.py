"""``poptorch.DataLoader`` and ``poptorch.AsynchronousDataAccessor`` (research/
poptorch_semantics.md section 4; PopTorch 3.4's ``python/__init__.py`` and
``python/_dataloader.py`` are the behaviour reproduced, not the code).

``DataLoader`` is a ``torch.utils.data.DataLoader`` whose every element is the *combined*
batch one model call takes: ``batch_size * deviceIterations * (replicationFactor /
input_group_size) * Training.gradientAccumulation`` rows (``combinedBatchSize``), with
PopTorch's defaults (``drop_last=True``, ``shuffle=False``, persistent workers when there are
workers), its warnings (PopTorch's logger, ``poptorch::python``) and errors, and its
distributed partitioning (each of ``Options.Distributed.numProcesses`` processes reads its own
contiguous block of whole combined batches; shuffling permutes the whole dataset with
``Options.randomSeed`` so that every process agrees, a new permutation each epoch).

``mode=DataLoaderMode.Async`` reads through an ``AsynchronousDataAccessor``;
``AsyncRebatched`` (and ``Async`` with ``drop_last=False``) lets the torch workers batch at
``rebatched_worker_size`` (default: the combined size, with no rows dropped per worker) and the
accessor re-cuts the stream into combined batches, so an ``IterableDataset`` split over many
workers loses at most one partial batch instead of one per worker.

The accessor's worker is a daemon *thread* of this process (PopTorch starts a process and
shares a ring buffer of shared memory with it). It prefetches up to ``buffer_size`` elements
ahead, in the order the synchronous loader yields them; the numbers are the same, and the
loading overlaps the model's work where the dataset's code releases the GIL (torch ops, file
reads, a torch DataLoader's worker processes). What differs: ``sharing_strategy`` is checked
but changes nothing (nothing is pickled, so a dataset that cannot be pickled works here), and
each element is a fresh tensor where PopTorch hands out ring-buffer memory that it reuses.
"""

from __future__ import annotations

import collections
import threading
import weakref

import torch

from .enums import DataLoaderMode, SharingStrategy
from .errors import Error
from .log_level import logger

__all__ = ["AsynchronousDataAccessor", "DataLoader"]


# ---- flat views of a batch ------------------------------------------------------------------
def _flatten(batch):
    """The tensors of a (nested list/tuple/dict) batch, depth first."""
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [t for v in batch.values() for t in _flatten(v)]
    if isinstance(batch, (list, tuple)):
        return [t for v in batch for t in _flatten(v)]
    return []


def _rebuild(template, tensors):
    """``template``'s structure with its tensors taken in order from the iterator
    ``tensors``."""
    if isinstance(template, torch.Tensor):
        return next(tensors)
    if isinstance(template, dict):
        return {k: _rebuild(v, tensors) for k, v in template.items()}
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*[_rebuild(v, tensors) for v in template])
    if isinstance(template, (list, tuple)):
        return type(template)(_rebuild(v, tensors) for v in template)
    return template


def _combined_batches(batches, count, drop_last):
    """Every ``count`` consecutive collated batches of ``batches`` concatenated along dim 0
    (a user ``batch_sampler``'s batches, combined into one model call's batch); the last,
    shorter group is yielded unless ``drop_last``."""
    group, last = [], None
    for batch in batches:
        group.append(_flatten(batch))
        last = batch
        if len(group) == count:
            yield _rebuild(last, iter([torch.cat(ts) for ts in zip(*group)]))
            group = []
    if group and not drop_last:
        yield _rebuild(last, iter([torch.cat(ts) for ts in zip(*group)]))


# ---- distributed partitioning ----------------------------------------------------------------
class _ProcessShard(torch.utils.data.Dataset):
    """This process's part of a map-style dataset when several processes read it.

    With ``drop_last`` each process gets ``per = step * (N // (step * processes))`` elements,
    process p the block ``[p * per, (p + 1) * per)``; the ``N - processes * per`` elements left
    over are read on alternate epochs when shuffling (the block is shifted by them). Without
    ``drop_last`` the N elements are dealt out as evenly as possible, in order. Shuffling
    permutes the global indices with a generator seeded by ``randomSeed`` (the same in every
    process) and advanced once per epoch. The permutation and the shift live in shared memory,
    so persistent torch workers see each epoch's."""

    def __init__(self, dataset, options, step, drop_last):
        n = len(dataset)
        procs = options.Distributed.numProcesses
        pid = options.Distributed.processId
        if drop_last:
            per = step * (n // (step * procs))
            start, length = pid * per, per
            self._leftover = n - procs * per
        else:
            counts = [n // procs + (n % procs > p) for p in range(procs)]
            start, length = sum(counts[:pid]), counts[pid]
            self._leftover = 0
        self._dataset, self._start, self._length = dataset, start, length
        self._shift = torch.zeros(1, dtype=torch.int64).share_memory_()
        self._seed = options.random_seed if options.exists("random_seed") else None
        self._generator_state = None
        self._perm = None

    def new_epoch(self):
        """Draw this epoch's global permutation and alternate the leftover shift."""
        gen = torch.Generator()
        if self._generator_state is None:
            gen.manual_seed(self._seed)
        else:
            gen.set_state(self._generator_state)
        perm = torch.randperm(len(self._dataset), generator=gen)
        self._generator_state = gen.get_state()
        if self._perm is None:
            self._perm = perm.share_memory_()
        else:
            self._perm.copy_(perm)
        self._shift[0] = self._leftover if int(self._shift[0]) == 0 else 0

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        if not 0 <= index < self._length:
            raise IndexError(f"index {index} out of range for a shard of {self._length}")
        i = index + self._start + int(self._shift[0])
        if self._perm is not None:
            i = int(self._perm[i])
        return self._dataset[i]


def _sampler_len(batch_sampler):
    """``len(batch_sampler)``, or None where it has no usable length."""
    try:
        n = len(batch_sampler)
    except (TypeError, NotImplementedError):
        return None
    return None if n is NotImplemented else n


# ---- DataLoader ------------------------------------------------------------------------------
class DataLoader(torch.utils.data.DataLoader):
    """A ``torch.utils.data.DataLoader`` yielding one model call's combined batch at a time.

    Args:
      options: the ``poptorch.Options`` the model runs with (frozen by this call).
      dataset: a map-style or iterable dataset.
      batch_size: the micro-batch, what ``forward`` sees; None disables batching.
      shuffle: shuffle a map-style dataset (default False).
      num_workers: torch worker processes.
      drop_last: drop the last, incomplete combined batch (default True, unlike torch).
      persistent_workers: keep the workers between epochs (default: ``num_workers > 0``).
      auto_distributed_partitioning: split the dataset between the processes of
        ``options.Distributed``; with False the caller has split it.
      mode: ``DataLoaderMode.Sync``, ``Async`` or ``AsyncRebatched`` (module doc).
      async_options: keyword arguments of the ``AsynchronousDataAccessor`` (not
        ``rebatched_size``).
      rebatched_worker_size: with ``AsyncRebatched``, the batch the torch workers make
        (at most the combined batch size; default the combined batch size).
      batch_sampler: yields lists of indices; ``deviceIterations * replicas *
        gradientAccumulation`` of its batches are concatenated into one element.
      **kwargs: passed on to ``torch.utils.data.DataLoader``.

    Raises:
      poptorch.Error: ``batch_sampler`` with ``batch_size != 1`` or ``shuffle``, or with
        automatic partitioning over several processes.
      AssertionError: ``options`` is not a ``poptorch.Options``; an ``IterableDataset`` with
        automatic partitioning over several processes; distributed shuffling without
        ``randomSeed``; ``batch_size=None`` with distributed partitioning;
        ``rebatched_worker_size`` above the combined batch size; ``rebatched_size`` in
        ``async_options`` (PopTorch's messages for all of them).
      TypeError: an unknown ``async_options`` key.
      ValueError: what torch's DataLoader refuses (e.g. ``persistent_workers=True`` without
        workers)."""

    def __init__(self, options, dataset, batch_size=1, shuffle=None, num_workers=0,
                 drop_last=True, persistent_workers=None, auto_distributed_partitioning=True,
                 mode=DataLoaderMode.Sync, async_options=None, rebatched_worker_size=None,
                 batch_sampler=None, **kwargs):
        from .options import Options

        self._is_user_batch_sampler_set = batch_sampler is not None
        self._accessor = None
        procs = options.Distributed.numProcesses if isinstance(options, Options) else 1
        if self._is_user_batch_sampler_set:
            if batch_size != 1 or shuffle:
                raise Error("`batch_sampler` option is mutually exclusive with batch_size, "
                            "shuffle.")
            if procs > 1 and auto_distributed_partitioning:
                raise Error("`batch_sampler` option is mutually exclusive with "
                            "auto_distributed_partitioning=True.")
            batch_size = getattr(batch_sampler, "batch_size", batch_size)
            self.batch_sampler_drop_last = drop_last
            drop_last = None
        elif shuffle is None:
            shuffle = False
        assert isinstance(options, Options)
        options._freeze()
        self._options = options
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        mode = DataLoaderMode(mode)

        if batch_size is None:
            self._combined_batch_size = self._num_batches_to_combine = None
        else:
            groups = options.replication_factor // options.input_group_size
            self._num_batches_to_combine = (options.device_iterations * groups
                                            * options.Training.gradient_accumulation)
            self._combined_batch_size = batch_size * self._num_batches_to_combine

        self._is_iterable = isinstance(dataset, torch.utils.data.IterableDataset)
        self._reshuffle_shard = False
        if self._is_iterable:
            if auto_distributed_partitioning:
                assert procs == 1, ("auto_distributed_partitioning not supported for "
                                    "IterableDataset")
            if num_workers > 1 and "worker_init_fn" not in kwargs:
                logger.warning(
                    "IterableDataset used with num_workers=%d but no worker_init_fn "
                    "specified: as a result the DataLoader will return %d times each element "
                    "in the dataset (See torch.utils.data.IterableDataset's documentation for "
                    "more information)", num_workers, num_workers)
        else:
            # (PopTorch tests the drop_last it has just set to None when a batch_sampler is
            # given, so it warns even with drop_last=True; here the caller's value counts)
            if not (self.batch_sampler_drop_last if self._is_user_batch_sampler_set
                    else drop_last):
                self._warn_remainder(dataset, batch_sampler, batch_size, procs)
            if procs > 1 and auto_distributed_partitioning:
                assert not shuffle or options.exists("random_seed"), (
                    "When using auto_distributed_partitioning you must set "
                    "poptorch.Options.randomSeed() to ensure that tensors are in the same "
                    "order in all processes.")
                assert self._combined_batch_size is not None, (
                    "batch_size=None not allowed when using auto_distributed_partitioning.")
                dataset = _ProcessShard(dataset, options, self._combined_batch_size,
                                        drop_last)
                # the shard shuffles the whole dataset itself, the same in every process
                self._reshuffle_shard, shuffle = bool(shuffle), False

        worker_batch = 1 if self._is_user_batch_sampler_set else self._combined_batch_size
        real_drop_last = (self.batch_sampler_drop_last if self._is_user_batch_sampler_set
                          else drop_last)
        rebatched_size = None
        combined_gt_one = (self._combined_batch_size is not None
                           and self._combined_batch_size > 1)
        if mode == DataLoaderMode.AsyncRebatched or (
                mode == DataLoaderMode.Async and not real_drop_last and combined_gt_one):
            mode = DataLoaderMode.Async
            rebatched_size = self._combined_batch_size
            # the accessor, not the torch loader, decides what happens to the last rows
            self.rebatched_drop_last = drop_last
            drop_last = False
            if rebatched_worker_size is not None:
                assert rebatched_worker_size <= self._combined_batch_size, (
                    f"The rebatched_worker_size ({rebatched_worker_size}) must be <= to the "
                    f"combined batch size ({self._combined_batch_size})")
                worker_batch = rebatched_worker_size

        super().__init__(dataset, batch_size=worker_batch, shuffle=shuffle,
                         batch_sampler=batch_sampler, num_workers=num_workers,
                         drop_last=drop_last, persistent_workers=persistent_workers, **kwargs)

        if mode == DataLoaderMode.Async:
            async_options = dict(async_options or {})
            assert "rebatched_size" not in async_options, (
                "You cannot use DataLoaderMode.AsyncRebatched and manually specify the "
                "rebatched_size in async_options")
            self._accessor = AsynchronousDataAccessor(self, **async_options,
                                                      rebatched_size=rebatched_size)
            # no reference cycle: the loader (and its torch workers) is freed as soon as the
            # caller drops it, which stops the accessor's thread
            self._accessor._dataset = weakref.proxy(self)

    def _warn_remainder(self, dataset, batch_sampler, batch_size, procs):
        """PopTorch's warnings for ``drop_last=False`` when the last batch will be short."""
        if self._is_user_batch_sampler_set:
            n = _sampler_len(batch_sampler)
            if n is None:
                logger.warning(
                    "The `batch_sampler` __len__ method is not implemented and "
                    "drop_last=False. The last tensor may be incomplete - batch size < %d. To "
                    "avoid having to handle this special case switch to drop_last=True.",
                    self._num_batches_to_combine)
            elif n % self._num_batches_to_combine:
                left = n % self._num_batches_to_combine
                logger.warning(
                    "The number of batches generated by the batch sampler (%d) is not "
                    "divisible by the number of batches elements processed per step (%d) and "
                    "drop_last=False. The last tensor will have a batch size of %d. To avoid "
                    "having to handle this special case  switch to drop_last=True. Batch "
                    "size = %d, combined batch size = %d .", n, self._num_batches_to_combine,
                    left * batch_size, batch_size, self._combined_batch_size)
        elif self._combined_batch_size is not None:
            per_step = self._combined_batch_size * procs
            if len(dataset) % per_step:
                logger.warning(
                    "The number of elements in the dataset (%d) is not divisible by the "
                    "number of elements processed per step (%d) and drop_last=False. The last "
                    "tensor will have a batch size of %d. To avoid having to handle this "
                    "special case switch to drop_last=True", len(dataset), per_step,
                    len(dataset) % per_step)

    def __len__(self) -> int:
        """Number of elements one epoch yields: ``N // combinedBatchSize`` with
        ``drop_last`` (per process when distributed), one more for a short last batch
        without it."""
        if self._accessor is not None and self._accessor.rebatched_size:
            n = len(self.dataset)
            count = n // self._accessor.rebatched_size
            if not self.rebatched_drop_last and n % self._accessor.rebatched_size:
                count += 1
            return count
        count = super().__len__()
        if self._is_user_batch_sampler_set and self._num_batches_to_combine != 1:
            # deviation: PopTorch reports the sampler's batch count, not the combined count
            whole, part = divmod(count, self._num_batches_to_combine)
            count = whole + (1 if part and not self.batch_sampler_drop_last else 0)
        return count

    @property
    def combinedBatchSize(self):  # noqa: N802 - PopTorch's name
        """Rows one model call consumes (None when ``batch_size`` is None)."""
        return self._combined_batch_size

    @property
    def options(self):
        """The (frozen) options this loader was made with."""
        return self._options

    def terminate(self) -> None:
        """Stop the ``AsynchronousDataAccessor``'s worker (Async modes); no effect in Sync."""
        if self._accessor is not None:
            self._accessor.terminate()

    def __del__(self):
        accessor = self.__dict__.get("_accessor")
        if accessor is not None:
            accessor.terminate()

    def _sync_iter(self):
        """An iterator over one epoch read synchronously (what Sync mode returns, and what
        the accessor's worker reads). It holds no reference to this loader."""
        if self._reshuffle_shard:
            self.dataset.new_epoch()
        batches = super().__iter__()
        if self._is_user_batch_sampler_set and self._num_batches_to_combine != 1:
            return _combined_batches(batches, self._num_batches_to_combine,
                                     self.batch_sampler_drop_last)
        return batches

    def __iter__(self):
        if self._accessor is not None:
            return self._accessor.__iter__()
        return self._sync_iter()


# ---- AsynchronousDataAccessor ----------------------------------------------------------------
class _Eof:
    """The end-of-epoch marker in the worker's queue."""


_EOF = _Eof()


class _Worker:
    """The accessor's background thread and the queue it fills.

    It holds no reference to the accessor (so dropping the accessor stops it) and only a weak
    one to a ``DataLoader`` dataset (which references its own accessor). The queue holds
    ready elements and end-of-epoch markers, each tagged with the generation of the iterator
    that produced it; a reset bumps the generation so stale elements are discarded."""

    def __init__(self, dataset, buffer_size, load_indefinitely, early_preload,
                 rebatched_size, rebatched_drop_last):
        try:
            self._dataset_ref = weakref.ref(dataset)
        except TypeError:  # lists and other objects without weak references
            self._dataset_ref = lambda ds=dataset: ds
        self._buffer_size = buffer_size
        self.load_indefinitely = load_indefinitely
        self._early_preload = early_preload
        self._rebatched_size = rebatched_size
        self._rebatched_drop_last = rebatched_drop_last
        self._cond = threading.Condition()
        self._queue = collections.deque()
        self._held = False  # the element last returned counts against the buffer until next()
        self._generation = 0
        self._start_pending = False
        self._shutdown = False
        self._error = None  # what stopped the thread after the first element
        self._start_error = None  # what stopped it before
        self._ready = False
        self._structure = None  # ("tensor", None) | ("dict", keys) | ("list", None)
        self._first_shapes = None
        self.was_used = False
        self.started = False
        self.at_eof = False
        self._thread = threading.Thread(target=self._run, name="AsynchronousDataAccessor",
                                        daemon=True)

    # -- host side
    def start(self):
        """Start the thread and wait until it has read the first element (or failed)."""
        self._thread.start()
        with self._cond:
            self._cond.wait_for(lambda: self._ready)
        if self._start_error is not None:
            error, self._start_error = self._start_error, None
            self._thread.join()
            raise Error("AsynchronousDataAccessor worker thread failed to start (Check above "
                        "for details)") from error

    def reset_iterator(self):
        """A new epoch is requested (``iter()``)."""
        with self._cond:
            if self.started and not self.was_used and not self.at_eof:
                return  # the current iterator has not been read from: keep it
            if (self.at_eof and not self.load_indefinitely) or (
                    not self.at_eof and self.was_used):
                # part-way through an epoch, or at its end without preloading the next one:
                # drop what is buffered and start again from a new iterator
                self._generation += 1
                self._queue.clear()
            self._held = False
            self.at_eof = False
            self._start_pending = True
            self.was_used = False
            self.started = True
            self._cond.notify_all()

    def next(self):
        """The next element, or ``_EOF`` at the end of the epoch."""
        with self._cond:
            if self._held:
                self._held = False
                self._cond.notify_all()
            if not self.started:  # next() without iter(): start as iter() would
                self._start_pending = self.started = True
                self._cond.notify_all()
            while True:
                if self.at_eof:
                    return _EOF
                while self._queue and self._queue[0][0] != self._generation:
                    self._queue.popleft()
                if self._queue:
                    _, item = self._queue.popleft()
                    self._cond.notify_all()
                    if item is _EOF:
                        self.at_eof = True
                        return _EOF
                    self._held = True
                    self.was_used = True
                    return item
                if self._error is not None or not self._thread.is_alive():
                    error = self._error
                    raise AssertionError("An error occurred in the data fetcher") from error
                self._cond.wait()

    def prefetched(self):
        """How many elements are loaded and not yet returned (for tests)."""
        with self._cond:
            return sum(1 for g, item in self._queue
                       if g == self._generation and item is not _EOF)

    def terminate(self):
        """Ask the thread to stop and wait for it (briefly: a thread blocked inside the
        dataset cannot be interrupted; it is a daemon and stops when it returns)."""
        with self._cond:
            self._shutdown = True
            self._queue.clear()
            self._cond.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)

    # -- worker side
    def _new_iterator(self):
        dataset = self._dataset_ref()
        if dataset is None:
            raise _Stop
        if isinstance(dataset, DataLoader):
            return dataset._sync_iter()
        return iter(dataset)

    def _tensors(self, data):
        """The element's tensors as a tuple, checked against the first element's layout."""
        kind, keys = self._structure
        if kind == "tensor":
            tensors = (data,)
        elif kind == "dict":
            assert len(data) == len(keys)
            tensors = tuple(data[k] for k in keys)
        else:
            tensors = tuple(data)
        for index, t in enumerate(tensors):
            assert isinstance(t, torch.Tensor), (
                f"Tensor at index {index} is not a torch tensor ({type(t)}). "
                "AsynchronousDataAccessor expects data to be organised as a flat 1D "
                "container of tensors.")
        return tensors

    def _describe(self, first):
        if isinstance(first, torch.Tensor):
            self._structure = ("tensor", None)
        elif isinstance(first, dict):
            self._structure = ("dict", list(first.keys()))
        else:
            self._structure = ("list", None)
        tensors = self._tensors(first)
        self._first_shapes = [(t.shape, t.dtype) for t in tensors]
        return tensors

    def _package(self, tensors):
        kind, keys = self._structure
        if kind == "tensor":
            return tensors[0]
        if kind == "dict":
            return dict(zip(keys, tensors))
        return list(tensors)

    def _fixed(self, tensors):
        """A copy of a non-rebatched element in the accessor's own memory: PopTorch copies
        into buffers shaped like the first element, so another shape is an error."""
        out = []
        for t, (shape, dtype) in zip(tensors, self._first_shapes):
            if t.shape != shape:
                raise RuntimeError(f"AsynchronousDataAccessor: a tensor of shape "
                                   f"{list(t.shape)} does not fit the buffer of shape "
                                   f"{list(shape)} made for the first element")
            out.append(t.to(dtype=dtype, copy=True))
        return tuple(out)

    def _put(self, gen, item):
        """Queue ``item`` once a buffer slot is free; False if a reset or shutdown came."""
        with self._cond:
            while True:
                if self._shutdown:
                    raise _Stop
                if gen != self._generation:
                    return False
                used = self.prefetched() + (1 if self._held else 0)
                if item is _EOF or used < self._buffer_size:
                    self._queue.append((gen, item))
                    self._cond.notify_all()
                    return True
                self._cond.wait()  # woken by next() / iter() / terminate()

    def _run(self):
        try:
            self._main()
        except _Stop:
            pass
        except BaseException as exc:  # reported to the host by start() or next()
            with self._cond:
                if self._ready:
                    self._error = exc
                else:
                    self._start_error = exc
        finally:
            with self._cond:
                self._ready = True
                self._cond.notify_all()

    def _wait(self, gen, start):
        """Block (holding the condition) until shutdown, a reset, or with ``start`` an
        ``iter()``."""
        self._cond.wait_for(lambda: self._shutdown or gen != self._generation
                            or (start and self._start_pending))

    def _main(self):
        gen = 0
        iterator = self._new_iterator()
        try:
            first = next(iterator)
        except StopIteration:
            raise Error("The Dataset is empty") from None
        first_tensors = self._describe(first)
        rows = [[] for _ in first_tensors]  # rebatching: the rows gathered so far
        count = 0
        if self._rebatched_size is None:
            self._put(gen, self._package(self._fixed(first_tensors)))
        else:
            count = self._add_rows(gen, rows, count, first_tensors)
        with self._cond:
            self._ready = True
            self._cond.notify_all()
        # 'stopped': wait for iter(); 'prefetching': load ahead (next epoch / early_preload);
        # 'loading': an epoch the host is reading
        state = "prefetching" if self._early_preload else "stopped"
        while True:
            with self._cond:
                if state == "stopped":
                    self._wait(gen, start=True)
                if self._shutdown:
                    raise _Stop
                if gen != self._generation:  # reset: start again from a new iterator
                    gen = self._generation
                    self._start_pending = False
                    state, count, iterator = "loading", 0, None
                elif self._start_pending and state != "loading":
                    self._start_pending = False
                    state = "loading"
            if iterator is None:
                iterator = self._new_iterator()
                rows = [[] for _ in first_tensors]
            eof = False
            try:
                tensors = self._tensors(next(iterator))
            except StopIteration:
                eof = True
            if not eof:
                if self._rebatched_size is None:
                    self._put(gen, self._package(self._fixed(tensors)))
                    continue
                count = self._add_rows(gen, rows, count, tensors)
                continue
            # end of the epoch
            if state == "prefetching":
                # only one end-of-epoch may be pending: wait until the host starts reading
                with self._cond:
                    self._wait(gen, start=True)
                    if self._shutdown:
                        raise _Stop
                    if gen != self._generation:
                        continue
                    self._start_pending = False
            if count and not self._rebatched_drop_last:
                if not self._put(gen, self._package([torch.cat(r) for r in rows])):
                    continue
            rows, count = [[] for _ in first_tensors], 0
            if not self._put(gen, _EOF):
                continue
            iterator = None
            if not self.load_indefinitely:
                state = "stopped"
                with self._cond:  # a new epoch needs iter(), which resets
                    self._wait(gen, start=False)
                continue
            state = "prefetching"

    def _add_rows(self, gen, rows, count, tensors):
        """Rebatching: append ``tensors``' rows; queue each full ``rebatched_size`` batch."""
        size = self._rebatched_size
        offset, total = 0, len(tensors[0])
        while offset < total:
            take = min(total - offset, size - count)
            for gathered, t in zip(rows, tensors):
                gathered.append(t[offset:offset + take])
            offset += take
            count += take
            if count == size:
                batch = [torch.cat(r) for r in rows]
                for gathered in rows:
                    gathered.clear()
                count = 0
                if not self._put(gen, self._package(batch)):
                    return 0
        return count


class _Stop(Exception):
    """The worker thread was asked to stop (or its dataset is gone)."""


class AsynchronousDataAccessor:
    """Loads a dataset (any iterable; usually a ``poptorch.DataLoader``) ahead of its
    consumer, in a background worker, up to ``buffer_size`` elements ahead.

    Each element must be a tensor, a flat list/tuple of tensors (returned as a list) or a
    dict of tensors, with the shapes of the first element (unless rebatching).

    Args:
      dataset: the iterable to read.
      buffer_size: elements loaded ahead (the one last returned counts until the next
        ``next()``).
      miss_sleep_time_in_ms: how long PopTorch's worker sleeps between checks for a free
        slot (checked; here the thread is woken as soon as a slot frees).
      load_indefinitely: at the end of an epoch, start loading the next one at once;
        otherwise wait for a new ``iter()``.
      early_preload: fill the buffer as soon as the accessor exists; otherwise load one
        element and wait for the first ``iter()``.
      sharing_strategy: a ``poptorch.SharingStrategy`` (how PopTorch's worker process gets
        the dataset; checked, no effect here: the worker is a thread).
      rebatched_size: cut the stream of rows into batches of this size (> 1).

    Raises:
      poptorch.Error: ``dataset`` is a DataLoader that already has an accessor; the first
        element cannot be loaded ("worker thread failed to start", the cause chained).
      AssertionError: ``rebatched_size`` is 1 or less; a DataLoader with ``drop_last=False``
        and a combined batch above 1 without ``rebatched_size`` (PopTorch's messages).
      TypeError / ValueError: an argument of the wrong type or range (PopTorch does not
        check these; its worker would fail or spin)."""

    def __init__(self, dataset, buffer_size=3, miss_sleep_time_in_ms=0.1,
                 load_indefinitely=True, early_preload=False,
                 sharing_strategy=SharingStrategy.ForkServer, rebatched_size=None):
        self._worker = None
        # (miss_sleep_time_in_ms is how long PopTorch's worker process sleeps between polls
        # of a full ring buffer; this thread sleeps on a condition until a slot frees, as
        # polling would take the GIL from the consumer)
        if isinstance(dataset, DataLoader) and dataset._accessor is not None:
            raise Error("The DataLoader already uses an AsynchronousDataAccessor internally. "
                        "Either use the existing one or set "
                        "mode='poptorch.DataLoaderMode.Sync' in the DataLoader.")
        if (isinstance(dataset, DataLoader) and not dataset._is_user_batch_sampler_set
                and not dataset.drop_last and rebatched_size is None):
            assert dataset.combinedBatchSize is None or dataset.combinedBatchSize == 1, (
                "The 'drop_last=False' option from the DataLoader only works if "
                "'rebatched_size' is specified too.")
        if rebatched_size is not None:
            assert rebatched_size > 1, "rebatched_size must be None or greater than 1"
        _check_int("buffer_size", buffer_size, 1)
        if isinstance(miss_sleep_time_in_ms, bool) or not isinstance(
                miss_sleep_time_in_ms, (int, float)):
            raise TypeError("AsynchronousDataAccessor: miss_sleep_time_in_ms must be a "
                            f"number, got {type(miss_sleep_time_in_ms).__name__}")
        if miss_sleep_time_in_ms < 0:
            raise ValueError("AsynchronousDataAccessor: miss_sleep_time_in_ms must be >= 0, "
                             f"got {miss_sleep_time_in_ms}")
        for name, value in (("load_indefinitely", load_indefinitely),
                            ("early_preload", early_preload)):
            if not isinstance(value, bool):
                raise TypeError(f"AsynchronousDataAccessor: {name} must be a bool, got "
                                f"{type(value).__name__}")
        if not isinstance(sharing_strategy, SharingStrategy):
            raise TypeError("AsynchronousDataAccessor: sharing_strategy must be a "
                            f"poptorch.SharingStrategy, got {sharing_strategy!r}")
        self._dataset = dataset
        self.rebatched_size = rebatched_size
        worker = _Worker(dataset, buffer_size, load_indefinitely, early_preload, rebatched_size,
                         getattr(dataset, "rebatched_drop_last", True))
        worker.start()
        self._worker = worker
        # stop the thread when this accessor goes away or the interpreter exits
        self._finalizer = weakref.finalize(self, worker.terminate)

    def terminate(self) -> None:
        """Stop the worker; the accessor cannot be iterated afterwards."""
        if self._worker is not None:
            self._worker.terminate()
            self._worker = None

    def __len__(self) -> int:
        """The dataset's length; with ``rebatched_size`` (outside a DataLoader) the number of
        whole rebatched batches."""
        n = len(self._dataset)
        if self.rebatched_size and getattr(self._dataset, "_accessor", None) is not self:
            rows = n * (getattr(self._dataset, "batch_size", 1) or 1)
            n = rows // self.rebatched_size
        return n

    def __iter__(self):
        assert self._worker is not None
        self._worker.reset_iterator()
        return self

    def __next__(self):
        assert self._worker is not None
        item = self._worker.next()
        if item is _EOF:
            raise StopIteration
        return item


def _check_int(name, value, least):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"AsynchronousDataAccessor: {name} must be an int, got "
                        f"{type(value).__name__}")
    if value < least:
        raise ValueError(f"AsynchronousDataAccessor: {name} must be >= {least}, got {value}")
