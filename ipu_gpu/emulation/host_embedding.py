"""Host embeddings (Graphcore's ``ipu.embedding_ops.HostEmbedding`` and its optimizer specs):
an embedding table kept in host memory, looked up from the device, trained on the host.

How the emulation maps Graphcore's machinery (``kernels/datastream/host_embedding.cc``,
``docs/host_embedding.rst``):

* ``register()`` hands the table to a host runtime (``HostTable``) for the duration of the
  ``with`` block, as Graphcore's register/deregister instructions do. For a Variable the
  runtime works on the variable's own buffer, in place, as Graphcore's host runtime writes its
  ref variable: reads of the variable taken before ``register()`` keep their values, reads
  taken inside the block see later updates.
* ``lookup()`` clips (by default) and flattens the indices, then the runtime copies the rows
  from the host table onto the device of the indices (numpy or cupy).
* Training: a trainable lookup reads a scalar dummy variable (Graphcore's ``__dummy``). When a
  GradientTape differentiates that variable, which ``tape.watched_variables()`` and this
  object's ``trainable_variables`` include, the lookup's backward rule computes
  ``-learning_rate * grad`` and sends it with the indices to the runtime. The dummy's own
  gradient is 0. A gradient computation that does not ask for the dummy leaves the table
  alone, as on the IPU where the update belongs to the dummy's gradient.
* "SGD": the runtime adds each update row to its table row at once, in index order, so
  duplicate indices accumulate (``std::plus`` row by row in host_embedding.cc).
* "SGD+GA" (``HostEmbeddingSGDGAOptimizerSpec`` with accumulation_factor > 1): updates are
  buffered and applied together once every ``accumulation_factor`` mini-batches (the sum of
  the buffered ``-lr * grad``, not their mean). On the IPU the compiler places that notify in
  the gradient-accumulation resource update. Eagerly, a mini-batch is the set of lookups
  recorded on one GradientTape: it ends when the tape's gradient has delivered an update for
  every trainable lookup recorded on it (or, failing that, when a lookup runs under another
  tape, or at deregistration). ``HostTable.notify()`` applies the buffer at once; it is the
  hook the emulated training loops call. Updates of an accumulation step left incomplete at
  deregistration are discarded, as a resource update that never runs applies nothing.

Differences from Graphcore, all decided here: lookups and updates outside ``register()``
raise RuntimeError (the IPU has no host serving the table then); a trainable embedding must
be a floating-point Variable in host memory (ValueError), since its updates need a mutable
host buffer; ``partition_strategy`` is validated and kept but changes nothing (it only
decides where the rows live when remote buffers split the table between replicas).
``create_host_embedding`` without an initializer draws Glorot-uniform floats (TF's
``get_variable`` default; integers start at zero).
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ..core import backend, dtypes
from ..core.convert import convert_to_tensor
from ..core.allocation import AllocationGuard, check_allocation
from ..core.tensor import Tensor, Variable
from ..ops import embedding as _embedding
from ..ops.math import clip_by_value
from ..ops.shape import reshape

_TABLE_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32)
_OPTIMIZERS = ("SGD", "SGD+GA")
_REGISTERED: dict = {}  # embedding name -> HostTable while registered
_REGISTRY_LOCK = threading.Lock()


class HostTable:
    """The host runtime of one registered embedding: serves lookups and applies updates.

    ``table`` is a C-contiguous, writable 2-D numpy array, updated in place. Thread-safe:
    replicas (threads) may look up and update concurrently.
    """

    def __init__(self, name: str, table: np.ndarray, optimizer: str, accumulation_factor: int):
        self.name = name
        self.table = table
        self.optimizer = optimizer
        self.accumulation_factor = max(1, int(accumulation_factor))
        self.registered = True
        self._lock = threading.RLock()
        self._pending: list = []  # buffered (ids, updates) of SGD+GA
        self._steps = 0  # mini-batches closed since the last application
        self._open = None  # weakref to the tape of the mini-batch being received, or None
        self._received = 0
        self._expected = weakref.WeakKeyDictionary()  # tape -> trainable lookups recorded
        from ..kernels import embedding_cpu  # the host side always runs on the CPU

        self._kernels = embedding_cpu

    @property
    def rows(self) -> int:
        return self.table.shape[0]

    @property
    def dtype(self) -> np.dtype:
        return self.table.dtype

    def _require_registered(self, what: str):
        if not self.registered:
            raise RuntimeError(f"HostEmbedding {self.name!r}: {what} after leaving its "
                               f"register() context")

    # ---- lookups ------------------------------------------------------------------------
    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Rows ``table[ids]`` (a new array; out-of-range ids give zero rows)."""
        with self._lock:
            self._require_registered("a lookup")
            out = np.empty((ids.shape[0], self.table.shape[1]), self.table.dtype)
            self._kernels.embedding_fwd(self.table, ids, out)
        return out

    def begin_step(self, tape):
        """Note a trainable lookup recorded on ``tape`` (None: no tape); returns the token its
        update will carry."""
        if self.optimizer != "SGD+GA":
            return None
        with self._lock:
            if self._open is not None and (tape is None or self._open() is not tape):
                self._close_step()  # a lookup outside that tape: its mini-batch is over
            if tape is None:
                return None
            self._expected[tape] = self._expected.get(tape, 0) + 1
        return weakref.ref(tape)

    # ---- updates -------------------------------------------------------------------------
    def update(self, ids: np.ndarray, updates: np.ndarray, token) -> None:
        """Receive ``updates`` (already ``-lr * grad``, rows matching ``ids``)."""
        updates = np.ascontiguousarray(updates, self.table.dtype)
        with self._lock:
            self._require_registered("an update")
            if self.optimizer == "SGD":
                self._kernels.embedding_bwd(updates, ids, self.table, False)
                return
            tape = token() if token is not None else None
            if self._open is not None and (tape is None or self._open() is not tape):
                self._close_step()
            self._pending.append((ids, updates))
            if tape is None:
                self._close_step()
                return
            if self._open is None:
                self._open, self._received = token, 0
            self._received += 1
            if self._received >= self._expected.get(tape, 0):
                self._expected[tape] = 0  # a persistent tape may record another mini-batch
                self._close_step()

    def _close_step(self):
        self._open = None
        self._received = 0
        self._steps += 1
        if self._steps >= self.accumulation_factor:
            self.notify()

    def notify(self) -> None:
        """Apply every buffered update now (row by row, in arrival order) and start a new
        accumulation step: Graphcore's notify from the gradient-accumulation resource
        update."""
        with self._lock:
            for ids, updates in self._pending:
                self._kernels.embedding_bwd(updates, ids, self.table, False)
            self._pending = []
            self._steps = 0

    def close(self) -> None:
        """Deregister: finish the open mini-batch, drop an incomplete accumulation step."""
        with self._lock:
            if self._open is not None:
                self._close_step()
            self._pending = []
            self._steps = 0
            self.registered = False


