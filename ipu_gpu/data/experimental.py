"""``tf.data.experimental``: the constants and the few helpers TF1-era programs still use."""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor
from .dataset import AUTOTUNE, INFINITE, UNKNOWN, Dataset, as_int
from .options import AutoShardPolicy, ExternalStatePolicy

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN

__all__ = ["AUTOTUNE", "AutoShardPolicy", "ExternalStatePolicy", "INFINITE_CARDINALITY",
           "TFRecordWriter", "UNKNOWN_CARDINALITY", "assert_cardinality", "cardinality",
           "enumerate_dataset", "get_single_element", "map_and_batch", "parallel_interleave",
           "prefetch_to_device", "shuffle_and_repeat", "unbatch"]


def cardinality(dataset: Dataset) -> Tensor:
    """``dataset.cardinality()``."""
    return dataset.cardinality()


def get_single_element(dataset: Dataset):
    return dataset.get_single_element()


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """The transformation ``shuffle(buffer_size, seed).repeat(count)`` (for ``apply``)."""
    return lambda ds: ds.shuffle(buffer_size, seed=seed).repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """The transformation ``map(map_func).batch(batch_size, drop_remainder)``."""
    return lambda ds: ds.map(map_func, num_parallel_calls).batch(batch_size, drop_remainder)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """The transformation ``interleave(map_func, cycle_length, block_length)`` (deterministic
    whatever ``sloppy`` says)."""
    return lambda ds: ds.interleave(map_func, cycle_length, block_length)


def prefetch_to_device(device, buffer_size=None):
    """The transformation ``prefetch(buffer_size or AUTOTUNE)``: elements stay on the host
    (an infeed copies them to the device)."""
    return lambda ds: ds.prefetch(AUTOTUNE if buffer_size is None else buffer_size)


def unbatch():
    return lambda ds: ds.unbatch()


def enumerate_dataset(start=0):
    return lambda ds: ds.enumerate(start)


def assert_cardinality(expected_cardinality):
    """The transformation declaring the dataset's cardinality; iterating raises
    FailedPreconditionError if the real number of elements differs."""
    expected = as_int(expected_cardinality, "expected_cardinality", "assert_cardinality")
    return lambda ds: _AssertCardinality(ds, expected)


class _AssertCardinality(Dataset):
    def __init__(self, input_dataset, expected):
        self._input, self._inputs, self._expected = input_dataset, (input_dataset,), expected

    def _compute_spec(self):
        return self._input.element_spec

    def _cardinality(self) -> int:
        return self._expected

    def _probe(self):
        return self._input._probe()

    def _iter_elements(self):
        from ..errors import FailedPreconditionError

        n = 0
        for element in self._input._elements():
            n += 1
            if self._expected != INFINITE and n > self._expected:
                raise FailedPreconditionError(
                    f"Input dataset was expected to contain {self._expected} elements but "
                    "contained at least one more element.")
            yield element
        if self._expected == INFINITE or n < self._expected:
            raise FailedPreconditionError(
                f"Input dataset was expected to contain {self._expected} elements but "
                f"contained only {n} elements.")


class TFRecordWriter:
    """``tf.data.experimental.TFRecordWriter(filename, compression_type=None)``: ``write``
    writes a dataset of string scalars as a TFRecord file."""

    def __init__(self, filename, compression_type=None):
        self._filename, self._compression = filename, compression_type

    def write(self, dataset: Dataset) -> None:
        from ..io.tfrecord import TFRecordWriter as _Writer

        spec = dataset.element_spec
        if getattr(spec, "dtype", None) != np.dtype(object) or spec.shape.rank != 0:
            raise TypeError("TFRecordWriter.write: dataset must hold string scalars, got "
                            f"element_spec {spec}")
        with _Writer(self._filename, self._compression) as w:
            for element in dataset._elements():
                w.write(element[()])
