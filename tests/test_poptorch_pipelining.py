"""PopTorch's model parallelism: BeginBlock / Block / BlockFunction / removeBlocks, the
execution strategies' placement (``executor._placement``) and PopTorch's compile-time
checks, and the numbers: a pipelined model computes exactly what the plain model does."""

import copy
import logging
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402 - after the skip
from ipu_gpu.poptorch import blocks  # noqa: E402

F = torch.nn.functional


class Four(torch.nn.Module):
    """Four layers (Dropout and BatchNorm included) and a loss; ``act`` is shared by all."""

    def __init__(self, p=0.25):
        super().__init__()
        torch.manual_seed(0)
        self.l0 = torch.nn.Linear(6, 16)
        self.l1 = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(p))
        self.l2 = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.BatchNorm1d(16))
        self.l3 = torch.nn.Linear(16, 3)
        self.act = torch.nn.ReLU()

    def forward(self, x, y=None):
        x = self.act(self.l0(x))
        x = self.act(self.l1(x))
        x = self.act(self.l2(x))
        out = self.l3(x)
        if y is None:
            return out
        return out, F.cross_entropy(out, y)


def _annotated(model=None):
    model = model or Four()
    for ipu, name in enumerate(["l0", "l1", "l2", "l3"]):
        poptorch.BeginBlock(getattr(model, name), ipu_id=ipu)
    return model


def _opts(s=1, a=1):
    opts = poptorch.Options().deviceIterations(s)
    opts.Training.gradientAccumulation(a)
    return opts