def registered_table(name: str) -> HostTable:
    """The runtime serving embedding ``name`` (RuntimeError when it is not registered)."""
    table = _REGISTERED.get(name)
    if table is None:
        raise RuntimeError(f"HostEmbedding {name!r} is not registered: look it up inside "
                           f"`with embedding.register():`")
    return table


# ---- optimizer specs ----------------------------------------------------------------------------
class HostEmbeddingOptimizerSpec:
    """Description of the Host Embedding optimizer.

    Despite the embedding living on the host, we want to compute the gradients on the
    device. Additionally, the communication channel between the device and host is opaque to
    TensorFlow. For these reasons we need to describe the optimizer parameters separately.

    Currently only supports SGD.
    """

    def __init__(self, learning_rate, optimizer_name=None):
        """Create a HostEmbeddingOptimizerSpec.

        Args:
          learning_rate: The SGD learning rate.
          optimizer_name: "SGD" (the default) or "SGD+GA".
        """
        self._learning_rate = learning_rate
        self._optimizer_name = "SGD" if optimizer_name is None else optimizer_name

    def get_learning_rate(self):
        """Get the optimizer learning rate."""
        return self._learning_rate

    def _accumulation(self) -> int:
        return 1

    def create_lookup_instruction(self, embedding_tensor, indices, slot_vars,
                                  partition_strategy, name):
        """Create a lookup instruction: here, run the lookup of the flattened int32
        ``indices`` against the registered table ``name`` and return the rows on the device
        of ``indices``. A non-zero learning rate makes it trainable (see the module)."""
        host = registered_table(name)
        if self.get_learning_rate() == 0:
            return _embedding.host_embedding_lookup(indices, host)
        dummy = _dummy_variable(name, host.dtype,
                                backend.xp_of(getattr(indices, "_value", indices)))
        if backend.is_cupy_array(dummy._value) != backend.is_cupy_array(
                getattr(indices, "_value", indices)):
            indices = _on_device_of(indices, dummy._value)
        return _embedding.host_embedding_lookup(indices, host, dummy=dummy,
                                                learning_rate=float(self.get_learning_rate()))

    def create_register_instruction(self, embedding_tensor, slot_vars, name):
        """Create a register instruction: here, hand the table to a host runtime now (called
        when entering the ``HostEmbedding.register()`` context)."""
        if self._optimizer_name not in _OPTIMIZERS:
            raise ValueError(f"HostEmbedding: optimizer_name must be 'SGD' or 'SGD+GA', got "
                             f"{self._optimizer_name!r}")
        with _REGISTRY_LOCK:
            if name in _REGISTERED:
                raise RuntimeError(f"HostEmbedding {name!r} is already registered")
            if isinstance(embedding_tensor, Variable):
                # a private buffer, updated in place from now on (earlier reads keep theirs)
                embedding_tensor.assign(embedding_tensor._value)
                table = embedding_tensor._value
            else:
                table = np.ascontiguousarray(embedding_tensor._value)
            _REGISTERED[name] = HostTable(name, table, self._optimizer_name,
                                          self._accumulation())

    def create_deregister_instruction(self, embedding_tensor, slot_vars, name):
        """Create a deregister instruction: here, release the table now (called when
        exiting the ``HostEmbedding.register()`` context)."""
        with _REGISTRY_LOCK:
            table = _REGISTERED.pop(name, None)
        if table is not None:
            table.close()

    def create_slot_variables(self, embedding_tensor, name):
        """Create any required slot variables for this optimiser: SGD needs none."""
        return []


