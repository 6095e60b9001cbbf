"""shuffle: TF's buffer semantics, on indices where the input is in memory.

TF fills a buffer with the first ``buffer_size`` elements, then repeatedly outputs a uniformly
chosen buffer slot and puts the next input element into it; when the input ends, the rest of
the buffer comes out in random order. ``shuffled_positions`` runs exactly that on integers (the
indices of an index plan, or the stream positions of any other input, whose elements wait in a
dict), a block of draws at a time: within a block, a slot drawn twice gives out the element an
earlier draw put there, found with a stable sort of the draws, so the result equals the
element-by-element algorithm. Draws are doubles (one generator output each), so the order
depends only on the seed and the input, not on how the input arrives in chunks.

Seeds: the dataset takes TF's ``get_seed(seed)`` pair when it is made (so with a global seed
and no ``seed`` the orders are the same every run, and with both they depend on both; inside a
dataset function the pair is the traced one, ops/random.py); each iteration (each repetition
under ``repeat``, each ``iter``) uses the generator ``default_rng([*pair, k])`` for its k-th
iteration (k = 0 always without ``reshuffle_each_iteration``). Without any seed the pair is
drawn from the OS once per dataset. Orders are reproducible but are not TF's (TF's shuffle
draws from its Philox streams in its own way, which is not reproduced).
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from .. import errors
from ..ops import random as _random
from .dataset import UNKNOWN, Dataset, as_bool, as_int

ELEMENT_BLOCK = 16  # input elements read per block when shuffling elements (not indices)


class _Buffer:
    """A growable int64 array holding up to ``capacity`` buffered indices."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.data = np.empty(min(capacity, 1024), dtype=np.int64)
        self.size = 0

    def fill(self, values: np.ndarray) -> np.ndarray:
        """Append as many of ``values`` as fit; return the rest."""
        k = min(self.capacity - self.size, len(values))
        if k:
            need = self.size + k
            if need > len(self.data):
                grown = np.empty(min(self.capacity, max(need, 2 * len(self.data))), np.int64)
                grown[:self.size] = self.data[:self.size]
                self.data = grown
            self.data[self.size:need] = values[:k]
            self.size = need
        return values[k:]


def _exchange(buf: np.ndarray, incoming: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """For k in order: out[k] = buf[slots[k]]; buf[slots[k]] = incoming[k] (vectorised)."""
    order = np.argsort(slots, kind="stable")
    s = slots[order]
    repeat = np.empty(len(s), dtype=bool)
    repeat[0] = False
    np.equal(s[1:], s[:-1], out=repeat[1:])
    out = np.empty(len(s), dtype=np.int64)
    first = ~repeat
    out[order[first]] = buf[s[first]]
    again = np.flatnonzero(repeat)
    out[order[again]] = incoming[order[again - 1]]
    last = np.empty(len(s), dtype=bool)
    last[-1] = True
    np.not_equal(s[1:], s[:-1], out=last[:-1])
    buf[s[last]] = incoming[order[last]]
    return out


def shuffled_positions(chunks, buffer_size: int, rng: np.random.Generator):
    """TF's shuffle-buffer order over the integers that ``chunks`` yields (int64 arrays)."""
    buf = _Buffer(buffer_size)
    for chunk in chunks:
        rest = buf.fill(chunk) if buf.size < buf.capacity else chunk
        if len(rest):
            slots = (rng.random(len(rest)) * buf.size).astype(np.int64)
            np.minimum(slots, buf.size - 1, out=slots)
            yield _exchange(buf.data, rest, slots)
    if buf.size:
        yield buf.data[:buf.size][rng.permutation(buf.size)]


class Shuffle(Dataset):
    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        self._input = input_dataset
        self._inputs = (input_dataset,)
        size = as_int(buffer_size, "buffer_size", "shuffle")
        if size == UNKNOWN:
            size = 2**62  # TF: the whole dataset
        elif size <= 0:
            raise errors.InvalidArgumentError(
                "buffer_size must be greater than zero or UNKNOWN_CARDINALITY")
        self._buffer_size = size
        pair = _random.get_seed(None if seed is None else as_int(seed, "seed", "shuffle"))
        if pair[0] is None:
            self._seed = (int(np.random.SeedSequence().entropy % 2**63),)
        else:
            self._seed = pair
        self._reshuffle = (True if reshuffle_each_iteration is None else
                           as_bool(reshuffle_each_iteration, "reshuffle_each_iteration",
                                   "shuffle"))
        self._iterations = itertools.count()
        self._lock = threading.Lock()

    def _rng(self) -> np.random.Generator:
        with self._lock:
            k = next(self._iterations) if self._reshuffle else 0
        return np.random.default_rng([*self._seed, k])

    def _compute_spec(self):
        return self._input.element_spec

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _index_plan(self):
        plan = self._input._index_plan()
        if plan is None:
            return None
        size = self._buffer_size

        def chunks():
            return shuffled_positions(plan.chunks(), size, self._rng())
        return plan.with_chunks(chunks)

    def _iter_elements(self):
        rng = self._rng()
        it = self._input._elements()
        waiting: dict = {}

        def positions():
            pos = 0
            while True:
                block = list(itertools.islice(it, ELEMENT_BLOCK))
                if not block:
                    return
                for element in block:
                    waiting[pos] = element
                    pos += 1
                yield np.arange(pos - len(block), pos, dtype=np.int64)
        try:
            for out in shuffled_positions(positions(), self._buffer_size, rng):
                for p in out.tolist():
                    yield waiting.pop(p)
        finally:
            it.close()

    def _probe(self):
        return self._input._probe()
