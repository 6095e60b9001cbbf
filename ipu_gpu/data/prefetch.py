"""prefetch: the input is read on a background thread, up to ``buffer_size`` elements ahead.

Each iteration starts its own daemon thread. The consumer side is a generator; when it is
closed or dropped (the iterator goes out of use, the loop breaks, the input ends) it tells the
thread to stop and wakes it, and the thread closes its input (so nested prefetch threads and
open files end too) and exits. A thread busy computing an element exits once that element is
done. An exception raised by the input is re-raised in the consumer.
"""

from __future__ import annotations

import collections
import threading

from .. import errors
from ..ops import random as _random
from .dataset import AUTOTUNE, Dataset, as_int

AUTOTUNE_DEPTH = 8  # elements buffered for prefetch(AUTOTUNE)

_END = object()


class _Channel:
    """A bounded buffer between one producer thread and one consumer."""

    def __init__(self, depth: int):
        self.depth = depth
        self.items = collections.deque()
        self.cond = threading.Condition(threading.Lock())
        self.stopped = False

    def put(self, item) -> bool:
        """Append ``item``, waiting for room; False once the consumer has stopped."""
        with self.cond:
            while len(self.items) >= self.depth and not self.stopped:
                self.cond.wait()
            if self.stopped:
                return False
            self.items.append(item)
            self.cond.notify_all()
            return True

    def get(self):
        with self.cond:
            while not self.items:
                self.cond.wait()
            item = self.items.popleft()
            self.cond.notify_all()
            return item

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.items.clear()
            self.cond.notify_all()


def _produce(it, channel: _Channel, state) -> None:
    with _random.in_iteration(state):  # the consumer's iteration (dataset functions' seeds)
        try:
            for element in it:
                if not channel.put((element, None)):
                    return
            channel.put((_END, None))
        except BaseException as e:  # handed to the consumer, raised there
            channel.put((_END, e))
        finally:
            it.close()


class Prefetch(Dataset):
    def __init__(self, input_dataset, buffer_size):
        self._input = input_dataset
        self._inputs = (input_dataset,)
        n = as_int(buffer_size, "buffer_size", "prefetch")
        if n < 0 and n != AUTOTUNE:
            raise errors.InvalidArgumentError(
                "buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning")
        self._depth = AUTOTUNE_DEPTH if n == AUTOTUNE else n

    def _compute_spec(self):
        return self._input.element_spec

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _iter_elements(self):
        if self._depth == 0:
            yield from self._input._elements()
            return
        channel = _Channel(self._depth)
        thread = threading.Thread(target=_produce, args=(self._input._elements(), channel,
                                                         _random.current_iteration()),
                                  name="ipu_gpu.data.prefetch", daemon=True)
        thread.start()
        try:
            while True:
                element, error = channel.get()
                if element is _END:
                    if error is not None:
                        raise error
                    return
                yield element
        finally:
            channel.stop()

    def _probe(self):
        return self._input._probe()