class HostEmbeddingSGDGAOptimizerSpec(HostEmbeddingOptimizerSpec):
    """Description of the Host Embedding optimizer that uses SGD and gradient accumulation."""

    def __init__(self, learning_rate, accumulation_factor):
        """Create a HostEmbeddingSGDGAOptimizerSpec.

        Args:
          learning_rate: The SGD learning rate.
          accumulation_factor: The gradient accumulation factor (number of mini-batches the
            gradients will be accumulated for).
        """
        super().__init__(learning_rate, "SGD+GA" if accumulation_factor > 1 else None)
        self._accumulation_factor = accumulation_factor

    def get_accumulation_factor(self):
        """Get the optimizer gradient accumulation factor."""
        return self._accumulation_factor

    def _accumulation(self) -> int:
        return int(self._accumulation_factor)


# ---- the embedding ---------------------------------------------------------------------------
_DUMMIES: dict = {}  # (embedding name, dtype) -> the scalar dummy variable, as variable_scope


def _dummy_variable(name, dtype, xp) -> Variable:
    """The trainable scalar that makes lookups of embedding ``name`` differentiable, created
    on ``xp``'s device the first time (one per name and dtype, as variable_scope reuse)."""
    key = (name, np.dtype(dtype).name)
    dummy = _DUMMIES.get(key)
    if dummy is None:
        dummy = _DUMMIES[key] = Variable(xp.zeros((), dtype), trainable=True,
                                         name=f"{name}/__dummy")
    return dummy


def _on_device_of(indices, anchor):
    a = getattr(indices, "_value", indices)
    if backend.is_cupy_array(anchor):
        return backend.xp_of(anchor).asarray(a)
    return a.get()  # syncs device


def _checked_spec(optimizer_spec, partition_strategy) -> HostEmbeddingOptimizerSpec:
    """``optimizer_spec`` (a not-trainable one for None), with Graphcore's ValueErrors for a
    spec of another type and an unknown ``partition_strategy``."""
    if not isinstance(optimizer_spec, (type(None), HostEmbeddingOptimizerSpec)):
        raise ValueError("HostEmbedding optimizer_spec is not a HostEmbeddingOptimizerSpec"
                         " or None")
    if optimizer_spec is None:
        optimizer_spec = HostEmbeddingOptimizerSpec(0)
    if partition_strategy not in ("TOKEN", "ENCODING"):
        raise ValueError("Unknown partition strategy " + str(partition_strategy))
    return optimizer_spec


