"""``tensorflow.python.ipu.dataset_benchmark``: measure how fast a dataset or an infeed queue
delivers elements.

Both functions return a JSON string ``{"epochs": [{...}, ...]}`` with one record per epoch:
``elements_processed``, ``total_bytes_processed``, ``time_elapsed`` (seconds),
``elements_per_second`` and ``bandwidth`` (GB/s, 1e9 bytes).

* ``dataset_benchmark`` reads the dataset in the calling thread, as the SDK's host-side
  benchmark does: no prefetching and no device copy; with ``do_memcpy`` every element is
  copied into a preallocated buffer (the Poplar-managed buffer of the SDK).
* ``infeed_benchmark`` reads through the queue's real feed path: the prefetch thread reads
  the dataset and copies every element onto the device ``prefetch_depth`` elements ahead, and
  the benchmark dequeues as replica 0 of 1. With ``do_memcpy`` the dequeued element is also
  copied into a preallocated buffer on the device. Prefetching overlaps reading and copying
  with whatever the consumer does (or did before the benchmark started, once the queue's
  ``initializer`` ran): an infeed can beat ``dataset_benchmark`` on the same dataset.
  Under synthetic infeed data (``TF_POPLAR_FLAGS=--use_synthetic_data``,
  ``--synthetic_data_categories=infeed`` or ``--null_data_feed``, read when the benchmark
  starts, or the mode the queue already started in) no host data would reach the queue, so
  the queue's dataset is benchmarked on the host as ``dataset_benchmark`` does, which is what
  the SDK's ``infeed_benchmark`` always does; the queue itself is left untouched.

Both accept every dataset ``IPUInfeedQueue`` accepts (a ``tf.data.Dataset``, a torch
``DataLoader``, a re-iterable of nested arrays); TypeError for anything else. A dataset that
ends before ``number_of_epochs * elements_per_epochs`` elements raises
``ipu_gpu.errors.OutOfRangeError`` (repeat the dataset). ``apply_options`` is accepted and has
no effect (tf.data options are the dataset's own).
"""

from __future__ import annotations

import json
import time

import numpy as np

from ..core import backend as _backend
from ..core import nest as _nest
from ..errors import OutOfRangeError
from ..emulation import poplar_flags as _poplar_flags
from .ipu_infeed_queue import IPUInfeedQueue, _Source, _synthetic_mode

__all__ = ["dataset_benchmark", "infeed_benchmark"]


