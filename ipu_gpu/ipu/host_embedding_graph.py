"""Host embeddings in TF1 graphs (Graphcore's TF1 usage, ``docs/host_embedding_example.py``):
``create_host_embedding`` while a graph is built makes the table a graph variable
(``tf.compat.v1.get_variable`` on the CPU: initialized by
``global_variables_initializer``, saved by a ``Saver``); ``lookup`` inside
``ipu_compiler.compile`` is a node that, each time a Session runs it, reads rows from the
table registered by ``with embedding.register(sess):``; a
trainable lookup reads a scalar graph variable ``<name>/__dummy`` (trainable, zero), so
``Optimizer.minimize`` differentiates it and the lookup's backward sends
``-learning_rate * grad`` to the host table, as ``emulation/host_embedding.py`` describes for
eager programs. Registration takes the variable's value in the session (updated in place: a
``sess.run(embedding.get_embedding_tensor())`` after training shows the updates).

Running a lookup outside ``register`` raises RuntimeError when the Session runs it (the IPU
would find no host serving the table); registering before the table is initialized raises
``FailedPreconditionError``.
"""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..emulation import host_embedding as _eager
from ..errors import FailedPreconditionError
from ..graph import core as _graph_core
from ..graph.nodes import GraphVariable

__all__ = ["HostEmbedding", "HostEmbeddingScope", "create_host_embedding"]


class _Delivery:
    """The token of one lookup a Session ran: its update reaches the table once, however
    many times the run evaluates the lookup's backward (a graph's first run checks its
    recorded backward plan against the tape's gradient, evaluating both)."""

    def __init__(self, token):
        self.token = token
        self.delivered = False


class _OncePerRun:
    """A registered table (``emulation.host_embedding.HostTable``) as a graph's lookups use
    it: updates delivered once per looked-up batch."""

    def __init__(self, host):
        self._host = host

    def __getattr__(self, name):
        return getattr(self._host, name)

    def begin_step(self, tape):
        return _Delivery(self._host.begin_step(tape))

    def update(self, ids, updates, token):
        if token.delivered:
            return
        token.delivered = True
        self._host.update(ids, updates, token.token)


def _in_graph(*values) -> bool:
    return _graph_core.building() or any(isinstance(v, _graph_core.GraphTensor)
                                         for v in values)


class HostEmbedding(_eager.HostEmbedding):
    __doc__ = _eager.HostEmbedding.__doc__

    def __init__(self, name, embedding_tensor, partition_strategy="TOKEN", optimizer_spec=None):
        if not isinstance(embedding_tensor, GraphVariable):
            super().__init__(name, embedding_tensor, partition_strategy, optimizer_spec)
            self._dummies = {}
            return
        optimizer_spec = _eager._checked_spec(optimizer_spec, partition_strategy)
        self._init_table(name, embedding_tensor, partition_strategy, optimizer_spec,
                         np.dtype(embedding_tensor.dtype), embedding_tensor.shape, True,
                         "variable")
        self._dummies = {}

    def _graph_dummy(self, graph):
        """The trainable zero scalar of this embedding in ``graph`` (made once)."""
        dummy = self._dummies.get(graph)
        if dummy is None:
            import ipu_gpu.compat.v1 as v1

            dtype = self._embedding_tensor.dtype
            dummy = self._dummies[graph] = v1.Variable(
                np.zeros((), np.dtype(dtype)), trainable=True, name=f"{self._name}/__dummy")
        return dummy

    def register(self, session=None):
        """Creates a host embedding context manager bound to the given session (the table
        is the embedding variable's value in it; lookups the session runs inside the block
        read and train it).

        Returns:
          A ``HostEmbeddingScope``.
        """
        return HostEmbeddingScope(self, session)

    def lookup(self, indices, clip_indices=True):
        """Perform a host embedding lookup on an IPU: eagerly (see the eager class), or, in
        a TF1 graph, as a node run by each ``Session.run`` inside ``register``.

        Returns:
          The rows, of shape ``indices.shape + [embedding.shape[1]]``.

        Raises:
          TypeError: indices that are not int32.
        """
        if not _in_graph(indices, self._embedding_tensor):
            return super().lookup(indices, clip_indices)
        import ipu_gpu.compat.v1 as v1

        if not isinstance(indices, _graph_core.GraphTensor):
            indices = v1.convert_to_tensor(indices)
        if indices.dtype != dtypes.int32:
            raise TypeError(f"HostEmbedding.lookup: indices must be int32, got {indices.dtype}")
        rows, width = int(self._embedding_tensor.shape[0]), int(self._embedding_tensor.shape[1])
        trainable = self._optimizer_spec.get_learning_rate() != 0
        graph = v1.get_default_graph()
        inputs = [indices] + ([self._graph_dummy(graph)] if trainable else [])
        spec = self._optimizer_spec
        name = self._name

        def run(idx, dummy=None):
            from ..ops.embedding import host_embedding_lookup
            from ..ops.math import clip_by_value
            from ..ops.shape import reshape

            shape = list(idx.shape)
            if clip_indices:
                idx = clip_by_value(idx, 0, rows - 1)
            flat = reshape(idx, [-1])
            host = _OncePerRun(_eager.registered_table(name))
            if dummy is None:
                out = host_embedding_lookup(flat, host)
            else:
                out = host_embedding_lookup(flat, host, dummy=dummy,
                                            learning_rate=float(spec.get_learning_rate()))
            return reshape(out, shape + [width])

        shape = indices.shape.as_list() if indices.shape.rank is not None else None
        out_shape = None if shape is None else shape + [width]
        node = _graph_core.add_node(graph, "HostEmbeddingLookup", f"{name}/lookup", inputs, run,
                                    [(self._embedding_tensor.dtype, out_shape)])
        self._has_lookup = True
        return node.outputs[0]


class HostEmbeddingScope(_eager._HostEmbeddingScope):
    """The context manager ``HostEmbedding.register`` returns: the table is served to the
    device inside it (a graph variable's value in its session)."""

    def _table(self):
        table = self._parent._embedding_tensor
        if isinstance(table, GraphVariable):
            if table._variable is None:
                raise FailedPreconditionError(
                    f"Attempting to use uninitialized value {table.op.name}: run the "
                    f"initializer before HostEmbedding.register")
            table = table._variable
        return table


def create_host_embedding(name, shape, dtype, partition_strategy="TOKEN", optimizer_spec=None,
                          initializer=None):
    """Create a HostEmbedding: eagerly as ``emulation.host_embedding.create_host_embedding``
    describes; while a TF1 graph is built, its table is ``tf.compat.v1.get_variable(name,
    shape, dtype, initializer)`` on the CPU, as Graphcore's (Glorot-uniform by default; in
    the trainable variables, where optimizers find no gradient for it: the host updates it).

    Raises:
      TypeError, ValueError: as the eager function (shape, dtype, initializer,
        partition_strategy).
    """
    if not _graph_core.building():
        eager = _eager.create_host_embedding(name, shape, dtype, partition_strategy,
                                             optimizer_spec, initializer)
        return HostEmbedding(name, eager.get_embedding_tensor(), partition_strategy,
                             optimizer_spec)
    import ipu_gpu.compat.v1 as v1

    d = dtypes.as_dtype(dtype, "create_host_embedding: dtype")
    shape = _eager._table_shape(shape)
    with v1.device("cpu"):
        variable = v1.get_variable(name, shape=list(shape), dtype=d, initializer=initializer)
    return HostEmbedding(name, variable, partition_strategy=partition_strategy,
                         optimizer_spec=optimizer_spec)
