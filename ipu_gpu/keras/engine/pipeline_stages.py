"""Where a pipelined Keras model's layer calls run: each call of a pipelined model runs its
layers in stage order, and the layers of stage s (the IPU ``device_mapping[s]``, else s) charge
the tensors they make to that IPU of their replica (``emulation.engine.stage``), which a run
report also draws as a stage span; the backward pass (``ipu_execution._train_step``'s
gradients), which the emulator runs for every stage at once, charges the last stage's IPU.

``install(model, assignment, device_mapping)`` (the IPU runner of a pipelined model) records
the stages; ``switch(model)`` is what ``Functional._run_internal_graph`` asks per call (None
for an unpipelined model: one dictionary lookup); ``backward(model)`` is the context
the gradients are computed in.
"""

from __future__ import annotations

import contextlib
import weakref

from ...emulation import engine

_MAPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> _Map


class _Map:
    __slots__ = ("where", "last")

    def __init__(self):
        self.where: dict = {}  # id(node) or id(layer) -> (shard, stage)
        self.last = (0, 0)


def install(model, assignment, device_mapping) -> None:
    """Record the stage and IPU of every layer call in ``assignment`` (Graphcore's
    ``*PipelineStageAssignment`` objects; nested models get their own maps)."""
    mapping = list(device_mapping) if device_mapping else None
    m = _Map()
    _fill(model, list(assignment), mapping, m, None)
    if m.where:
        last = max(stage for _, stage in m.where.values())
        m.last = (mapping[last] if mapping and last < len(mapping) else last, last)
        _MAPS[model] = m


def _fill(model, assignment, mapping, m, outer) -> None:
    for a in assignment:
        if a.is_nested_model:
            inner = _Map()
            _fill(a.nested_model, a.pipeline_stage_assignments, mapping, inner, m)
            if inner.where:
                inner.last = m.last
                _MAPS[a.nested_model] = inner
                m.where.update(inner.where)  # the outer model's last stage counts them too
            continue
        stage = a.pipeline_stage
        if stage is None:
            continue
        shard = mapping[stage] if mapping and stage < len(mapping) else stage
        index = getattr(a, "node_index", None)
        layer = a.layer
        if index is not None and index < len(layer._inbound_nodes):
            m.where[id(layer._inbound_nodes[index])] = (shard, stage)
        else:
            m.where[id(layer)] = (shard, stage)


def uninstall(model) -> None:
    _MAPS.pop(model, None)


class _Switch:
    """Enters the stage of each node as the call reaches it (one stage open at a time)."""

    __slots__ = ("where", "current", "open")

    def __init__(self, where):
        self.where = where
        self.current = None
        self.open = None

    def __call__(self, node) -> None:
        where = self.where.get(id(node))
        if where is None:
            where = self.where.get(id(node.layer))
        if where is None or where == self.current:
            return
        self.close()
        self.current = where
        self.open = engine.stage(*where)
        self.open.__enter__()

    def close(self) -> None:
        if self.open is not None:
            opened, self.open = self.open, None
            opened.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def switch(model):
    """A ``_Switch`` for one call of ``model`` (None when it is not pipelined)."""
    if not _MAPS:
        return None
    m = _MAPS.get(model)
    return None if m is None else _Switch(m.where)


def backward(model):
    """The context of the backward pass: the last stage's IPU."""
    m = _MAPS.get(model) if _MAPS else None
    return contextlib.nullcontext() if m is None else engine.stage(*m.last, "backward")
