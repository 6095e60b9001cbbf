"""What ``fit``/``evaluate``/``predict`` iterate: the data handler (Keras 2's
``engine/data_adapter.py`` semantics, on the host).

Sources: numpy arrays, ipu_gpu Tensors, Python lists of numbers, and lists/tuples/dicts of
them (``x``, ``y``, ``sample_weight``); an ``ipu_gpu.data.Dataset`` whose elements are ``x``,
``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``; a Python generator or iterator of such
elements. Arrays are cut into batches of ``batch_size`` (32 by default) in order, the last
partial batch kept, reshuffled every epoch when ``shuffle`` is True (``"batch"``: within
batch-sized chunks) by a numpy generator seeded from ipu_gpu's global seed when one is set
(orders are reproducible per seed, not TensorFlow's). Floating numpy arrays become floatx
Tensors, as Keras converts them. ``class_weight`` turns each batch's labels into sample
weights.

``DataHandler`` yields ``(epoch, iterator)`` and, per epoch, the first step of each
execution (``steps_per_execution`` steps; a shorter last one when the epoch is not a
multiple). With ``replicas=R`` (the IPU path) it checks Graphcore's ``IPUDataHandler`` rules
and an epoch is ``steps // R`` steps per replica, replica r of a step taking element
``step * R + r``.
"""

from __future__ import annotations

import contextlib
import logging
import math

import numpy as np

from ...core import nest
from ...core.convert import convert_to_tensor
from ...core.tensor import Tensor
from .. import backend

__all__ = ["DataHandler", "expand_1d", "pack_x_y_sample_weight", "train_validation_split",
           "unpack_x_y_sample_weight"]

_log = logging.getLogger("ipu_gpu.keras")

_INFINITE, _UNKNOWN = -1, -2


