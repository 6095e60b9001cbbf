"""Run reports of pipelined programs, in process (issue 20): each stage's forward of each
micro-batch (and the backward pass) is a span on the IPU the stage is mapped to, for every
replica, in schedule order; every IPU the run uses has a memory peak, within the IPU's
memory, that includes the variables (and optimizer state) of the stages placed on it; and
recording changes no number the program computes. TF2 ``pipelining_ops.pipeline`` under
``IPUStrategy``, a Keras functional model in ``PipelineStage`` scopes, and a PopTorch model
in ``poptorch.Block`` scopes."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.emulation import observe, system, topology
from ipu_gpu.report import Recorder, figures, summary

IPU_MEMORY = topology.version_info("ipu2")["memory_bytes"]
RNG = np.random.default_rng(7)
X = RNG.standard_normal((256, 5)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0], np.float32))[:, None]
W1 = (RNG.standard_normal((5, 3)) * 0.5).astype(np.float32)
W2 = (RNG.standard_normal((3, 1)) * 0.5).astype(np.float32)
GA, REPEAT, EXECUTIONS, REPLICAS = 4, 2, 2, 2


def _recorded(run, record: bool):
    """``run()`` with a recorder installed (or none); returns (its result, the recorder)."""
    rec = Recorder() if record else None
    observe.install(rec)
    try:
        return run(), rec
    finally:
        observe.uninstall()


def _stage_spans(rec, replica, stage, phase="forward"):
    spans = [s for s in rec.spans if s.replica == replica and s.stage == stage
             and s.phase == phase]
    return sorted(spans, key=lambda s: s.micro_batch)


def _check_schedule(rec, micro_batches, backward=True):
    """Per replica: stage 0 and stage 1 on two IPUs of their own, every micro-batch's stage
    1 after its stage 0 (and its backward pass after stage 1); returns {replica: (IPU of
    stage 0, IPU of stage 1)}."""
    where = {}
    for r in range(REPLICAS):
        s0, s1 = _stage_spans(rec, r, 0), _stage_spans(rec, r, 1)
        assert [s.micro_batch for s in s0] == list(range(micro_batches))
        assert [s.micro_batch for s in s1] == list(range(micro_batches))
        assert len({s.row for s in s0}) == 1 and len({s.row for s in s1}) == 1
        assert s0[0].row != s1[0].row
        for a, b in zip(s0, s1):
            assert a.begin <= a.end <= b.begin <= b.end
        for a, b in zip(s0, s0[1:]):
            assert a.end <= b.begin
        if backward:
            back = _stage_spans(rec, r, 1, "backward")
            assert len(back) == micro_batches
            for f, b in zip(s1, back):
                assert f.end <= b.begin
        where[r] = (int(s0[0].row.split()[1]), int(s1[0].row.split()[1]))
    rows = [ipu for pair in where.values() for ipu in pair]
    assert len(set(rows)) == 2 * REPLICAS  # each replica's stages on IPUs of their own
    return where


def _check_memory(rec, where, stage_bytes, slot_factor):
    """Every IPU has a peak in (0, its memory]; the stage's variables and its optimizer's
    slots (``slot_factor`` times the variables) are counted on the stage's IPU."""
    s = summary.memory(rec)
    by_ipu = {m["ipu"]: m for m in s}
    assert sorted(by_ipu) == sorted(ipu for pair in where.values() for ipu in pair)
    for m in s:
        assert m["capacity_bytes"] == IPU_MEMORY
        assert 0 < m["peak_bytes"] <= m["capacity_bytes"]
    for pair in where.values():
        for stage, ipu in enumerate(pair):
            m = by_ipu[ipu]
            assert m["variable_bytes"] == stage_bytes[stage]
            assert m["optimizer_bytes"] == slot_factor * stage_bytes[stage]
            assert m["peak_bytes"] >= m["variable_bytes"] + m["optimizer_bytes"]
    samples = rec.memory_samples()
    # the tensors a stage makes are charged to its own IPU: both IPUs hold more than the
    # variables (the stage's activations, or the gradients of the backward pass)
    for pair in where.values():
        for ipu in pair:
            assert max(m.peak - m.resident for m in samples if m.ipu == ipu) > 0


