"""A training model's weights reach the host module when the host reads them, as PopTorch's
wrapper classes do (``host_sync``; issue 18): not copied after a call, copied on the first
read by any route (state_dict, parameters(), module attributes, a parameter or buffer
reference kept from before training, torch functions on it, a forward on the host module),
once; ``copyWeightsToHostIfNeeded`` says whether it copied; the module's class is
``Poptorch<Name>`` while wrapped; pickles and deep copies are plain; destroy() unwraps."""

from __future__ import annotations

import copy
import gc
import io
import pickle

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import ipu_gpu.poptorch as poptorch  # noqa: E402
from ipu_gpu.poptorch import host_sync  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)
        self.bn = nn.BatchNorm1d(5)
        self.out = nn.Linear(5, 3)

    def forward(self, x, y):
        o = self.out(torch.relu(self.bn(self.fc(x))))
        return o, nn.functional.cross_entropy(o, y)


def _data(n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=g), torch.randint(0, 3, (n,), generator=g)


def _trained(calls=2):
    """(wrapped module, executor, plain-torch twin after the same steps)."""
    torch.manual_seed(3)
    net = Net()
    twin = copy.deepcopy(net)
    model = poptorch.trainingModel(net, poptorch.Options().deviceIterations(2),
                                   torch.optim.SGD(net.parameters(), lr=0.25))
    opt = torch.optim.SGD(twin.parameters(), lr=0.25)
    for c in range(calls):
        x, y = _data(seed=c)
        model(x, y)
        for xs, ys in zip(x.chunk(2), y.chunk(2)):
            opt.zero_grad()
            twin(xs, ys)[1].backward()
            opt.step()
    return net, model, twin


def _assert_state(net_state, twin):
    want = twin.state_dict()
    assert set(net_state) == set(want)
    for k, v in want.items():
        torch.testing.assert_close(net_state[k], v, rtol=1e-6, atol=1e-7)


def _stale(net):
    """The host module's tensors as they are, without triggering the copy."""
    with host_sync.unwrapped(net):
        return {k: v.clone() for k, v in net.state_dict().items()}


def test_a_call_leaves_the_host_stale_and_a_read_copies_once():
    torch.manual_seed(3)
    net = Net()
    initial = copy.deepcopy(net.state_dict())
    _, model, twin = _trained()  # another module: only to check the wrapper on `net` below
    model.destroy()
    model = poptorch.trainingModel(net, poptorch.Options().deviceIterations(2),
                                   torch.optim.SGD(net.parameters(), lr=0.25))
    model(*_data(seed=0))
    model(*_data(seed=1))
    for k, v in _stale(net).items():  # nothing was copied by the calls
        assert torch.equal(v, initial[k]), k
    assert net.copyWeightsToHostIfNeeded() is True
    assert net.copyWeightsToHostIfNeeded() is False
    assert model.copyWeightsToHostIfNeeded() is False
    _assert_state(_stale(net), twin)


@pytest.mark.parametrize("route", [
    "state_dict", "parameters", "named_parameters", "buffers", "attribute", "nested_attribute",
    "kept_parameter", "kept_buffer", "torch_function", "host_forward", "data"])
def test_every_host_read_sees_the_trained_weights(route):
    torch.manual_seed(3)
    net = Net()
    kept_w, kept_mean = net.fc.weight, net.bn.running_mean
    twin = copy.deepcopy(net)
    model = poptorch.trainingModel(net, poptorch.Options().deviceIterations(2),
                                   torch.optim.SGD(net.parameters(), lr=0.25))
    opt = torch.optim.SGD(twin.parameters(), lr=0.25)
    x, y = _data()
    model(x, y)
    for xs, ys in zip(x.chunk(2), y.chunk(2)):
        opt.zero_grad()
        twin(xs, ys)[1].backward()
        opt.step()
    want_w, want_mean = twin.fc.weight.detach(), twin.bn.running_mean
    if route == "state_dict":
        got = net.state_dict()["fc.weight"]
    elif route == "parameters":
        got = next(iter(net.parameters())).detach()
    elif route == "named_parameters":
        got = dict(net.named_parameters())["fc.weight"].detach()
    elif route == "buffers":
        got = dict(net.named_buffers())["bn.running_mean"]
        want_w = want_mean
    elif route == "attribute":  # through the executor, as PopTorch forwards attributes
        got = model.fc.weight.detach()
    elif route == "nested_attribute":
        got = net.out.bias.detach()
        want_w = twin.out.bias.detach()
    elif route == "kept_parameter":
        got = kept_w.detach()
    elif route == "kept_buffer":
        got, want_w = kept_mean.clone(), want_mean
    elif route == "torch_function":
        assert torch.equal(kept_w, want_w)
        return
    elif route == "host_forward":
        net.eval()
        twin.eval()
        with torch.no_grad():
            got, want_w = net(x, y)[0], twin(x, y)[0]
    else:
        got = kept_w.data
    torch.testing.assert_close(got, want_w, rtol=1e-6, atol=1e-7)
    assert net.copyWeightsToHostIfNeeded() is False  # that read copied


