"""TF1's ``tf.case`` and a graph-aware ``tf.Assert``.

``case`` is TF 1.15's ``control_flow_ops.case``: nested ``cond``s, the first true predicate
winning; without ``default`` the last pair's function is the default, guarded by an
``Assert`` that its predicate holds ("Input error: None of conditions evaluated as
True: ..."), and ``exclusive=True`` asserts, before anything else, that at most one
predicate holds. In a graph the assertions are nodes failing the run with TF's
``InvalidArgumentError`` ("assertion failed: [...] [...]"); eagerly they raise at once,
with eager TF's message (``ipu_gpu.debugging.Assert``).
"""

from __future__ import annotations

import collections

import numpy as np

from ...core import nest
from ...errors import InvalidArgumentError

__all__ = ["Assert", "case"]


def _graph_tensors(values) -> list:
    from ...graph import GraphTensor

    return [x for x in nest.flatten(list(values)) if isinstance(x, GraphTensor)]


def _summarize_graph(value, summarize) -> str:
    """One data item as TF's ``AssertOp`` kernel prints it: strings as they are, tensors as
    ``[v v v...]`` (the first ``summarize`` elements; booleans as 0/1)."""
    if isinstance(value, (str, bytes)):
        return value.decode() if isinstance(value, bytes) else value
    a = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if a.dtype == np.bool_:
        a = a.astype(np.int32)
    if a.ndim == 0:
        return _scalar_text(a[()])
    flat = [_scalar_text(v) for v in a.reshape(-1)[:summarize]]
    return "[" + " ".join(flat) + ("..." if a.size > summarize else "") + "]"


def _scalar_text(v) -> str:
    """A number as TF's ``StrCat`` writes it: floats the shortest of 6 or 9 significant
    digits that reads back to the same float32 (``1``, ``0.1``, ``-2.5``)."""
    if isinstance(v, (float, np.floating)):
        text = f"{v:.6g}"
        return text if np.float32(text) == np.float32(v) else f"{v:.9g}"
    return str(v)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """Asserts that ``condition`` is true (``tf.compat.v1.Assert``).

    On graph tensors (``condition`` or an item of ``data``) it is an operation that fails
    the run that executes it; otherwise it checks at once.

    Returns:
      In a graph, the assert operation; eagerly None.

    Raises:
      InvalidArgumentError: ``condition`` is False: in a graph when the operation runs
        ("assertion failed: [data] [data]"), eagerly at once (eager TF's message)."""
    from ... import debugging, graph

    data = list(data)
    if not _graph_tensors([condition, data]):
        return debugging.Assert(condition, data, summarize=summarize, name=name)
    g = graph.core._graph_of([condition, data])
    n = 3 if summarize is None else summarize
    n = 10**9 if n < 0 else n

    def check(cond, *items):
        if not bool(np.all(np.asarray(cond.numpy() if hasattr(cond, "numpy") else cond))):
            text = " ".join(f"[{_summarize_graph(d, n)}]" if isinstance(d, (str, bytes))
                            else _summarize_graph(d, n) for d in items)
            raise InvalidArgumentError(f"assertion failed: {text}")
        return []
    return graph.core.add_node(g, "Assert", name or "Assert", [condition, *data], check, [])


def _assert_at_most_n_true(predicates, n, msg):
    """TF's check that at most ``n`` of ``predicates`` hold."""
    import ipu_gpu as core

    preds_c = core.stack(list(predicates))
    num_true = core.reduce_sum(core.cast(preds_c, core.int32))
    names = ", ".join(getattr(p, "name", "?") for p in predicates)
    return Assert(core.less_equal(num_true, core.constant(n)),
                  [f"{msg}: more than {n} conditions ({names}) evaluated as True:", preds_c],
                  summarize=len(predicates))


