"""``tf.print``: print tensors as TensorFlow's ``PrintV2`` kernel formats them.

A tensor prints as ``Tensor::SummarizeValue``: nested brackets, elements separated by
spaces, rows by newlines (blank lines between blocks of rank 3 and more), at most
``summarize`` elements at each end of every dimension with ``...`` between them (``-1``
prints everything). Floats print with the shortest of 6 (float/half) or 15 (double)
significant digits that reads back exactly, else 9 or 17 (``%g`` style: ``2``, ``1.5``,
``1e+10``); booleans print as 1 and 0. Other inputs print as TensorFlow prints them: a
string as itself, anything else through ``pprint.pformat`` with the tensors inside it
formatted as above (``[1, 'x']``, ``{'a': 2, 'b': [1 2]}``).

Outputs: ``sys.stderr`` (the default) and ``sys.stdout`` (the stream current at the call),
``"file://<path>"`` (appended to), and the logging functions and levels TensorFlow accepts
(``tf.compat.v1.logging.info``/``warning``/``error``, ``absl.logging``'s, ``logging.INFO`` ...),
which go to Python's ``tensorflow`` logger. Printing reads the values (``# syncs device``).
"""

from __future__ import annotations

import logging
import os
import pprint
import sys

import numpy as np

from .core import nest
from .core.tensor import Tensor

__all__ = ["format_tensor", "print"]

_PLACEHOLDER = "IPUGPUPRINTTENSOR{}PLACEHOLDER"
_LEVELS = {"info": logging.INFO, "warn": logging.WARNING, "warning": logging.WARNING,
           "error": logging.ERROR}


def _float_text(v: float, short: int, long: int, dtype) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = f"%.{short}g" % v
    if dtype(text) != v:  # does not read back: print enough digits to
        text = f"%.{long}g" % v
    return text


def _element_formatter(dtype):
    """The text of one element, as TensorFlow's ``PrintOneElement``."""
    kind = dtype.kind
    if kind == "f":
        if dtype == np.float64:
            return lambda v: _float_text(float(v), 15, 17, float)
        return lambda v: _float_text(float(np.float32(v)), 6, 9, lambda s: float(np.float32(s)))
    if kind == "b":
        return lambda v: "1" if v else "0"
    if kind in "iu":
        return lambda v: str(int(v))
    if kind in "OSU":  # strings: quoted, as TF prints a string tensor
        def text(v):
            if isinstance(v, bytes):
                v = v.decode("utf-8", "backslashreplace")
            return '"' + str(v) + '"'
        return text
    return str


def _dim_spacing(dim: int, ndim: int, out: list) -> None:
    if dim == ndim - 1:
        out.append(" ")
        return
    out.append("\n" * (ndim - dim - 1))
    out.append(" " * (dim + 1))


def _print_dim(a, dim: int, limit: int, fmt, index: tuple, out: list) -> None:
    """TensorFlow's ``PrintOneDimV2``: the first and last ``limit`` entries of dimension
    ``dim`` (all when there are at most 2 * limit), recursively."""
    if dim == a.ndim:
        out.append(fmt(a[index]))
        return
    out.append("[")
    count = a.shape[dim]
    start_of_end = max(limit, count - limit)
    for i in range(min(limit, count)):
        if i > 0:
            _dim_spacing(dim, a.ndim, out)
        _print_dim(a, dim + 1, limit, fmt, index + (i,), out)
    if count > 2 * limit:
        _dim_spacing(dim, a.ndim, out)
        out.append("...")
    for i in range(start_of_end, count):
        _dim_spacing(dim, a.ndim, out)
        _print_dim(a, dim + 1, limit, fmt, index + (i,), out)
    out.append("]")


def format_tensor(value, summarize: int = 3) -> str:
    """A tensor (or array) as TensorFlow's ``SummarizeValue(summarize, print_v2=True)``."""
    a = np.asarray(value)  # syncs device; a scalar string tensor stays a 0-d array
    n = a.size
    limit = min(n if summarize < 0 else summarize, n)
    fmt = _element_formatter(a.dtype)
    if a.ndim == 0:
        text = " ".join(fmt(a[()]) for _ in range(limit))
        return text + ("..." if n > limit else "")
    out: list = []
    _print_dim(a, 0, limit, fmt, (), out)
    return "".join(out)


def _format_input(x, summarize: int) -> str:
    if isinstance(x, str):
        return x
    leaves = nest.flatten(x)
    tensors = []
    marked = []
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            marked.append(_PLACEHOLDER.format(len(tensors)))
            tensors.append(leaf)
        else:
            marked.append(leaf)
    text = pprint.pformat(nest.pack_sequence_as(x, marked) if not isinstance(x, Tensor)
                          else marked[0], width=sys.maxsize)
    for i, t in enumerate(tensors):
        text = text.replace(f"'{_PLACEHOLDER.format(i)}'", format_tensor(t, summarize), 1)
    return text


def _writer(output_stream):
    """A function writing one printed line to ``output_stream``; ValueError for streams
    TensorFlow does not support."""
    if output_stream is sys.stdout or output_stream is sys.__stdout__ or \
            output_stream is sys.stderr or output_stream is sys.__stderr__:
        def write(text):
            output_stream.write(text)
            output_stream.flush()
        return write
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        path = output_stream[len("file://"):]

        def write(text):
            with open(path, "a", encoding="utf-8") as f:
                f.write(text)
        return write
    level = None
    if isinstance(output_stream, int) and not isinstance(output_stream, bool) and \
            output_stream in (logging.INFO, logging.WARNING, logging.ERROR):
        level = output_stream
    elif callable(output_stream) and "logging" in (getattr(output_stream, "__module__", "")
                                                   or ""):
        level = _LEVELS.get(getattr(output_stream, "__name__", ""))
    if level is None:
        raise ValueError(f"Unsupported output stream, logging level, or file."
                         f"{output_stream}. Supported streams are sys.stdout, sys.stderr, "
                         "tf.logging.info, tf.logging.warning, tf.logging.error. File needs "
                         "to be in the form of 'file://<filepath>'.")
    logger = logging.getLogger("tensorflow")
    return lambda text: logger.log(level, text[:-1] if text.endswith("\n") else text)


def print(*inputs, **kwargs):  # noqa: A001 - TF's name
    """Print the specified inputs.

    Args:
      *inputs: positional arguments: strings, Tensors, numpy arrays, Python values and
        nested structures of them (lists, tuples, dicts).
      output_stream: ``sys.stderr`` (default), ``sys.stdout``, ``"file://<path>"`` or a
        logging function or level (module docstring).
      summarize: the number of elements printed at each end of every dimension (default 3;
        -1 prints all).
      sep: the text between inputs (default " ").
      end: the text after the last input (default ``os.linesep``).
      name: ignored.

    Returns:
      None (eager execution).

    Raises:
      ValueError: an unsupported ``output_stream``, or an unknown keyword argument.
    """
    output_stream = kwargs.pop("output_stream", sys.stderr)
    kwargs.pop("name", None)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", os.linesep)
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {kwargs}")
    write = _writer(output_stream)
    write(sep.join(_format_input(x, summarize) for x in inputs) + end)
    return None