# ---- TF2: pipelining_ops.pipeline under IPUStrategy ----------------------------------------
def _tf2_pipeline():
    from conftest import configure_ipus

    from ipu_gpu import keras
    from ipu_gpu.ipu import ipu_infeed_queue, ipu_outfeed_queue, ipu_strategy, pipelining_ops

    system.reset()
    configure_ipus(2 * REPLICAS)
    ds = ig.data.Dataset.from_tensor_slices((X, Y)).batch(4, drop_remainder=True)
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        w1, w2 = ig.Variable(W1), ig.Variable(W2)
        opt = keras.optimizers.Adam(0.01)

    def stage1(x, y):
        return ig.nn.relu(ig.matmul(x, w1)), y

    def stage2(h, y):
        return ig.reduce_mean((ig.matmul(h, w2) - y) ** 2)

    def optimizer_function(loss):
        return pipelining_ops.OptimizerFunctionOutput(opt, loss, variables=[w1, w2])

    def step():
        return pipelining_ops.pipeline([stage1, stage2], GA, repeat_count=REPEAT,
                                       infeed_queue=infeed, outfeed_queue=outfeed,
                                       optimizer_function=optimizer_function,
                                       outfeed_loss=True)
    losses = []
    for _ in range(EXECUTIONS):
        strategy.run(step)
        losses.append(np.asarray(outfeed.dequeue()))
    out = np.concatenate(losses), w1.numpy(), w2.numpy()
    system.reset()
    return out


def test_tf2_pipeline_stages_memory_and_numbers(fresh_ipu_system):
    (losses, w1, w2), rec = _recorded(_tf2_pipeline, True)
    assert rec.errors == []
    where = _check_schedule(rec, GA * REPEAT * EXECUTIONS)
    _check_memory(rec, where, (W1.nbytes, W2.nbytes), slot_factor=2)  # Adam: m and v
    (plain_losses, p1, p2), _ = _recorded(_tf2_pipeline, False)
    np.testing.assert_array_equal(losses, plain_losses)
    np.testing.assert_array_equal(w1, p1)
    np.testing.assert_array_equal(w2, p2)


def test_stage_spans_outside_a_replica_do_nothing(fresh_ipu_system):
    from ipu_gpu.emulation import engine

    rec = Recorder()
    observe.install(rec)
    try:
        with engine.stage(1, 1):
            ig.ones((3,))
    finally:
        observe.uninstall()
    assert rec.spans == [] and rec.memory == []


# ---- Keras: a functional model in PipelineStage scopes -------------------------------------
def _keras_pipeline():
    from conftest import configure_ipus

    from ipu_gpu import keras
    from ipu_gpu.ipu import ipu_strategy
    from ipu_gpu.keras import ipu as keras_ipu

    system.reset()
    configure_ipus(2 * REPLICAS)
    keras.utils.set_random_seed(3)
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        inputs = keras.Input(shape=(5,))
        with keras_ipu.PipelineStage(0):
            h = keras.layers.Dense(6, activation="relu")(inputs)
        with keras_ipu.PipelineStage(1):
            out = keras.layers.Dense(1)(h)
        model = keras.Model(inputs, out)
        model.set_pipelining_options(gradient_accumulation_steps_per_replica=GA)
        model.compile(loss="mse", optimizer=keras.optimizers.Adam(0.01),
                      steps_per_execution=GA * REPLICAS)
        ds = ig.data.Dataset.from_tensor_slices((X, Y)).batch(4, drop_remainder=True)
        history = model.fit(ds, epochs=1, steps_per_epoch=GA * REPLICAS * 2, verbose=0)
        weights = [w.numpy() for w in model.weights]
    system.reset()
    return history.history["loss"], weights


def test_keras_pipeline_stages_memory_and_numbers(fresh_ipu_system):
    (loss, weights), rec = _recorded(_keras_pipeline, True)
    assert rec.errors == []
    where = _check_schedule(rec, 2 * GA)  # two executions of GA micro-batches per replica
    stage_bytes = ((5 * 6 + 6) * 4, (6 * 1 + 1) * 4)
    _check_memory(rec, where, stage_bytes, slot_factor=2)
    (plain_loss, plain_weights), _ = _recorded(_keras_pipeline, False)
    assert loss == plain_loss
    for a, b in zip(weights, plain_weights):
        np.testing.assert_array_equal(a, b)


# ---- PopTorch: poptorch.Block stages ------------------------------------------------------
def _poptorch_pipeline(annotation="Block"):
    import torch

    from ipu_gpu import poptorch

    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(5, 6)
            self.second = torch.nn.Linear(6, 1)
            if annotation == "BeginBlock":  # automatic user ids, module hooks
                self.first = poptorch.BeginBlock(self.first, ipu_id=0)
                self.second = poptorch.BeginBlock(self.second, ipu_id=1)

        def forward(self, x, y):
            if annotation == "BeginBlock":
                out = self.second(torch.relu(self.first(x)))
                return out, poptorch.identity_loss((out - y) ** 2, reduction="mean")
            with poptorch.Block(ipu_id=0):
                h = torch.relu(self.first(x))
            with poptorch.Block(ipu_id=1):
                out = self.second(h)
                return out, poptorch.identity_loss((out - y) ** 2, reduction="mean")

    opts = poptorch.Options().replicationFactor(REPLICAS)
    opts.Training.gradientAccumulation(GA)
    net = Net()
    model = poptorch.trainingModel(net, opts,
                                   optimizer=poptorch.optim.SGD(net.parameters(), lr=0.01,
                                                                momentum=0.9))
    x, y = torch.from_numpy(X[:64]), torch.from_numpy(Y[:64])
    losses = []
    for k in range(2):
        part = slice(k * 32, (k + 1) * 32)
        _, loss = model(x[part], y[part])
        losses.append(loss.detach().numpy().copy())
    model.detachFromDevice()
    return losses, [p.detach().numpy().copy() for p in net.parameters()]


