"""``tensorflow.python.ipu.ipu_infeed_queue``: feed a dataset into programs on the emulated IPUs.

An ``IPUInfeedQueue`` wraps a dataset; ``loops.repeat``/``loops.while_loop`` (and pipeline
stage 0) take the next element from it every iteration through ``_next_element()``.

Datasets accepted:

* an ``ipu_gpu.data.Dataset`` (what ``tf.data`` is under ``ipu-gpu run``) or a real
  ``tf.data.Dataset`` (when TensorFlow is installed): its ``element_spec`` is checked as the
  SDK checks it and its elements are read on the host;
* a ``torch.utils.data.DataLoader``: batches must have a constant size (``drop_last=True``
  unless the dataset length is a multiple of ``batch_size``); torch tensors become arrays;
* any re-iterable (an object whose ``iter()`` starts afresh: a list, a class with
  ``__iter__``) of nested structures (tuples, lists, dicts, namedtuples) of numpy or cupy
  arrays, ipu_gpu Tensors or Python scalars. Its first element gives the structure, shapes
  and dtypes; every later element must match them (static shapes). One-shot iterators and
  generators are rejected: the queue restarts the dataset after ``deleter``.

As in the SDK, shapes must be static ("Output shape ... is not fully defined"), nested
list/tuple shapes (a ragged leaf) are refused and 64-bit and other types a Poplar data
stream cannot carry are refused ("Unsupported datatype int64 on index 0 of feed operation";
the emulator raises it as a TypeError when the queue is made, the SDK when the program is
compiled). Besides int64 the emulator refuses uint64, float64, complex, string and object
leaves.

Replication: every replica takes its own element each step; replica ``r`` of ``R`` gets
element ``step * R + r`` (``ipu_gpu.emulation.context.current()`` tells which replica is
asking; host code counts as replica 0 of 1). The R elements of a step are taken from the
dataset together under one lock, so the assignment never depends on thread timing. When the
dataset ends, every replica asking for a step that cannot be filled gets
``ipu_gpu.errors.OutOfRangeError`` ("End of sequence") naming the queue, the replica, the step
and how many elements the dataset held; the elements already taken for an incomplete step are
kept, in order, for the next request (nothing is lost), and a replication factor that changes
between programs starts from the first element no replica has used.

Prefetching: a background thread reads the dataset and copies each element into a fresh
device buffer, ``prefetch_depth`` elements ahead of the consumers (default 3; the SDK's range
[1, 255]). On the CPU backend the copy is a numpy copy; on the GPU backend the thread stages
each leaf in pinned host memory and uploads it on its own non-blocking CUDA stream, then
synchronises that stream before handing the element over, so a consumer never waits on a
copy in flight. Prefetching starts with ``initializer`` or the first dequeue. Elements land
on the GPU current when prefetching started; a replica whose IPU runs on another GPU gets a
copy on its own GPU. On the CPU backend an in-memory ``ipu_gpu.data`` pipeline (sources of
arrays, then batching, repeating, shuffling, taking, skipping, sharding, zipping, caching in
memory: no function, generator, file or prefetch of its own) is read by the consumer at each
dequeue instead, with no thread: reading it is a few microseconds of slicing and copying
that hold the GIL, which no thread can overlap with the program, while handing each element
over from a thread costs two thread switches and a wait for the GIL. The elements, their
order, the replica split and the end of the dataset are the same.

Synthetic data: when the queue starts (``initializer`` or its first dequeue) under
``TF_POPLAR_FLAGS=--use_synthetic_data`` or ``--synthetic_data_categories=...infeed...``, no
host data reaches the device, as in the SDK (which then connects no data stream and starts no
infeed thread). Every dequeue, by every replica at every step, gets the same element of the
dataset's structure, shapes and dtypes, made once per start (on the host, uploaded once per
GPU, copied on the device per dequeue): zeros, or as ``--synthetic_data_initializer=random|
uniform|normal|<number>`` says (``poplar_flags.synthetic_array``; the SDK sets the tensor's
initial value once, undefined content without an initializer). ``--null_data_feed`` gives
zeros too (the SDK copies a constant 0x02 byte pattern, documented as garbage, and its infeed
thread still reads, unused, a few elements ahead). The dataset is not read (a
``tf.data.Dataset`` not at all; any other dataset only for its first element, when the queue
is made, to learn the structure) and never ends, so a loop runs as many iterations as it asks
for. The flags are read once per start: a change takes effect after ``deleter``.

``FeedOperation`` is what ``initializer``, ``deleter`` and ``IPUOutfeedQueue.enqueue``
return: the emulator runs these eagerly, so the object only names what was done (running it
again with ``run()`` does nothing).
"""