class Mul(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k


class Chain(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.layers = torch.nn.ModuleList(Mul(k + 2) for k in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# ---- the annotations ------------------------------------------------------------------------
def test_annotations_outside_a_compilation_change_nothing():
    model = Four().eval()
    x = torch.randn(5, 6)
    before = model(x)
    assert _annotated(model) is model
    assert torch.equal(model(x), before)
    with poptorch.Block("A", ipu_id=3):
        poptorch.Block.useAutoId()
        poptorch.Block.start("B", 1)
        assert torch.equal(model(x), before)

    @poptorch.BlockFunction("f", ipu_id=1)
    def twice(t):
        """doc"""
        return t * 2
    assert torch.equal(twice(x), x * 2) and twice.__name__ == "twice"
    assert isinstance(poptorch.Block(), torch.nn.Module)


def test_begin_block_errors_and_legacy_functions():
    layer = torch.nn.Linear(2, 2)
    poptorch.BeginBlock(layer, "A", 0)
    assert repr(list(layer._forward_pre_hooks.values())[0]) == "BeginBlock(user_id=A, ipu_id=0)"
    with pytest.raises(poptorch.Error, match=r"^module has already been assigned to a block\.$"):
        poptorch.BeginBlock(layer, "B", 1)
    with pytest.raises(poptorch.Error,
                       match=r"^module is not an instance of torch.nn.Module or function\.$"):
        poptorch.BeginBlock(3)
    wrapped = poptorch.BeginBlock(lambda t: t + 1, ipu_id=1)
    assert isinstance(wrapped, blocks.LegacyBeginBlockFn)
    assert torch.equal(wrapped(torch.ones(2)), torch.full((2,), 2.0))


def test_remove_blocks_keeps_other_hooks():
    model = _annotated()
    calls = []
    model.l1.register_forward_pre_hook(lambda m, i: calls.append(1))
    poptorch.removeBlocks(model)
    assert all(not isinstance(h, blocks._BlockHook)
               for m in model.modules() for h in m._forward_pre_hooks.values())
    model(torch.randn(4, 6))
    assert calls == [1]
    poptorch.BeginBlock(model.l1, ipu_id=0)  # may be annotated again
    with pytest.raises(AssertionError):
        poptorch.removeBlocks(lambda t: t)


# ---- placement ------------------------------------------------------------------------------
def test_begin_block_places_every_later_layer_on_its_ipu():
    model = poptorch.inferenceModel(_annotated().eval(), _opts(s=4))
    model(torch.randn(8, 6))
    assert model._placement == {0: ["l0", "act"], 1: ["l1.0", "l1.1", "act"],
                                2: ["l2.0", "l2.1", "act"], 3: ["l3"]}
    record = model._placement_record
    assert [(b.user_id, b.stage, b.ipu) for b in record.blocks] == \
        [("0", 0, 0), ("1", 1, 1), ("2", 2, 2), ("3", 3, 3)]
    assert record.num_ipus == 4 and record.pipeline_stages == 4
    assert record.weights == {
        0: ["l0.weight", "l0.bias"], 1: ["l1.0.weight", "l1.0.bias"],
        2: ["l2.0.weight", "l2.0.bias", "l2.1.weight", "l2.1.bias", "l2.1.running_mean",
            "l2.1.running_var"], 3: ["l3.weight", "l3.bias"]}
    assert record.execution_mode == "pipelined"
    assert "addmm" in record.blocks[0].ops and "native_batch_norm" in "".join(
        record.blocks[2].ops)


def test_training_places_the_loss_with_the_last_block():
    model = poptorch.trainingModel(_annotated(), _opts(a=7))
    model(torch.randn(14, 6), torch.randint(0, 3, (14,)))
    assert model._placement[3] == ["l3", ""]  # "" is the root module (the loss)
    assert model._placement_record.pipeline_stages == 7


def test_layers_before_the_first_block_run_on_ipu_0():
    chain = Chain()
    poptorch.BeginBlock(chain.layers[2], ipu_id=1)
    model = poptorch.inferenceModel(chain, _opts(s=2))
    model(torch.randn(2, 3))
    assert model._placement == {0: ["layers.0", "layers.1"], 1: ["layers.2", "layers.3"]}
    assert [(b.user_id, b.stage) for b in model._placement_record.blocks] == \
        [(None, 0), ("0", 1)]


def test_inline_blocks_auto_increment():
    # PopTorch's pipelining_test.py::test_inline_AutoIncrement: stages 1..4 on IPUs 0,1,2,1
    class Model(torch.nn.Module):
        def forward(self, x):
            poptorch.Block.useAutoId()
            for ipu, k in zip([0, 1, 2, 1], [2, 3, 4, 5]):
                with poptorch.Block(ipu_id=ipu):
                    x = x * k
            return x
    opts = _opts(s=4).autoRoundNumIPUs(True)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    model = poptorch.inferenceModel(Model(), opts)
    model.compile(torch.randn(4, 5))
    assert [(b.user_id, b.stage, b.ipu, b.ops) for b in model._placement_record.blocks] == [
        ("0", 1, 0, ["mul"]), ("1", 2, 1, ["mul"]), ("2", 3, 2, ["mul"]), ("3", 4, 1, ["mul"])]
    assert model._placement_record.num_ipus == 4  # 3 used, rounded up


def test_a_legacy_begin_block_function_starts_a_block_when_called():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = Mul(2)
            self.second = poptorch.BeginBlock(lambda t: t + 1, ipu_id=1)

        def forward(self, x):
            return self.second(self.first(x)) * 3
    model = poptorch.inferenceModel(Model(), _opts(s=2))
    assert torch.equal(model(torch.ones(2, 1)), torch.full((2, 1), 9.0))
    assert [(b.user_id, b.ipu, b.ops) for b in model._placement_record.blocks] == \
        [(None, 0, ["mul"]), ("0", 1, ["add", "mul"])]
    assert model.model.second._user_id == "0"  # the automatic id is kept, as PopTorch does


def test_block_function_and_block_start():
    class Model(torch.nn.Module):
        def forward(self, x):
            poptorch.Block.useAutoId()
            x = self.first(x)
            poptorch.Block.start(ipu_id=1)
            return x * 2

        @poptorch.BlockFunction(ipu_id=0)
        def first(self, x):
            return x * 4
    model = poptorch.inferenceModel(Model(), _opts(s=2))
    assert torch.equal(model(torch.ones(2, 3)), torch.full((2, 3), 8.0))
    assert [(b.user_id, b.ipu) for b in model._placement_record.blocks] == [("0", 0), ("1", 1)]


def test_explicit_stages_choose_the_ipu():
    class Model(torch.nn.Module):
        def forward(self, x):
            with poptorch.Block("A"):
                x = x * 2
            with poptorch.Block("B", ipu_id=3):
                x = x + 1
            with poptorch.Block("C"):
                return x - 3
    opts = _opts(s=2)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(
        poptorch.Stage("A").ipu(0), poptorch.Stage("B", "C").ipu(1)))
    model = poptorch.inferenceModel(Model(), opts)
    model(torch.ones(2, 2))
    assert [(b.user_id, b.stage, b.ipu) for b in model._placement_record.blocks] == \
        [("A", 0, 0), ("B", 1, 1), ("C", 1, 1)]
    assert model._placement_record.pipeline_stages == 2

    opts = _opts(s=2)
    opts.setExecutionStrategy(poptorch.PipelinedExecution("A", "B"))
    with pytest.raises(AssertionError,
                       match=r"^Unknown Block 'C' list of expected Blocks: \['A', 'B'\]$"):
        poptorch.inferenceModel(Model(), opts).compile(torch.ones(2, 2))


def test_same_as_ipu_needs_an_ipu():
    class Model(torch.nn.Module):
        def forward(self, x):
            with poptorch.Block("A"):
                return x * 2
    with pytest.raises(AssertionError, match=r"^poptorch.AutoStage.SameAsIpu was selected but "
                                             r"no IPU was specified for block A$"):
        poptorch.inferenceModel(Model()).compile(torch.ones(2, 2))
    opts = poptorch.Options().setExecutionStrategy(
        poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement))
    model = poptorch.inferenceModel(Model(), opts)
    model.compile(torch.ones(2, 2))  # AutoIncrement: stage 1, on IPU 1 (the stage id)
    assert model._placement == {1: [""]} and model._placement_record.num_ipus == 2


# ---- PopTorch's compile-time errors ---------------------------------------------------------
def test_ops_outside_any_block():
    # PopTorch's pipelining_test.py::test_missing_block
    class Model(torch.nn.Module):
        def forward(self, x):
            poptorch.Block.useAutoId()
            with poptorch.Block(ipu_id=0):
                x = x * 4
            return x * 4
    opts = _opts(s=2)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    model = poptorch.inferenceModel(Model(), opts)
    with pytest.raises(poptorch.Error,
                       match=r"^No active Block, all the ops must belong to a Block$"):
        model.compile(torch.randn(2, 5))
    assert not model.isCompiled() and blocks._TRACE is None


def test_pipelined_training_needs_accumulation_of_the_stage_count():
    with pytest.raises(poptorch.Error, match=(
            r"^poptorch.Options\(\).Training.gradientAccumulation must be greater than or "
            r"equal to the number of pipeline stages \(7\) when using "
            r"poptorch.PipelinedExecution. Please note that a model with 4 pipeline stages in "
            r"PopTorch will have an additional 3 stages when training.$")):
        poptorch.trainingModel(_annotated(), _opts(a=6))(torch.randn(12, 6),
                                                         torch.randint(0, 3, (12,)))
    sharded = _opts(a=1).setExecutionStrategy(poptorch.ShardedExecution())
    poptorch.trainingModel(_annotated(), sharded)(torch.randn(2, 6), torch.randint(0, 3, (2,)))


def test_pipelined_inference_needs_device_iterations_of_the_stage_count():
    msg = (r"^poptorch.Options\(\).deviceIterations must be greater than or equal to the "
           r"number of pipeline stages \(4\) when using PopTorch.PipelinedExecution.$")
    with pytest.raises(poptorch.Error, match=msg):
        poptorch.inferenceModel(_annotated().eval(), _opts(s=3))(torch.randn(6, 6))
    # consecutive blocks on one IPU are one stage
    chain = Chain()
    for layer, ipu in zip(chain.layers, [0, 0, 1, 1]):
        poptorch.BeginBlock(layer, ipu_id=ipu)
    model = poptorch.inferenceModel(chain, _opts(s=2))
    model(torch.ones(2, 1))
    assert model._placement_record.pipeline_stages == 2


def test_ipu_count_must_be_a_power_of_two(caplog):
    chain = Chain(3)
    for ipu, layer in enumerate(chain.layers):
        poptorch.BeginBlock(layer, ipu_id=ipu)
    msg = (r"^The model specifies the use of 3 IPUs, however PopTorch must reserve a minimum "
           r"of 4 in order to allow the model to run, because PopTorch must reserve a power of "
           r"2 or maximum of 64 IPUs per process\. Please reconfigure your model to use a "
           r"different number of IPUs or set poptorch\.Options\(\)\.autoRoundNumIPUs\(True\)\.$")
    with pytest.raises(poptorch.Error, match=msg):
        poptorch.inferenceModel(chain, _opts(s=4))(torch.ones(4, 1))
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        model = poptorch.inferenceModel(chain, _opts(s=4).autoRoundNumIPUs(True))
        model(torch.ones(4, 1))
    assert "Reserving 4 IPUs when the model specifices the use of only 3" in caplog.text
    assert model._placement_record.num_ipus == 4
    model = poptorch.inferenceModel(chain, _opts(s=4).useIpuModel(True))  # the IPU model
    model(torch.ones(4, 1))
    assert model._placement_record.num_ipus == 3
    model = poptorch.inferenceModel(chain, _opts(s=4).useOfflineIpuTarget())
    model.compile(torch.ones(4, 1))  # offline compilation reserves no IPU either
    assert model._placement_record.num_ipus == 3
    # replicas count: 3 replicas of a one-IPU model are 3 IPUs
    with pytest.raises(poptorch.Error, match="specifies the use of 3 IPUs"):
        poptorch.inferenceModel(Mul(2), poptorch.Options().replicationFactor(3))(
            torch.ones(3, 1))
    with pytest.raises(poptorch.Error, match=r"^Too many IPUs requested \(128\). Experiments "
                                             r"that need more than 64 IPUs require distributed "
                                             r"execution.$"):
        poptorch.inferenceModel(Mul(2), poptorch.Options().replicationFactor(128))(
            torch.ones(128, 1))


def test_stage_ids_must_ascend_in_a_pipeline():
    chain = Chain(3)
    for ipu, layer in zip([0, 1, 0], chain.layers):
        poptorch.BeginBlock(layer, ipu_id=ipu)
    with pytest.raises(poptorch.Error, match=r"^Pipeline stages must be in ascending order: "
                                             r"block '2' \(stage 0\) uses a tensor computed in "
                                             r"stage 1\."):
        poptorch.inferenceModel(chain, _opts(s=3))(torch.ones(3, 1))
    opts = _opts(s=3).setExecutionStrategy(
        poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    model = poptorch.inferenceModel(chain, opts)
    assert torch.equal(model(torch.ones(3, 1)), torch.full((3, 1), 24.0))
    assert model._placement_record.pipeline_stages == 3 and model._placement == \
        {0: ["layers.0", "layers.2"], 1: ["layers.1"]}


def test_pipelined_weights_stay_on_one_ipu():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Linear(4, 4, bias=False)

        def forward(self, x):
            with poptorch.Block("A", ipu_id=0):
                h = self.emb(x)
            with poptorch.Block("B", ipu_id=1):
                return h @ self.emb.weight
    with pytest.raises(poptorch.Error, match=r"^Can not copy variable tensor emb.weight between "
                                             r"virtual graphs when pipelining"):
        poptorch.inferenceModel(Tied(), _opts(s=2)).compile(torch.ones(2, 4))
    sharded = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution())
    poptorch.inferenceModel(Tied(), sharded).compile(torch.ones(2, 4))


def test_phased_execution():
    class Model(torch.nn.Module):
        def forward(self, x):
            for name, k in zip(["A", "A2", "B", "B2"], [2, 3, 4, 5]):
                with poptorch.Block(name):
                    x = x * k
            return x
    serial = poptorch.SerialPhasedExecution(
        poptorch.Phase(poptorch.Stage("A"), poptorch.Stage("A2")),
        poptorch.Phase(poptorch.Stage("B"), poptorch.Stage("B2")))
    serial.phase(0).ipus(0, 1)
    serial.phase(1).ipus(0, 1)
    serial.setTensorsLiveness(poptorch.Liveness.OffChipAfterFwdNoOverlap)
    model = poptorch.inferenceModel(Model(), poptorch.Options().setExecutionStrategy(serial))
    assert torch.equal(model(torch.ones(1, 1)), torch.full((1, 1), 120.0))
    assert [(b.user_id, b.phase, b.ipu) for b in model._placement_record.blocks] == \
        [("A", 0, 0), ("A2", 0, 1), ("B", 2, 0), ("B2", 2, 1)]
    assert model._placement_record.execution_mode == "phased"
    assert model._placement_record.pipeline_stages is None

    parallel = poptorch.ParallelPhasedExecution(["A", "A2"], ["B", "B2"])
    parallel.phase(0).ipus(0)
    parallel.phase(1).ipus(2)  # an odd phase on an even IPU
    with pytest.raises(poptorch.Error, match=r"^When phases are executed in parallel: even "
                                             r"phases must run on even IPUs and odd phases on "
                                             r"odd IPUs$"):
        poptorch.inferenceModel(Model(), poptorch.Options().setExecutionStrategy(parallel)) \
            .compile(torch.ones(1, 1))
    parallel.phase(1).ipus(1)
    model = poptorch.inferenceModel(Model(), poptorch.Options().setExecutionStrategy(parallel))
    model(torch.ones(1, 1))
    assert model._placement == {0: [""], 1: [""]}


def test_sharded_execution_matches_the_native_model():
    # PopTorch's sharding_test.py::test_sharded_execution
    class Model(torch.nn.Module):
        def forward(self, x):
            for k in range(4):
                with poptorch.Block(f"{k}", ipu_id=k):
                    x = x * (k + 2)
            return x
    opts = poptorch.Options().setExecutionStrategy(
        poptorch.ShardedExecution(*[poptorch.Stage(f"{k}") for k in range(4)]))
    x = torch.randn(3, 7)
    out = poptorch.inferenceModel(Model(), opts)(x)
    assert torch.equal(out, Model()(x))


# ---- numbers --------------------------------------------------------------------------------
def _train_twice(net, x, y, s, a):
    opts = _opts(s, a).randomSeed(5)
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    return [model(x, y), model(x, y)]


def test_pipelined_training_equals_the_unpipelined_model_bit_for_bit():
    # a 4-block model over 4 IPUs, gradientAccumulation 8 (>= the 7 training stages), with
    # dropout (the device's random stream) and BatchNorm (buffers)
    s, a, b = 2, 8, 4
    torch.manual_seed(1)
    x, y = torch.randn(s * a * b, 6), torch.randint(0, 3, (s * a * b,))
    piped, plain = _annotated(), Four()
    piped_outs, plain_outs = _train_twice(piped, x, y, s, a), _train_twice(plain, x, y, s, a)
    for p, q in zip(piped.state_dict().values(), plain.state_dict().values()):
        assert torch.equal(p, q)
    for (o1, l1), (o2, l2) in zip(piped_outs, plain_outs):
        assert torch.equal(o1, o2) and torch.equal(l1, l2)


def test_pipelined_training_equals_a_plain_torch_loop_bit_for_bit():
    # torch.optim.Adam: the device applies torch's own update to torch's optimizers
    s, a, b = 2, 8, 4
    torch.manual_seed(1)
    x, y = torch.randn(s * a * b, 6), torch.randint(0, 3, (s * a * b,))
    piped, ref = _annotated(Four(p=0.0)), Four(p=0.0)
    model = poptorch.trainingModel(piped, _opts(s, a), torch.optim.Adam(piped.parameters(),
                                                                         lr=0.01))
    outs = [model(x, y), model(x, y)]
    opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    xs, ys = x.reshape(s, a, b, 6), y.reshape(s, a, b)
    for _ in range(2):
        for si in range(s):
            opt.zero_grad()
            for ai in range(a):
                out, loss = ref(xs[si, ai], ys[si, ai])
                (loss / a).backward()
            opt.step()
    for p, q in zip(piped.state_dict().values(), ref.state_dict().values()):
        assert torch.equal(p, q)
    assert torch.equal(outs[1][1], loss.detach()) and torch.equal(outs[1][0], out.detach())


def test_compile_leaves_buffers_and_random_streams_alone():
    net = _annotated()
    state = copy.deepcopy(net.state_dict())
    torch.manual_seed(3)
    model = poptorch.trainingModel(net, _opts(a=7))
    model.compile(torch.randn(14, 6), torch.randint(0, 3, (14,)))
    rng = torch.get_rng_state()
    torch.manual_seed(3)
    torch.randn(14, 6), torch.randint(0, 3, (14,))
    assert torch.equal(rng, torch.get_rng_state())
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
    assert model.isCompiled() and 0 in model._placement


# ---- a program in the style of Graphcore's pipelining tutorial -----------------------------
_PROGRAM = '''
import torch
import poptorch


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(),
                                        torch.nn.MaxPool2d(2))
        self.hidden = torch.nn.Linear(4 * 3 * 3, 32)
        self.act = torch.nn.ReLU()
        self.head = torch.nn.Linear(32, 4)
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, images, labels=None):
        with poptorch.Block("features"):
            x = self.conv(images)
        with poptorch.Block("flatten"):
            x = x.flatten(1)
        with poptorch.Block("hidden"):
            x = self.act(self.hidden(x))
        with poptorch.Block("head"):
            logits = self.head(x)
            if labels is None:
                return logits
            return logits, self.loss(logits, labels)


torch.manual_seed(0)
images = torch.randn(640, 1, 8, 8)
labels = (images.mean(dim=(1, 2, 3)) * 8).clamp(-1.99, 1.99).add(2).long()

opts = poptorch.Options()
opts.deviceIterations(2)
opts.Training.gradientAccumulation(8)
opts.setExecutionStrategy(poptorch.PipelinedExecution(
    poptorch.Stage("features").ipu(0), poptorch.Stage("flatten").ipu(1),
    poptorch.Stage("hidden").ipu(2), poptorch.Stage("head").ipu(3)))

model = Classifier()
training = poptorch.trainingModel(model, opts,
                                  optimizer=poptorch.optim.SGD(model.parameters(), lr=0.2))
per_call = 2 * 8 * 4
for epoch in range(3):
    for start in range(0, len(images), per_call):
        _, loss = training(images[start:start + per_call], labels[start:start + per_call])
    print("loss", float(loss))
print("placement", sorted(training._placement))
training.detachFromDevice()

inference_opts = opts.clone()
inference_opts.Training.gradientAccumulation(1)
inference_opts.deviceIterations(4)
inference = poptorch.inferenceModel(model, inference_opts)
predictions = inference(images[:16]).argmax(dim=1)
print("accuracy", float((predictions == labels[:16]).float().mean()))
'''


def test_a_pipelined_tutorial_program_trains_through_ipu_gpu_run(tmp_path):
    prog = tmp_path / "pipeline.py"
    prog.write_text(_PROGRAM)
    root = str(pathlib.Path(__file__).resolve().parents[1])
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(prog)], cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1"},
                       capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)

    # plain torch: the same model and data, the same 8 micro-batches per step
    namespace = {"poptorch": poptorch}  # Block is a no-op outside a compilation
    prefix = _PROGRAM.split("opts = poptorch.Options()")[0].replace("import poptorch\n", "")
    exec(compile(prefix, "prog", "exec"), namespace)
    images, labels = namespace["images"], namespace["labels"]
    ref = namespace["Classifier"]()  # the RNG stands where the program built its model
    opt = torch.optim.SGD(ref.parameters(), lr=0.2)
    for _ in range(3):
        for start in range(0, 640, 4 * 8):
            opt.zero_grad()
            for k in range(8):
                sl = slice(start + 4 * k, start + 4 * k + 4)
                _, loss = ref(images[sl], labels[sl])
                (loss / 8).backward()
            opt.step()
    losses = [float(line.split()[1]) for line in r.stdout.splitlines() if line[:4] == "loss"]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert losses[-1] == pytest.approx(loss.item(), rel=1e-5, abs=1e-6)
    assert lines["placement"] == "[0, 1, 2, 3]"
    with torch.no_grad():
        ref.eval()
        accuracy = (ref(images[:16]).argmax(dim=1) == labels[:16]).float().mean()
    assert float(lines["accuracy"]) == pytest.approx(float(accuracy)) and accuracy > 0.75


def test_the_trace_runs_as_on_the_ipu():
    seen = []

    class Model(torch.nn.Module):
        def forward(self, x):
            seen.append(poptorch.isRunningOnIpu())
            return x * 2
    model = poptorch.inferenceModel(Model())
    model.compile(torch.ones(1, 1))
    assert seen == [True]  # PopTorch's trace runs forward once, on the IPU
    model(torch.ones(1, 1))
    assert seen == [True, True]
