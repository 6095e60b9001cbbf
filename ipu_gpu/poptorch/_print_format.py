"""The text ``poptorch.ipu_print_tensor`` prints: Poplar's ``PrintTensor`` layout as
PopTorch's and PopART's tests show it.

What the tests fix (``ipu_print_tensor_test.py``, PopART's ``printtensor`` tests):

* ``<title>: <value>`` on stderr; a rank-1 tensor on one line (``[5 7 9]``), a tensor of
  rank 2 or more opens its bracket, puts each sub-tensor on its own line indented by its
  depth, and closes the bracket on a line of its own; no separator between rows.
* Elements are right-aligned to a common width (``[ 6  9 12]``); floats print ``digits``
  significant digits: fixed ``1.4962566`` (``digits`` 8), scientific ``1.4962566e+00``.
* PopTorch passes the first character of ``separator``, ``open_bracket`` and
  ``close_bracket`` (they are C ``char`` attributes), so the default ``", "`` separates
  with ``,``.
* A line longer than ``max_line_width`` breaks after a separator, the next element
  indented two columns past its row's indentation.

Inferred, not shown by any test (Poplar's printer is not public): ``auto`` chooses
scientific when the largest magnitude printed is at least 1e8, the smallest non-zero is
below 1e-4, or their ratio exceeds 1e3 (numpy's rule), else fixed; fixed prints ``digits``
minus the integer digits of the largest magnitude as decimals; ``none`` formats each element
alone with ``digits`` significant digits (``%g``); ``digits`` 0 prints each element in its
shortest exact form, unaligned; a summarised dimension (more than ``2 * edge_items`` entries
in a tensor of more than ``summarise_threshold`` elements, threshold 0 never) shows its
first and last ``edge_items`` entries around ``...``; booleans print as 1 and 0.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FLOAT_FORMATS", "format_tensor"]

FLOAT_FORMATS = ("auto", "fixed", "scientific", "none")


def _shown(a: np.ndarray, edge: int | None) -> np.ndarray:
    """The elements printed (the edges of each summarised dimension), flattened."""
    if edge is None or a.ndim == 0:
        return a.reshape(-1)
    for axis in range(a.ndim):
        if a.shape[axis] > 2 * edge:
            keep = list(range(edge)) + list(range(a.shape[axis] - edge, a.shape[axis]))
            a = np.take(a, keep, axis=axis)
    return a.reshape(-1)


def _nonfinite(v: float) -> str | None:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _float_formatter(values: np.ndarray, digits: int, float_format: str):
    finite = np.abs(values[np.isfinite(values)]).astype(np.float64)
    if digits == 0:
        def shortest(v):
            v = float(v)
            return _nonfinite(v) or np.format_float_positional(values.dtype.type(v),
                                                               trim="-")
        return shortest
    if float_format == "none":
        return lambda v: _nonfinite(float(v)) or f"{float(v):.{digits}g}"
    largest = float(finite.max()) if finite.size else 0.0
    nonzero = finite[finite > 0]
    smallest = float(nonzero.min()) if nonzero.size else 0.0
    mode = float_format
    if mode == "auto":
        wide = nonzero.size and (largest >= 1e8 or smallest < 1e-4 or largest / smallest > 1e3)
        mode = "scientific" if wide else "fixed"
    if mode == "scientific":
        return lambda v: _nonfinite(float(v)) or f"{float(v):.{max(digits - 1, 0)}e}"
    whole = 1 if largest < 1 else int(math.floor(math.log10(largest))) + 1
    decimals = max(digits - whole, 0)
    if decimals and len(f"{largest:.{decimals}f}".partition(".")[0]) > whole:
        decimals -= 1  # rounding carried into a new integer digit (999.96 -> 1000.0)
    return lambda v: _nonfinite(float(v)) or f"{float(v):.{decimals}f}"


def _element_formatter(a: np.ndarray, shown: np.ndarray, digits: int, float_format: str):
    """The text of one element, padded to the common width unless ``digits`` is 0."""
    if a.dtype.kind == "b":
        text = lambda v: "1" if v else "0"  # noqa: E731
    elif a.dtype.kind in "iu":
        text = lambda v: str(int(v))  # noqa: E731
    else:
        text = _float_formatter(shown, digits, float_format)
    if digits == 0 or shown.size == 0:
        return text
    width = max(len(text(v)) for v in shown)
    return lambda v: text(v).rjust(width)


def format_tensor(a: np.ndarray, *, summarise_threshold: int, edge_items: int,
                  max_line_width: int, digits: int, float_format: str, separator: str,
                  open_bracket: str, close_bracket: str, prefix: int = 0) -> str:
    """``a`` laid out as Poplar's ``PrintTensor`` (the module doc); ``prefix`` is the length
    of the text before it on its first line (the title), counted against
    ``max_line_width``."""
    a = np.asarray(a)
    sep, opening, closing = separator[:1], open_bracket[:1], close_bracket[:1]
    edge = edge_items if 0 < summarise_threshold < a.size else None
    shown = _shown(a, edge)
    fmt = _element_formatter(a, shown, digits, float_format)
    if a.ndim == 0:
        return fmt(a[()])

    def entries(n):
        if edge is not None and n > 2 * edge:
            return list(range(edge)) + [None] + list(range(n - edge, n))
        return list(range(n))

    def row(v, depth, start):
        pieces = ["..." if i is None else fmt(v[i]) for i in entries(v.shape[0])]
        out = [opening]
        used = start + len(opening)
        for j, piece in enumerate(pieces):
            tail = closing if j == len(pieces) - 1 else ""
            if j == 0:
                out.append(piece)
                used += len(piece)
                continue
            if max_line_width > 0 and used + len(sep) + len(piece) + len(tail) > \
                    max_line_width:
                indent = " " * (depth + 2)
                out.append(sep + "\n" + indent + piece)
                used = len(indent) + len(piece)
            else:
                out.append(sep + piece)
                used += len(sep) + len(piece)
        out.append(closing)
        return "".join(out)

    def block(v, depth, start):
        if v.ndim == 1:
            return row(v, depth, start)
        indent = " " * (depth + 1)
        lines = [opening]
        for i in entries(v.shape[0]):
            inner = "..." if i is None else block(v[i], depth + 1, len(indent))
            lines.append(indent + inner)
        lines.append(" " * depth + closing)
        return "\n".join(lines)

    return block(a, 0, prefix)
