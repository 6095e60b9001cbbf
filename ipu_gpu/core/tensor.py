"""Tensor (an immutable wrapper of one numpy/cupy array) and Variable (a mutable one).

Operators on a Tensor call the ops layer's public functions by name through ``OPS``; the
ops layer fills that table, so this module never imports it.
"""

from __future__ import annotations

import itertools
import sys
import threading

import numpy as np

from . import backend, dtypes
from .spec import TensorShape as _SpecShape

OPS: dict = {}  # op name -> public function behind each operator, filled by ipu_gpu.ops
_next_id = itertools.count(1).__next__
# sys.getrefcount of a variable's buffer in Variable._owns_buffer when the variable alone
# holds it: the variable's slot and getrefcount's own argument.
_SOLE_OWNER_REFS = 2


class TensorShape(tuple):
    """The (always fully defined) shape of an eager Tensor: a tuple of ints with TF's
    TensorShape methods. ``tf.TensorShape`` itself, with unknown dimensions and ranks, is
    ``core.spec.TensorShape``; the two compare equal, and ``==`` with a list works as TF's."""

    __slots__ = ()
    __hash__ = tuple.__hash__

    def __eq__(self, other):
        if isinstance(other, tuple):
            return tuple.__eq__(self, other)
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented  # a spec TensorShape compares itself

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    @property
    def dims(self) -> list:
        return self._spec().dims

    def _spec(self):
        from .spec import TensorShape as SpecShape

        return SpecShape(list(self))

    def is_compatible_with(self, other) -> bool:
        return self._spec().is_compatible_with(other)

    def merge_with(self, other):
        return self._spec().merge_with(other)

    def concatenate(self, other):
        return self._spec().concatenate(other)

    @property
    def rank(self) -> int:
        return len(self)

    @property
    def ndims(self) -> int:
        return len(self)

    def as_list(self) -> list:
        return list(self)

    def num_elements(self) -> int:
        return int(np.prod(self, dtype=np.int64))

    def is_fully_defined(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TensorShape({list(self)})"


_SpecShape.register(TensorShape)  # isinstance(t.shape, tf.TensorShape), as in TF


# Called with every new Tensor when set (the emulated machine charges tensors created inside
# a replica to its IPU's memory ledger); None costs one test per tensor.
_allocation_hook = None


def set_allocation_hook(hook) -> None:
    """Install ``hook(tensor)``, called for every Tensor made from now on (None removes it).
    The hook may raise (e.g. out of memory on an emulated IPU); the op then fails."""
    global _allocation_hook
    _allocation_hook = hook


_write_hook = None  # called with a Variable about to get a new buffer (core/capture.py)

# ---- per-replica variables -------------------------------------------------------------------
# On an IPU every replica holds its own copy of each variable. The engine tells each replica's
# thread its slot, (device key, replica index, replication factor); on the host the slot is
# None. Replica 0's copy is the host value itself (after a run the host sees replica 0's
# value); replica r > 0 reads and writes ``Variable._copies[(key, r)]``, made from the host
# value on first use and kept across runs; a host assignment drops every copy, so the next
# run starts each replica from the host value.
_replica = threading.local()
_COPY_LOCK = threading.Lock()
_slotted = 0  # threads holding a replica slot now: 0 lets every Variable read skip the lookup


def set_replica_slot(slot) -> None:
    """Make the calling thread replica ``slot = (device key, index, count)`` (None: the host)
    for Variable reads and writes."""
    global _slotted
    with _COPY_LOCK:
        _slotted += (slot is not None) - (getattr(_replica, "slot", None) is not None)
        _replica.slot = slot


def replica_slot():
    """The calling thread's replica slot, or None on the host."""
    return getattr(_replica, "slot", None)


def _fresh_copy(value):
    copy = value.copy()
    if type(copy) is not np.ndarray:  # a device copy another replica's stream will read
        backend.xp_of(copy).cuda.get_current_stream().synchronize()
    return copy


def set_write_hook(hook) -> None:
    """Install ``hook(variable)``, called before a Variable's buffer is replaced (None
    removes it); installed while a CUDA-graph recorder is active."""
    global _write_hook
    _write_hook = hook


def _host_read() -> None:
    """A device tensor is read on the host: a replayed CUDA graph could not repeat that."""
    if _write_hook is not None:  # a recorder is active somewhere
        from .capture import refuse

        refuse("a host read of a device tensor")


_STRING = np.dtype(object)  # tf.string (core/strings.py)


def wrap(value, node_id: int | None = None) -> Tensor:
    """A Tensor around ``value`` (a numpy/cupy array) without copying or checking."""
    t = object.__new__(Tensor)
    t._value = value
    t._id = _next_id() if node_id is None else node_id
    if _allocation_hook is not None:
        _allocation_hook(t)
    return t


class Tensor:
    """An immutable n-dimensional array on the CPU (numpy) or the GPU (cupy).

    Made by ops, ``ipu_gpu.constant`` and ``ipu_gpu.convert_to_tensor``; it
    supports the Python operators, numpy-style indexing, ``numpy()``,
    ``__array__`` and ``__dlpack__``.
    """

    __slots__ = ("_value", "_id", "__weakref__")
    __array_priority__ = 100  # numpy defers binary operators to ours

    def __init__(self, value):
        from .convert import to_array

        self._value = to_array(value, arg="value", op="Tensor")
        self._id = _next_id()
        if _allocation_hook is not None:
            _allocation_hook(self)

    # ---- reading ----------------------------------------------------------
    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._value.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def device(self) -> str:
        return "/device:GPU:0" if backend.is_cupy_array(self._value) else "/device:CPU:0"

    def numpy(self) -> np.ndarray:
        """A numpy copy of the value (``# syncs device`` for a GPU tensor); a scalar string
        gives its ``bytes``, as TF."""
        v = self._value
        if v.dtype is _STRING and v.ndim == 0:
            return v.item()
        if backend.is_cupy_array(v):
            _host_read()
            return v.get()
        return np.array(v, copy=True)

    def __array__(self, dtype=None, copy=None):
        v = self._value
        if backend.is_cupy_array(v):
            _host_read()
            v = v.get()  # syncs device
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype)
        if copy:
            return np.array(v, copy=True)
        v = v.view()
        v.flags.writeable = False  # a Tensor is immutable: TF's arrays are read-only too
        return v

    def __dlpack__(self, *args, **kwargs):
        return self._value.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    def get_shape(self) -> TensorShape:
        return self.shape

    def set_shape(self, shape) -> None:
        """Checks that ``shape`` (None for unknown dimensions) is compatible with this tensor's
        shape, as TF's eager ``set_shape`` does; ValueError otherwise. Nothing changes."""
        from .spec import as_shape

        wanted = as_shape(shape)
        if not wanted.is_compatible_with(list(self.shape)):
            raise ValueError(f"Tensor's shape {tuple(self.shape)} is not compatible with "
                             f"supplied shape {tuple(wanted.as_list())}.")

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of a scalar (0-d) Tensor is not defined")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a scalar (0-d) Tensor is not defined")
        for i in range(self._value.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        name = type(self).__name__
        return (
            f"<ipu_gpu.{name}: shape={tuple(self._value.shape)}, "
            f"dtype={'string' if self.dtype is _STRING else self.dtype.name}, "
            f"numpy={np.array2string(np.asarray(self), separator=', ')}>"
        )

    __str__ = __repr__

    def _scalar(self, kind):
        if self._value.size != 1:
            raise ValueError(f"only a one-element Tensor converts to {kind.__name__}, got shape "
                             f"{tuple(self._value.shape)}")
        if _write_hook is not None and backend.is_cupy_array(self._value):
            _host_read()
        return kind(self._value.reshape(()).item())

    def __bool__(self) -> bool:
        return self._scalar(bool)

    def __float__(self) -> float:
        return self._scalar(float)

    def __int__(self) -> int:
        return self._scalar(int)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only an integer Tensor can be used as an index, got {self.dtype}")
        return self._scalar(int)

    __hash__ = None  # elementwise __eq__, as TF 2: use id() or the .ref() of TF

    # ---- operators -> registered ops -------------------------------------
    def __add__(self, other):
        return OPS["add"](self, other)

    def __radd__(self, other):
        return OPS["add"](other, self)

    def __sub__(self, other):
        return OPS["subtract"](self, other)

    def __rsub__(self, other):
        return OPS["subtract"](other, self)

    def __mul__(self, other):
        if type(other) is float or type(other) is int:  # ``g * lr``: maybe a pending product
            p = _pending_product(self, other, False)
            if p is not None:
                return p
        return OPS["multiply"](self, other)

    def __rmul__(self, other):
        if type(other) is float or type(other) is int:  # ``lr * g``
            p = _pending_product(self, other, True)
            if p is not None:
                return p
        return OPS["multiply"](other, self)

    def __truediv__(self, other):
        return OPS["divide"](self, other)

    def __rtruediv__(self, other):
        return OPS["divide"](other, self)

    def __floordiv__(self, other):
        return OPS["floordiv"](self, other)

    def __rfloordiv__(self, other):
        return OPS["floordiv"](other, self)

    def __mod__(self, other):
        return OPS["floormod"](self, other)

    def __rmod__(self, other):
        return OPS["floormod"](other, self)

    def __pow__(self, other):
        return OPS["pow"](self, other)

    def __rpow__(self, other):
        return OPS["pow"](other, self)

    def __matmul__(self, other):
        return OPS["matmul"](self, other)

    def __rmatmul__(self, other):
        return OPS["matmul"](other, self)

    def __neg__(self):
        return OPS["negative"](self)

    def __pos__(self):
        return self

    def __abs__(self):
        return OPS["abs"](self)

    def __invert__(self):
        return OPS["logical_not"](self)

    def __and__(self, other):
        return OPS["logical_and"](self, other)

    def __rand__(self, other):
        return OPS["logical_and"](other, self)

    def __or__(self, other):
        return OPS["logical_or"](self, other)

    def __ror__(self, other):
        return OPS["logical_or"](other, self)

    def __lt__(self, other):
        return OPS["less"](self, other)

    def __le__(self, other):
        return OPS["less_equal"](self, other)

    def __gt__(self, other):
        return OPS["greater"](self, other)

    def __ge__(self, other):
        return OPS["greater_equal"](self, other)

    def __eq__(self, other):
        return OPS["equal"](self, other)

    def __ne__(self, other):
        return OPS["not_equal"](self, other)

    def __getitem__(self, key):
        return OPS["getitem"](self, key)


# ---- a product not computed yet ----------------------------------------------------------
_SLOT = Tensor.__dict__["_value"]  # the slot under Tensor._value (a pending product's operands)
_tape_local = None  # core.tape's thread-local state (its ``tapes``), set when tape loads
_EXACT_INT = 2**53  # ints a float64 holds exactly, as the multiply op converts them
_FLOAT_MAX = {np.dtype(np.float32): float(np.finfo(np.float32).max),
              np.dtype(np.float64): float(np.finfo(np.float64).max)}


class _Pending(Tensor):
    """A Tensor whose value is not computed yet (the slot holds a tuple describing it): the
    first read computes it and the object becomes a plain Tensor (``_Product``, ``_Deferred``)."""

    __slots__ = ()

    def _set_value(self, v):
        _SLOT.__set__(self, v)
        self.__class__ = Tensor

    def __repr__(self) -> str:
        self._value  # noqa: B018  # computed: a plain Tensor from here on
        return Tensor.__repr__(self)

    __str__ = __repr__


class _Product(_Pending):
    """``x * s``, a float32/float64 Tensor times a Python number, not computed yet, so that
    ``Variable.assign_sub(lr * g)`` updates the variable in one pass (the SGD kernel of
    ``kernels/optimizer_cpu``) without writing the product to memory and reading it back.

    Made by ``Tensor.__mul__``/``__rmul__`` only where the multiply op would record nothing
    and charge nothing (no tape recording in this thread, no allocation hook). The first
    read of its value computes the product exactly as the multiply op does, and the object
    becomes a plain Tensor; until then it holds the operands ``(array, scalar, scalar first)``.
    """

    __slots__ = ()

    @property
    def _value(self):
        pending = _SLOT.__get__(self)
        if type(pending) is not tuple:  # another thread computed it meanwhile
            return pending
        a, s, scalar_first = pending
        with np.errstate(all="ignore"):  # inf and NaN without warnings, as the op
            z = np.multiply(s, a) if scalar_first else np.multiply(a, s)
        if type(z) is not np.ndarray:  # a 0-d product comes back as a numpy scalar
            z = np.asarray(z)
        _SLOT.__set__(self, z)
        self.__class__ = Tensor
        return z

    _value = _value.setter(_Pending._set_value)

    def _pending(self):
        """The operands ``(array, scalar array)`` while not computed, else None."""
        pending = _SLOT.__get__(self)
        return pending[:2] if type(pending) is tuple else None


class _Deferred(_Pending):
    """An op's output not computed yet, held as ``(compute, operands)``: ``tf.nn.bias_add``
    leaves its sum so (``ops/nn``), so that a ``tf.nn.relu`` of it writes
    ``relu(value + bias)`` in one pass without the sum ever reaching memory. The first read
    of its value computes ``compute(*operands)`` (the op's own kernel, the same bits) and the
    object becomes a plain Tensor. The op made it only where its operands are arrays that
    nothing else holds or may write (so computing later gives what computing now would)."""

    __slots__ = ()

    @property
    def _value(self):
        pending = _SLOT.__get__(self)
        if type(pending) is not tuple:  # another thread computed it meanwhile
            return pending
        compute, operands = pending
        z = compute(*operands)
        _SLOT.__set__(self, z)
        self.__class__ = Tensor
        return z

    _value = _value.setter(_Pending._set_value)

    def _pending(self):
        """``(compute, operands)`` while not computed, else None."""
        pending = _SLOT.__get__(self)
        return pending if type(pending) is tuple else None


def deferred(compute, operands: tuple) -> Tensor:
    """A Tensor whose value is ``compute(*operands)``, computed on first read (``_Deferred``);
    no allocation hook charges it (the caller makes one only where none is installed)."""
    t = object.__new__(_Deferred)
    _SLOT.__set__(t, (compute, operands))
    t._id = _next_id()
    return t


def _pending_product(t, s, scalar_first: bool):
    """A ``_Product`` of the Tensor ``t`` and the Python number ``s``, or None where the
    multiply op must run now (a tape records, an allocation hook charges, the operand is not
    a C-contiguous float32/float64 numpy array that nothing but ``t`` holds, or ``s`` does
    not convert exactly as the op converts it)."""
    if type(t) is not Tensor or _allocation_hook is not None or _tape_local is None:
        return None
    a = t._value  # a plain Tensor's slot
    # a caller's array (``convert_to_tensor`` keeps it) could be written before the product
    # is read: only an array that nothing but ``t`` holds (its slot, ``a``, the call's)
    if (type(a) is not np.ndarray or _tape_local.tapes or a.base is not None
            or sys.getrefcount(a) > 3 or not a.flags.c_contiguous):
        return None
    last = _SCALARS.get(a.dtype)  # ``_scalar_array(s, a.dtype)``, its common case inlined
    if last is not None and last[0] is s:  # the number of the last product: checked then
        scalar = last[1]
    elif _converts_exactly(s, a.dtype):
        scalar = _scalar_array(s, a.dtype)
    else:
        return None
    p = object.__new__(_Product)
    _SLOT.__set__(p, (a, scalar, scalar_first))
    p._id = _next_id()
    return p


def _converts_exactly(s, dtype) -> bool:
    """Whether the multiply op would convert the Python number ``s`` to ``dtype`` (float32 or
    float64; False for other dtypes) as ``np.array(s, dtype)`` does: a finite value in range,
    an int that a float64 holds exactly."""
    big = _FLOAT_MAX.get(dtype)
    return (big is not None and -big <= s <= big
            and (type(s) is not int or -_EXACT_INT <= s <= _EXACT_INT))


_SCALARS: dict = {}  # dtype -> (the Python number last multiplied, its read-only 0-d array)


def _scalar_array(s, dtype):
    """``np.array(s, dtype=dtype)``, shared read-only while ``s`` is the very number object of
    the last call for ``dtype`` (a training loop's learning rate)."""
    last = _SCALARS.get(dtype)
    if last is not None and last[0] is s:
        return last[1]
    arr = np.array(s, dtype=dtype)
    arr.flags.writeable = False  # shared by every product of this number: nothing writes it
    _SCALARS[dtype] = (s, arr)
    return arr


_optimizer_kernels = []  # kernels/optimizer_cpu, imported on first use (it loads Numba)


class Variable(Tensor):
    """A mutable, named tensor: model weights (``tf.Variable``).

    Usable wherever a Tensor is; reads by ops inside a GradientTape are watched
    automatically when ``trainable`` (and the tape's ``watch_accessed_variables``).
    """

    __slots__ = ("_trainable", "_name", "_host_value", "_copies", "_per_replica")

    @property
    def _value(self):
        if not _slotted:  # no replica runs: the host value
            return self._host_value
        slot = getattr(_replica, "slot", None)
        if slot is None or slot[1] == 0 or not self._per_replica:
            return self._host_value
        key = (slot[0], slot[1])
        v = self._copies.get(key)
        if v is None:
            with _COPY_LOCK:
                v = self._copies.get(key)
                if v is None:
                    v = self._copies[key] = _fresh_copy(self._host_value)
        return v

    @_value.setter
    def _value(self, v):
        slot = getattr(_replica, "slot", None)
        if slot is None:  # the host: every replica starts again from this value
            self._host_value = v
            if self._copies:
                self._copies.clear()
        elif not self._per_replica:
            self._host_value = v
        elif slot[1] == 0:
            device, _, count = slot
            if count > 1:  # the others copy the value before replica 0's first change
                with _COPY_LOCK:
                    for r in range(1, count):
                        if (device, r) not in self._copies:
                            self._copies[(device, r)] = _fresh_copy(self._host_value)
            self._host_value = v
        else:
            self._copies[(slot[0], slot[1])] = v

    def __init__(self, initial_value, trainable: bool = True, name: str | None = None,
                 dtype=None):
        from .convert import to_array

        if callable(initial_value):
            initial_value = initial_value()
        if not isinstance(trainable, bool):
            raise TypeError(f"Variable: trainable must be a bool, got {type(trainable).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Variable: name must be a str, got {type(name).__name__}")
        d = None if dtype is None else dtypes.as_dtype(dtype, "Variable: dtype")
        value = to_array(initial_value, dtype=d, arg="initial_value", op="Variable")
        if (not isinstance(initial_value, Tensor) and type(value) is np.ndarray
                and backend.backend_name() == "gpu"):
            # a host value (numpy array, number, list) lives on the default device, as in TF
            value = backend.default_xp().array(value)
        elif (not isinstance(initial_value, (bool, int, float, list, tuple))
              or backend.is_cupy_array(value)):
            value = value.copy()  # a variable owns its buffer (not a shared numpy/Tensor one)
        self._host_value = value  # also inside a replica: a new variable starts from it
        self._copies = {}
        self._per_replica = True  # False: one value every replica shares (Keras metric state)
        self._id = _next_id()
        self._trainable = trainable
        self._name = f"{name or 'Variable'}:0"  # eager TF names every unnamed variable so

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def name(self) -> str:
        return self._name

    def _new_value(self, value, how: str):
        current = self._value
        if type(value) is Tensor:  # the common case (``v.assign_sub(lr * g)``)
            v = value._value
            if (type(v) is type(current) and v.dtype == current.dtype
                    and v.shape == current.shape):
                return v
        from .convert import to_array

        v = to_array(value, dtype=self._value.dtype, arg="value", op=f"Variable.{how}")
        if tuple(v.shape) != tuple(self._value.shape):
            raise ValueError(f"Variable.{how}: value must have shape {tuple(self._value.shape)}, "
                             f"got {tuple(v.shape)}")
        if backend.is_cupy_array(v) != backend.is_cupy_array(self._value):
            raise TypeError(f"Variable.{how}: value must be on the variable's device "
                            f"({self.device})")
        return v

    # A fresh buffer on every assignment keeps earlier reads (and tape residuals) immutable.
    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Set the value; shape and dtype stay fixed. Returns the variable."""
        if type(value) is _Product and self._apply_product(value, None):
            return self
        v = self._new_value(value, "assign")
        if _write_hook is not None:
            _write_hook(self)
        self._value = v if isinstance(value, (bool, int, float, list, tuple)) else v.copy()
        return self

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """Add ``delta`` to the value. Returns the variable."""
        if type(delta) is _Product and self._apply_product(delta, "add_product"):
            return self
        self._update(self._new_value(delta, "assign_add"), "add")
        return self

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        """Subtract ``delta`` from the value. Returns the variable."""
        if type(delta) is _Product and self._apply_product(delta, "sub_product"):
            return self
        self._update(self._new_value(delta, "assign_sub"), "subtract")
        return self

    def _apply_product(self, delta, kernel) -> bool:
        """``value -= a * s`` (``kernel`` "sub_product"), ``value += a * s`` ("add_product") or
        ``value = a * s`` (None) in place in one pass for a pending product ``delta``, no
        product array made (the same bits as computing it, then updating: the kernels round
        the product, then the sum, no fused multiply-add); False where ``_update`` would not
        update in place or the arrays do not fit (the caller then takes the general path)."""
        pending = _SLOT.__get__(delta)  # ``delta._pending()``, inlined
        if type(pending) is not tuple:
            return False
        a, s, scalar_first = pending
        value = self._host_value if not _slotted else self._value  # the property, inlined
        # ``_owns_buffer()``, inlined: ``value`` is one more reference to the buffer
        if (_allocation_hook is not None or sys.getrefcount(value) > _SOLE_OWNER_REFS + 1
                or type(value) is not np.ndarray or value.base is not None):
            return False
        flags = value.flags
        if (not flags.writeable or not flags.c_contiguous or value.dtype != a.dtype
                or value.shape != a.shape):
            return False
        if kernel is None:  # assign: the multiply op's own ufunc, written into the buffer
            if _write_hook is not None:
                return False
            with np.errstate(all="ignore"):
                if scalar_first:
                    np.multiply(s, a, out=value)
                else:
                    np.multiply(a, s, out=value)
        else:
            if not _optimizer_kernels:
                _optimizer_kernels.append(backend.kernels_for("optimizer", np))
            getattr(_optimizer_kernels[0], kernel)(value, a, s)
        if self._copies:
            self._copies.clear()
        return True

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        """Add ``sparse_delta`` (an IndexedSlices) to the rows it names, repeated indices
        adding in turn (TF's ResourceScatterAdd). Returns the variable."""
        self._scatter(sparse_delta, "scatter_add", False)
        return self

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        """Subtract ``sparse_delta`` (an IndexedSlices) from the rows it names. Returns the
        variable."""
        self._scatter(sparse_delta, "scatter_sub", True)
        return self

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        """Set the rows ``sparse_delta`` (an IndexedSlices) names to its values (for a
        repeated index one of them, as TF leaves it). Returns the variable."""
        self._scatter(sparse_delta, "scatter_update", None)
        return self

    def sparse_read(self, indices, name=None) -> Tensor:
        """The rows ``indices`` of the value (``gather``; its gradient is an
        IndexedSlices)."""
        return OPS["gather"](self, indices)

    def _scatter(self, sparse_delta, how: str, negate):
        """Write an IndexedSlices into the value: add it (``negate`` False), subtract it (True)
        or assign its rows (None); in place where ``_buffer_for_update`` allows."""
        from .convert import to_array
        from .indexed_slices import IndexedSlices

        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta}")
        value = self._value
        shape = tuple(value.shape)
        if not shape:
            raise ValueError(f"Variable.{how}: the variable must have rank >= 1, got a scalar")
        ids = to_array(sparse_delta.indices, arg="indices", op=f"Variable.{how}").reshape(-1)
        rows = to_array(sparse_delta.values, dtype=value.dtype, arg="values",
                        op=f"Variable.{how}")
        if tuple(rows.shape) != (ids.shape[0],) + shape[1:]:
            raise ValueError(f"Variable.{how}: values must have shape "
                             f"{[ids.shape[0], *shape[1:]]}, got {list(rows.shape)}")
        if backend.is_cupy_array(rows) != backend.is_cupy_array(value):
            raise TypeError(f"Variable.{how}: values must be on the variable's device "
                            f"({self.device})")
        xp = np if type(value) is np.ndarray else backend.xp_of(value)
        buffer = self._buffer_for_update()
        if not buffer.flags.c_contiguous:
            buffer = xp.ascontiguousarray(buffer)
        width = int(np.prod(shape[1:], dtype=np.int64))
        flat = buffer.reshape(shape[0], width)
        rows = xp.ascontiguousarray(rows).reshape(ids.shape[0], width)
        if negate is None:
            flat[ids] = rows
        else:
            k = backend.kernels_for("indexing", xp)
            k.scatter_add_rows(-rows if negate else rows, ids, flat)
        self._install_buffer(buffer)

    def _owns_buffer(self) -> bool:
        """Whether the value may be updated in place: nothing but this variable holds the
        buffer (no read Tensor, view, tape residual or exported array: each would hold a
        reference), so no earlier read can change, and no emulated program runs (the
        engine's allocation hook is set then: replicas in threads may update a shared host
        variable at once, and whole-buffer swaps keep that race as coarse as it was, one
        replica's update winning, instead of mixing elements). Call it holding no reference
        to the buffer."""
        return (_allocation_hook is None and sys.getrefcount(self._value) <= _SOLE_OWNER_REFS
                and self._value.base is None and getattr(self._value.flags, "writeable", True))

    def _update(self, delta, ufunc: str):
        in_place = self._owns_buffer() and delta is not self._value
        value = self._value
        xp = np if type(value) is np.ndarray else backend.xp_of(value)
        if in_place:  # only on the host (no program runs): replicas start again from it
            getattr(xp, ufunc)(value, delta, out=value)
            if self._copies:
                self._copies.clear()
        else:
            new = getattr(xp, ufunc)(value, delta)
            if _write_hook is not None:
                _write_hook(self)
            # numpy gives a 0-d result as a scalar: keep the variable's value an array
            self._value = np.asarray(new) if xp is np else new

    def _buffer_for_update(self):
        """The array a kernel may write this variable's next value into: its own buffer when
        ``_owns_buffer`` (the rule ``_update`` follows), else a fresh copy, which the caller
        installs with ``_install_buffer`` once written, so no earlier read, tape residual or
        replica thread ever sees a half-written buffer."""
        if self._owns_buffer():  # only on the host: replicas start again from the new value
            if self._copies:
                self._copies.clear()
            return self._value
        return self._value.copy()

    def _install_buffer(self, buffer) -> None:
        """Make ``buffer`` (from ``_buffer_for_update``, written) the value, if it is not
        already."""
        if buffer is not self._value:
            if _write_hook is not None:
                _write_hook(self)
            self._value = buffer

    def read_value(self) -> Tensor:
        """The current value as a Tensor that gradients flow through to the variable."""
        from . import tape

        tape.variable_accessed(self)
        return wrap(self._value, self._id)

    def value(self) -> Tensor:
        return self.read_value()

    def __repr__(self) -> str:
        values = np.array2string(np.asarray(self), separator=", ")
        return (f"<ipu_gpu.Variable '{self._name}' shape={tuple(self._value.shape)} "
                f"dtype={self.dtype.name}, numpy={values}>")
