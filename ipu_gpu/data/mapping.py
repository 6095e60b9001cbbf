"""Dataset functions: map, filter, flat_map and interleave.

Functions are called eagerly on host Tensors, once per element (TF traces them once into a
graph: Python side effects inside them happen per element here, and a few times more while the
output spec is found, see below). A tuple element is unpacked into positional arguments.

Output spec of ``map``: TF infers it by tracing. Here ``map_func`` is called on a sample element
of the input (``_probe``: its first element where that is cheap, else zeros of its spec), which
gives the output structure, dtypes and shapes; where the input spec has unknown dimensions, the
function is called once more on the sample grown by one along each of them, and every output
dimension that changed is unknown (None). So ``batch(32).map(f)`` keeps the unknown batch
dimension, as in TF. Output dimensions that depend on values rather than on input shapes come
out as the sample's (TF would say None).

Random ops in the functions are seeded as in TF's traced functions (ops/random.py): each
dataset function is named when the dataset is made, with the global seed of that time; each
call is a ``FunctionCall`` in which the k-th unseeded random op gets op seed k, and the ops'
kernels belong to the running iteration (dataset.py ``_elements``). Calls that find the output
spec stand for TF's tracing: they draw from kernels of their own and advance no Generator. A
parallel map makes its calls' draws in element order, so it gives the sequential numbers.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import errors
from ..core import nest
from ..core.spec import TensorSpec
from ..ops import random as _random
from . import structure
from .dataset import AUTOTUNE, UNKNOWN, Dataset, as_int

PARALLEL_CHUNK = 16  # elements per task of a parallel map


def _parallel_calls(value, op: str):
    if value is None:
        return None
    n = as_int(value, "num_parallel_calls", op)
    if n != AUTOTUNE and n <= 0:
        raise errors.InvalidArgumentError("num_parallel_calls must be greater than zero.")
    return n


def _grow(element, spec):
    """``element`` grown by one along every dimension ``spec`` leaves unknown (a component of
    unknown rank gets a new leading dimension of 2)."""
    def grow(a, s):
        if s.shape.rank is None:
            return np.repeat(a[None], 2, axis=0)
        for axis, d in enumerate(s.shape):
            if d is None and axis < a.ndim:
                extra = a.take([-1], axis=axis) if a.shape[axis] else np.zeros(
                    a.shape[:axis] + (1,) + a.shape[axis + 1:], a.dtype)
                a = np.concatenate([a, extra], axis=axis)
        return a
    flat = [grow(a, s) for a, s in zip(nest.flatten(element), nest.flatten(spec))]
    return nest.pack_sequence_as(element, flat)


def _relaxed(spec1, spec2):
    def relax(a: TensorSpec, b: TensorSpec) -> TensorSpec:
        if a.shape.rank != b.shape.rank:
            return TensorSpec(None, a.dtype)
        return TensorSpec(a.shape.most_specific_compatible_shape(b.shape), a.dtype)
    f1, f2 = nest.flatten(spec1), nest.flatten(spec2)
    return nest.pack_sequence_as(spec1, [relax(a, b) for a, b in zip(f1, f2)])


def _first_element(ds: Dataset):
    it = ds._elements()
    try:
        return next(it)
    finally:
        it.close()


@contextlib.contextmanager
def _probing():
    """Context manager for calls that find an output spec (TF's tracing): their random
    draws go to kernels of their own and advance no Generator, and while a TF1 graph is
    built they run at once (as the calls a Session's run makes), not recorded."""
    core = sys.modules.get("ipu_gpu.graph.core")
    with _random.in_iteration(_random.IterationSeeds(probe=True)):
        if core is None or not core.building():
            yield
            return
        with core.eager_scope():
            yield


class _Function(Dataset):
    """A dataset calling a user function on its input's elements. The function is named as
    TF traces it when the dataset is made (its random ops' seeds, see ops/random.py)."""

    op = "map"
    _calls_functions = True

    def _set_function(self, fn) -> None:
        self._fn = fn
        self._key = _random.function_key()
        self._seed = _random.traced_global_seed()

    def _apply(self, element):
        raise NotImplementedError

    def _call(self, element, state=None, order=None, index=0):
        """The function applied to ``element`` as one call of the traced function."""
        with _random.FunctionCall(self._key, self._seed, state, order, index):
            return self._apply(element)

    def _caller(self, state):
        """A function calling the traced function on elements, one after another."""
        call, apply = _random.FunctionCall(self._key, self._seed, state), self._apply

        def run(element):
            with call:
                return apply(element)
        return run

    def _sample_output(self):
        """(input sample, output for it): the probe, or the first real element when the
        function fails on a probe made of zeros."""
        cached = self.__dict__.get("_sample")
        if cached is not None:
            return cached
        with _probing():
            sample = self._input._probe()
            try:
                out = self._call(sample)
            except Exception as e:
                try:
                    sample = _first_element(self._input)
                except Exception:
                    raise e from None
                out = self._call(sample)
        self.__dict__["_sample"] = (sample, out)
        return sample, out


class Map(_Function):
    def __init__(self, input_dataset, map_func, num_parallel_calls, deterministic):
        if not callable(map_func):
            raise TypeError(f"map: map_func must be callable, got {type(map_func).__name__}")
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._set_function(map_func)
        self._parallel = _parallel_calls(num_parallel_calls, "map")

    def _apply(self, element):
        return structure.normalize_output(structure.call_function(self._fn, element), "map")

    def _compute_spec(self):
        in_spec = self._input.element_spec
        sample, out = self._sample_output()
        spec = structure.specs_of(out)
        unknown = any(s.shape.rank is None or None in s.shape for s in nest.flatten(in_spec))
        if unknown:
            try:
                with _probing():
                    out2 = self._call(_grow(sample, in_spec))
            except Exception:  # the function refuses the grown sample: keep the sample's shapes
                out2 = None
            if out2 is not None and structure.same_structure(out, out2):
                spec = _relaxed(spec, structure.specs_of(out2))
        return spec

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _iter_elements(self):
        state = _random.current_iteration() or _random.IterationSeeds()
        it = self._input._elements()
        # AUTOTUNE runs inline: map functions here are mostly GIL-bound Python, and threads
        # only slowed them (an MNIST cast-and-scale map: 21-28k elements/s inline, 11-14k on
        # 2 threads of 2 cores); a trailing prefetch already overlaps the pipeline with the
        # consumer. An explicit count > 1 gets that many threads, for functions that release
        # the GIL (large numpy ops, I/O, decoding).
        if self._parallel in (None, 1, AUTOTUNE):
            try:
                call = self._caller(state)
                for element in it:
                    yield call(element)
            finally:
                it.close()
            return
        # Threads share the GIL: they pay off where map_func releases it (numpy on large
        # arrays, I/O, decoding). Tasks are runs of PARALLEL_CHUNK elements, so the pool's
        # per-task cost stays small next to the work; results come back in input order.
        # Random draws happen in input order (CallOrder), so results equal the inline ones.
        workers = min(self._parallel, 4 * (os.cpu_count() or 1))
        pool = ThreadPoolExecutor(workers, thread_name_prefix="ipu_gpu.data.map")
        window = collections.deque()
        call = self._call
        order = _random.CallOrder()

        def run(chunk, first):
            try:
                return [call(e, state, order, i) for i, e in enumerate(chunk, first)]
            except BaseException:
                order.end_all(first, first + len(chunk))  # the calls after it never run
                raise
        submitted = 0
        try:
            while True:
                chunk = list(itertools.islice(it, PARALLEL_CHUNK))
                if chunk:
                    window.append(pool.submit(run, chunk, submitted))
                    submitted += len(chunk)
                if len(window) > workers or (not chunk and window):
                    yield from window.popleft().result()
                if not chunk and not window:
                    return
        finally:
            for f in window:
                f.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            it.close()

    def _probe(self):
        return self._sample_output()[1]


class Filter(_Function):
    op = "filter"

    def __init__(self, input_dataset, predicate):
        if not callable(predicate):
            raise TypeError(f"filter: predicate must be callable, got "
                            f"{type(predicate).__name__}")
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._set_function(predicate)

    def _apply(self, element):
        return structure.call_function(self._fn, element)

    def _keep(self, call, element) -> bool:
        r = call(element)
        a = structure.to_numpy(r, "filter") if not isinstance(r, (bool, np.bool_)) else None
        if a is not None and (a.dtype != np.bool_ or a.ndim != 0):
            raise ValueError("Invalid `predicate`. `predicate` must return a `tf.bool` scalar "
                             f"tensor, but its return type is {structure.spec_of(a)}.")
        return bool(r if a is None else a)

    def _compute_spec(self):
        return self._input.element_spec

    def _iter_elements(self):
        state = _random.current_iteration() or _random.IterationSeeds()
        it = self._input._elements()
        try:
            keep, call = self._keep, self._caller(state)
            for element in it:
                if keep(call, element):
                    yield element
        finally:
            it.close()

    def _probe(self):
        return self._input._probe()


class Interleave(_Function):
    def __init__(self, input_dataset, map_func, cycle_length, block_length, op,
                 num_parallel_calls=None):
        if not callable(map_func):
            raise TypeError(f"{op}: map_func must be callable, got {type(map_func).__name__}")
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._set_function(map_func)
        self.op = op
        if cycle_length is None or cycle_length == AUTOTUNE:
            cycle_length = os.cpu_count() or 1
        self._cycle = as_int(cycle_length, "cycle_length", op)
        if self._cycle <= 0:
            raise errors.InvalidArgumentError("cycle_length must be greater than zero.")
        self._block = 1 if block_length is None else as_int(block_length, "block_length", op)
        if self._block <= 0:
            raise errors.InvalidArgumentError("block_length must be greater than zero.")
        _parallel_calls(num_parallel_calls, op)

    def _apply(self, element):
        ds = structure.call_function(self._fn, element)
        if not isinstance(ds, Dataset):
            raise TypeError(f"{self.op}: map_func must return a Dataset, got "
                            f"{type(ds).__name__}")
        return ds

    def _compute_spec(self):
        return self._sample_output()[1].element_spec

    def _cardinality(self) -> int:
        return UNKNOWN

    def _iter_elements(self):
        # TF's InterleaveDatasetOp: slots are refilled from the input when the cycle comes
        # back to them; an exhausted dataset moves the cycle on.
        state = _random.current_iteration() or _random.IterationSeeds()
        it = self._input._elements()
        cycle, block = self._cycle, self._block
        current = [None] * cycle
        index = block_index = num_open = 0
        end_of_input = False
        try:
            while not end_of_input or num_open:
                if current[index] is not None:
                    try:
                        element = next(current[index])
                    except StopIteration:
                        current[index] = None
                        num_open -= 1
                        block_index, index = 0, (index + 1) % cycle
                        continue
                    block_index += 1
                    if block_index == block:
                        block_index, index = 0, (index + 1) % cycle
                    yield element
                elif not end_of_input:
                    try:
                        args = next(it)
                    except StopIteration:
                        end_of_input = True
                        continue
                    with _random.in_iteration(state):
                        current[index] = self._call(args, state)._elements()
                    num_open += 1
                else:
                    block_index, index = 0, (index + 1) % cycle
        finally:
            for c in current:
                if c is not None:
                    c.close()
            it.close()

    def _probe(self):
        return self._sample_output()[1]._probe()


__all__ = ["Filter", "Interleave", "Map"]
