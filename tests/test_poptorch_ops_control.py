"""poptorch's control-flow and host ops (for_loop, cond, ipu_print_tensor,
ctc_beam_search_decoder, custom_op, CPU, set_overlap_for_input/output, isRunningOnIpu):
values against plain PyTorch and numpy references, PopTorch's printed text and errors, and a
program using them through ipu-gpu run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import ctc_decoder as ref

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402
from ipu_gpu.poptorch._print_format import format_tensor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class _Fn(torch.nn.Module):
    """A module whose forward is ``fn`` (so a test can wrap any function)."""

    def __init__(self, fn, weight=False):
        super().__init__()
        self.fn = fn
        if weight:
            self.w = torch.nn.Parameter(torch.ones(()))

    def forward(self, *args):
        return self.fn(self, *args)


def _infer(fn):
    return poptorch.inferenceModel(_Fn(fn))


def _fmt(a, **kw):
    opts = dict(summarise_threshold=1000, edge_items=3, max_line_width=80, digits=4,
                float_format="auto", separator=" ", open_bracket="[", close_bracket="]")
    opts.update(kw)
    return format_tensor(np.asarray(a), **opts)


# ---- isRunningOnIpu -------------------------------------------------------------------------
def test_is_running_on_ipu_only_inside_a_wrapped_model():
    seen = []

    def fn(self, x):
        seen.append(poptorch.isRunningOnIpu())
        return poptorch.identity_loss(x * self.w, "sum")

    model = _Fn(fn, weight=True)
    model(torch.ones(2))
    poptorch.inferenceModel(model)(torch.ones(2))
    poptorch.trainingModel(_Fn(fn, weight=True))(torch.ones(2))
    # the first is the direct call; a wrapped model may also run forward in its
    # compile-time trace, as PopTorch traces with isRunningOnIpu() True
    assert seen[0] is False and len(seen) >= 3 and all(seen[1:])
    assert poptorch.isRunningOnIpu() is False


# ---- ipu_print_tensor -----------------------------------------------------------------------
# PopTorch's ipu_print_tensor_test.py: the exact text for three formats of x + 1,
# x = torch.rand(2, 2) after torch.manual_seed(0).
_POPTORCH_EXPECTED = [
    ("title", True, 1000, 3, 75, 8, "auto", " ", "{", "}",
     "title: {\n {1.4962566 1.7682219}\n {1.0884774 1.1320305}\n}"),
    ("title", True, 500, 2, 15, 8, "scientific", ",", "[", "]",
     "title: [\n [1.4962566e+00,\n   1.7682219e+00]\n [1.0884774e+00,\n   1.1320305e+00]\n]"),
    ("title", True, 1500, 1, 125, 8, "fixed", ";", "(", ")",
     "title: (\n (1.4962566;1.7682219)\n (1.0884774;1.1320305)\n)"),
]


@pytest.mark.parametrize("case", _POPTORCH_EXPECTED)
def test_print_tensor_prints_poptorchs_expected_text(capfd, case):
    *args, expected = case

    def fn(self, x):
        x = x + 1
        return poptorch.ipu_print_tensor(x, *args) + self.w

    model = poptorch.inferenceModel(_Fn(fn, weight=True))
    torch.manual_seed(0)
    x = torch.rand((2, 2))
    out = model(x)
    err = capfd.readouterr().err
    assert expected in err
    np.testing.assert_allclose(out.numpy(), x.numpy() + 2, rtol=1e-6)


def test_print_tensor_prints_the_gradient_in_training(capfd):
    def fn(self, x):
        y = poptorch.ipu_print_tensor(x * self.w, "act", digits=3, separator=" ",
                                      open_bracket="[", close_bracket="]")
        return poptorch.identity_loss((y * torch.tensor([1.0, 2.0, 3.0])).sum(), "sum")

    poptorch.trainingModel(_Fn(fn, weight=True))(torch.tensor([0.5, 1.5, 2.5]))
    err = capfd.readouterr().err
    assert "act: [0.50 1.50 2.50]\n" in err
    # d loss / d y = [1, 2, 3]
    assert "act_gradient: [1.00 2.00 3.00]\n" in err

    def quiet(self, x):
        y = poptorch.ipu_print_tensor(x * self.w, "act", print_gradient=False)
        return poptorch.identity_loss(y.sum(), "sum")

    poptorch.trainingModel(_Fn(quiet, weight=True))(torch.ones(3))
    err = capfd.readouterr().err
    assert "act: " in err and "act_gradient" not in err


def test_print_tensor_is_an_identity_that_prints_only_on_the_ipu(capfd):
    x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    out = poptorch.ipu_print_tensor(x, "t")
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy())
    assert torch.autograd.gradcheck(lambda t: poptorch.ipu_print_tensor(t, "t"), (x,))
    assert capfd.readouterr().err == ""  # PopTorch's CPU path prints nothing
    _infer(lambda self, t: poptorch.ipu_print_tensor(t))(torch.tensor([1, 2], dtype=torch.int32))
    assert capfd.readouterr().err == "tensor: (1,2)\n"  # first character of ", " separates


def test_print_format_layout():
    assert _fmt(np.array([5, 7, 9], np.int32)) == "[5 7 9]"
    assert _fmt(np.array([6, 9, 12], np.int32)) == "[ 6  9 12]"  # PopART's printtensor test
    assert _fmt(np.array(2.5, np.float32)) == "2.500"
    assert _fmt(np.array([True, False])) == "[1 0]"
    assert _fmt(np.array([[1.0, 2.0]], np.float32), digits=8) == "[\n [1.0000000 2.0000000]\n]"
    assert _fmt(np.zeros((1, 2, 1), np.int32)) == "[\n [\n  [0]\n  [0]\n ]\n]"
    assert _fmt(np.array([1.0, -np.inf, np.nan], np.float32)) == "[1.000  -inf   nan]"
    assert _fmt(np.array([12.5, 3.25]), digits=4) == "[12.50  3.25]"
    assert _fmt(np.array([1e9, 1.0]), digits=3) == "[1.00e+09 1.00e+00]"  # auto: wide range
    assert _fmt(np.array([0.1, 22.0]), digits=3, float_format="none") == "[0.1  22]"
    assert _fmt(np.array([0.5, 10.0]), digits=0) == "[0.5 10]"
    assert _fmt(np.array([999.96, 1.0]), digits=4) == "[1000    1]"  # carry: 4 digits
    assert _fmt(np.array([1.0, 2.0]), separator=", ", open_bracket="<<",
                close_bracket=">>") == "<1.000,2.000>"


def test_print_format_summarises_and_wraps():
    a = np.arange(20, dtype=np.int32)
    assert _fmt(a, summarise_threshold=10, edge_items=2) == "[ 0  1 ... 18 19]"
    assert _fmt(a, summarise_threshold=0) == "[" + " ".join(f"{v:2d}" for v in a) + "]"
    b = np.arange(12, dtype=np.int32).reshape(6, 2)
    assert _fmt(b, summarise_threshold=4, edge_items=1) == "[\n [ 0  1]\n ...\n [10 11]\n]"
    # the break comes after the separator; the line up to it fits (as PopTorch's test shows)
    wrapped = _fmt(np.arange(6, dtype=np.int32), max_line_width=8)
    assert wrapped == "[0 1 2 3 \n  4 5]"
    assert all(len(line.rstrip(" ")) <= 8 for line in wrapped.split("\n"))
    assert _fmt(np.arange(6, dtype=np.int32), max_line_width=0) == "[0 1 2 3 4 5]"


def _last_place(piece):
    """The value of one unit in the last printed digit of ``piece``."""
    mantissa, _, exponent = piece.strip().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (-decimals + (int(exponent) if exponent else 0))


@settings(deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=1,
                       max_size=12),
       digits=st.integers(1, 8), mode=st.sampled_from(["fixed", "scientific", "auto"]))
def test_print_format_reads_back_within_its_digits(values, digits, mode):
    a = np.array(values, np.float32)
    text = _fmt(a, digits=digits, float_format=mode, max_line_width=0, separator=";")
    assert text[0] == "[" and text[-1] == "]"
    pieces = text[1:-1].split(";")
    assert len(pieces) == a.size
    assert len({len(p) for p in pieces}) == 1  # one width: every element aligned
    for piece, v in zip(pieces, a.astype(np.float64)):
        assert abs(float(piece) - v) <= 0.5 * _last_place(piece) * (1 + 1e-9)
        mantissa = piece.strip().lstrip("-").partition("e")[0]
        if "e" in piece:  # digits significant digits in the mantissa
            assert len(mantissa.replace(".", "")) == digits
    if mode == "fixed":  # the largest magnitude shows digits digits (or all its integer ones)
        big = pieces[int(np.argmax(np.abs(a)))].strip().lstrip("-")
        assert len(big.replace(".", "")) == max(digits, len(big.partition(".")[0]))


def test_print_tensor_errors():
    with pytest.raises(poptorch.Error, match="ipu print tensor must take a torch.tensor "
                                             "argument. <class 'list'> is not supported."):
        poptorch.ipu_print_tensor([1.0])
    with pytest.raises(KeyError):
        poptorch.ipu_print_tensor(torch.ones(1), float_format="engineering")
    with pytest.raises(poptorch.Error, match="digits must be a non-negative integer"):
        poptorch.ipu_print_tensor(torch.ones(1), digits=-1)
    with pytest.raises(poptorch.Error, match="edge_items must be a non-negative integer"):
        poptorch.ipu_print_tensor(torch.ones(1), edge_items=1.5)
    with pytest.raises(poptorch.Error, match="title must be a string"):
        poptorch.ipu_print_tensor(torch.ones(1), 3)


# ---- for_loop ---------------------------------------------------------------------------------
def test_for_loop_runs_count_times_in_a_model():
    out = _infer(lambda self, x: poptorch.for_loop(10, lambda v: v * 2, [x])[0])(
        torch.tensor([1.0]))
    assert out.item() == 2.0 ** 10

    def fn(self, x, y, z, w):
        return poptorch.for_loop(10, lambda x, y, z, w: (x * y, y + z, x * w, w + 1),
                                 [x, y, z, w])

    args = [torch.tensor([v], dtype=torch.float64) for v in (0.1, 0.2, 0.3, 0.4)]
    got = _infer(fn)(*args)
    x, y, z, w = (a.clone() for a in args)
    for _ in range(10):
        x, y, z, w = x * y, y + z, x * w, w + 1
    for mine, host in zip(got, (x, y, z, w)):
        np.testing.assert_allclose(mine.numpy(), host.numpy(), rtol=1e-12)


def test_for_loop_passes_inputs_by_value():
    def fn(self, x):
        def body(y):
            y += 1
            return y
        return poptorch.for_loop(3, body, [x])[0]

    x = torch.ones(1, 5, dtype=torch.int32)
    out = _infer(fn)(x)
    np.testing.assert_array_equal(x.numpy(), np.ones((1, 5)))
    np.testing.assert_array_equal(out.numpy(), np.full((1, 5), 4))
    assert isinstance(poptorch.for_loop(0, lambda v: v, [x]), list)


def test_for_loop_gradient_outside_a_model():
    w = torch.randn(3, 3, dtype=torch.float64)

    def f(x):
        return poptorch.for_loop(3, lambda v: torch.tanh(w @ v), [x])[0]

    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    expected = x.detach()
    for _ in range(3):
        expected = torch.tanh(w @ expected)
    np.testing.assert_allclose(f(x).detach().numpy(), expected.numpy(), rtol=1e-12)
    assert torch.autograd.gradcheck(f, (x,))


def test_for_loop_errors():
    x = torch.ones(1)
    with pytest.raises(ValueError, match=r"\(Object is not list\)"):
        poptorch.for_loop(2, lambda v: v, x)
    with pytest.raises(ValueError, match=r"\(Object contained in list at index 1 is not "
                                         r"torch.tensor\)"):
        poptorch.for_loop(2, lambda a, b: (a, b), [x, 5])
    with pytest.raises(poptorch.Error, match="count must be a non-negative integer"):
        poptorch.for_loop(2.0, lambda v: v, [x])
    with pytest.raises(poptorch.Error, match=r"return as many tensors as it takes \(1\), "
                                             "got 2"):
        poptorch.for_loop(2, lambda v: (v, v), [x])
    with pytest.raises(poptorch.Error, match="must be a torch.float32 tensor of shape"):
        poptorch.for_loop(2, lambda v: torch.cat([v, v]), [x])

    def train(self, x):
        out = poptorch.for_loop(2, lambda v: v * self.w, [x])[0]
        return out, poptorch.identity_loss(out, "sum")

    with pytest.raises(poptorch.Error,
                       match=r"poptorch.for_loop\(\) is only supported in inference."):
        poptorch.trainingModel(_Fn(train, weight=True))(torch.ones(1, 4))


# ---- cond -------------------------------------------------------------------------------------
def _multi_outs(self, condition, x, y):
    return poptorch.cond(condition, lambda a: (a, x + y, y), [x],
                         lambda b: (b * y, y, x - y), [y])


@pytest.mark.parametrize("flag", [True, False])
def test_cond_picks_the_branch_inside_and_outside_a_model(flag):
    x, y = torch.rand(2), torch.rand(2)
    expected = [x, x + y, y] if flag else [y * y, y, x - y]
    condition = torch.tensor([flag])
    for got in (_infer(_multi_outs)(condition, x, y), _Fn(_multi_outs)(condition, x, y)):
        assert len(got) == 3
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)


def test_cond_branch_inputs_are_copies():
    def fn(self, condition, x):
        return poptorch.cond(condition, lambda a: a.add_(1.0), [x], lambda b: b * 2, [x])[0]

    x = torch.tensor([1.0, 2.0])
    out = _infer(fn)(torch.tensor([False]), x)
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


def test_cond_errors():
    x = torch.ones(2)
    with pytest.raises(ValueError, match=r"then_inps and else_inps tensors to be a list of "
                                         r"tensors. \(Object is not list\)"):
        poptorch.cond(torch.tensor([True]), lambda a: a, x, lambda a: a, [x])

    def mismatched(self, c, x):
        return poptorch.cond(c, lambda a: (a, a), [x], lambda a: a, [x])

    with pytest.raises(poptorch.Error, match="must return the same number of outputs, got 2 "
                                             "and 1"):
        _infer(mismatched)(torch.tensor([True]), x)

    def shapes(self, c, x):
        return poptorch.cond(c, lambda a: a, [x], lambda a: a[:1], [x])

    with pytest.raises(poptorch.Error, match="tensors of the same shape and dtype"):
        _infer(shapes)(torch.tensor([True]), x)

    def many(self, c, x):
        return poptorch.cond(c, lambda a: a, [x], lambda a: a, [x])

    with pytest.raises(poptorch.Error, match="condition must be a one-element tensor"):
        _infer(many)(torch.tensor([[True, False]]), x)

    def train(self, c, x):
        out = poptorch.cond(c, lambda a: a * self.w, [x], lambda a: a, [x])[0]
        return out, poptorch.identity_loss(out, "sum")

    with pytest.raises(poptorch.Error,
                       match=r"poptorch.cond\(\) is only supported in inference."):
        poptorch.trainingModel(_Fn(train, weight=True))(torch.tensor([True]), torch.ones(1, 4))


# ---- ctc_beam_search_decoder ------------------------------------------------------------------
def test_ctc_decoder_layout_as_poptorchs_test():
    torch.manual_seed(42)
    log_probs = torch.randn(9, 3, 10)
    lengths = torch.randint(5, 9, (3,), dtype=torch.int)
    out = _infer(lambda self, lp, n: poptorch.ctc_beam_search_decoder(lp, n))(log_probs, lengths)
    assert [tuple(t.shape) for t in out] == [(3, 1), (3, 1), (3, 1, 9)]
    assert [t.dtype for t in out] == [torch.float32, torch.int32, torch.int32]
    half = poptorch.ctc_beam_search_decoder(log_probs.half(), lengths, top_paths=2)
    assert [t.dtype for t in half] == [torch.float16, torch.int32, torch.int32]
    assert tuple(half[2].shape) == (3, 2, 9)


@pytest.mark.parametrize("t,c,blank", [(3, 3, 0), (4, 3, 2), (3, 4, 1)])
def test_ctc_decoder_is_exact_when_the_beam_holds_every_prefix(t, c, blank):
    rng = np.random.default_rng(10 * t + c)
    lp = ref.log_softmax(rng.standard_normal((t, 2, c)) * 1.5)
    top = 4
    probs, lengths, decoded = poptorch.ctc_beam_search_decoder(
        torch.from_numpy(lp).float(), torch.tensor([t, t - 1]), blank=blank, beam_width=100,
        top_paths=top)
    for b, n in enumerate((t, t - 1)):
        exact = ref.brute_force_labellings(lp[:n, b], blank)
        ranked = sorted(exact.items(), key=lambda kv: -kv[1])[:top]
        for i, (labelling, logp) in enumerate(ranked):
            assert lengths[b, i].item() == len(labelling)
            assert tuple(decoded[b, i, :len(labelling)].tolist()) == labelling
            np.testing.assert_allclose(probs[b, i].item(), logp, rtol=1e-5, atol=1e-5)
            assert (decoded[b, i, len(labelling):] == blank).all()


def test_ctc_decoder_matches_ipu_gpus_decoder_with_a_narrow_beam():
    from ipu_gpu.ops.ctc_decoder import ctc_beam_search_decoder_with_log_probs

    rng = np.random.default_rng(3)
    lp = ref.log_softmax(rng.standard_normal((8, 4, 5))).astype(np.float32)
    lengths = np.array([8, 5, 1, 0], np.int32)
    mine = poptorch.ctc_beam_search_decoder(torch.from_numpy(lp), torch.from_numpy(lengths),
                                            blank=2, beam_width=3, top_paths=2)
    theirs = ctc_beam_search_decoder_with_log_probs(lp, lengths, beam_width=3, top_paths=2,
                                                    blank_index=2)
    python = ref.ctc_beam_search_decoder_with_log_probs(lp, lengths, 3, 2, 2)
    for m, t, p in zip(mine, theirs, python):
        np.testing.assert_array_equal(m.numpy(), t.numpy())
        np.testing.assert_allclose(m.numpy(), p, rtol=1e-5, atol=1e-5)


def test_ctc_decoder_errors():
    lp, n = torch.zeros(4, 2, 3), torch.tensor([4, 4])
    dec = poptorch.ctc_beam_search_decoder
    with pytest.raises(poptorch.Error, match="ctc_beam_search_decoder: probs must be a "
                                             "torch.tensor argument. <class 'list'>"):
        dec([0.0], n)
    with pytest.raises(poptorch.Error, match="ctc_beam_search_decoder: lengths must be a "
                                             "torch.tensor argument. <class 'int'>"):
        dec(lp, 4)
    with pytest.raises(poptorch.Error, match="Incorrect shape for first input to CTC beam "
                                             "search decoder."):
        dec(torch.zeros(4, 3), n)
    with pytest.raises(poptorch.Error, match="probs must be float16 or float32"):
        dec(lp.int(), n)
    with pytest.raises(poptorch.Error, match=r"lengths must have shape \[2\]"):
        dec(lp, torch.tensor([4]))
    with pytest.raises(poptorch.Error, match=r"lengths must be in \[0, 4\]"):
        dec(lp, torch.tensor([5, 1]))
    with pytest.raises(poptorch.Error, match=r"blank must be in \[0, 3\)"):
        dec(lp, n, blank=3)
    with pytest.raises(poptorch.Error, match="beam_width must be >= 1"):
        dec(lp, n, beam_width=0)
    with pytest.raises(poptorch.Error, match=r"top_paths must be in \[1, beam_width \(2\)\]"):
        dec(lp, n, beam_width=2, top_paths=3)
    with pytest.raises(poptorch.Error, match="top_paths must be an integer"):
        dec(lp, n, top_paths=1.0)


# ---- custom_op --------------------------------------------------------------------------------
def _cube(x, bias, scale=1.0):
    return x * x * x * scale + bias, x + bias


def test_custom_op_runs_the_registered_implementation():
    poptorch.register_custom_op("CubeTest", "com.acme", _cube)

    def fn(self, x, bias):
        return poptorch.custom_op([x, bias], "CubeTest", "com.acme", 1,
                                  example_outputs=[x, x], attributes={"scale": 0.5})

    x, bias = torch.full((1, 8), 2.0), torch.full((1, 8), 4.0)
    out = _infer(fn)(x, bias)
    np.testing.assert_array_equal(out[0].numpy(), np.full((1, 8), 8.0))
    np.testing.assert_array_equal(out[1].numpy(), np.full((1, 8), 6.0))


def test_custom_op_trains_through_its_torch_implementation():
    poptorch.register_custom_op("CubeGrad", "com.acme", lambda x, bias: _cube(x, bias))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            y, _ = poptorch.custom_op([self.lin(x), torch.zeros(3)], "CubeGrad", "com.acme", 1,
                                      example_outputs=[x, x])
            return y, poptorch.identity_loss(y.sum(), "sum")

    torch.manual_seed(0)
    net, ref_net = Net(), Net()
    ref_net.load_state_dict(net.state_dict())
    x = torch.randn(1, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    poptorch.trainingModel(net, optimizer=opt)(x)
    ref_opt = torch.optim.SGD(ref_net.parameters(), lr=0.01)
    (ref_net.lin(x) ** 3).sum().backward()
    ref_opt.step()
    np.testing.assert_allclose(net.lin.weight.detach().numpy(),
                               ref_net.lin.weight.detach().numpy(), rtol=1e-6)
    assert torch.autograd.gradcheck(
        lambda t: poptorch.custom_op([t, torch.zeros(2, dtype=torch.float64)], "CubeGrad",
                                     "com.acme", 1, example_outputs=[t, t])[0],
        (torch.randn(2, dtype=torch.float64, requires_grad=True),))


def test_custom_op_without_an_implementation():
    x = torch.ones(2)
    call = lambda self, t: poptorch.custom_op([t], "NoSuchOp", "com.acme", 1,  # noqa: E731
                                              example_outputs=[t])
    with pytest.raises(poptorch.Error, match=r"custom op 'NoSuchOp' \(domain 'com.acme', "
                                             r"version 1\) cannot run in the emulator.*"
                                             r"register_custom_op"):
        _infer(call)(x)
    zeros = _Fn(call)(x)  # PopTorch's CPU path returns zeros like example_outputs
    assert isinstance(zeros, list) and zeros[0].shape == (2,) and not zeros[0].any()


def test_custom_op_versions():
    poptorch.register_custom_op("Versioned", "v.test", lambda t: t + 1)
    poptorch.register_custom_op("Versioned", "v.test", lambda t: t + 2, domain_version=2)
    x = torch.zeros(1)
    assert poptorch.custom_op([x], "Versioned", "v.test", 1, [x])[0].item() == 1
    assert poptorch.custom_op([x], "Versioned", "v.test", 2, [x])[0].item() == 2
    with pytest.raises(TypeError, match="fn must be callable"):
        poptorch.register_custom_op("X", "d", None)
    with pytest.raises(TypeError, match="name and domain must be strings"):
        poptorch.register_custom_op(1, "d", abs)


@pytest.mark.parametrize("attributes, error, message", [
    ({1: 1.0}, ValueError, "All attribute keys must be strings."),
    ({"a": None}, ValueError, "Attribute values must be floats, ints, strings or a list/tuple "
                              "of float, ints of strings."),
    ({"a": [1, 2.0]}, ValueError, "The types in a list/tuple attribute must all be the same."),
    ({"a": "a\u1f00b"}, ValueError, "a\u1f00b contains non-ASCII characters."),
    ({"a": ["x", "a\u1f00b"]}, ValueError, "a\u1f00b contains non-ASCII characters."),
    ({"\u00e9": 1}, ValueError, "\u00e9 contains non-ASCII characters."),
    ({"a": sys.float_info.max}, poptorch.Error,
     r"1\.79769e\+308 is too high for a Popart float attribute\."),
    ({"a": [1.0, -sys.float_info.max]}, poptorch.Error,
     r"-1\.79769e\+308 is too low for a Popart float attribute\."),
])
def test_custom_op_attribute_errors(attributes, error, message):
    poptorch.register_custom_op("AttrOp", "test.poptorch", lambda t, **kw: t)
    x = torch.zeros(1)
    with pytest.raises(error, match=message):
        poptorch.custom_op([x], "AttrOp", "test.poptorch", 1, [x], attributes=attributes)
    ok = {"f": 1.0, "i": -5, "s": "str \" ' \\", "fs": (1.0, 2.0), "is": [1, 2], "ss": ["\x01"]}
    assert poptorch.custom_op([x], "AttrOp", "test.poptorch", 1, [x], attributes=ok)[0] is x


def test_custom_op_output_checks():
    poptorch.register_custom_op("Bad", "test.poptorch", lambda t: (t, t))
    poptorch.register_custom_op("BadShape", "test.poptorch", lambda t: t[:1])
    x = torch.zeros(2)
    with pytest.raises(poptorch.Error, match="returned 2 outputs, example_outputs has 1"):
        poptorch.custom_op([x], "Bad", "test.poptorch", 1, [x])
    with pytest.raises(poptorch.Error, match=r"output 0 of 'BadShape' must be a torch.float32 "
                                             r"tensor of shape \[2\]"):
        poptorch.custom_op([x], "BadShape", "test.poptorch", 1, [x])


# ---- CPU ------------------------------------------------------------------------------------
def test_cpu_op_calls_its_function_on_the_host():
    devices = []

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cpu = poptorch.CPU(self.foo, "MyCPUOp")
            self.two = poptorch.CPU(lambda a, b: (a * 2.0, a + b), "Two")

        def foo(self, x):
            devices.append(x.device.type)
            return x * 2.0

        def forward(self, x, y):
            out = self.cpu(self.cpu(self.cpu(x)))
            doubled, total = self.two(out, y)
            return out, doubled, total

    x, y = torch.randn(5, 2, 3), torch.randn(5, 2, 3)
    out, doubled, total = poptorch.inferenceModel(Model())(x, y)
    np.testing.assert_allclose(out.numpy(), x.numpy() * 8, rtol=1e-6)
    np.testing.assert_allclose(doubled.numpy(), x.numpy() * 16, rtol=1e-6)
    np.testing.assert_allclose(total.numpy(), x.numpy() * 8 + y.numpy(), rtol=1e-6)
    assert len(devices) >= 3 and set(devices) == {"cpu"}  # PopTorch's trace calls it too
    assert isinstance(Model().two(x, y), list)
    layer = torch.nn.Linear(2, 2)
    poptorch.CPU(layer, "Lin")
    assert not any(p.requires_grad for p in layer.parameters())


# ---- overlapped IO ----------------------------------------------------------------------------
def _overlap_opts(strategy=True, tiles=True):
    opts = poptorch.Options()
    if strategy:
        opts.setExecutionStrategy(poptorch.ShardedExecution())
    if tiles:
        opts.TensorLocations.numIOTiles(32)
    return opts


def test_set_overlap_is_an_identity():
    mode = poptorch.OverlapMode.OverlapAccumulationLoop

    def fn(self, x, y):
        x, y = poptorch.set_overlap_for_input((x, y), mode)
        out = {"sum": x + y, "n": 3}
        return poptorch.set_overlap_for_output(out, mode)["sum"]

    x, y = torch.randn(2, 3), torch.randn(2, 3)
    out = poptorch.inferenceModel(_Fn(fn), _overlap_opts())(x, y)
    np.testing.assert_allclose(out.numpy(), (x + y).numpy(), rtol=1e-6)
    nested = {"a": [x, 1], "b": (y,)}
    got = poptorch.set_overlap_for_input(nested, mode)
    assert got["a"][0] is x and got["a"][1] == 1 and got["b"][0] is y


def test_set_overlap_errors():
    mode = poptorch.OverlapMode.OverlapAccumulationLoop

    def not_input(self, x):
        return poptorch.set_overlap_for_input(x + 1, poptorch.OverlapMode.NoOverlap)

    with pytest.raises(poptorch.Error, match="poptorch.set_overlap_for_input applied on a "
                                             "node which is not a tensor input to the model."):
        poptorch.inferenceModel(_Fn(not_input))(torch.ones(1))

    def normal(self, x):
        return poptorch.set_overlap_for_input(x, mode) + 1

    with pytest.raises(poptorch.Error, match="Overlapped IO is not supported with "
                                             "poptorch.PipelinedExecution. If you are using "
                                             "only one IPU, please switch to "
                                             "poptorch.ShardedExecution."):
        poptorch.inferenceModel(_Fn(normal))(torch.ones(1))
    with pytest.raises(poptorch.Error, match=r"No IO tiles allocated. You must allocate at "
                                             r"least 32 IO tiles using poptorch.Options\(\)."
                                             r"TensorLocations.numIOTiles."):
        poptorch.inferenceModel(_Fn(normal), _overlap_opts(tiles=False))(torch.ones(1))
    opts = _overlap_opts().outputMode(poptorch.OutputMode.Final)
    with pytest.raises(poptorch.Error, match="Unsupported output mode for overlapped IO"):
        poptorch.inferenceModel(_Fn(normal), opts)(torch.ones(1))
    with pytest.raises(AttributeError):
        poptorch.set_overlap_for_output(torch.ones(1), "overlap_accumulation_loop")


class _XY(_Fn):
    def forward(self, x, y):
        return self.fn(self, x, y)


def test_set_overlap_for_input_must_be_the_only_op_on_the_input():
    mode = poptorch.OverlapMode.OverlapAccumulationLoop
    message = ("poptorch.set_overlap_for_input must be the only op applied to an input. This "
               "is not the case for input {} to the model.")

    def also_used(self, x, y):
        marked = poptorch.set_overlap_for_input(x, mode)
        return marked + x * y  # x itself used again

    def used_before(self, x, y):
        z = x * 2
        return poptorch.set_overlap_for_input(x, mode) + z + y

    def marked_twice(self, x, y):
        return poptorch.set_overlap_for_input(x, mode) + poptorch.set_overlap_for_input(x, mode)

    def returned_too(self, x, y):
        return poptorch.set_overlap_for_input(y, mode) + x, y

    for fn, name in ((also_used, "x"), (used_before, "x"), (marked_twice, "x"),
                     (returned_too, "y")):
        with pytest.raises(poptorch.Error, match=re.escape(message.format(name))):
            poptorch.inferenceModel(_XY(fn), _overlap_opts())(torch.ones(2), torch.ones(2))

    def fine(self, x, y):  # each input marked once, then only the marked tensors are used
        x, y = poptorch.set_overlap_for_input((x, y), mode)
        return x * y + x

    out = poptorch.inferenceModel(_XY(fine), _overlap_opts())(torch.full((2,), 3.0),
                                                               torch.ones(2))
    assert torch.equal(out, torch.full((2,), 6.0))


def test_set_overlap_for_output_checks_what_the_model_returns():
    mode = poptorch.OverlapMode.OverlapAccumulationLoop

    def twice(self, x):
        y = x + 1
        return y, poptorch.set_overlap_for_output(y, mode)

    with pytest.raises(poptorch.Error, match="poptorch.set_overlap_for_output cannot be used "
                                             "with a tensor that is returned twice. Please "
                                             "check all returned tensors including those "
                                             "nested in tuples/lists."):
        poptorch.inferenceModel(_Fn(twice), _overlap_opts())(torch.ones(1))

    def not_returned(self, x):
        return poptorch.set_overlap_for_output(x * 2, mode) + 1

    with pytest.raises(poptorch.Error, match="poptorch.set_overlap_for_output applied on a "
                                             "node which is not a tensor output to the "
                                             "model."):
        poptorch.inferenceModel(_Fn(not_returned), _overlap_opts())(torch.ones(1))

    def reused(self, x):  # PopTorch's MarkedOutputReuseAfterModel: allowed
        y2 = poptorch.set_overlap_for_output(x + 1, mode)
        return [y2, (y2 + 1,)]

    y2, (z,) = poptorch.inferenceModel(_Fn(reused), _overlap_opts())(torch.ones(1))
    assert y2.item() == 2.0 and z.item() == 3.0


# ---- a program --------------------------------------------------------------------------------
@pytest.mark.slow  # ~11 s: a fresh interpreter importing torch
def test_program_using_the_ops_runs_under_ipu_gpu_run(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import torch\nimport poptorch\n"
        "poptorch.register_custom_op('Cube', 'com.acme', lambda x: x ** 3)\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, c, x):\n"
        "        x = poptorch.for_loop(3, lambda v: v + 1, [x])[0]\n"
        "        x = poptorch.cond(c, lambda v: v * 2, [x], lambda v: v, [x])[0]\n"
        "        x = poptorch.custom_op([x], 'Cube', 'com.acme', 1, [x])[0]\n"
        "        assert poptorch.isRunningOnIpu()\n"
        "        return poptorch.ipu_print_tensor(x, 'x')\n"
        "m = poptorch.inferenceModel(M())\n"
        "print(m(torch.tensor([True]), torch.tensor([0.0, 1.0])).tolist())\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(prog)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == "[216.0, 512.0]"
    assert "x: (216.0,512.0)" in r.stderr


def test_autocast_is_gone_as_in_poptorch_3_1():
    with pytest.raises(AttributeError, match="PopTorch 3.1 removed its automatic casting API; "
                                             "use PyTorch's torch.autocast"):
        poptorch.autocast  # noqa: B018
    assert not hasattr(poptorch, "autocast")
