"""TF 1.15's top-level names for the ``tf.io`` example-parsing and record functions
(``tf.FixedLenFeature``, ``tf.parse_single_example``, ``tf.decode_raw``,
``tf.sparse_tensor_to_dense``, ``tf.python_io``), with TF 1's signatures."""

from __future__ import annotations

import sys
import types

from ... import io as _io
from ... import sparse as _sparse

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "decode_raw",
           "parse_example", "parse_single_example", "python_io", "sparse_tensor_to_dense"]

FixedLenFeature = _io.FixedLenFeature
FixedLenSequenceFeature = _io.FixedLenSequenceFeature
VarLenFeature = _io.VarLenFeature
parse_example = _io.parse_example
parse_single_example = _io.parse_single_example


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """TF 1's ``decode_raw``: ``bytes`` is the old name of ``input_bytes``.

    Raises:
      ValueError: both ``input_bytes`` and ``bytes`` given (TF's message), or neither."""
    if input_bytes is not None and bytes is not None:
        raise ValueError("Cannot specify both 'bytes' and 'input_bytes'.")
    if input_bytes is None and bytes is None:
        raise ValueError("Attempt to convert a value (None) with an unsupported type "
                         "(<class 'NoneType'>) to a Tensor.")
    return _io.decode_raw(input_bytes if input_bytes is not None else bytes, out_type,
                          little_endian=little_endian)


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """``tf.sparse.to_dense`` under its TF 1 name."""
    return _sparse.to_dense(sp_input, default_value=default_value,
                            validate_indices=validate_indices)


python_io = types.ModuleType(f"{__name__.rpartition('.')[0]}.python_io",
                             "``tf.python_io`` (TF 1): TFRecord writing and reading.")
python_io.TFRecordWriter = _io.TFRecordWriter
python_io.TFRecordOptions = _io.TFRecordOptions
python_io.TFRecordCompressionType = _io.TFRecordCompressionType
python_io.tf_record_iterator = _io.tf_record_iterator
python_io.__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
                     "tf_record_iterator"]
sys.modules[python_io.__name__] = python_io  # importable as a module, as tf.compat.v1.nn