from __future__ import annotations

import itertools
import queue as _queue
import sys
import threading
from collections import deque

import numpy as np

from ..core import backend as _backend
from ..core import nest as _nest
from ..core.tensor import Tensor, wrap
from ..emulation import context as _context
from ..emulation import observe as _observe
from ..emulation import poplar_flags as _poplar_flags
from ..emulation import rollback as _rollback
from ..errors import OutOfRangeError
from . import feed_arguments

__all__ = ["FeedOperation", "IPUInfeedQueue"]

_UNSUPPORTED_KINDS = "cOSUVM"  # complex, object, bytes, str, void, datetime
_UNSUPPORTED = {np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.float64)}
_feed_ids = itertools.count()


class FeedOperation:
    """A feed operation the emulator has already run (TF returns a ``tf.Operation``).

    ``name``/``type`` describe it; ``run()`` and calling it do nothing more, so code written
    for sessions (``sess.run(queue.initializer)``) keeps working when it calls ``run()``."""

    __slots__ = ("name", "type")
    _ipu_operation = True  # the engine's mark for an Operation (emulation.engine.is_operation)

    def __init__(self, name: str, type_: str):
        self.name = name
        self.type = type_

    def run(self, *args, **kwargs):
        return None

    __call__ = run

    def __repr__(self) -> str:
        return f"<FeedOperation {self.type} {self.name!r}>"


# ---------------------------------------------------------------------------------------------
# Leaves and element specs.


def _leaf_array(leaf, index: int):
    """The numpy/cupy array of one dataset leaf (no copy)."""
    if isinstance(leaf, Tensor):
        return leaf._value
    if isinstance(leaf, np.ndarray) or _backend.is_cupy_array(leaf):
        return leaf
    if hasattr(leaf, "__dlpack__") and hasattr(leaf, "shape"):  # torch, jax, tf tensors
        from ..core.convert import to_array

        return to_array(leaf, op="IPUInfeedQueue")
    if isinstance(leaf, (bool, int, float, np.generic)):
        from ..core.convert import to_array

        return to_array(leaf, op="IPUInfeedQueue", xp=np)
    if isinstance(leaf, (str, bytes)):
        raise TypeError(f"Unsupported datatype string on index {index} of feed operation")
    raise TypeError(f"IPUInfeedQueue: dataset elements must be nested structures of arrays, "
                    f"Tensors or numbers, got a {type(leaf).__name__} on index {index}")


def _check_dtype(dtype, index: int) -> None:
    dtype = np.dtype(dtype)
    if dtype in _UNSUPPORTED or dtype.kind in _UNSUPPORTED_KINDS:
        raise TypeError(f"Unsupported datatype {dtype.name} on index {index} of feed operation")


def _not_fully_defined(shape) -> ValueError:
    return ValueError(f"Output shape {shape} is not fully defined. If using tf.Dataset.batch, "
                      "set `drop_remainder=True`.")


class _Spec:
    """The element structure (leaves replaced by None) and the flat (shape, dtype) list."""

    def __init__(self, structure, shapes, dtypes):
        self.structure = structure
        # a tuple of leaves packs as itself: the common element, (features, labels)
        self.flat_tuple = type(structure) is tuple and all(x is None for x in structure)
        self.shapes = [tuple(int(d) for d in s) for s in shapes]
        self.dtypes = [np.dtype(d) for d in dtypes]
        for i, d in enumerate(self.dtypes):
            _check_dtype(d, i)

    @property
    def nbytes(self) -> int:
        return sum(int(np.prod(s, dtype=np.int64)) * d.itemsize
                   for s, d in zip(self.shapes, self.dtypes))

    def check(self, flat, number: int) -> None:
        if len(flat) != len(self.shapes):
            raise ValueError(f"IPUInfeedQueue: element {number} of the dataset has "
                             f"{len(flat)} tensors, but the first element had "
                             f"{len(self.shapes)}: every element must have the same structure")
        for i, (a, s, d) in enumerate(zip(flat, self.shapes, self.dtypes)):
            if tuple(a.shape) != s:
                raise ValueError(
                    f"IPUInfeedQueue: element {number} of the dataset has shape "
                    f"{list(a.shape)} on index {i}, but the first element had {list(s)}: "
                    "feeds need static shapes (batch with drop_remainder=True / "
                    "drop_last=True)")
            if a.dtype != d:
                raise TypeError(f"IPUInfeedQueue: element {number} of the dataset has dtype "
                                f"{a.dtype.name} on index {i}, but the first element had "
                                f"{d.name}")


