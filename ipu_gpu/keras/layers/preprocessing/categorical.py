"""The output modes shared by the categorical layers (``Discretization``, ``Hashing``,
``CategoryEncoding``, ``IntegerLookup``): integer indices as they are ("int"), or per sample
a ``depth``-wide vector, 1 where an index occurs ("one_hot" for one index per sample,
"multi_hot"), its number of occurrences ("count", optionally weighted) or that times its
IDF weight ("tf_idf"); dense, or a ``SparseTensor`` of the non-zero entries."""

from __future__ import annotations

import numpy as np

from ....core.convert import convert_to_tensor
from ....core.spec import TensorShape, as_shape
from ....core.tensor import Tensor
from ....io.sparse import SparseTensor
from ....ops import math as _m

__all__ = ["COUNT", "INT", "MULTI_HOT", "ONE_HOT", "TF_IDF", "encode_categorical_inputs",
           "encoded_shape", "host", "validate_string_arg"]

INT = "int"
ONE_HOT = "one_hot"
MULTI_HOT = "multi_hot"
COUNT = "count"
TF_IDF = "tf_idf"


def host(x) -> np.ndarray:
    """A Tensor's (or array-like's) values on the host."""
    return np.asarray(x.numpy()) if isinstance(x, Tensor) else np.asarray(x)


def validate_string_arg(value, allowable_strings, layer_name, arg_name) -> None:
    """tf-keras's check of a string argument.

    Raises:
      ValueError: ``value`` is not one of ``allowable_strings`` (tf-keras's message).
    """
    if isinstance(value, str) and value in allowable_strings:
        return
    raise ValueError(f"Unkown value for `{arg_name}` argument of layer {layer_name}. Allowed "
                     f"values are: or one of the following values: {allowable_strings}. "
                     f"Received: {value}")


def encoded_shape(input_shape, output_mode, depth) -> TensorShape:
    """The output shape of ``encode_categorical_inputs`` for inputs of ``input_shape``."""
    dims = as_shape(input_shape).as_list()
    if output_mode == INT:
        return TensorShape(dims)
    if not dims:
        return TensorShape([depth])
    if output_mode == ONE_HOT and dims[-1] != 1:
        return TensorShape(dims + [depth])
    return TensorShape(dims[:-1] + [depth])


def _bincount(indices: np.ndarray, depth: int, binary: bool, weights, dtype) -> np.ndarray:
    """Per row of a rank-2 ``indices`` (or over all of a rank-1 one) the count of each value
    in [0, depth) (values outside are dropped), or 1/0 with ``binary``."""
    rows = indices.reshape(-1, indices.shape[-1]) if indices.ndim == 2 else indices[None]
    out = np.zeros((rows.shape[0], depth), np.float64)
    w = np.ones(rows.shape, np.float64) if weights is None else np.broadcast_to(
        np.asarray(weights, np.float64).reshape(-1, rows.shape[-1]), rows.shape)
    keep = (rows >= 0) & (rows < depth)
    r = np.nonzero(keep)[0]
    np.add.at(out, (r, rows[keep].astype(np.int64)), w[keep])
    if binary:
        out = (out != 0).astype(np.float64)
    out = out.astype(dtype)
    return out if indices.ndim == 2 else out[0]


def encode_categorical_inputs(inputs, output_mode, depth, dtype="float32", sparse=False,
                              count_weights=None, idf_weights=None):
    """``inputs`` (integer indices) encoded by ``output_mode`` (see the module docstring).

    Raises:
      ValueError: an output that would have rank above 2; "tf_idf" without ``idf_weights``.
    """
    dtype = np.dtype(getattr(dtype, "name", dtype))
    if output_mode == INT:
        x = inputs if isinstance(inputs, Tensor) else convert_to_tensor(host(inputs))
        return x if x.dtype == dtype else _m.cast(x, dtype)
    indices = host(inputs)
    original_shape = tuple(indices.shape)
    if indices.ndim == 0:
        indices = indices[None]
    if output_mode == ONE_HOT and indices.shape[-1] != 1:
        indices = indices[..., None]
    if indices.ndim > 2:
        raise ValueError("When output_mode is not `'int'`, maximum supported output rank is 2. "
                         f"Received output_mode {output_mode} and input shape "
                         f"{TensorShape(original_shape)}, which would result in output rank "
                         f"{indices.ndim}.")
    weights = None if count_weights is None else host(count_weights)
    out = _bincount(indices, depth, output_mode in (MULTI_HOT, ONE_HOT), weights, dtype)
    if output_mode == TF_IDF:
        if idf_weights is None:
            raise ValueError("When output mode is `'tf_idf'`, idf_weights must be provided. "
                             f"Received: output_mode={output_mode} and "
                             f"idf_weights={idf_weights}")
        out = (out * host(idf_weights).astype(dtype)).astype(dtype)
    if sparse:
        nz = np.nonzero(out)
        return SparseTensor(np.stack(nz, axis=1), convert_to_tensor(out[nz]), out.shape)
    return convert_to_tensor(out)
