"""Run plans: the operations one evaluation of a graph computes, in the order a first
evaluation's dependency walk computed them, compiled into a flat list of calls.

An evaluation that starts from the same set of given values (fed tensors, values of an
enclosing run) computes the same operations in the same order, so the walk is done once and
later evaluations replay the plan. Each step calls the node's kernel bound once (the
registered op and its static arguments, or ``add_node``'s function) on the inputs read from
the run's values by position, without the per-node mapping, closure and registry lookups of
``Operation.compute``; a node whose inputs are nested structures, or whose compute was
replaced after it was made, is called through ``compute``. The values, the order and the
kernels are those of the walk, so the numbers are the same.

Nodes built under ``ipu.scopes.ipu_shard(k)`` (``Operation.shard``) run inside
``engine.on_shard(k)``, their tensors charged to the replica's IPU ``k``: a plan with such
nodes runs its steps in runs of one shard; a plan without runs them in one loop as before.
"""

from __future__ import annotations

import operator

__all__ = ["Plan"]


class Plan:
    """The steps computing ``order`` (a list of operations)."""

    __slots__ = ("steps", "groups", "tape_stable", "gradients", "records_fixed")

    def __init__(self, order):
        from ..core.registry import Op

        steps = []
        for node in order:
            k = node.kernel
            if k is not None and k.slots is not None and node.compute is k.compute:
                kind, data = _arguments(k.template, k.slots)
                steps.append((k.fn, k.kwargs, kind, data, k.pass_run, node.outputs, None))
            else:
                steps.append((None, None, None, None, False, node.outputs, node))
        self.steps = steps
        self.groups = _shard_groups(order, steps)
        # a registered op records as its inputs' types and dtypes say, which the graph fixes;
        # a gradients node, a variable read, a constant or a group records nothing: a replay
        # of such steps records the same ops, wired the same way, given the same kinds of
        # values (program.Body, Session.run)
        fixed = [(isinstance(step[0], Op) and step[6] is None) or _reads_tape(node)
                 or getattr(node, "records_nothing", False)
                 for node, step in zip(order, steps)]
        last = max((j for j, node in enumerate(order) if _reads_tape(node)), default=-1)
        self.gradients = last >= 0  # it has a gradients node
        self.records_fixed = all(fixed)  # every step is one of those
        self.tape_stable = last >= 0 and all(fixed[:last])  # every step before the last
        # gradients node is one of those

    def run(self, run) -> None:
        """Compute the steps in ``run`` (a session ``_Run``), storing their outputs in
        ``run.values``."""
        if self.groups is None:
            _run_steps(run, self.steps)
            return
        from ..emulation import engine

        for shard, steps in self.groups:
            if shard is None:
                _run_steps(run, steps)
            else:
                with engine.on_shard(shard):
                    _run_steps(run, steps)


_FIXED, _ONE, _ALL, _SOME = range(4)  # how a step reads its arguments (``_arguments``)


def _arguments(template: list, slots: list):
    """(kind, data): how a step makes its arguments from the run's values: ``_FIXED``, no
    graph tensor (data: the arguments); ``_ONE``, one graph tensor and nothing else (data:
    the tensor); ``_ALL``, several graph tensors and nothing else (data: an itemgetter of
    them); ``_SOME``, graph tensors among other values (data: (template, slots))."""
    if not slots:
        return _FIXED, tuple(template)
    if len(slots) == len(template):
        if len(slots) == 1:
            return _ONE, template[0]
        return _ALL, operator.itemgetter(*template)
    return _SOME, (template, slots)


def _reads_tape(node) -> bool:
    """Whether ``node`` is a ``gradients`` node (it reads the run's tape, records nothing)."""
    return getattr(node, "needs_tape", False) and node.type == "Gradients"


def _shard_groups(order, steps):
    """``[(shard, steps)]``: consecutive steps of one shard; None when no node has one."""
    shards = [getattr(node, "shard", None) for node in order]
    if all(k is None for k in shards):
        return None
    groups = []
    for k, step in zip(shards, steps):
        if groups and groups[-1][0] == k:
            groups[-1][1].append(step)
        else:
            groups.append((k, [step]))
    return groups


def _run_steps(run, steps) -> None:
    """Compute ``steps`` in ``run``."""
    values = run.values
    view = None
    for fn, kwargs, kind, data, pass_run, outputs, node in steps:
        if node is not None:
            if view is None:
                from .session import _RunValues

                view = _RunValues(run)
            out = node.compute(view)
        else:
            if kind == _ALL:
                args = data(values)
            elif kind == _ONE:
                args = (values[data],)
            elif kind == _FIXED:
                args = data
            else:
                template, slots = data
                args = list(template)
                for j, t in slots:
                    args[j] = values[t]
            if pass_run:
                out = fn(run, *args)
            elif kwargs is None:
                out = fn(*args)
            else:
                out = fn(*args, **kwargs)
            if not isinstance(out, (list, tuple)):
                if outputs:
                    values[outputs[0]] = out
                continue
        for t, v in zip(outputs, out):
            values[t] = v
