"""Elements of datasets: nested structures (tuples, namedtuples, dicts) whose leaves are numpy
arrays on the host, as tf.data keeps its elements on the host CPU.

tf.data's nesting rules differ from ``tf.nest`` in one point: a Python list is a value (it is
converted to one array, ``from_tensor_slices([1, 2, 3])`` slices an int32 vector), not a level of
nesting; a list returned by a dataset function becomes a tuple (TF's ``_should_pack``). After
``normalize`` no list is left inside an element, so ``core.nest`` flattens elements and specs
correctly.

Strings (TF's ``tf.string``) are numpy object arrays of ``bytes`` (``core.spec.string``); str
values are encoded as UTF-8.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..core import backend, nest
from ..core.convert import to_array
from ..core.spec import TensorSpec, string
from ..core.tensor import Tensor, wrap

__all__ = ["call_function", "host_tensors", "normalize", "normalize_output", "same_structure",
           "spec_of", "specs_of", "synthesize", "to_numpy", "to_numpy_output", "to_tensors"]


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def normalize(value, what: str = "element"):
    """``value`` as an element: dicts, tuples and namedtuples kept as structure, every other
    value (lists included) converted to a numpy array with TF's dtype rules."""
    if isinstance(value, dict):
        return type(value)((k, normalize(v, what)) for k, v in value.items())
    if _is_namedtuple(value):
        return type(value)(*[normalize(v, what) for v in value])
    if isinstance(value, tuple):
        return tuple(normalize(v, what) for v in value)
    return to_numpy(value, what)


def normalize_output(value, what: str):
    """The value a dataset function returned, as an element (a top-level list is a tuple)."""
    if isinstance(value, list):
        value = tuple(value)
    return normalize(value, what)


def _has_string(value) -> bool:
    if isinstance(value, (str, bytes)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_string(v) for v in value)
    return isinstance(value, np.ndarray) and value.dtype.kind in "OSU"


def _to_bytes(v):
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v)
    raise TypeError(f"a string component must hold only str or bytes, got {type(v).__name__}")


def _string_array(value) -> np.ndarray:
    a = np.asarray(value, dtype=object)
    out = np.empty(a.shape, dtype=object)
    flat_in, flat_out = a.reshape(-1), out.reshape(-1)
    for i in range(flat_in.size):
        flat_out[i] = _to_bytes(flat_in[i])
    return out


def to_numpy(value, what: str = "element") -> np.ndarray:
    """One component as a host numpy array (strings as object arrays of bytes)."""
    if isinstance(value, Tensor):
        a = value._value
        return a.get() if backend.is_cupy_array(a) else a  # syncs device
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SU":
            return _string_array(value)
        return value
    if isinstance(value, (str, bytes, np.bytes_, np.str_)):
        return _string_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    if value is None:
        raise TypeError(f"{what}: a component must be a tensor, array, number or string, got "
                        "None")
    if backend.is_cupy_array(value):
        return value.get()  # syncs device
    if type(value).__name__ == "SparseTensor":
        raise NotImplementedError(f"{what}: SparseTensor components are not supported by "
                                  "ipu_gpu.data; convert them with tf.sparse.to_dense inside the "
                                  "dataset function")
    if _is_dataset(value):
        raise TypeError(f"{what}: a Dataset cannot be a component of an element (nested "
                        "datasets are not supported); use flat_map or interleave")
    if isinstance(value, (list, numbers.Number)):
        if _has_string(value):
            return _string_array(value)
        if isinstance(value, list) and any(isinstance(v, (np.ndarray, np.generic, Tensor))
                                           for v in _list_leaves(value)):
            return np.asarray(value)
        try:
            return to_array(value, op=what, arg="value", xp=np)
        except TypeError:
            return np.asarray(value)
    if hasattr(value, "__array__") or hasattr(value, "__dlpack__"):
        return np.asarray(value)
    raise TypeError(f"{what}: a component must be a tensor, array, number or string, got "
                    f"{type(value).__name__}")


def _list_leaves(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _list_leaves(v)
    else:
        yield value


def _is_dataset(value) -> bool:
    from .dataset import Dataset

    return isinstance(value, Dataset)


def spec_of(a: np.ndarray) -> TensorSpec:
    return TensorSpec(a.shape, string if a.dtype == object else a.dtype)


def specs_of(element):
    """The structure of TensorSpecs describing ``element``."""
    return nest.map_structure(spec_of, element)


def _to_tensor(a):
    # Elements live on the host; on the GPU backend a numeric component is uploaded, so it
    # mixes with the model's tensors (TF copies dataset outputs to the op's device).
    if a.dtype != object and backend.backend_name() == "gpu":
        return wrap(backend.default_xp().asarray(a))
    return wrap(a)


def to_tensors(element):
    """An element as ipu_gpu Tensors on the current backend (strings stay on the host)."""
    if type(element) is tuple:
        return tuple(_to_tensor(a) if isinstance(a, np.ndarray) else to_tensors(a)
                     for a in element)
    if isinstance(element, np.ndarray):
        return _to_tensor(element)
    return nest.map_structure(_to_tensor, element)


def host_tensors(element):
    """An element as host (numpy) Tensors: what dataset functions receive, since tf.data runs
    its functions on the CPU."""
    if isinstance(element, np.ndarray):
        return wrap(element)
    if type(element) is tuple:
        return tuple(wrap(a) if isinstance(a, np.ndarray) else host_tensors(a) for a in element)
    return nest.map_structure(wrap, element)


def call_function(fn, element, *extra_before):
    """``fn`` called on an element as tf.data calls it: a tuple is unpacked into positional
    arguments, anything else (dicts, namedtuples, single components) is one argument."""
    args = host_tensors(element)
    if type(args) is tuple:
        return fn(*extra_before, *args)
    return fn(*extra_before, args)


def to_numpy_output(element):
    """An element as ``as_numpy_iterator`` yields it: 0-d arrays become numpy scalars (bytes
    for strings), as TF's ``Tensor.numpy()``."""
    if isinstance(element, np.ndarray):
        return element[()] if element.ndim == 0 else element
    if type(element) is tuple:
        return tuple(to_numpy_output(a) for a in element)
    return nest.map_structure(lambda a: a[()] if a.ndim == 0 else a, element)


def synthesize(spec_structure):
    """A sample element matching a spec structure: zeros (b"" for strings), unknown dimensions
    of size 1, unknown ranks as scalars."""
    def make(s):
        shape = s.shape
        dims = [1 if d is None else d for d in shape] if shape.rank is not None else []
        if s.dtype == string:
            a = np.empty(dims, dtype=object)
            a.fill(b"")
            return a
        return np.zeros(dims, dtype=s.dtype)
    return nest.map_structure(make, spec_structure)


def same_structure(a, b) -> bool:
    """Whether two elements or spec structures nest in the same way (types and dict keys)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b)
                and all(same_structure(a[k], b[k]) for k in a))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and _is_namedtuple(a) == _is_namedtuple(b)
                and all(same_structure(x, y) for x, y in zip(a, b)))
    return True
