"""``tf.data.Dataset``: a composable description of a host input pipeline.

Each transformation is a small subclass holding its input(s) and its arguments (sources.py,
batching.py, shuffle.py, sequence.py, mapping.py, prefetch.py, cache.py, readers.py); this
module holds the public methods, which only check arguments and build those objects.

A dataset answers four questions, each by a method a subclass overrides:

* ``_compute_spec()``: the ``element_spec`` (a structure of ``TensorSpec``), with TF's static
  shape rules; computed when first asked for and kept.
* ``_cardinality()``: the number of elements, or ``INFINITE`` (-1) / ``UNKNOWN`` (-2).
* ``_iter_elements()``: a generator of elements (structures of host numpy arrays).
* ``_index_plan()``: where the dataset is a reordering of an in-memory source (slices or a
  range, then shuffle/repeat/take/skip/shard/cache), an ``IndexPlan``: a stream of int64 index
  chunks into the source and a ``gather`` that fetches many rows with one fancy index. Batching
  and element iteration then gather whole blocks at once instead of element by element (the
  fast path of ``from_tensor_slices(...).shuffle(...).batch(...)``).

``_probe()`` gives a sample element cheaply (a real one where possible, without advancing any
iteration) for dataset functions whose output spec is found by calling them (see mapping.py).
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from .. import errors
from ..core import nest
from ..core.tensor import Tensor, wrap
from ..ops import random as _random
from . import structure

INFINITE = -1
UNKNOWN = -2
AUTOTUNE = -1


def as_int(value, arg: str, op: str) -> int:
    """A Python int from an int, a numpy integer or an integer scalar Tensor/array."""
    if isinstance(value, bool):
        raise TypeError(f"{op}: {arg} must be an integer, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, Tensor) or isinstance(value, np.ndarray):
        a = structure.to_numpy(value)
        if a.ndim == 0 and a.dtype.kind in "iu":
            return int(a)
    raise TypeError(f"{op}: {arg} must be an integer scalar, got {value!r}")


def as_bool(value, arg: str, op: str) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (Tensor, np.ndarray)):
        a = structure.to_numpy(value)
        if a.ndim == 0 and a.dtype == np.bool_:
            return bool(a)
    raise TypeError(f"{op}: {arg} must be a bool, got {value!r}")


class IndexPlan:
    """A dataset as index chunks into an in-memory source.

    ``gather(idx)`` returns the rows ``idx`` (an int64 array) as one element structure whose
    leaves have a leading dimension ``len(idx)``; ``chunks()`` starts one iteration of the
    dataset and yields int64 index arrays; ``row_bytes`` is the size of one element, so
    element-wise readers gather blocks of bounded size.
    """

    __slots__ = ("gather", "chunks", "row_bytes")

    def __init__(self, gather, chunks, row_bytes: int):
        self.gather = gather
        self.chunks = chunks
        self.row_bytes = row_bytes

    def with_chunks(self, chunks) -> IndexPlan:
        return IndexPlan(self.gather, chunks, self.row_bytes)


GATHER_BYTES = 1 << 20  # element-wise readers gather about this many bytes at a time


def iterate_plan(plan: IndexPlan):
    """The elements of an index plan, gathered in blocks of about GATHER_BYTES."""
    step = max(1, min(4096, GATHER_BYTES // max(1, plan.row_bytes)))
    gather = plan.gather
    for chunk in plan.chunks():
        for s in range(0, len(chunk), step):
            block = gather(chunk[s:s + step])
            flat = nest.flatten(block)
            n = len(chunk[s:s + step])
            if len(flat) == 1 and not isinstance(block, (tuple, dict)):
                a = flat[0]
                for r in range(n):
                    yield a[r, ...]
            elif type(block) is tuple and all(isinstance(a, np.ndarray) for a in block):
                for r in range(n):
                    yield tuple(a[r, ...] for a in block)
            else:
                for r in range(n):
                    yield nest.pack_sequence_as(block, [a[r, ...] for a in flat])


def _iterate_in(elements, state):
    """``elements`` advanced with ``state`` as the running iteration (in whichever thread
    asks for the next element)."""
    swap = _random.swap_iteration
    try:
        while True:
            prev = swap(state)
            try:
                element = next(elements)
            except StopIteration:
                return
            finally:
                swap(prev)
            yield element
    finally:
        prev = swap(state)
        try:
            elements.close()
        finally:
            swap(prev)


class Dataset:
    """A host input pipeline, as ``tf.data.Dataset``: build it with the static constructors
    (``from_tensor_slices``, ``from_tensors``, ``from_generator``, ``range``, ``zip``) or the
    file readers, chain transformations, and iterate it with ``for``, ``as_numpy_iterator()``
    or an infeed queue. Elements live on the host (numpy); ``for`` yields ipu_gpu Tensors.
    """

    _inputs: tuple = ()

    # ---- what subclasses provide ------------------------------------------------------------
    def _compute_spec(self):
        raise NotImplementedError

    def _cardinality(self) -> int:
        return UNKNOWN

    def _iter_elements(self):
        raise NotImplementedError

    def _index_plan(self):
        return None

    def _probe(self):
        """A sample element (the first real one where that is cheap, else zeros)."""
        return structure.synthesize(self.element_spec)

    # ---- the common machinery ---------------------------------------------------------------
    _calls_functions = False  # the dataset functions' classes (mapping.py) say True

    def _elements(self):
        """A fresh generator of this dataset's elements (one iteration). Started outside a
        running iteration, it is one (TF: an iterator): the random ops of the dataset
        functions it calls draw from kernels of its own (ops/random.py ``IterationSeeds``)."""
        if _random.current_iteration() is None and self._has_functions():
            state = _random.IterationSeeds()
            with _random.in_iteration(state):
                return _iterate_in(self._own_elements(), state)
        return self._own_elements()

    def _own_elements(self):
        plan = self._index_plan()
        if plan is not None:
            return iterate_plan(plan)
        return self._iter_elements()

    def _has_functions(self) -> bool:
        """Whether iterating calls a dataset function (this dataset's or an input's)."""
        found = self.__dict__.get("_functions_cache")
        if found is None:
            found = self._calls_functions or any(ds._has_functions() for ds in self._inputs)
            self.__dict__["_functions_cache"] = found
        return found

    @property
    def element_spec(self):
        """The type of each element: a structure of ``TensorSpec`` (TF's static shapes)."""
        spec = self.__dict__.get("_spec_cache")
        if spec is None:
            spec = self._compute_spec()
            self.__dict__["_spec_cache"] = spec
        return spec

    def _spec_or_none(self):
        """``element_spec``, or None when it can only be found by calling a dataset function
        that fails on the sample element (then checks that need it wait for iteration)."""
        try:
            return self.element_spec
        except Exception:
            return None

    def cardinality(self) -> Tensor:
        """The number of elements as an int64 scalar Tensor; ``tf.data.INFINITE_CARDINALITY``
        (-1) or ``tf.data.UNKNOWN_CARDINALITY`` (-2) where it is infinite or not known without
        iterating (after ``filter``, ``flat_map``, file readers, generators)."""
        return wrap(np.array(self._cardinality(), dtype=np.int64))

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True  # as TF: a dataset is truthy even when it is empty

    def __iter__(self):
        from .iterators import OwnedIterator

        return OwnedIterator(self)

    def as_numpy_iterator(self):
        """An iterator of elements as numpy values (0-d components as numpy scalars, strings as
        ``bytes``), as TF's ``as_numpy_iterator``. Each call starts a new iteration."""
        from .iterators import NumpyIterator

        return NumpyIterator(self)

    def as_numpy_elements(self):
        """A generator of elements as numpy arrays (0-d arrays kept): the host-side interface
        an infeed reads (same order and values as ``as_numpy_iterator``)."""
        return self._elements()

    # ---- options ----------------------------------------------------------------------------
    def options(self):
        """The ``tf.data.Options`` of this dataset: its inputs' options merged with those given
        by ``with_options`` (later ones win)."""
        from .options import Options

        own = self.__dict__.get("_own_options")
        merged = Options()
        for ds in self._inputs:
            merged = merged.merge(ds.options())
        if own is not None:
            merged = merged.merge(own)
        return merged

    def with_options(self, options, name=None) -> Dataset:
        """This dataset with ``options`` merged into its options. The options are recorded
        and returned by ``options()``; ipu_gpu's pipelines are always deterministic, so they
        change no result."""
        from .options import Options
        from .sequence import _Passthrough

        if not isinstance(options, Options):
            raise TypeError(f"with_options: options must be a tf.data.Options, got "
                            f"{type(options).__name__}")
        ds = _Passthrough(self)
        ds._own_options = options
        return ds

    # ---- static constructors ----------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors, name=None) -> Dataset:
        """Elements are slices of ``tensors`` along their first dimension (every component must
        have the same first dimension). The arrays are copied when the dataset is made, as TF
        embeds them."""
        from .iterators import fed_source
        from .sources import TensorSlices

        fed = fed_source(tensors, slices=True)  # TF1: placeholders fed to an initializer
        return TensorSlices(tensors) if fed is None else fed

    @staticmethod
    def from_tensors(tensors, name=None) -> Dataset:
        """A dataset of one element, ``tensors``."""
        from .iterators import fed_source
        from .sources import Tensors

        fed = fed_source(tensors, slices=False)  # TF1: placeholders fed to an initializer
        return Tensors(tensors) if fed is None else fed

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None) -> Dataset:
        """Elements produced by calling ``generator(*args)`` (once per iteration), checked
        against ``output_signature`` (a structure of TensorSpec) or the older
        ``output_types``/``output_shapes``. A yielded value of the wrong structure, type or shape
        raises InvalidArgumentError when it is read, as TF."""
        from .sources import Generator

        return Generator(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None) -> Dataset:
        """The names of the files matching the glob pattern(s), sorted, then shuffled unless
        ``shuffle=False`` (see ``data/list_files.py``)."""
        from .list_files import list_files

        return list_files(file_pattern, shuffle, seed)

    @staticmethod
    def range(*args, output_type=np.int64, name=None) -> Dataset:
        """``range(stop)``, ``range(start, stop[, step])`` as int64 scalars (or output_type)."""
        from .sources import Range

        return Range(args, output_type)

    @staticmethod
    def zip(*args, datasets=None, name=None) -> Dataset:
        """Elements are structures (tuples, dicts) of the elements of ``datasets`` (or of the
        positional datasets), ending with the shortest."""
        from .sources import Zip

        if datasets is not None and args:
            raise TypeError("zip: both `*args` and `datasets` cannot be set")
        if datasets is None:
            if not args:
                raise TypeError("zip: must pass at least one dataset")
            datasets = args[0] if len(args) == 1 else tuple(args)
        return Zip(datasets)

    # ---- transformations --------------------------------------------------------------------
    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None) -> Dataset:
        """Stacks ``batch_size`` consecutive elements; a shorter last batch is kept unless
        ``drop_remainder``. The batch dimension of ``element_spec`` is ``batch_size`` with
        ``drop_remainder=True`` and None otherwise."""
        from .batching import Batch

        return Batch(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None) -> Dataset:
        """Like ``batch``, padding each component to ``padded_shapes`` (None/-1 dimensions, or
        all when ``padded_shapes`` is None: the largest in the batch) with ``padding_values``
        (default 0, or b"" for strings)."""
        from .batching import PaddedBatch

        return PaddedBatch(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def unbatch(self, name=None) -> Dataset:
        """Splits each element along its first dimension into consecutive elements."""
        from .batching import Unbatch

        return Unbatch(self)

    def rebatch(self, batch_size, drop_remainder=False, name=None) -> Dataset:
        """``unbatch().batch(batch_size, drop_remainder)``."""
        return self.unbatch().batch(batch_size, drop_remainder)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None,
                name=None) -> Dataset:
        """Randomly shuffles elements with a buffer of ``buffer_size`` elements, as TF: the
        buffer is filled first, each output is drawn uniformly from it and replaced by the next
        input element. With a ``seed`` the order is reproducible (the first iteration of two
        datasets built alike is the same; it is not TF's order), and with a global seed
        (``tf.random.set_seed``) and no ``seed`` the orders are the same every run, as TF;
        ``reshuffle_each_iteration`` (default True) draws a new order for each iteration (each
        ``iter``, each repetition of ``repeat``)."""
        from .shuffle import Shuffle

        return Shuffle(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None, name=None) -> Dataset:
        """Repeats the dataset ``count`` times (None or -1: forever)."""
        from .sequence import Repeat

        return Repeat(self, count)

    def take(self, count, name=None) -> Dataset:
        """The first ``count`` elements (all of them when ``count`` is -1)."""
        from .sequence import Take

        return Take(self, count)

    def skip(self, count, name=None) -> Dataset:
        """All but the first ``count`` elements (none when ``count`` is -1)."""
        from .sequence import Skip

        return Skip(self, count)

    def shard(self, num_shards, index, name=None) -> Dataset:
        """Every ``num_shards``-th element, starting at ``index``."""
        from .sequence import Shard

        return Shard(self, num_shards, index)

    def concatenate(self, dataset, name=None) -> Dataset:
        """This dataset's elements, then ``dataset``'s (same structure and dtypes)."""
        from .sequence import Concatenate

        return Concatenate(self, dataset)

    def enumerate(self, start=0, name=None) -> Dataset:
        """Pairs ``(i, element)`` with ``i`` an int64 counter from ``start``."""
        from .sequence import Enumerate

        return Enumerate(self, start)

    def prefetch(self, buffer_size, name=None) -> Dataset:
        """Produces elements on a background thread, up to ``buffer_size`` ahead
        (``tf.data.AUTOTUNE``: a few), so the pipeline overlaps with the consumer's work. The
        thread stops when the iterator is dropped or exhausted."""
        from .prefetch import Prefetch

        return Prefetch(self, buffer_size)

    def cache(self, filename="", name=None) -> Dataset:
        """Keeps the elements of the first complete iteration (in memory, or in files starting
        with ``filename``) and replays them afterwards. A partial first iteration is dropped."""
        from .cache import Cache

        return Cache(self, filename)

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None) -> Dataset:
        """``map_func`` applied to each element (a tuple element is unpacked into arguments).
        With ``num_parallel_calls`` it runs on a pool of threads; the order stays that of the
        input. See mapping.py for how the output spec is found."""
        from .mapping import Map

        return Map(self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate, name=None) -> Dataset:
        """The elements for which ``predicate`` returns True (a bool scalar)."""
        from .mapping import Filter

        return Filter(self, predicate)

    def flat_map(self, map_func, name=None) -> Dataset:
        """The elements of the datasets ``map_func`` returns for each element, in order."""
        from .mapping import Interleave

        return Interleave(self, map_func, 1, 1, op="flat_map")

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None) -> Dataset:
        """Interleaves the datasets ``map_func`` returns: ``cycle_length`` of them open at a
        time (default: the number of CPU cores, as TF), ``block_length`` elements (default 1)
        from each in turn, in TF's order. ``num_parallel_calls`` is accepted; the datasets are
        read on the calling thread."""
        from .mapping import Interleave

        return Interleave(self, map_func, cycle_length, block_length, op="interleave",
                          num_parallel_calls=num_parallel_calls)

    def apply(self, transformation_func) -> Dataset:
        """``transformation_func(self)``, which must return a Dataset."""
        ds = transformation_func(self)
        if not isinstance(ds, Dataset):
            raise TypeError("apply: transformation_func must return a Dataset, got "
                            f"{type(ds).__name__}")
        return ds

    def reduce(self, initial_state, reduce_func):
        """Folds the elements into ``initial_state`` with ``reduce_func(state, element)``;
        returns the final state as Tensors. The state's structure and dtypes must not change."""
        state = structure.normalize(initial_state, "reduce")
        key, seed = _random.function_key(), _random.traced_global_seed()
        with _random.in_iteration(_random.current_iteration() or _random.IterationSeeds()):
            for element in self._elements():
                args = structure.host_tensors(element)
                with _random.FunctionCall(key, seed):
                    new = reduce_func(structure.host_tensors(state), args)
                state = self._reduced(state, new)
        return structure.to_tensors(state)

    @staticmethod
    def _reduced(state, new):
        """The new state of ``reduce``, checked against the old one."""
        new = structure.normalize_output(new, "reduce")
        if not structure.same_structure(state, new):
            raise TypeError(f"reduce: reduce_func must return a state of the structure of "
                            f"initial_state {structure.specs_of(state)}, got "
                            f"{structure.specs_of(new)}")
        for a, b in zip(nest.flatten(state), nest.flatten(new)):
            if a.dtype != b.dtype:
                raise TypeError(f"reduce: reduce_func must keep the state's dtypes, got "
                                f"{b.dtype} for a component of dtype {a.dtype}")
        return new

    def get_single_element(self, name=None):
        """The only element of the dataset (InvalidArgumentError if it has none or several)."""
        it = self._elements()
        try:
            first = next(it)
        except StopIteration:
            raise errors.InvalidArgumentError("Dataset was empty.") from None
        try:
            next(it)
        except StopIteration:
            return structure.to_tensors(first)
        finally:
            it.close()
        raise errors.InvalidArgumentError("Dataset had more than one element.")

    # ---- TF1 ----------------------------------------------------------------------------
    def make_one_shot_iterator(self):
        """A TF1 one-shot iterator (``get_next()``), started at once."""
        from .iterators import OneShotIterator

        return OneShotIterator(self)

    def make_initializable_iterator(self, shared_name=None):
        """A TF1 iterator that starts (again) when its ``initializer`` runs."""
        from .iterators import InitializableIterator

        return InitializableIterator(self)

    @property
    def output_types(self):
        """TF1: the dtypes of the element components (a structure like element_spec)."""
        return nest.map_structure(lambda s: s.dtype, self.element_spec)

    @property
    def output_shapes(self):
        """TF1: the static shapes of the element components."""
        return nest.map_structure(lambda s: s.shape, self.element_spec)

    @property
    def output_classes(self):
        return nest.map_structure(lambda s: Tensor, self.element_spec)

    # ---- the rest ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        spec = self._spec_or_none()
        return f"<{type(self).__name__}Dataset element_spec={spec}>"

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"ipu_gpu does not emulate tf.data.Dataset.{name}")


# Each Dataset draws its default random seed from here when no seed is given.
_seed_counter = itertools.count()


def fresh_entropy() -> int:
    return int.from_bytes(os.urandom(8), "little") ^ next(_seed_counter)