def _check_counts(fn: str, number_of_epochs, elements_per_epochs) -> None:
    for name, v in (("number_of_epochs", number_of_epochs),
                    ("elements_per_epochs", elements_per_epochs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{fn}: {name} must be an int, got {v!r}")
        if v < 1:
            raise ValueError(f"{fn}: {name} must be at least 1, got {v}")


def _record(n: int, nbytes: int, seconds: float) -> dict:
    seconds = max(seconds, 1e-12)
    return {"elements_processed": n, "total_bytes_processed": nbytes,
            "time_elapsed": seconds, "elements_per_second": n / seconds,
            "bandwidth": nbytes / seconds / 1e9}


def _report(fn: str, epochs: list, print_stats: bool) -> str:
    text = json.dumps({"epochs": epochs})
    if print_stats:
        for i, e in enumerate(epochs):
            print(f"{fn}: epoch {i + 1}/{len(epochs)}: {e['elements_processed']} elements, "
                  f"{e['total_bytes_processed']} bytes in {e['time_elapsed']:.6f} s, "
                  f"{e['elements_per_second']:.1f} elements/s, {e['bandwidth']:.6f} GB/s")
    return text


class _Memcpy:
    """Copies each flat element into buffers allocated once (on the element's device)."""

    def __init__(self):
        self.buffers = None

    def __call__(self, flat) -> None:
        if self.buffers is None:
            self.buffers = [_backend.xp_of(a).empty(a.shape, a.dtype) for a in flat]
        for b, a in zip(self.buffers, flat):
            xp = _backend.xp_of(b)
            xp.copyto(b, a)


def _sync(memcpy) -> None:
    """Wait for device copies in flight (GPU), so an epoch's time includes them."""
    if memcpy is not None and memcpy.buffers and _backend.is_cupy_array(memcpy.buffers[0]):
        _backend.xp_of(memcpy.buffers[0]).cuda.get_current_stream().synchronize()


def _without_host_data(queue) -> bool:
    """Whether no host data reaches ``queue``: the mode it started in, else the flags now."""
    if queue._prefetcher is not None or queue._synthetic is not None:
        return queue._synthetic is not None
    return _synthetic_mode(_poplar_flags.parse()) is not None


def _exhausted(fn: str, taken: int, wanted: int) -> OutOfRangeError:
    return OutOfRangeError(f"End of sequence: {fn}: the dataset ended after {taken} elements, "
                           f"but {wanted} were asked for (number_of_epochs x "
                           "elements_per_epochs); repeat the dataset")


def dataset_benchmark(dataset, number_of_epochs, elements_per_epochs, print_stats=True,
                      apply_options=True, do_memcpy=True):
    """Allows the user to benchmark performance of a dataset.

    Args:
      dataset: a ``tf.data.Dataset``, a torch ``DataLoader`` or a re-iterable of nested
        arrays.
      number_of_epochs: The number of epochs this dataset will be run for.
      elements_per_epochs: The number of elements there are in each epoch.
      print_stats: Whether to print statistics about the performance to the console.
      apply_options: Accepted; no effect.
      do_memcpy: Whether to copy every element into a preallocated buffer, which simulates
        a dataset buffer being copied to a Poplar managed buffer.

    Returns:
      A JSON string with performance statistics, one record per epoch: elements_processed,
      total_bytes_processed, time_elapsed, elements_per_second, bandwidth (GB/s).

    Raises:
      TypeError: if dataset is not a dataset.
      ValueError: if number_of_epochs or elements_per_epochs is less than 1.
    """
    fn = "dataset_benchmark"
    if isinstance(dataset, IPUInfeedQueue):
        raise TypeError(f"{fn}: dataset must be a dataset, got an IPUInfeedQueue (use "
                        "infeed_benchmark)")
    _check_counts(fn, number_of_epochs, elements_per_epochs)
    del apply_options
    return _host_benchmark(fn, _Source(dataset, fn), number_of_epochs, elements_per_epochs,
                           print_stats, do_memcpy)


def _host_benchmark(fn, source, number_of_epochs, elements_per_epochs, print_stats,
                    do_memcpy) -> str:
    """Read ``source`` in the calling thread for the timed epochs."""
    it = source.flat_elements()

    def next_flat(taken):
        flat = next(it, None)
        if flat is None:
            raise _exhausted(fn, taken, number_of_epochs * elements_per_epochs)
        source.spec.check(flat, taken)
        return flat

    epochs = _timed_epochs(next_flat, number_of_epochs, elements_per_epochs, do_memcpy)
    return _report(fn, epochs, print_stats)


def _timed_epochs(next_flat, number_of_epochs, elements_per_epochs, do_memcpy) -> list:
    """Time ``number_of_epochs`` epochs of ``next_flat(taken)`` calls (each returning the
    flat arrays of one element), copying each element when ``do_memcpy``."""
    memcpy = _Memcpy() if do_memcpy else None
    epochs, taken = [], 0
    for _ in range(number_of_epochs):
        nbytes = 0
        t0 = time.perf_counter()
        for _ in range(elements_per_epochs):
            flat = next_flat(taken)
            taken += 1
            if memcpy is not None:
                memcpy(flat)
            nbytes += sum(int(a.nbytes) for a in flat)
        _sync(memcpy)
        epochs.append(_record(elements_per_epochs, nbytes, time.perf_counter() - t0))
    return epochs


def infeed_benchmark(infeed_queue, number_of_epochs, elements_per_epochs, print_stats=True,
                     do_memcpy=True):
    """Allows the user to benchmark performance of an ``ipu.ipu_infeed_queue.IPUInfeedQueue``.

    The queue is read through its feed path (prefetch thread, device copies) as replica 0
    of 1, so the elements benchmarked are taken off the queue.

    Args:
      infeed_queue: An instance of ``IPUInfeedQueue`` which will be benchmarked.
      number_of_epochs: The number of epochs this infeed queue will be run for.
      elements_per_epochs: The number of elements there are in each epoch.
      print_stats: Whether to print statistics about the performance to the console.
      do_memcpy: Whether to copy every dequeued element into a preallocated device buffer,
        which simulates the copy to a Poplar managed buffer.

    Returns:
      A JSON string with performance statistics, one record per epoch: elements_processed,
      total_bytes_processed, time_elapsed, elements_per_second, bandwidth (GB/s).

    Raises:
      TypeError: if infeed_queue is not an instance of IPUInfeedQueue.
      ValueError: if number_of_epochs or elements_per_epochs is less than 1.
    """
    fn = "infeed_benchmark"
    if not isinstance(infeed_queue, IPUInfeedQueue):
        raise TypeError(f"{fn}: infeed_queue must be an IPUInfeedQueue, got "
                        f"{type(infeed_queue).__name__}")
    _check_counts(fn, number_of_epochs, elements_per_epochs)
    if _without_host_data(infeed_queue):
        return _host_benchmark(fn, infeed_queue._source, number_of_epochs,
                               elements_per_epochs, print_stats, do_memcpy)

    def next_flat(taken):
        try:
            element = infeed_queue._next_element()
        except OutOfRangeError as e:
            raise _exhausted(fn, taken, number_of_epochs * elements_per_epochs) from e
        return [t._value for t in _nest.flatten(element)]

    epochs = _timed_epochs(next_flat, number_of_epochs, elements_per_epochs, do_memcpy)
    return _report(fn, epochs, print_stats)
