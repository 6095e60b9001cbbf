"""``tf.compat``: ``v1`` holds the TF1 names; ``v2`` is the TF2 core (``ipu_gpu`` itself);
the text helpers ``as_bytes``/``as_text``/``as_str``."""

import ipu_gpu as v2

from . import v1
from .text import as_bytes, as_str, as_str_any, as_text, bytes_or_text_types, path_to_str

__all__ = ["v1", "v2", "as_bytes", "as_str", "as_str_any", "as_text", "bytes_or_text_types",
           "path_to_str"]

v1.compat = __import__("sys").modules[__name__]  # tf.compat.v1.compat is tf.compat