def unpack_x_y_sample_weight(data):
    """Unpacks user-provided data tuple: ``(x, y, sample_weight)`` with None for the parts
    absent.

    Raises:
      ValueError: a tuple longer than 3 (Keras's message).
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, "
                     f"sample_weight)`, found: {data}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """Packs user-provided data into a tuple (``x`` alone when it is not nested and there is
    no ``y``)."""
    if y is None:
        return x if not isinstance(x, (list, tuple, dict)) else (x,)
    if sample_weight is None:
        return x, y
    return x, y, sample_weight


def expand_1d(data):
    """Rank-1 Tensors become ``[n, 1]`` (Keras 2.6's train/test steps do this; TF-Keras 2.13+
    dropped it, leaving ``match_dtype_and_rank`` to expand targets only)."""
    from ...ops import shape as _shape

    def expand(t):
        if isinstance(t, Tensor) and t.ndim == 1:
            return _shape.expand_dims(t, -1)
        return t

    return nest.map_structure(expand, data)


def _is_array_like(x) -> bool:
    return isinstance(x, (np.ndarray, Tensor, np.generic)) or hasattr(x, "__array_interface__")


def _to_numpy(x):
    """A leaf of the user's data as a numpy array; floats become floatx (Keras converts
    numpy floats to ``backend.floatx()``)."""
    if x is None:
        return None
    if isinstance(x, Tensor):
        return x.numpy()  # syncs device; Tensors keep their dtype
    a = np.asarray(x)
    if a.dtype.kind == "f":
        a = a.astype(backend.floatx(), copy=False)
    elif a.dtype.kind in "OSU":
        from ...core.strings import is_string_leafy, string_array

        if a.size and is_string_leafy(a):  # text: a tf.string array (bytes), as Keras takes it
            return string_array(a)
        raise ValueError(f"Failed to convert a NumPy array to a Tensor (Unsupported object "
                         f"type {type(np.ravel(a)[0]).__name__}).")
    return a


def _is_list_of_scalars(x) -> bool:
    """Keras's ListsOfScalarsDataAdapter test: ``[1, 2]`` and ``[[1, 2], [3, 4]]`` are data,
    one array each."""
    if isinstance(x, (bool, int, float, str, bytes, np.generic)):
        return True
    if isinstance(x, (list, tuple)) and x:
        return _is_list_of_scalars(x[0])
    return False


def _structure_to_numpy(data):
    """Nested lists/tuples/dicts of array-likes -> the same structure of numpy arrays; a
    (nested) list of numbers is one array."""
    if data is None:
        return None
    if isinstance(data, dict):
        return {k: _structure_to_numpy(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)) and not _is_list_of_scalars(data):
        return type(data)(_structure_to_numpy(v) for v in data)
    return _to_numpy(data)


def _check_data_cardinality(data):
    sizes = {int(a.shape[0]) for a in nest.flatten(data) if a is not None and a.ndim}
    if len(sizes) > 1:
        msg = "Data cardinality is ambiguous:\n"
        parts = list(data)
        while parts and parts[-1] is None:  # Keras packs (x,), (x, y) or (x, y, w)
            parts.pop()
        for label, single in zip(["x", "y", "sample_weight"], parts):
            msg += "  {} sizes: {}\n".format(label, ", ".join(
                str(a.shape[0]) for a in nest.flatten(single) if a is not None))
        msg += "Make sure all arrays contain the same number of samples."
        raise ValueError(msg)


def train_validation_split(arrays, validation_split):
    """Splits arrays of data into train and validation subsets: the last
    ``validation_split`` fraction of the samples validates (no shuffling first).

    Raises:
      ValueError: non-array data, or too few samples to split (Keras's messages).
    """
    flat = nest.flatten(arrays)
    bad = [type(t) for t in flat if not (t is None or _is_array_like(t))]
    if bad:
        raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays, "
                         f"found following types in the input: {bad}")
    if all(t is None for t in flat):
        return arrays, arrays
    batch_dim = int(next(t for t in flat if t is not None).shape[0])
    split_at = int(math.floor(batch_dim * (1.0 - validation_split)))
    if split_at == 0 or split_at == batch_dim:
        raise ValueError(f"Training data contains {batch_dim} samples, which is not sufficient "
                         "to split it into a validation and training set as specified by "
                         f"`validation_split={validation_split}`. Either provide more data, or "
                         "a different value for the `validation_split` argument.")

    def cut(start, end):
        return nest.map_structure(lambda t: None if t is None else t[start:end], arrays)

    return cut(0, split_at), cut(split_at, batch_dim)


def _class_weight_fn(class_weight):
    class_ids = sorted(class_weight.keys())
    if class_ids != list(range(len(class_ids))):
        raise ValueError("Expected `class_weight` to be a dict with keys from 0 to one less "
                         f"than the number of classes, found {class_weight}")
    table = np.asarray([class_weight[int(c)] for c in class_ids])

    def apply(x, y, sw):
        if isinstance(y, (list, tuple, dict)):
            raise ValueError("`class_weight` is only supported for Models with a single "
                             "output.")
        y = np.asarray(y)
        if y.ndim >= 2:
            classes = (np.argmax(y, axis=-1) if y.shape[-1] > 1
                       else np.round(np.squeeze(y, axis=-1)).astype(np.int64))
        else:
            classes = np.round(y).astype(np.int64)
        cw = table[classes]
        if sw is not None:
            sw = np.asarray(sw)
            cw = cw.astype(sw.dtype)
            sw = sw.reshape(sw.shape + (1,) * (cw.ndim - sw.ndim)) * cw
        else:
            sw = cw.astype(backend.floatx()) if table.dtype.kind == "f" else cw
        return x, y, sw

    return apply


def _to_tensors(structure):
    return nest.map_structure(lambda a: None if a is None else convert_to_tensor(a), structure)


# ---- sources ---------------------------------------------------------------------------------


class _ArraySource:
    """In-memory arrays cut into batches."""

    def __init__(self, x, y, sample_weight, batch_size, shuffle, class_weight, rng):
        data = (_structure_to_numpy(x), _structure_to_numpy(y), _structure_to_numpy(sample_weight))
        _check_data_cardinality(data)
        leaves = [a for a in nest.flatten(data) if a is not None]
        self.num_samples = int(leaves[0].shape[0]) if leaves and leaves[0].ndim else 1
        self.data = data
        self.batch_size = 32 if batch_size is None else int(batch_size)
        self.shuffle = shuffle
        self.class_weight = _class_weight_fn(class_weight) if class_weight else None
        self.rng = rng
        self.size = math.ceil(self.num_samples / self.batch_size)
        self.has_partial_batch = self.num_samples % self.batch_size != 0
        self.partial_batch_size = self.num_samples % self.batch_size

    def _order(self):
        n, bs = self.num_samples, self.batch_size
        if not self.shuffle:
            return None
        if self.shuffle == "batch":
            order = np.arange(n)
            full = (n // bs) * bs
            blocks = order[:full].reshape(-1, bs)
            for row in blocks:
                self.rng.shuffle(row)
            return order
        return self.rng.permutation(n)

    def epoch(self):
        """One pass: the batches as packed data structures of Tensors."""
        order = self._order()
        x, y, sw = self.data
        for start in range(0, self.num_samples, self.batch_size):
            end = min(start + self.batch_size, self.num_samples)
            key = slice(start, end) if order is None else order[start:end]

            def take(a, key=key):
                return None if a is None else a[key]

            bx, by, bsw = (nest.map_structure(take, part) if part is not None else None
                           for part in (x, y, sw))
            if self.class_weight is not None and by is not None:
                bx, by, bsw = self.class_weight(bx, by, bsw)
            yield pack_x_y_sample_weight(*_to_tensors((bx, by, bsw)))

    def stream(self):
        while True:
            yield from self.epoch()


class _DatasetSource:
    """An ``ipu_gpu.data.Dataset`` of packed elements."""

    def __init__(self, dataset, class_weight):
        self.dataset = dataset
        self.class_weight = _class_weight_fn(class_weight) if class_weight else None
        self.size = int(dataset.cardinality().numpy())
        self.batch_size = None
        self.has_partial_batch = False

    def _elements(self, it):
        for element in it:
            if self.class_weight is not None:
                x, y, sw = unpack_x_y_sample_weight(element)
                x, y, sw = self.class_weight(x, _as_numpy(y), None if sw is None
                                             else _as_numpy(sw))
                element = pack_x_y_sample_weight(x, *_to_tensors((y, sw)))
            yield element

    def epoch(self):
        return self._elements(iter(self.dataset))

    stream = epoch


def _as_numpy(t):
    return t.numpy() if isinstance(t, Tensor) else np.asarray(t)


class _GeneratorSource:
    """A Python generator or iterator: unknown size, read once across epochs."""

    def __init__(self, generator, class_weight):
        self.generator = generator
        self.class_weight = _class_weight_fn(class_weight) if class_weight else None
        self.size = _UNKNOWN
        self.batch_size = None
        self.has_partial_batch = False

    def _elements(self):
        for element in self.generator:
            x, y, sw = unpack_x_y_sample_weight(element)
            if self.class_weight is not None:
                x, y, sw = self.class_weight(x, y, sw)
            yield pack_x_y_sample_weight(*_to_tensors((_structure_to_numpy(x),
                                                       _structure_to_numpy(y),
                                                       _structure_to_numpy(sw))))

    def epoch(self):
        return self._elements()

    stream = epoch


class _SequenceSource(_GeneratorSource):
    """A ``keras.utils.Sequence``: ``len(x)`` batches an epoch, read by index in order or in
    a ``random.shuffle``d order (Keras's ``KerasSequenceAdapter``, which also reads ``x[0]``
    once to peek at the structure), ``on_epoch_end`` after each epoch."""

    def __init__(self, sequence, shuffle, class_weight):
        super().__init__(None, class_weight)
        sequence[0]  # noqa: B018 -- Keras peeks at the first batch: its side effects happen
        self.sequence = sequence
        self.shuffle = bool(shuffle)
        self.size = len(sequence)

    def _indexed(self):
        import random

        order = list(range(len(self.sequence)))
        if self.shuffle:
            random.shuffle(order)  # Python's generator, as Keras
        for i in order:
            yield self.sequence[i]

    def epoch(self):
        self.generator = self._indexed()
        return self._elements()

    stream = epoch

    def on_epoch_end(self):
        self.sequence.on_epoch_end()


def _is_sequence(x) -> bool:
    from ..utils.data_utils import Sequence

    return isinstance(x, Sequence)


def _is_dataset(x) -> bool:
    from ...data import Dataset

    return isinstance(x, Dataset)


def _is_generator(x) -> bool:
    return (hasattr(x, "__next__") or (hasattr(x, "__iter__") and hasattr(x, "__len__")
                                       and hasattr(x, "__getitem__")
                                       and not isinstance(x, (list, tuple, dict, np.ndarray,
                                                              Tensor))))


def _shuffle_rng():
    from ...ops.random import get_seed

    seeds = get_seed(None)
    return np.random.default_rng(None if seeds[0] is None else list(seeds))


# ---- the handler -----------------------------------------------------------------------------


class DataHandler:
    """Epochs and executions over one source (see the module docstring).

    Args:
      x, y, sample_weight, batch_size, steps_per_epoch, initial_epoch, epochs, shuffle,
        class_weight: as ``Model.fit`` takes them.
      steps_per_execution: steps run between two returns to the host.
      replicas: None on the host path; the replication factor on the IPU path (Graphcore's
        data rules apply).

    Raises:
      ValueError: Keras's and Graphcore's messages for bad arguments and unusable data.
    """

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, steps_per_epoch=None,
                 initial_epoch=0, epochs=1, shuffle=False, class_weight=None,
                 steps_per_execution=1, replicas=None):
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"Expected batch_size to be positive. Received is {batch_size}.")
        if steps_per_epoch not in (None, -1) and steps_per_epoch <= 0:
            raise ValueError(f"steps_per_epoch must be positive, None or -1. Received "
                             f"{steps_per_epoch}. See `Model.fit`.")
        if initial_epoch < 0:
            raise ValueError(f"Expected initial_epoch to be non-negative. Received is "
                             f"{initial_epoch}.")
        if epochs <= 0:
            raise ValueError(f"Expected epochs to be positive. Received is {epochs}.")
        self._initial_epoch = initial_epoch
        self._epochs = epochs
        self._steps_per_epoch = steps_per_epoch
        self._steps_per_execution = int(steps_per_execution)
        self._replicas = replicas
        self._insufficient_data = False
        self._current_step = 0
        self._step_increment = self._steps_per_execution - 1

        if _is_sequence(x):
            if y is not None:
                raise ValueError("`y` argument is not supported when using "
                                 "`keras.utils.Sequence` as input.")
            if sample_weight is not None:
                raise ValueError("`sample_weight` argument is not supported when using "
                                 "`keras.utils.Sequence` as input.")
        if _is_dataset(x) or _is_generator(x):
            if batch_size is not None:
                raise ValueError("The `batch_size` argument must not be specified for the "
                                 f"given input type. Received input: {x}, batch_size: "
                                 f"{batch_size}")
            if y is not None or sample_weight is not None:
                kind = "dataset" if _is_dataset(x) else "generator"
                raise ValueError(f"`y` argument is not supported when using {kind} as input.")
            self._source = (_DatasetSource(x, class_weight) if _is_dataset(x)
                            else _SequenceSource(x, shuffle, class_weight) if _is_sequence(x)
                            else _GeneratorSource(x, class_weight))
            if replicas is not None and not _is_dataset(x):
                raise ValueError(
                    f"The provided set of data is of type `{type(x).__name__}` which is not "
                    "compatible with the IPU's requirement to know the data shape ahead of "
                    "time. Please use `tf.data.Dataset.from_generator()` to specify the shape "
                    "of your data.")
        else:
            if x is None:
                raise ValueError("Expected input data to be non-empty.")
            self._source = _ArraySource(x, y, sample_weight, batch_size,
                                        shuffle if shuffle else False, class_weight,
                                        _shuffle_rng() if shuffle else None)
            if replicas is not None and self._source.has_partial_batch:
                raise ValueError(
                    "The provided set of data has a partial batch, which could result in data "
                    "being dropped. Either adjust the `batch_size` of your model (currently "
                    f"set to {self._source.batch_size}) or pad your dataset to ensure there "
                    "are no partial batches.")
        self._inferred_steps = self._infer_steps(steps_per_epoch)
        if replicas is not None:
            self._validate_ipu()
        elif self._steps_per_execution > 1 and self._inferred_steps is None:
            raise ValueError("Could not infer the size of the data. With "
                             "`steps_per_execution > 1`, you must specify the number of steps "
                             "to run.")
        if self._inferred_steps == 0:
            raise ValueError("Expected input data to be non-empty.")

    # ---- sizes -------------------------------------------------------------------------
    def _infer_steps(self, steps):
        if steps == -1:
            _log.warning("The training loop will run indefinitely since you have set "
                         "`steps_per_epoch=-1`. Please use batch-level callbacks to save "
                         "checkpoints or log training progress, etc")
            return None
        if steps is None:
            size = self._source.size
            if size == _INFINITE:
                raise ValueError(
                    "When passing an infinitely repeating dataset, please specify a "
                    "`steps_per_epoch` value so that epoch level callbacks continue to work. "
                    "The value can be arbitrary, or a number that you think correctly defines "
                    "the size of an epoch. Epoch-level callbacks will then be called at this "
                    "interval.")
            steps = size if size >= 0 else None
        if self._replicas is None:
            return steps
        if steps is None:
            raise ValueError("Could not infer the size of the data. You must specify the "
                             "number of steps to run.")
        r = self._replicas
        if steps % r and self._source.size >= 0:
            dropped = steps % r
            _log.warning("Dataset of length %d is being evenly distributed between %d "
                         "replicas. The remaining %d batch%s will be dropped.",
                         self._source.size, r, dropped, "es" if dropped > 1 else "")
        return steps // r

    def _validate_ipu(self):
        r = self._replicas
        source = self._source
        if isinstance(source, _DatasetSource):
            for spec in nest.flatten(source.dataset.element_spec):
                shape = getattr(spec, "shape", None)
                if shape is not None and not shape.is_fully_defined():
                    raise ValueError(
                        f"The provided set of data contains a shape {shape} which is not fully "
                        "defined. Executing on IPU requires all dataset elements to have fully "
                        "defined shapes. If using batch() make sure to set "
                        "`drop_remainder=True`.")
            size = source.size
            if size >= 0:
                per_epoch = self._inferred_steps * r
                total = (per_epoch if self.should_recreate_iterator()
                         else (self._epochs - self._initial_epoch) * per_epoch)
                if total > size:
                    raise ValueError(
                        "Your input does not have enough data. Make sure that your dataset or "
                        f"generator can generate at least {total} batches (currently it can "
                        f"only generate {size} batches). You may need to use the repeat() "
                        "function when building your dataset.")
        if self._steps_per_execution > self._inferred_steps:
            _log.warning("`steps_per_execution` has been set to %d but the dataset provided%s "
                         "only contains %d batches. Using %d as `steps_per_execution`.",
                         self._steps_per_execution, " to this replica" if r > 1 else "",
                         self._inferred_steps, self._inferred_steps)
        spe = min(self._steps_per_execution, self._inferred_steps) or 1
        if self._inferred_steps == 0:
            steps = self._source.size if self._source.size >= 0 else 0
            per_replica = math.ceil(steps / r)
            raise ValueError(f"The provided dataset contains {steps} items, but all {r} "
                             f"replicas are requested to run {per_replica} steps each. Make "
                             f"sure the dataset contains at least {per_replica * r} items.")
        if self._inferred_steps % spe != 0:
            raise ValueError(f"`steps_per_execution` ({spe}) must be a divisor of the number "
                             f"of batches ({self._inferred_steps}) in the dataset provided"
                             f"{' to this replica' if r > 1 else ''}.")

    @property
    def inferred_steps(self):
        """Steps (per replica) in an epoch; None while unknown."""
        return self._inferred_steps

    @property
    def batch_size(self):
        return self._source.batch_size

    @property
    def num_samples(self):
        return getattr(self._source, "num_samples", None)

    @property
    def steps_per_execution(self) -> int:
        """This epoch's execution length (truncated to the epoch when it is shorter)."""
        if self._inferred_steps is not None:
            return max(1, min(self._steps_per_execution, self._inferred_steps))
        return self._steps_per_execution

    @property
    def step_increment(self) -> int:
        return self._step_increment

    def should_recreate_iterator(self) -> bool:
        size = self._source.size
        if isinstance(self._source, _SequenceSource):
            return True
        if isinstance(self._source, _GeneratorSource):
            return False
        if isinstance(self._source, _ArraySource):
            return self._steps_per_epoch is None
        per_epoch = self._steps_per_epoch
        if per_epoch is not None and self._replicas is not None:
            return size == per_epoch
        return per_epoch is None or size == per_epoch

    # ---- iteration ---------------------------------------------------------------------
    def enumerate_epochs(self):
        """Yields ``(epoch, iterator)``; the iterator gives packed data elements."""
        source = self._source
        iterator = None if self.should_recreate_iterator() else iter(source.stream())
        for epoch in range(self._initial_epoch, self._epochs):
            if self._insufficient_data:
                break
            if self.should_recreate_iterator():
                iterator = iter(source.epoch())
            yield epoch, iterator
            if isinstance(source, _SequenceSource):
                source.on_epoch_end()

    @contextlib.contextmanager
    def catch_stop_iteration(self):
        """Ends the epoch when the data runs out: the first epoch of data of unknown size
        learns its length; otherwise training stops with Keras's warning."""
        try:
            yield
        except StopIteration:
            if self._inferred_steps is None:
                self._inferred_steps = self._current_step
            else:
                self._insufficient_data = True
                total = (self._epochs - self._initial_epoch) * self._inferred_steps
                _log.warning("Your input ran out of data; interrupting training. Make sure "
                             "that your dataset or generator can generate at least "
                             "`steps_per_epoch * epochs` batches (in this case, %d batches). "
                             "You may need to use the repeat() function when building your "
                             "dataset.", total)

    def steps(self):
        """Yields ``(first step, steps in this execution)`` for each execution of an
        epoch."""
        self._current_step = 0
        spe = self.steps_per_execution
        while self._inferred_steps is None or self._current_step < self._inferred_steps:
            if self._insufficient_data:
                break
            n = spe
            if self._inferred_steps is not None:
                n = min(spe, self._inferred_steps - self._current_step)
            self._step_increment = n - 1
            yield self._current_step, n
            self._current_step += n

    def mark_steps_done(self, n_done: int) -> None:
        """An execution stopped early after ``n_done`` steps (its data ran out)."""
        self._current_step += n_done


def single_batch(x, y=None, sample_weight=None, class_weight=None):
    """The packed data element for ``*_on_batch``: the whole input as one batch."""
    source = _ArraySource(x, y, sample_weight, None, False, class_weight, None)
    source.batch_size = max(source.num_samples, 1)
    return next(iter(source.epoch()))
