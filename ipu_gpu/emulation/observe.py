"""The run observer slot: where a higher layer (``ipu_gpu.report``'s recorder, installed by
``ipu-gpu run --report``) registers to hear what a run does.

Lower layers never import the observer's layer: each hook site reads ``observe.observer``
and calls it only when it is not None, so a run without a report pays one attribute read
per execution, step or call and creates nothing. The observer's methods (called from the
IPUs' worker threads too) are:

``execution(ipus, replica, replicas, begin, end, peaks)``: one replica's program ran on
``ipus`` (its shards) between the ``time.perf_counter`` values ``begin`` and ``end``;
``peaks`` is ``[(ledger, bytes at begin, peak bytes during)]`` of the IPU ledgers it charged.
``stage(ipu, replica, replicas, index, phase, begin, end, owned)``: pipeline stage ``index``
ran ``phase`` ("forward", or "backward": every stage's backward pass at once) of one
micro-batch on ``ipu`` (``engine.stage``); ``owned`` are the variables it read first.
``optimizer(opt)``: a pipeline applied ``opt`` (its slots sit beside the variables).
``poptorch_running(executor)``: the context manager a PopTorch call runs in.
``run_ended(end)``: every replica of an ``engine.run`` finished.
``samples(n, source, replicas)``: ``n`` training samples were consumed (``replicas`` run them).
``loss(value, source, steps)``: the program saw the training loss ``value`` after ``steps``
more steps.
``outfeed(structure, flat, replicas, names)``: an outfeed was dequeued to the host.
``fetched(tensors, values)``: a TF1 ``Session.run`` returned ``values`` for graph tensors.
"""

from __future__ import annotations

observer = None


def install(obs) -> None:
    """Make ``obs`` the observer (None removes it)."""
    global observer
    observer = obs


def uninstall() -> None:
    install(None)