def _structure_and_flat(element):
    """(structure with None leaves, flat arrays) of one generic dataset element."""
    flat = _nest.flatten(element)
    return (_nest.pack_sequence_as(element, [None] * len(flat)),
            [_leaf_array(leaf, i) for i, leaf in enumerate(flat)])


def _spec_from_element(element) -> _Spec:
    flat = _nest.flatten(element)
    arrays = []
    for i, leaf in enumerate(flat):
        try:
            arrays.append(_leaf_array(leaf, i))
        except ValueError as e:  # a ragged Python list cannot become one array
            raise ValueError("Nested list/tuple input shapes are not supported") from e
    structure = _nest.pack_sequence_as(element, [None] * len(flat))
    return _Spec(structure, [a.shape for a in arrays], [a.dtype for a in arrays])


# ---------------------------------------------------------------------------------------------
# Sources: where elements come from.


def _is_tf_dataset(ds) -> bool:
    tf_data = sys.modules.get("tensorflow.python.data.ops.dataset_ops")
    return tf_data is not None and isinstance(ds, tf_data.DatasetV2)


def _is_ipu_gpu_dataset(ds) -> bool:
    data = sys.modules.get("ipu_gpu.data")
    return data is not None and isinstance(ds, data.Dataset)


def _is_torch_loader(ds) -> bool:
    tud = sys.modules.get("torch.utils.data")
    return tud is not None and isinstance(ds, tud.DataLoader)


class _Source:
    """A dataset as a spec plus a way to iterate it as flat lists of arrays."""

    def __init__(self, dataset, what: str):
        self.dataset = dataset
        if _is_ipu_gpu_dataset(dataset):
            self.kind = "ipu_gpu.data.Dataset"
            self.spec = self._ipu_gpu_spec(dataset)
        elif _is_tf_dataset(dataset):
            self.kind = "tf.data.Dataset"
            self.spec = self._tf_spec(dataset)
        elif _is_torch_loader(dataset):
            self.kind = "torch DataLoader"
            self._check_torch(dataset)
            self.spec = self._first_spec(dataset)
        else:
            self.kind = "iterable"
            try:
                it = iter(dataset)
            except TypeError:
                raise TypeError(f"{what}: dataset must be a tf.data.Dataset, a torch DataLoader "
                                "or a re-iterable of nested arrays, got "
                                f"{type(dataset).__name__}") from None
            if it is dataset:
                raise TypeError(f"{what}: dataset must be re-iterable (iter() must start "
                                "afresh; pass a list or an object with __iter__), got the "
                                f"one-shot iterator {type(dataset).__name__}")
            self.spec = self._first_spec(dataset)

    @staticmethod
    def _ipu_gpu_spec(ds) -> _Spec:
        from ..core.spec import TensorSpec

        spec = ds.element_spec
        flat = _nest.flatten(spec)
        for s in flat:
            if not isinstance(s, TensorSpec):
                raise ValueError("Nested list/tuple input shapes are not supported")
            if not s.shape.is_fully_defined():
                raise _not_fully_defined(s.shape)
        structure = _nest.map_structure(lambda s: None, spec)
        return _Spec(structure, [s.shape.as_list() for s in flat],
                     [np.dtype(s.dtype) for s in flat])

    @staticmethod
    def _tf_spec(ds) -> _Spec:
        import tensorflow as tf

        spec = ds.element_spec
        flat = tf.nest.flatten(spec)
        for s in flat:
            if not isinstance(s, tf.TensorSpec):
                raise ValueError("Nested list/tuple input shapes are not supported")
            if not s.shape.is_fully_defined():
                raise _not_fully_defined(s.shape)
        structure = tf.nest.map_structure(lambda s: None, spec)
        return _Spec(structure, [s.shape.as_list() for s in flat],
                     [s.dtype.as_numpy_dtype for s in flat])

    @staticmethod
    def _check_torch(loader) -> None:
        bs = loader.batch_size
        if bs is None or loader.drop_last:
            return
        try:
            n = len(loader.dataset)
        except TypeError:  # an iterable-style dataset: the last batch may be short
            raise _not_fully_defined(f"({None}, ...)") from None
        if n % bs:
            raise ValueError(f"Output shape (None, ...) is not fully defined: the dataset has "
                             f"{n} samples, not a multiple of batch_size={bs}. Create the "
                             "DataLoader with drop_last=True.")

    @staticmethod
    def _first_spec(dataset) -> _Spec:
        for element in dataset:
            return _spec_from_element(element)
        raise ValueError("IPUInfeedQueue: dataset must have at least one element (the first "
                         "element gives the structure, shapes and dtypes), got an empty one")

    def flat_elements(self):
        """Flat lists of host or device arrays, one per element (not yet copied)."""
        if self.kind == "ipu_gpu.data.Dataset":
            for element in self.dataset.as_numpy_elements():
                yield [np.asarray(a) for a in _nest.flatten(element)]
        elif self.kind == "tf.data.Dataset":
            import tensorflow as tf

            for element in self.dataset.as_numpy_iterator():
                yield [np.asarray(a) for a in tf.nest.flatten(element)]
        else:
            for element in self.dataset:
                yield [_leaf_array(leaf, i) for i, leaf in enumerate(_nest.flatten(element))]


