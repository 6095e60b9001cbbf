"""A TF2 pipeline (``pipelining_ops.pipeline`` in a function run by ``IPUStrategy.run``) whose
function does device work before the pipeline call: on the IPU the function is traced once
and compiled, so that work happens once per call. ipu_gpu learns the pipeline's IPUs per
replica on the first call (``program_shards``) and reruns the function with them: the work
before the pipeline happens twice on that call. Strict xfail: documents the gap (issue 17)
and fails loudly once it is fixed."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.ipu import ipu_infeed_queue, ipu_outfeed_queue, ipu_strategy, pipelining_ops


@pytest.mark.xfail(strict=True, reason="program_shards reruns the first call with the "
                   "pipeline's shards: work before the pipeline call is done twice")
def test_work_before_the_pipeline_happens_once_per_call(fresh_ipu_system):
    from conftest import configure_ipus

    configure_ipus(2)
    x = np.arange(32, dtype=np.float32).reshape(16, 2)
    ds = ig.data.Dataset.from_tensor_slices(x).batch(2, drop_remainder=True)
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        counter = ig.Variable(0.0)

    @ig.function
    def step():
        counter.assign_add(1.0)
        return pipelining_ops.pipeline([lambda a: a * 2.0, lambda h: (ig.reduce_sum(h),)], 2,
                                       repeat_count=1, infeed_queue=infeed,
                                       outfeed_queue=outfeed)
    for _ in range(2):
        strategy.run(step)
    assert float(counter.numpy()) == 2.0