def _with_dependencies(deps, fn):
    """``fn()`` under ``control_dependencies(deps)``: the nodes ``fn`` makes run after
    ``deps``; a tensor it returns from outside the graph (a constant, which TF would make a
    node there) passes through an identity node that does too. A graph tensor made before
    ``fn`` was called carries no dependency, as in TF."""
    from ... import graph
    from ...core.tensor import Tensor

    deps = [d for d in deps if d is not None]
    if not deps:
        return fn()
    g = deps[0].graph
    with graph.control_dependencies(deps):
        out = fn()

    def identity(t):
        if not isinstance(t, Tensor):
            return t
        return graph.core.add_node(g, "Identity", "Identity", [t], lambda v: v,
                                   [(t.dtype, list(t.shape))], control_inputs=deps).outputs[0]
    return nest.map_structure(identity, out)


def _default_action(predicates, actions):
    """TF's ``_case_create_default_action``: the last pair's function, run after asserting
    that its predicate holds and that none of the others does."""
    import ipu_gpu as core

    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]
    others, other_actions = predicates[:k], actions[:k]

    def default_action():
        others_msg = (f"Implementation error: selected default action #{k} was called, but "
                      "some of other predicates are True: ")
        checks = []
        if others:
            checks.append(_assert_at_most_n_true(others, 0, others_msg))
        checks.append(Assert(predicate, ["Input error: None of conditions evaluated as True:",
                                         core.stack(list(predicates))]))
        return _with_dependencies(checks, action)
    return default_action, others, other_actions


def _canonical_pairs(pred_fn_pairs, exclusive, name):
    """TF 1.15's ``_case_verify_and_canonicalize_args``."""
    from ... import graph
    from ...core.tensor import Tensor

    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError("fns must be a list, tuple, or dict")
    if isinstance(pred_fn_pairs, collections.OrderedDict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        if not graph.core.building():
            if not exclusive:
                raise ValueError("Unordered dictionaries are not supported for the "
                                 "`pred_fn_pairs` argument when `exclusive=False` and eager "
                                 "mode is enabled.")
            pred_fn_pairs = list(pred_fn_pairs.items())
        else:
            pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if isinstance(pred, (Tensor, graph.GraphTensor)):
            if np.dtype(pred.dtype.as_numpy_dtype if hasattr(pred.dtype, "as_numpy_dtype")
                        else pred.dtype) != np.bool_:
                raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        else:
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    predicates, actions = zip(*pred_fn_pairs)
    return list(predicates), list(actions)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """``tf.compat.v1.case``: the outputs of the function of the first pair whose predicate
    is true, else ``default()``.

    Args:
      pred_fn_pairs: a list of (boolean scalar tensor, callable) pairs, or a dict (in a
        graph its pairs are taken in the order of the predicates' names).
      default: a callable; None makes the last pair's function the default, run when no
        predicate holds and failing the run with "Input error: None of conditions
        evaluated as True" when its own predicate does not hold either.
      exclusive: when True, more than one true predicate fails the run.
      strict, name: as ``tf.cond`` (``name`` names nothing here).

    Raises:
      TypeError: ``pred_fn_pairs`` is not a list, tuple or dict, an entry is not a
        2-tuple, a predicate is not a boolean tensor, a function is not callable.
      ValueError: an unordered dict with ``exclusive=False`` in eager mode.
      InvalidArgumentError: (at run time, eagerly at once) the assertions above."""
    from ... import graph

    predicates, actions = _canonical_pairs(pred_fn_pairs, exclusive, name)
    if default is None:
        default, predicates, actions = _default_action(predicates, actions)
    fn = default
    for predicate, action in reversed(list(zip(predicates, actions))):
        fn = _nested(graph.program.cond, predicate, action, fn, strict)
    if exclusive:
        check = _assert_at_most_n_true(predicates, 1, "Input error: exclusive=True")
        return _with_dependencies([check], fn)
    return fn()


def _nested(cond, predicate, action, otherwise, strict):
    return lambda: cond(predicate, true_fn=action, false_fn=otherwise, strict=strict)