class HostEmbedding:
    """Host Embedding wrapper.

    HostEmbedding encapsulates the embedding tensor and the additional meta-data required to
    coordinate the host embedding and the device lookup. Through an instance of this class,
    an IPU can perform lookups on an embedding that resides on the host.

    It is assumed that the given embedding will be rank two where the outermost dimension
    (dimension zero) is the token dimension, and the innermost dimension is the encoding
    dimension.
    """

    def __init__(self, name, embedding_tensor, partition_strategy="TOKEN", optimizer_spec=None):
        """Create a HostEmbedding.

        Args:
          name: The name which uniquely identifies the embedding.
          embedding_tensor: The tensor which holds the embedding: an ipu_gpu Tensor or
            Variable in host memory, rank 2, float16/float32/int32 (float64 accepted too).
            A trainable embedding must be a floating-point Variable.
          partition_strategy: "TOKEN" or "ENCODING" (only matters for remote-buffer
            embeddings split between replicas; kept, no effect here).
          optimizer_spec: A description of how the embedding will be optimized. When None,
            the embedding is assumed to not be trainable.

        Raises:
          ValueError: Graphcore's errors (not a tensor, a bad optimizer_spec, an unknown
            partition strategy) and ours (not in host memory, not rank 2, trainable but not a
            floating-point Variable).
          TypeError: a dtype other than float16/float32/float64/int32.
        """
        if not isinstance(embedding_tensor, Tensor):
            raise ValueError("HostEmbedding embedding_tensor is not a tensorflow tensor")
        optimizer_spec = _checked_spec(optimizer_spec, partition_strategy)
        value = embedding_tensor._value
        if backend.is_cupy_array(value):
            raise ValueError("HostEmbedding: embedding_tensor must be in host memory (a numpy "
                             "Tensor or Variable, as create_host_embedding makes), got a GPU "
                             "tensor")
        self._init_table(name, embedding_tensor, partition_strategy, optimizer_spec,
                         value.dtype, value.shape, isinstance(embedding_tensor, Variable),
                         type(embedding_tensor).__name__)

    def _init_table(self, name, embedding_tensor, partition_strategy, optimizer_spec, dtype,
                    shape, is_variable, kind):
        """Checks the table's ``dtype`` and ``shape`` (a trainable one must be a
        floating-point Variable; ``kind`` names what it is in the error) and keeps it."""
        if dtype not in _TABLE_DTYPES:
            raise TypeError(f"HostEmbedding: embedding_tensor must be float16, float32, float64 "
                            f"or int32, got {dtype}")
        if len(shape) != 2:
            raise ValueError(f"HostEmbedding: embedding_tensor must have rank 2 [tokens, "
                             f"encoding], got shape {list(shape)}")
        if optimizer_spec.get_learning_rate() != 0 and (not is_variable or dtype.kind != "f"):
            raise ValueError(f"HostEmbedding: a trainable embedding_tensor must be a "
                             f"floating-point Variable, got a {dtype} {kind}")
        self._name = name
        self._embedding_tensor = embedding_tensor
        self._partition_strategy = partition_strategy
        self._optimizer_spec = optimizer_spec
        self._has_lookup = False
        self._slot_vars = optimizer_spec.create_slot_variables(embedding_tensor, name)

    def get_embedding_tensor(self):
        """Retrieve the CPU bound embedding tensor."""
        return self._embedding_tensor

    @property
    def trainable_variables(self) -> list:
        """The variables a GradientTape must differentiate for host updates to happen: the
        dummy of a trainable embedding (an ipu_gpu addition; TF1 found it in the
        trainable-variables collection). Empty when not trainable."""
        if self._optimizer_spec.get_learning_rate() == 0:
            return []
        return [_dummy_variable(self._name, self._embedding_tensor.dtype, backend.default_xp())]

    def register(self, session=None):
        """Creates a host embedding context manager bound to the given session.

        Args:
          session: The session to register the embedding to (ipu_gpu always executes
            eagerly, so it is not needed and not used).

        Returns:
          A Python context manager object. This object manages the lifetime of the host
          embedding connection to the IPU: lookups and updates happen inside it.
        """
        return _HostEmbeddingScope(self, session)

    def __call__(self, *args, **kwargs):
        raise NotImplementedError("HostEmbedding.__call__ is not supported. Please use the "
                                  "context manager created with HostEmbedding.register.")

    def lookup(self, indices, clip_indices=True):
        """Perform a host embedding lookup on an IPU.

        Args:
          indices: The int32 indices to lookup.
          clip_indices: Whether to enforce a valid range on the lookup indices with clipping.
            When False, out-of-range values have undefined behaviour (here: zero rows and no
            update; ValueError with ``IPU_GPU_DEBUG=1``).

        Returns:
          A Tensor containing the elements requested by the user indices, of shape
          ``indices.shape + [embedding.shape[1]]``, on the device of ``indices``.
        """
        if not isinstance(indices, Tensor):
            indices = convert_to_tensor(indices)
        if indices.dtype != dtypes.int32:
            raise TypeError(f"HostEmbedding.lookup: indices must be int32, got {indices.dtype}")
        shape = list(indices.shape)
        if clip_indices:
            indices = clip_by_value(indices, 0, self._embedding_tensor.shape[0] - 1)
        flat = reshape(indices, [-1])
        result = self._optimizer_spec.create_lookup_instruction(
            self._embedding_tensor, flat, self._slot_vars, self._partition_strategy, self._name)
        self._has_lookup = True
        return reshape(result, shape + [self._embedding_tensor.shape[1]])


