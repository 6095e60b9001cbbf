"""Update ops made inside one branch of the cond a TF1 training tensor builds around a layer
(``Layer._call_per_training_tensor``: the layer called with ``training=True`` and with
``training=False``, a graph cond picking one per run).

Each update op (``add_update``) that a branch's call made becomes an op that runs it only in
the runs whose training value is that branch's: the update of the training call moves its
state only in runs fed True, as tf_keras's update ops built under ``smart_cond`` (an update
both calls make runs in every run, as tf_keras's unconditional one). The update and what it
reads inside the branch are evaluated afresh when it runs; what it reads outside the branch
comes from the run.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["Branch"]


def _modules():
    return sys.modules["ipu_gpu.graph.core"], sys.modules["ipu_gpu.graph.program"]


def _own_updates(layer) -> list:
    return layer.__dict__.get("_graph_updates") or []


class Branch:
    """The update ops ``layer`` (and its sublayers) add while the block runs, gated by
    ``gate`` once the cond is built."""

    def __init__(self, layer, graph):
        self.layer, self.graph = layer, graph
        self.before: dict = {}
        self.made: set = set()

    def __enter__(self):
        self.before = {id(sub): len(_own_updates(sub)) for sub in self.layer._flatten_layers()}
        self._start = len(self.graph._ops)
        return self

    def __exit__(self, *exc):
        self.made = {id(op) for op in self.graph._ops[self._start:]}
        return False

    def gate(self, pred, flag: bool) -> None:
        """Replace each update made in the branch by an op running it only in the runs where
        ``pred`` (a bool graph tensor) is ``flag``."""
        for sub in self.layer._flatten_layers():
            updates = _own_updates(sub)
            start = self.before.get(id(sub), 0)
            if len(updates) > start:
                updates[start:] = [self._gated(u, pred, flag) for u in updates[start:]]

    def _gated(self, update, pred, flag):
        core, program = _modules()
        op = update if isinstance(update, core.Operation) else update.op
        if id(op) not in self.made:  # made before the branch: not the branch's to gate
            return update
        inside = _reached(op, self.made)
        body = program.Body(self.graph, inside, [], [op], False)

        def run(the_run, p):
            if bool(np.asarray(p.numpy() if hasattr(p, "numpy") else p)) is flag:
                body.bind(the_run.values)()
            return []
        node = core.add_node(self.graph, "Cond", f"{op.name}_in_{'' if flag else 'non'}training",
                             [pred], run, [], pass_run=True)
        program._capture(node, self.graph, inside)
        return node


def _reached(op, made: set) -> set:
    """The ids of ``op`` and the operations of ``made`` it reads, through inputs and control
    inputs."""
    seen = {id(op)}
    stack = [op]
    while stack:
        node = stack.pop()
        for dep in [t.op for t in node.inputs] + list(node.control_inputs):
            if id(dep) in made and id(dep) not in seen:
                seen.add(id(dep))
                stack.append(dep)
    return seen