def test_the_module_class_while_wrapped_and_after_destroy():
    net, model, twin = _trained()
    assert type(net).__name__ == "PoptorchNet" and isinstance(net, Net)
    assert host_sync.plain_type(net) is Net
    model.destroy()
    assert type(net) is Net
    assert all(type(p) is nn.Parameter for p in net.parameters())
    assert all(type(b) is torch.Tensor for b in net.buffers())
    _assert_state(net.state_dict(), twin)
    # unwrapped: it can be wrapped again, and runs on the trained weights
    again = poptorch.trainingModel(net, poptorch.Options().deviceIterations(2),
                                   torch.optim.SGD(net.parameters(), lr=0.25))
    again(*_data(seed=5))
    assert type(net).__name__ == "PoptorchNet"


def test_the_model_destroy_method_is_the_executor_s():
    net, model, twin = _trained()
    net.destroy()  # PopTorch adds destroy() to the wrapped module
    assert not model.isCompiled() and type(net) is Net
    _assert_state(net.state_dict(), twin)


def test_pickles_and_copies_are_plain_and_trained():
    net, model, twin = _trained()
    buf = io.BytesIO()
    torch.save(net, buf)
    loaded = torch.load(io.BytesIO(buf.getvalue()), weights_only=False)
    copied = copy.deepcopy(net)
    unpickled = pickle.loads(pickle.dumps(net))
    for other in (loaded, copied, unpickled):
        assert type(other) is Net
        assert all(type(p) is nn.Parameter for p in other.parameters())
        assert all(type(b) is torch.Tensor for b in other.buffers())
        _assert_state(other.state_dict(), twin)
    state = net.state_dict()
    assert all(type(v) is torch.Tensor for v in state.values())
    # a copy is its own module: the executor's next call leaves it as it was
    before = {k: v.clone() for k, v in copied.state_dict().items()}
    model(*_data(seed=9))
    for k, v in copied.state_dict().items():
        assert torch.equal(v, before[k])


def test_host_edits_after_a_read_stay_on_the_host_until_copied_to_the_device():
    net, model, twin = _trained()
    with torch.no_grad():
        net.fc.weight.zero_()  # the read copies first; the edit is the host's only
    model(*_data(seed=2))
    assert net.fc.weight.abs().sum() > 0  # the device's weights came back
    net.fc.weight.data.zero_()
    model.copyWeightsToDevice()
    x, y = _data(seed=3)
    out, _ = model(x, y)
    twin.load_state_dict(net.state_dict())
    # lr 0.25 on the zero weight moved it; the device ran from zero
    assert not torch.equal(net.fc.weight.detach(), torch.zeros(5, 6))


def test_an_inference_model_of_the_module_gets_the_trained_weights():
    net, model, twin = _trained()
    net.eval()  # the inference model's flags (the trainer's were fixed at compilation)
    infer = poptorch.inferenceModel(net)
    x, y = _data(seed=4)
    twin.eval()
    with torch.no_grad():
        want = twin(x, y)[0]
    torch.testing.assert_close(infer(x, y)[0], want, rtol=1e-6, atol=1e-6)
    model(*_data(seed=5))  # trains on; the inference model copies again on its next call
    infer(x, y)
    with torch.no_grad():
        torch.testing.assert_close(infer(x, y)[0], net(x, y)[0], rtol=0, atol=0)


def test_weights_survive_the_executor():
    net, model, twin = _trained()
    ref = model._host_sync
    del model
    gc.collect()
    assert ref.pending is not None
    _assert_state(net.state_dict(), twin)


def test_the_wrappers_do_not_keep_the_module_alive():
    net, model, _ = _trained()
    probe = [net]
    import weakref

    alive = weakref.ref(net)
    model.destroy()
    del net, model, probe
    gc.collect()
    assert alive() is None


def test_copy_weights_to_host_copies_and_counts():
    net, model, twin = _trained()
    assert model._host_version() == 0
    model.copyWeightsToHost()
    assert model._host_version() == 1
    assert net.copyWeightsToHostIfNeeded() is False
    _assert_state(_stale(net), twin)


def test_a_lazy_module_gets_its_weights_after_every_call():
    """Lazy modules' parameters change class when they materialise: no wrapper classes,
    the weights are written back after each call instead (the same values on the host)."""
    torch.manual_seed(4)

    class Lazy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.LazyLinear(3)

        def forward(self, x, y):
            o = self.fc(x)
            return o, nn.functional.mse_loss(o, y)

    net = Lazy()
    model = poptorch.trainingModel(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.5))
    x, y = torch.randn(4, 6), torch.randn(4, 3)
    model(x, y)
    assert type(net) is Lazy and model._host_sync is None
    assert type(net.fc.weight) is nn.Parameter and net.fc.weight.shape == (3, 6)
    assert not model.copyWeightsToHostIfNeeded()
    before = net.fc.weight.detach().clone()
    model(x, y)
    assert not torch.equal(net.fc.weight.detach(), before)  # already on the host


def test_parameters_of_two_wrapped_models_compare():
    a, _, _ = _trained()
    b, _, _ = _trained()
    for p, q in zip(a.parameters(), b.parameters()):
        assert type(p) is type(q)
        torch.testing.assert_close(p, q)


def test_copy_weights_to_device_right_after_a_call_keeps_the_trained_weights():
    """copyWeightsToDevice() reads the host module, which first gets the device's newer
    weights: the device goes on from them (ipu_gpu's choice; PopTorch would upload the
    stale host weights here)."""
    nets = []
    for upload in (False, True):
        net, model, _ = _trained()
        if upload:
            model.copyWeightsToDevice()
        model(*_data(seed=6))
        nets.append(net.state_dict())
    for k in nets[0]:
        assert torch.equal(nets[0][k], nets[1][k]), k