class _HostEmbeddingScope:
    """The context manager ``HostEmbedding.register`` returns."""

    def __init__(self, parent, session=None):
        self._parent = parent
        self._session = session

    def _table(self):
        """The table the device is served from."""
        return self._parent._embedding_tensor

    def __enter__(self):
        p = self._parent
        p._optimizer_spec.create_register_instruction(self._table(), p._slot_vars, p._name)
        return p

    def __exit__(self, exc_type, exc, tb):
        p = self._parent
        p._optimizer_spec.create_deregister_instruction(p._embedding_tensor, p._slot_vars,
                                                        p._name)
        return False


def _table_shape(shape) -> tuple:
    """create_host_embedding's shape: two sizes [tokens, encoding], as TF's get_variable
    checks a shape (TypeError for a non-integer size, ValueError for a negative or unknown
    one), checked before anything is allocated."""
    op = "create_host_embedding"
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a list of ints [tokens, encoding], got "
                        f"{shape!r}") from None
    for size in dims:
        if size is None:
            raise ValueError(f"{op}: shape must be fully defined, got {list(dims)}")
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"{op}: shape must be a list of ints [tokens, encoding], got "
                            f"{list(dims)}")
        if size < 0:
            raise ValueError(f"{op}: shape must not have negative sizes, got {list(dims)}")
    if len(dims) != 2:
        raise ValueError(f"{op}: shape must have rank 2 [tokens, encoding], got {list(dims)}")
    return tuple(int(size) for size in dims)


def create_host_embedding(name, shape, dtype, partition_strategy="TOKEN", optimizer_spec=None,
                          initializer=None):
    """Create a HostEmbedding.

    Args:
      name: The name which uniquely identifies the embedding.
      shape: The shape for the tensor which will hold the embedding.
      dtype: The dtype for the tensor which will hold the embedding.
      partition_strategy: When the IPU system is configured with an IPUConfig instance that
        has its ``experimental.enable_remote_buffer_embedding`` option set to True, and when
        using replication, the embedding must be distributed across the replicas. This option
        decides on which axis the embedding will be split. Options are "TOKEN" or "ENCODING".
      optimizer_spec: A description of how the embedding will be optimized. When None, the
        embedding is assumed to not be trainable.
      initializer: The initializer to use when creating the embedding tensor: a callable
        ``initializer(shape, dtype=dtype)`` or a value of that shape. None: Glorot-uniform
        floats (TF's default), zeros for integers.

    Returns:
      A HostEmbedding object that wraps the created embedding tensor (a Variable in host
      memory named ``name``).

    Raises:
      TypeError: a shape size that is not an int, or an unknown dtype.
      ValueError: a negative or unknown (None) size, a shape of rank other than 2, an
        initializer value of another shape, or an invalid partition_strategy.
      ResourceExhaustedError: the table does not fit in host memory.
    """
    d = dtypes.as_dtype(dtype, "create_host_embedding: dtype")
    shape = _table_shape(shape)
    op = "create_host_embedding"
    check_allocation(op, np, shape, d)
    with AllocationGuard(op, np):  # also an initializer's own allocation
        if initializer is None:
            if d.kind == "f":
                limit = np.sqrt(6.0 / max(1, shape[0] + shape[1]))
                value = np.random.default_rng().uniform(-limit, limit, shape).astype(d)
            else:
                value = np.zeros(shape, d)
        else:
            value = initializer(shape, dtype=d) if callable(initializer) else initializer
            value = np.asarray(getattr(value, "_value", value))
            if backend.is_cupy_array(value):
                value = value.get()
            if tuple(value.shape) != shape:
                raise ValueError(f"{op}: initializer must give shape {list(shape)}, got "
                                 f"{list(value.shape)}")
            value = value.astype(d, copy=False)
        value = np.ascontiguousarray(value)
    variable = Variable(value, name=name)
    return HostEmbedding(name, variable, partition_strategy=partition_strategy,
                         optimizer_spec=optimizer_spec)
