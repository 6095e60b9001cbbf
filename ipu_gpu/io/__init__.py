"""``tf.io`` (records and their parsing) and the ``tf.train`` example messages.

TFRecord files (tfrecord.py, checksums by _crc32c.py), ``tf.train.Example`` encoded and decoded
by hand in the protobuf wire format (example.py), ``parse_single_example`` / ``parse_example``
with their feature configurations (parsing.py), ``gfile`` for local files. Host-side only:
everything here works on numpy arrays and bytes.
"""

from . import gfile
from ..errors import DataLossError, FailedPreconditionError, NotFoundError
from .example import BytesList, Example, Feature, Features, FloatList, Int64List
from .parsing import (FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, decode_raw,
                      parse_example, parse_single_example)
from .sparse import SparseTensor
from ..image.jpeg import decode_and_crop_jpeg, decode_jpeg, extract_jpeg_shape
from .tfrecord import (TFRecordCompressionType, TFRecordOptions, TFRecordWriter,
                       tf_record_iterator)

__all__ = [
    "BytesList", "DataLossError", "Example", "FailedPreconditionError", "Feature", "Features",
    "FixedLenFeature", "FixedLenSequenceFeature", "FloatList", "Int64List", "NotFoundError",
    "SparseTensor", "TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
    "VarLenFeature", "decode_and_crop_jpeg", "decode_jpeg", "decode_raw",
    "extract_jpeg_shape", "gfile", "parse_example", "parse_single_example",
    "tf_record_iterator",
]