@pytest.mark.parametrize("annotation", ["Block", "BeginBlock"])
def test_poptorch_pipeline_stages_memory_and_numbers(annotation):
    pytest.importorskip("torch")
    (losses, params), rec = _recorded(lambda: _poptorch_pipeline(annotation), True)
    assert rec.errors == []
    where = _check_schedule(rec, 2 * GA)  # two calls, GA micro-batches per replica each
    assert where == {0: (0, 1), 1: (2, 3)}  # replica r's IPU i: r * 2 + i
    # momentum SGD: the gradients (accumulators) and one momentum buffer per parameter
    _check_memory(rec, where, ((5 * 6 + 6) * 4, (6 + 1) * 4), slot_factor=2)
    (plain_losses, plain_params), _ = _recorded(lambda: _poptorch_pipeline(annotation), False)
    for a, b in zip(losses + params, plain_losses + plain_params):
        np.testing.assert_array_equal(a, b)


def test_the_timeline_draws_the_stages(fresh_ipu_system, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib import image as mpimg

    _, rec = _recorded(_tf2_pipeline, True)
    names = figures.write_all(rec, str(tmp_path))
    for name in names:
        img = mpimg.imread(str(tmp_path / name))
        assert img.shape[:2] == (figures.SIZE[1], figures.SIZE[0])
    lo, hi = figures._zoom_window(rec.spans)
    last = max((s for s in rec.spans if s.stage == 0 and s.phase == "forward"),
               key=lambda s: s.begin)
    assert lo < hi and lo <= max(s.begin for s in rec.spans if s.stage >= 0)
    assert hi >= min(s.end for s in rec.spans if s.replica == last.replica and s.stage >= 0)


def _keras_sequential_mapped():
    """A Sequential model assigned by ``set_pipeline_stage_assignment`` with the stages
    mapped to the replica's IPUs in reverse (``device_mapping=[1, 0]``)."""
    from conftest import configure_ipus

    from ipu_gpu import keras
    from ipu_gpu.ipu import ipu_strategy

    system.reset()
    configure_ipus(2 * REPLICAS)
    keras.utils.set_random_seed(5)
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(6, activation="relu", input_shape=(5,)),
                                  keras.layers.Dense(1)])
        model.set_pipeline_stage_assignment([0, 1])
        model.set_pipelining_options(gradient_accumulation_steps_per_replica=GA,
                                     device_mapping=[1, 0])
        model.compile(loss="mse", optimizer=keras.optimizers.SGD(0.01),
                      steps_per_execution=GA * REPLICAS)
        ds = ig.data.Dataset.from_tensor_slices((X, Y)).batch(4, drop_remainder=True)
        model.fit(ds, epochs=1, steps_per_epoch=GA * REPLICAS, verbose=0)
        device = system.current_system().devices[0]
        shards = [[ipu.id for ipu in replica] for replica in device.replica_shards(2)]
    system.reset()
    return shards


def test_keras_device_mapping_places_the_stages(fresh_ipu_system):
    shards, rec = _recorded(_keras_sequential_mapped, True)
    assert rec.errors == []
    where = _check_schedule(rec, GA)
    for r, (stage0, stage1) in where.items():
        assert (stage0, stage1) == (shards[r][1], shards[r][0])
    _check_memory(rec, where, ((5 * 6 + 6) * 4, (6 + 1) * 4), slot_factor=0)  # SGD: none


def test_an_observer_installed_inside_a_stage_hears_only_later_stages(fresh_ipu_system):
    from conftest import configure_ipus

    from ipu_gpu.emulation import engine

    configure_ipus(2)
    rec = Recorder()

    def program():
        with engine.stage(1, 1):
            observe.install(rec)  # mid-stage: this stage is not reported
            ig.ones((3,))
        with engine.stage(1, 1):
            ig.ones((3,))
        return ig.ones(())

    try:
        engine.run(system.current_system().devices[0], program, num_shards=2)
    finally:
        observe.uninstall()
    assert rec.errors == []
    assert [(s.stage, s.micro_batch) for s in rec.spans if s.stage >= 0] == [(1, 0)]