# ---------------------------------------------------------------------------------------------
# Copies onto the device.


class _HostCopier:
    """Copies onto the CPU backend: a fresh, C-contiguous numpy buffer per leaf."""

    def __call__(self, flat):
        out = []
        for a in flat:
            if type(a) is np.ndarray:
                out.append(a.copy())  # C order: one call, not an empty buffer and a copyto
            elif _backend.is_cupy_array(a):
                out.append(a.get())
            else:
                b = np.empty(a.shape, a.dtype)
                np.copyto(b, a)
                out.append(b)
        return out

    def close(self):
        pass


_PARALLEL_STAGING_BYTES = 4 << 20  # larger leaves are staged by several threads at once


def _stage(pool, staging, a) -> None:
    """staging[...] = a; a large C-contiguous leaf in chunks on ``pool``'s threads (numpy
    releases the GIL while copying): one thread's memcpy, not the DMA, bounds a feed of
    large host elements."""
    if pool is None or a.nbytes < _PARALLEL_STAGING_BYTES or not a.flags.c_contiguous:
        np.copyto(staging, a)
        return
    src, dst = a.reshape(-1).view(np.uint8), staging.reshape(-1).view(np.uint8)
    n = pool._max_workers
    bounds = [len(src) * i // n for i in range(n + 1)]
    list(pool.map(lambda i: np.copyto(dst[bounds[i]:bounds[i + 1]], src[bounds[i]:bounds[i + 1]]),
                  range(n)))


class _GpuCopier:
    """Copies onto the current GPU on a private non-blocking stream via pinned staging."""

    def __init__(self):
        self.cupy = _backend.default_xp()
        self.device = self.cupy.cuda.Device()
        self.stream = None
        self._staging: dict = {}  # (index) -> pinned numpy array
        self._pool = None  # threads staging large leaves, made on first need

    def _pinned(self, index, a):
        buf = self._staging.get(index)
        if buf is None or buf.shape != a.shape or buf.dtype != a.dtype:
            mem = self.cupy.cuda.alloc_pinned_memory(max(a.nbytes, 1))
            buf = np.frombuffer(mem, a.dtype, a.size).reshape(a.shape)
            self._staging[index] = buf
        return buf

    def __call__(self, flat):
        cupy = self.cupy
        with self.device:
            if self.stream is None:
                self.stream = cupy.cuda.Stream(non_blocking=True)
            out = []
            with self.stream:
                for i, a in enumerate(flat):
                    if _backend.is_cupy_array(a):
                        out.append(cupy.array(a, copy=True))
                    else:
                        staging = self._pinned(i, a)
                        if self._pool is None and a.nbytes >= _PARALLEL_STAGING_BYTES:
                            import concurrent.futures
                            import os

                            workers = max(1, min(4, (os.cpu_count() or 1) // 2))
                            self._pool = concurrent.futures.ThreadPoolExecutor(
                                workers, thread_name_prefix="ipu_gpu-infeed-staging")
                        _stage(self._pool, staging, a)
                        d = cupy.empty(a.shape, a.dtype)
                        d.set(staging, stream=self.stream)
                        out.append(d)
            self.stream.synchronize()  # the staging buffers are reused for the next element
        return out

    def close(self):
        self._staging.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


# ---------------------------------------------------------------------------------------------
# The prefetch thread.

_ITEM, _END, _ERROR = 0, 1, 2


class _Prefetcher:
    """Reads the source on a daemon thread and keeps up to ``depth`` copied elements ready."""

    def __init__(self, source: _Source, depth: int, name: str):
        self.source = source
        self.queue: _queue.Queue = _queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self.copier = _GpuCopier() if _backend.backend_name() == "gpu" else _HostCopier()
        self.thread = threading.Thread(target=self._run, name=f"ipu_gpu-{name}-prefetch",
                                       daemon=True)
        self.thread.start()

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except _queue.Full:
                continue
        return False

    def _run(self):
        count = 0
        try:
            for flat in self.source.flat_elements():
                if self.stop.is_set():
                    return
                self.source.spec.check(flat, count)
                if not self._put((_ITEM, self.copier(flat))):
                    return
                count += 1
            self._put((_END, count))
        except BaseException as e:  # handed to the consumer, raised there
            self._put((_ERROR, e))
        finally:
            self.copier.close()

    def get(self):
        return self.queue.get()

    def ready(self) -> int:
        """Elements prefetched and waiting."""
        return self.queue.qsize()

    def close(self) -> None:
        self.stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                self.queue.get_nowait()
            except _queue.Empty:
                break
        self.thread.join(timeout=5)


# ---------------------------------------------------------------------------------------------
# Reading in the consumer: in-memory pipelines on the CPU backend.

# ipu_gpu.data transformations whose reading runs no user code (no map/filter function, no
# generator, no file, no prefetch thread of its own): they only slice, gather and copy arrays.
_IN_MEMORY_DATASETS = frozenset({
    "TensorSlices", "Tensors", "Range", "Zip", "Batch", "PaddedBatch", "Unbatch", "Repeat",
    "Take", "Skip", "Shard", "Concatenate", "Enumerate", "Shuffle", "Cache",
    "_AssertCardinality"})


def _reads_in_memory(source: _Source) -> bool:
    """Whether reading ``source`` only slices and copies host arrays: an
    ``ipu_gpu.data.Dataset`` built from the transformations of ``_IN_MEMORY_DATASETS``."""
    if source.kind != "ipu_gpu.data.Dataset":
        return False
    todo = [source.dataset]
    while todo:
        ds = todo.pop()
        kind = type(ds)
        if kind.__name__ not in _IN_MEMORY_DATASETS or not kind.__module__.startswith(
                "ipu_gpu.data."):
            return False
        if getattr(ds, "_filename", ""):  # a cache in files reads and writes them
            return False
        todo.extend(ds._inputs)
    return True


class _InlineReader:
    """The ``_Prefetcher`` interface without a thread: ``get`` reads, checks and copies the
    next element in the consumer. Used where a read is a few microseconds of slicing and
    copying on the host that holds the GIL throughout (``_reads_in_memory`` on the CPU
    backend): a thread could not overlap it with the program, and handing each element over
    would cost two thread switches and a wait for the GIL per dequeue. The elements, their
    order, the end of the dataset and its errors are the prefetch thread's."""

    thread = None

    def __init__(self, source: _Source):
        self.source = source
        self.copier = _HostCopier()
        self._flat = None  # the source's iterator, made by the first read
        self._count = 0
        self._done = None  # the (_END or _ERROR, value) once reached

    def get(self):
        if self._done is not None:
            return self._done
        try:
            if self._flat is None:
                self._flat = self.source.flat_elements()
            flat = next(self._flat, None)
            if flat is None:
                self._done = (_END, self._count)
                return self._done
            self.source.spec.check(flat, self._count)
            item = _ITEM, self.copier(flat)
        except BaseException as e:  # raised by the consumer, as the thread's errors are
            self._done = (_ERROR, e)
            return self._done
        self._count += 1
        return item

    def ready(self) -> int:
        return 0

    def close(self) -> None:
        self._flat = None


# ---------------------------------------------------------------------------------------------
# Synthetic data: what the device sees when no host data reaches the infeed.


def _replica_gpu(ctx):
    """The GPU of the replica's first IPU, or None (host code, CPU executors)."""
    ipus = getattr(ctx, "ipus", None) or ()
    return getattr(getattr(ipus[0], "executor", None), "gpu", None) if ipus else None


def _synthetic_mode(flags) -> str | None:
    if flags.use_synthetic_data_for("infeed"):
        return "synthetic"
    return "null" if flags.null_data_feed else None


class _Synthetic:
    """One element of the spec's shapes and dtypes, made on the host once per queue start
    and uploaded once per GPU; every dequeue gets a device copy of it."""

    def __init__(self, spec: _Spec, initializer: str):
        rng = np.random.default_rng()
        self.host = [_poplar_flags.synthetic_array(initializer, s, d, rng)
                     for s, d in zip(spec.shapes, spec.dtypes)]
        self.cupy = _backend.default_xp() if _backend.backend_name() == "gpu" else None
        self._on_gpu: dict = {}  # gpu id -> [cupy arrays]
        self._lock = threading.Lock()

    def element(self, ctx) -> list:
        cupy = self.cupy
        if cupy is None:
            return [a.copy() for a in self.host]
        gpu = _replica_gpu(ctx)
        if gpu is None:
            gpu = cupy.cuda.Device().id
        with cupy.cuda.Device(gpu):
            with self._lock:
                template = self._on_gpu.get(gpu)
                if template is None:
                    template = self._on_gpu[gpu] = [cupy.asarray(a) for a in self.host]
            return [cupy.array(a, copy=True) for a in template]


# ---------------------------------------------------------------------------------------------
# The queue.


class IPUInfeedQueue:
    """Wraps a dataset with infeed operations specific to the IPU.

    Pass the queue to a loop of ``ipu.loops`` (``repeat``, ``while_loop``) or to a pipeline;
    the loop dequeues one element per iteration and appends it to the body's arguments (a
    dict element with string keys is passed as keyword arguments). See the module docstring
    for the datasets accepted, replication, prefetching and synthetic data
    (``TF_POPLAR_FLAGS=--use_synthetic_data``).

    Args:
      dataset: a ``tf.data.Dataset``, a torch ``DataLoader`` or a re-iterable of nested
        arrays; all transformations (shuffle, repeat, batch with ``drop_remainder=True``) must
        be applied before. The dataset is read from its start after ``deleter`` runs.
      device_ordinal: ordinal of the IPU device on which this queue will be used (default:
        the current IPUStrategy's, else 0).
      prefetch_depth: the number of elements prefetched onto the device ahead of the program
        (1 to 255; ``None`` or 0: the default 3).
      optimise_latency: accepted for compatibility; no effect in the emulator.
      **kwargs: ignored, as by SDK 3.x; the deprecated ``feed_name``, ``replication_factor``
        and ``data_to_prefetch`` warn (names are generated, the replication factor comes
        from the program, use ``prefetch_depth``). See ``feed_arguments``.

    Raises:
      ValueError: if the dataset's element shapes are not fully defined, a shape is a nested
        list/tuple, ``prefetch_depth`` is outside [0, 255] or ``device_ordinal`` is not a
        non-negative int.
      TypeError: for an element dtype a feed cannot carry ("Unsupported datatype int64 on
        index 0 of feed operation") or a dataset of another kind.
    """

    def __init__(self, dataset, device_ordinal=None, prefetch_depth=None,
                 optimise_latency=False, **kwargs):
        feed_arguments.infeed_kwargs(kwargs)
        self._source = _Source(dataset, "IPUInfeedQueue")
        self._prefetch_depth = feed_arguments.prefetch_depth(prefetch_depth)
        self._device_ordinal = feed_arguments.device_ordinal(device_ordinal)
        self._optimise_latency = bool(optimise_latency)
        self._name = f"infeed_{next(_feed_ids)}"
        self._lock = threading.Lock()
        self._prefetcher: _Prefetcher | _InlineReader | None = None
        self._synthetic: _Synthetic | None = None  # set while started without host data
        self._initialized = False
        self._dequeued = False
        self._read_since: list | None = None  # elements read while an undo point is kept
        self._reset_state()

    def _reset_state(self) -> None:
        self._leftover: deque = deque()  # elements taken from the dataset, not yet handed out
        self._steps: dict = {}  # step -> [elements (R), handed out count]
        self._filled_steps = 0  # steps filled so far (under the current replication factor)
        self._replication = None
        self._replica_step: list = []
        self._taken = 0  # elements read from the prefetcher
        self._end = None  # elements the dataset held, once it ended
        self._error = None

    # ---- the documented interface ------------------------------------------------------------
    @property
    def name(self) -> str:
        """The generated feed name (the SDK's feed_name)."""
        return self._name

    @property
    def device_ordinal(self) -> int:
        return self._device_ordinal

    @property
    def prefetch_depth(self) -> int:
        return self._prefetch_depth

    @property
    def element_spec(self):
        """The element structure with ``(shape, dtype)`` leaves."""
        spec = self._source.spec
        return _nest.pack_sequence_as(spec.structure, list(zip(spec.shapes, spec.dtypes)))

    @property
    def dequeued(self) -> bool:
        """Returns whether this queue has been dequeued."""
        return self._dequeued

    @property
    def number_of_tuple_elements(self) -> int:
        """Returns the number of arguments supplied by this IPUInfeedQueue: the number of
        items of a tuple/list element (or keys of a dict element), else 1."""
        structure = self._source.spec.structure
        if isinstance(structure, (tuple, list, dict)):
            return len(structure)
        return 1

    @property
    def initializer(self) -> FeedOperation:
        """Starts prefetching and returns the (already run) operation. Under synthetic data
        (``TF_POPLAR_FLAGS``, read now) it makes the synthetic element instead and the dataset
        is not read.

        Raises:
          ValueError: if the function ``initializer`` has already been called (since the
            queue was made or last deleted), or ``TF_POPLAR_FLAGS`` is malformed.
        """
        with self._lock:
            if self._initialized:
                raise ValueError("The IPUInfeedQueue `initializer` function can only be "
                                 "accessed once.")
            self._start()
        return FeedOperation(self._name, "IPUCreateDatasetIterator")

    @property
    def deleter(self) -> FeedOperation:
        """Stops prefetching and drops every element read so far (the operation has run).
        The queue can be used again afterwards: it reads the dataset from its start."""
        with self._lock:
            self._close()
        return FeedOperation(self._name, "IPUDeleteDatasetIterator")

    def get_next(self):
        """Obsolete function."""
        raise ValueError("`get_next()` is now obsolete as the IPUInfeedQueue is now "
                         "automatically dequeued by the loop.")

    # ---- used by loops and pipelines ---------------------------------------------------------
    def _next_element(self):
        """The next element for the replica running this code (host: replica 0 of 1), as the
        nested structure of Tensors; OutOfRangeError when the dataset has ended."""
        flat = self._next_flat()
        spec = self._source.spec
        if spec.flat_tuple:
            return tuple(flat)
        return _nest.pack_sequence_as(spec.structure, flat)

    def _next_flat(self) -> list:
        """The leaves of ``_next_element()`` (a list of Tensors in ``nest.flatten`` order),
        for a loop that feeds them on as they are."""
        ctx = _context.current()
        if ctx is None:
            n_rep, r = 1, 0
        else:
            n_rep, r = int(ctx.replication_factor), int(ctx.replica_index)
        with self._lock:
            self._dequeued = True
            if self._prefetcher is None and self._synthetic is None:
                self._start()
            synthetic = self._synthetic
            if synthetic is None:
                if _rollback.is_open():
                    _rollback.save(self, self._undo_point)
                flat = self._take(n_rep, r)
        if synthetic is not None:  # no host data: nothing to count, never ends
            flat = synthetic.element(ctx)
        elif ctx is not None and flat and type(flat[0]) is not np.ndarray:
            flat = self._to_replica_device(flat, ctx)
        if _observe.observer is not None and ctx is not None:  # ipu-gpu run --report
            _observe.observer.infeed_element(flat, n_rep)
        return [wrap(a) for a in flat]

    def _ready(self) -> int:
        """Elements prefetched and waiting (for tests and benchmarks)."""
        p = self._prefetcher
        return 0 if p is None else p.ready()

    # ---- internals ---------------------------------------------------------------------------
    def _start(self) -> None:
        """Start feeding: read TF_POPLAR_FLAGS (as the SDK decides at this point whether the
        infeed gets host data) and start the prefetch thread or make the synthetic element."""
        if self._prefetcher is None and self._synthetic is None:
            flags = _poplar_flags.parse()  # a malformed value raises before anything starts
            mode = _synthetic_mode(flags)
            if mode is None:
                self._prefetcher = self._reader()
            else:
                initializer = flags.synthetic_data_initializer if mode == "synthetic" else ""
                self._synthetic = _Synthetic(self._source.spec, initializer)
        self._initialized = True

    def _reader(self):
        if _backend.backend_name() == "cpu" and _reads_in_memory(self._source):
            return _InlineReader(self._source)
        return _Prefetcher(self._source, self._prefetch_depth, self._name)

    def _close(self) -> None:
        p, self._prefetcher = self._prefetcher, None
        if p is not None:
            p.close()
        self._synthetic = None
        self._initialized = False
        self._reset_state()

    def _take(self, n_rep: int, r: int) -> list:
        """Replica r's element of its next step (under the lock)."""
        if self._replication != n_rep:
            self._change_replication(n_rep)
        k = self._replica_step[r]
        if n_rep == 1:  # one replica: each element is a step of its own, kept nowhere
            flat = self._pull_for(r, k, [])
            self._filled_steps = k + 1
            self._replica_step[r] = k + 1
            return flat
        while self._filled_steps <= k:
            self._fill_step(r, k)
        entry = self._steps[k]
        flat = entry[0][r]
        entry[0][r] = None
        entry[1] += 1
        if entry[1] == n_rep:
            del self._steps[k]
        self._replica_step[r] = k + 1
        return flat

    def _undo_point(self) -> _InfeedPoint:
        return _InfeedPoint(self)

    def _change_replication(self, n_rep: int) -> None:
        """Start a new replication factor from the first element no replica has used."""
        for k in sorted(self._steps, reverse=True):
            for flat in reversed(self._steps[k][0]):
                if flat is not None:
                    self._leftover.appendleft(flat)
        self._steps.clear()
        self._filled_steps = 0
        self._replication = n_rep
        self._replica_step = [0] * n_rep

    def _pull(self):
        if self._leftover:
            return self._leftover.popleft()
        if self._error is not None:
            raise self._error
        if self._end is not None:
            return None
        kind, value = self._prefetcher.get()
        if kind == _ITEM:
            self._taken += 1
            if self._read_since is not None:
                self._read_since.append(value)
            return value
        if kind == _END:
            self._end = value
            return None
        self._error = value
        raise value

    def _fill_step(self, r: int, k: int) -> None:
        got = []
        for _ in range(self._replication):
            got.append(self._pull_for(r, k, got))
        self._steps[self._filled_steps] = [got, 0]
        self._filled_steps += 1

    def _pull_for(self, r: int, k: int, got: list):
        """The next element of the step being filled for replica r's step k, of which
        ``got`` were taken; when there is none (or the dataset fails), ``got`` goes back to
        the front of the leftovers and OutOfRangeError (the dataset's error) is raised."""
        try:
            flat = self._pull()
        except BaseException:
            self._leftover.extendleft(reversed(got))
            raise
        if flat is None:
            self._leftover.extendleft(reversed(got))
            n_rep = self._replication
            rep = f" with replication factor {n_rep}" if n_rep > 1 else ""
            left = (f"; {len(got)} element{'s' if len(got) != 1 else ''} left, "
                    f"{n_rep} needed") if got else ""
            raise OutOfRangeError(
                f"End of sequence: IPUInfeedQueue {self._name!r} has no element for "
                f"replica {r} at step {k}{rep}: its dataset ended after {self._end} "
                f"elements{left}. Repeat the dataset (dataset.repeat()) or run fewer "
                "iterations.")
        return flat

    @staticmethod
    def _to_replica_device(flat, ctx):
        if ctx is None or not flat or not _backend.is_cupy_array(flat[0]):
            return flat
        gpu = _replica_gpu(ctx)
        if gpu is None or flat[0].device.id == gpu:
            return flat
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(gpu):
            return [cupy.array(a, copy=True) for a in flat]

    def __del__(self):
        p = getattr(self, "_prefetcher", None)
        if isinstance(p, _Prefetcher):
            p.stop.set()


class _InfeedPoint:
    """Where a queue stood before an undoable run (``emulation/rollback.py``): undone, the
    elements handed out since are handed out again, in the same order (those read from the
    dataset since go back in front of it; its end or error, if reached, stays)."""

    def __init__(self, q: IPUInfeedQueue):
        self.q = q
        self.leftover = list(q._leftover)
        self.steps = {k: [list(v[0]), v[1]] for k, v in q._steps.items()}
        self.filled_steps = q._filled_steps
        self.replication = q._replication
        self.replica_step = list(q._replica_step)
        self.prefetcher = q._prefetcher
        q._read_since = []

    def undo(self) -> None:
        q = self.q
        with q._lock:
            if q._prefetcher is not self.prefetcher:  # deleted meanwhile: nothing to put back
                return
            q._leftover = deque(self.leftover + (q._read_since or []))
            q._steps = self.steps
            q._filled_steps = self.filled_steps
            q._replication = self.replication
            q._replica_step = self.replica_step

    def close(self) -> None:
        self.q._read_since = None
