"""PopTorch's tensor ops (``poptorch.nop``, ``recomputationCheckpoint``, ``dynamic_slice``,
``serializedMatMul``, ...) and the compiler hints that change no number (``MultiConv``,
``NameScope``, ``set_available_memory``), on PyTorch.

On an IPU the hints steer PopART's scheduler and planner; here they are validated as PopTorch
validates them, recorded, and the tensors pass through unchanged. ``serializedMatMul``
computes its product in ``factor`` pieces, so a float16 product over the reducing dimension
rounds as the IPU's does (float32 partials with ``keep_precision``).

The control-flow and host ops: ``for_loop`` and ``cond`` run their bodies in Python (inference
only inside a wrapped model, as on the IPU), ``ipu_print_tensor`` prints Poplar's layout to
stderr, ``ctc_beam_search_decoder`` decodes with ipu_gpu's CTC beam-search kernel,
``custom_op`` runs a PyTorch implementation registered with ``register_custom_op`` (the
emulator cannot load PopART C++ ops), ``CPU`` calls its function on the host, and
``isRunningOnIpu`` is True while a ``trainingModel``/``inferenceModel`` runs ``forward``."""

from __future__ import annotations

import sys

import torch

from ._tensor_tree import tensor_leaves
from .enums import MatMulSerializationMode, MultiConvPlanType, OutputMode, OverlapMode
from .errors import Error

__all__ = ["CPU", "MultiConv", "NameScope", "cond", "ctc_beam_search_decoder", "custom_op",
           "dynamic_slice", "dynamic_update", "for_loop", "ipu_print_tensor",
           "isRunningOnIpu", "nop", "recomputationCheckpoint", "register_custom_op",
           "serializedMatMul", "set_available_memory", "set_overlap_for_input",
           "set_overlap_for_output"]


def _require_tensor(value, message):
    if not isinstance(value, torch.Tensor):
        raise Error(message)


def _require_int(value, what):
    if not isinstance(value, int) or isinstance(value, bool):
        raise Error(f"{what} must be an integer.")


def nop(tensor):
    """An identity PopART never optimises away; returns ``tensor``'s values."""
    _require_tensor(tensor, f"nop must take a torch.tensor argument. {type(tensor)} is not "
                            "supported.")
    return tensor.clone()


def recomputationCheckpoint(*tensors):  # noqa: N802 - PopTorch's name
    """Mark ``tensors`` (or one list/tuple of them) as recomputation checkpoints; returns
    them unchanged: one tensor alone, else a tuple (a list for a list argument).

    Raises:
      ValueError: an argument that is not a tensor."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return type(tensors[0])(_checkpointed(tensors[0]))
    out = _checkpointed(tensors)
    return out[0] if len(out) == 1 else tuple(out)


def _checkpointed(tensors):
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        raise ValueError("All inputs must be tensors")
    return [t.clone() for t in tensors]


def set_available_memory(tensor, available_memory_proportion):
    """Hint the planner's temporary-memory proportion for the op that made ``tensor``;
    returns ``tensor``'s values."""
    _require_tensor(tensor, "You may only set available memory for torch.tensor values. "
                            f"{type(tensor)} is not supported.")
    return tensor.clone()


def _start_index(start, op):
    _require_tensor(start, f"Slice start argument to {op} must be a torch.tensor. "
                           f"{type(start)} is not supported.")
    if start.dtype not in (torch.int16, torch.int32, torch.int64) or start.numel() != 1:
        raise Error(f"Slice start argument to {op} must be one integer, got a "
                    f"{start.dtype} tensor of shape {tuple(start.shape)}.")
    return int(start.reshape(()).item())


def _check_slice(tensor, dim, size):
    if not -tensor.dim() <= dim < max(tensor.dim(), 1):
        raise Error(f"Dimension out of range (expected to be in range of "
                    f"[{-tensor.dim()}, {tensor.dim() - 1}], but got {dim})")
    extent = tensor.shape[dim]
    if size == 0:
        raise Error("The start and end of a slice must be different.")
    if size < 0:
        raise Error("Taking a slice of a tensor with the end less than the start is not "
                    "supported.")
    if extent % size:
        raise Error(f"The size of the slice ({size}) must be a factor of the slicing "
                    f"dimension ({extent}).")


def dynamic_slice(tensor, dim, start, size, step):
    """``tensor[start : start + size : step]`` along ``dim``, ``start`` a runtime integer
    tensor; ``size`` and ``step`` constants (``size`` a factor of the dimension)."""
    _require_tensor(tensor, f"dynamic_slice must take a torch.tensor input. {type(tensor)} is "
                            "not supported.")
    _require_int(dim, "Dimension")
    begin = _start_index(start, "dynamic_slice")
    _require_int(size, "Size")
    _require_int(step, "Step")
    _check_slice(tensor, dim, size)
    if step <= 0:
        raise Error(f"Step must be positive, got {step}.")
    index = [slice(None)] * tensor.dim()
    index[dim] = slice(begin, begin + size, step)
    return tensor[tuple(index)].clone()


def dynamic_update(input, src, dim, start, size):  # noqa: A002 - PopTorch's name
    """``input`` with ``src`` written into ``[start, start + size)`` along ``dim``."""
    _require_tensor(input, f"dynamic_update must take a torch.tensor input. {type(input)} is "
                           "not supported.")
    _require_int(dim, "Dimension")
    begin = _start_index(start, "dynamic_update")
    _require_tensor(src, "Src argument to dynamic_update must be a torch.tensor. "
                         f"{type(src)} is not supported.")
    _require_int(size, "Size")
    if input.dim() != src.dim():
        raise Error("input and src tensors must have same dimensionality. "
                    f"({input.dim()}) vs ({src.dim()})")
    if input.dtype != src.dtype:
        raise Error(f"input and src tensor must have same dtype. ({input.dtype} vs "
                    f"{src.dtype})")
    _check_slice(input, dim, size)
    return torch.slice_scatter(input, src, dim=dim, start=begin, end=begin + size)


_SPLIT_AXIS = {MatMulSerializationMode.InputChannels: -2,
               MatMulSerializationMode.ReducingDim: None,
               MatMulSerializationMode.OutputChannels: -1}


def serializedMatMul(lhs, rhs, mode, factor=0, keep_precision=False):  # noqa: N802
    """``torch.matmul(lhs, rhs)`` computed as ``factor`` smaller products split along
    ``mode``'s dimension (m, n or p of an m×n by n×p product); ``keep_precision`` sums
    float16 partials over the reducing dimension in float32.

    Raises:
      AssertionError: a ``mode``, ``factor`` or ``keep_precision`` of the wrong type.
      poptorch.Error: ``factor`` does not divide the split dimension."""
    assert isinstance(keep_precision, bool)
    assert isinstance(factor, int)
    assert isinstance(mode, MatMulSerializationMode)
    if mode is MatMulSerializationMode.Disabled or factor <= 1 or lhs.dim() < 2 \
            or rhs.dim() < 2:
        return torch.matmul(lhs, rhs)
    if mode is MatMulSerializationMode.ReducingDim:
        extent = lhs.shape[-1]
    else:
        extent = (lhs if mode is MatMulSerializationMode.InputChannels else rhs).shape[
            _SPLIT_AXIS[mode]]
    if extent % factor:
        raise Error(f"The serialisation factor ({factor}) must divide the dimension it "
                    f"splits ({extent}).")
    if mode is MatMulSerializationMode.InputChannels:
        return torch.cat([torch.matmul(part, rhs) for part in lhs.chunk(factor, -2)], -2)
    if mode is MatMulSerializationMode.OutputChannels:
        return torch.cat([torch.matmul(lhs, part) for part in rhs.chunk(factor, -1)], -1)
    wide = keep_precision and lhs.dtype == torch.float16
    total = None
    for left, right in zip(lhs.chunk(factor, -1), rhs.chunk(factor, -2)):
        part = torch.matmul(left, right)
        part = part.float() if wide else part
        total = part if total is None else total + part
    return total.to(lhs.dtype)


def _per_conv(name, value, kind):
    if value is None:
        return None
    if isinstance(value, kind):
        return (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, kind) for v in value):
        return tuple(value)
    raise AssertionError(f"Invalid {name}!")


class MultiConv:
    """A scope whose data-independent convolutions PopLibs plans as one multi-convolution.
    Its settings (per convolution, or one for all) are validated and kept; the convolutions
    compute what they compute outside it."""

    def __init__(self):
        self.settings = {"available_memory_proportions": None, "partials_types": None,
                         "plan_type": None, "per_conv_reserved_tiles": None,
                         "cycle_back_off": None, "enable_conv_dithering": None}

    def availableMemoryProportions(self, value):  # noqa: N802
        """Each convolution's available memory proportion (a float, or one per conv)."""
        self.settings["available_memory_proportions"] = _per_conv(
            "available memory proportion", value, float)
        return self

    def partialsTypes(self, value):  # noqa: N802
        """Each convolution's partials type: ``torch.float`` or ``torch.half``."""
        values = value if isinstance(value, (list, tuple)) else (value,)
        if any(v not in (torch.float32, torch.float16) for v in values):
            raise ValueError("Invalid partials types. Expecting torch.float or torch.half")
        self.settings["partials_types"] = tuple(values)
        return self

    def enableConvDithering(self, value):  # noqa: N802
        """Per-convolution dithering (a bool, or one per conv)."""
        values = value if isinstance(value, (list, tuple)) else (value,)
        if value is not None and not all(isinstance(v, bool) for v in values):
            raise ValueError("value must be bool or list of bools")
        self.settings["enable_conv_dithering"] = None if value is None else tuple(values)
        return self

    def planType(self, value):  # noqa: N802
        """The execution strategy: a ``poptorch.MultiConvPlanType``."""
        if value is not None and not isinstance(value, MultiConvPlanType):
            raise AssertionError("Invalid plan type!")
        self.settings["plan_type"] = value
        return self

    def perConvReservedTiles(self, value):  # noqa: N802
        """Tiles reserved for each convolution."""
        assert isinstance(value, int)
        self.settings["per_conv_reserved_tiles"] = value
        return self

    def cycleBackOff(self, value):  # noqa: N802
        """The cycle back-off proportion, between 0 and 1."""
        assert isinstance(value, float)
        self.settings["cycle_back_off"] = value
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


class NameScope:
    """A scope prefixing the names of the operators created in it; names only."""

    def __init__(self, name):
        assert isinstance(name, str), "Parameter to NameScope must be a string"
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


# ---- the call in progress -------------------------------------------------------------------
class _Call:
    """The wrapped model whose ``forward`` is running (None outside one) and the tensors its
    ``forward`` received."""

    executor = None
    arguments = ((), {})  # forward's (args, kwargs)
    _inputs = ()  # their tensor leaves once asked for (None: not yet)
    tracing = False
    overlapped: list = []  # the tensors set_overlap_for_output marked in this call
    # compile-time trace only: {id(input): [name, ops using it, set_overlap_for_input marks]}
    input_uses: dict = {}

    @property
    def inputs(self) -> tuple:
        """The tensors ``forward`` received (walked on first use: most calls never ask)."""
        if self._inputs is None:
            self._inputs = tuple(tensor_leaves(list(self.arguments)))
        return self._inputs


_CALL = _Call()


class _running:  # noqa: N801 - used as a function, ``with _running(...)``
    """Mark ``executor``'s model as running on the IPU while its ``forward`` runs (the
    executor enters this around each call of the model; ``tracing`` for the compile-time
    trace, during which nothing prints, as PopTorch's trace prints nothing). A class, not
    a generator: it is entered once per micro-batch."""

    __slots__ = ("_executor", "_args", "_kwargs", "_tracing", "_saved")

    def __init__(self, executor, args, kwargs, tracing=False) -> None:
        self._executor, self._args, self._kwargs, self._tracing = (
            executor, args, kwargs, tracing)

    def __enter__(self):
        call = _CALL
        self._saved = (call.executor, call.arguments, call._inputs, call.tracing,
                       call.overlapped, call.input_uses)
        args, kwargs = self._args, self._kwargs
        call.executor, call.arguments, call._inputs = self._executor, (args, kwargs), None
        call.tracing, call.overlapped = self._tracing, []
        call.input_uses = (_input_names(self._executor, args, kwargs) if self._tracing
                           else {})
        return self

    def __exit__(self, *exc_info):
        (_CALL.executor, _CALL.arguments, _CALL._inputs, _CALL.tracing, _CALL.overlapped,
         _CALL.input_uses) = self._saved
        return False


def _input_names(executor, args, kwargs) -> dict:
    """``{id(tensor): [name, 0, 0]}`` for the model's tensor inputs, named after
    ``forward``'s parameters (``name[i]`` inside a structure)."""
    import inspect

    params, rest = [], None
    try:
        for p in inspect.signature(executor.model.forward).parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                rest = p.name
                break
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                params.append(p.name)
    except (TypeError, ValueError):
        pass
    found = {}

    def add(x, name):
        if isinstance(x, torch.Tensor):
            found.setdefault(id(x), [name, 0, 0])
        elif isinstance(x, (list, tuple)):
            for i, item in enumerate(x):
                add(item, f"{name}[{i}]")
        elif isinstance(x, dict):
            for k, item in x.items():
                add(item, f"{name}[{k!r}]")
    for i, x in enumerate(args):
        add(x, params[i] if i < len(params) else f"{rest or 'args'}[{i - len(params)}]")
    for k, x in kwargs.items():
        add(x, k)
    return found


def _note_uses(args) -> None:
    """The compile-time trace saw an op taking ``args``: count its uses of the inputs."""
    uses = _CALL.input_uses
    if uses:
        for t in tensor_leaves(args):
            entry = uses.get(id(t))
            if entry is not None:
                entry[1] += 1


def _returned(outputs):
    """Check what ``forward`` returned against the tensors ``set_overlap_for_output`` marked
    (the compile-time trace calls this, as PopTorch checks when it compiles); returns
    ``outputs``.

    Raises:
      poptorch.Error: a marked tensor returned twice, or not returned (PopTorch's
        messages)."""
    leaves = tensor_leaves(outputs)
    for leaf in leaves:  # an input returned as it is: one more use of it
        entry = _CALL.input_uses.get(id(leaf))
        if entry is not None and any(leaf is t for t in _CALL.inputs):
            entry[1] += 1
    for name, uses, marks in _CALL.input_uses.values():
        if marks and uses > 1:
            raise Error("poptorch.set_overlap_for_input must be the only op applied to an "
                        f"input. This is not the case for input {name} to the model.")
    counts = [sum(leaf is t for leaf in leaves) for t in _CALL.overlapped]
    if any(n > 1 for n in counts):
        raise Error("poptorch.set_overlap_for_output cannot be used with a tensor that is "
                    "returned twice. Please check all returned tensors including those "
                    "nested in tuples/lists.")
    if any(n == 0 for n in counts):
        raise Error("poptorch.set_overlap_for_output applied on a node which is not a tensor "
                    "output to the model.")
    return outputs


def isRunningOnIpu() -> bool:  # noqa: N802 - PopTorch's name
    """True while a ``trainingModel``/``inferenceModel`` runs the model's ``forward``, False
    elsewhere (the model called directly, or code outside it)."""
    return _CALL.executor is not None


def _training() -> bool:
    return _CALL.executor is not None and bool(_CALL.executor.training)


# ---- ipu_print_tensor ----------------------------------------------------------------------
def _print_text(name, tensor, fmt):
    from ._print_format import format_tensor

    t = tensor.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    body = format_tensor(t.cpu().numpy(), prefix=len(name) + 2, **fmt)  # syncs device
    sys.stderr.write(f"{name}: {body}\n")
    sys.stderr.flush()


def ipu_print_tensor(tensor, title="", print_gradient=True, summarise_threshold=1000,
                     edge_items=3, max_line_width=80, digits=4, float_format="auto",
                     separator=", ", open_bracket="(", close_bracket=")"):
    """An identity that prints ``tensor`` to stderr each time the wrapped model runs it
    (``<title>: <values>``, laid out as Poplar's printer: ``_print_format``), and in the
    backward pass, when ``print_gradient``, its gradient titled ``<title>_gradient``. Use
    the returned tensor (on the IPU an unused print is optimised away).

    ``summarise_threshold`` (0: never) and ``edge_items`` summarise large tensors,
    ``max_line_width`` (0: never) wraps lines, ``digits`` sets the significant digits (0:
    each element unaligned), ``float_format`` is "auto", "fixed", "scientific" or "none";
    only the first character of ``separator``, ``open_bracket`` and ``close_bracket`` is
    used, as PopTorch passes them as characters. As PopTorch, nothing prints when the
    model runs outside ``trainingModel``/``inferenceModel``; an untitled print is titled
    ``tensor`` (PopART uses its internal tensor name).

    Raises:
      poptorch.Error: ``tensor`` is not a tensor (PopTorch's message), a count that is not
        a non-negative integer, or a text argument that is not a string.
      KeyError: an unknown ``float_format`` (as PopTorch's lookup)."""
    _require_tensor(tensor, "ipu print tensor must take a torch.tensor argument. "
                            f"{type(tensor)} is not supported.")
    for arg, value in (("summarise_threshold", summarise_threshold),
                       ("edge_items", edge_items), ("max_line_width", max_line_width),
                       ("digits", digits)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise Error(f"ipu_print_tensor: {arg} must be a non-negative integer, got "
                        f"{value!r}")
    for arg, value in (("title", title), ("separator", separator),
                       ("open_bracket", open_bracket), ("close_bracket", close_bracket)):
        if not isinstance(value, str):
            raise Error(f"ipu_print_tensor: {arg} must be a string, got {value!r}")
    from ._print_format import FLOAT_FORMATS

    if float_format not in FLOAT_FORMATS:
        raise KeyError(float_format)
    out = tensor.clone()
    if not isRunningOnIpu() or _CALL.tracing:
        return out
    fmt = dict(summarise_threshold=summarise_threshold, edge_items=edge_items,
               max_line_width=max_line_width, digits=digits, float_format=float_format,
               separator=separator, open_bracket=open_bracket, close_bracket=close_bracket)
    name = title or "tensor"
    _print_text(name, tensor, fmt)
    if print_gradient and out.requires_grad:
        out.register_hook(lambda grad: _print_text(f"{name}_gradient", grad, fmt))
    return out


# ---- control flow --------------------------------------------------------------------------
def _as_list(outputs):
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def for_loop(count, body, inputs):
    """Run ``body`` ``count`` times, each pass's outputs becoming the next pass's inputs
    (``body`` returns as many tensors as it takes, each keeping its input's shape and
    dtype); returns the last outputs as a list. Inputs are passed by value: ``body``
    changing them in place leaves the caller's tensors alone. Inference only inside a
    wrapped model. (PopTorch's CPU path, outside a wrapped model, runs ``body`` once; here
    it runs ``count`` times everywhere.)

    Raises:
      ValueError: ``inputs`` not a list, or an element not a tensor (PopTorch's messages).
      poptorch.Error: inside a ``trainingModel`` ("poptorch.for_loop() is only supported
        in inference."), ``count`` not a non-negative integer, or ``body`` returning a
        different number, shape or dtype of tensors."""
    if not isinstance(inputs, list):
        raise ValueError("poptorch.for_loop expects input tensors (inputs) to be a list of "
                         "tensors. (Object is not list)")
    for ind, tensor in enumerate(inputs):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError("poptorch.for_loop expects input tensors (inputs) to be a list "
                             f"of tensors. (Object contained in list at index {ind} is not "
                             "torch.tensor)")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise Error(f"poptorch.for_loop: count must be a non-negative integer, got {count!r}")
    if _training():
        raise Error("poptorch.for_loop() is only supported in inference.")
    values = [t.clone() for t in inputs]
    for _ in range(count):
        outputs = _as_list(body(*values))
        if len(outputs) != len(values):
            raise Error(f"poptorch.for_loop: body must return as many tensors as it takes "
                        f"({len(values)}), got {len(outputs)}")
        for i, (out, before) in enumerate(zip(outputs, values)):
            if not isinstance(out, torch.Tensor) or out.shape != before.shape or \
                    out.dtype != before.dtype:
                got = (f"{out.dtype} {list(out.shape)}" if isinstance(out, torch.Tensor)
                       else type(out).__name__)
                raise Error(f"poptorch.for_loop: output {i} of body must be a "
                            f"{before.dtype} tensor of shape {list(before.shape)} (its "
                            f"input's), got {got}")
        values = [t.clone() for t in outputs]
    return values


def cond(condition, then_body, then_inps, else_body, else_inps):
    """``then_body(*then_inps)`` if ``condition`` else ``else_body(*else_inps)``, as a list
    of tensors. Inside a wrapped model (inference only) both branches run, as the IPU
    builds both, on copies of their inputs, and must return the same number of tensors
    with the same shapes and dtypes; outside one, as PopTorch's CPU path, only the branch
    taken runs.

    Raises:
      ValueError: ``then_inps`` or ``else_inps`` not a list (PopTorch's message).
      poptorch.Error: inside a ``trainingModel`` ("poptorch.cond() is only supported in
        inference."), a condition that is not a one-element tensor, or branches whose
        outputs differ in number, shape or dtype."""
    if not isinstance(then_inps, list) or not isinstance(else_inps, list):
        raise ValueError("poptorch.cond expects then_inps and else_inps tensors to be a list "
                         "of tensors. (Object is not list)")
    if not isRunningOnIpu():
        return _as_list(then_body(*then_inps) if condition else else_body(*else_inps))
    if not isinstance(condition, torch.Tensor) or condition.numel() != 1:
        got = (f"shape {list(condition.shape)}" if isinstance(condition, torch.Tensor)
               else type(condition).__name__)
        raise Error(f"poptorch.cond: condition must be a one-element tensor, got {got}")
    if _training():
        raise Error("poptorch.cond() is only supported in inference.")
    then_out = _as_list(then_body(*[t.clone() for t in then_inps]))
    else_out = _as_list(else_body(*[t.clone() for t in else_inps]))
    if len(then_out) != len(else_out):
        raise Error(f"poptorch.cond: then_body and else_body must return the same number of "
                    f"outputs, got {len(then_out)} and {len(else_out)}")
    for i, (a, b) in enumerate(zip(then_out, else_out)):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or \
                a.shape != b.shape or a.dtype != b.dtype:
            def describe(t):
                return (f"{t.dtype} {list(t.shape)}" if isinstance(t, torch.Tensor)
                        else type(t).__name__)
            raise Error(f"poptorch.cond: output {i} of then_body and else_body must be "
                        f"tensors of the same shape and dtype, got {describe(a)} and "
                        f"{describe(b)}")
    return then_out if bool(condition.reshape(()).item()) else else_out


# ---- CTC beam search -----------------------------------------------------------------------
def _require_count(op, arg, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise Error(f"{op}: {arg} must be an integer, got {value!r}")
    return value


def ctc_beam_search_decoder(probs, lengths, blank=0, beam_width=100, top_paths=1):
    """CTC beam-search decoding of log-probabilities ``probs`` [input_length, batch_size,
    num_classes] (used as given), each sequence ``lengths`` [batch_size] long, on
    ipu_gpu's CTC beam-search kernel (Graphcore's prefix beam search, run on the host).

    Returns ``[label_probs, label_lengths, decoded]``: the paths' log-probabilities
    [batch_size, top_paths] (float16 for float16 ``probs``, else float32), their lengths
    [batch_size, top_paths] int32 and the paths [batch_size, top_paths, input_length]
    int32 (PopART's UINT32 outputs, which PopTorch returns as int32), most probable first.
    Positions past a path's length hold ``blank`` (the IPU leaves them uninitialised).

    Raises:
      poptorch.Error: ``probs`` or ``lengths`` not a tensor (PopTorch's messages),
        ``probs`` not of rank 3 (PopTorch's message) or not floating point, ``lengths``
        not [batch_size] or outside [0, input_length], ``blank`` outside
        [0, num_classes), ``beam_width`` < 1, ``top_paths`` outside [1, beam_width]."""
    op = "ctc_beam_search_decoder"
    if not isinstance(probs, torch.Tensor):
        raise Error(f"{op}: probs must be a torch.tensor argument. {type(probs)} is not "
                    "supported.")
    if not isinstance(lengths, torch.Tensor):
        raise Error(f"{op}: lengths must be a torch.tensor argument. {type(lengths)} is not "
                    "supported.")
    if probs.dim() != 3:
        raise Error("Incorrect shape for first input to CTC beam search decoder.")
    if probs.dtype not in (torch.float16, torch.float32, torch.float64):
        raise Error(f"{op}: probs must be float16 or float32, got {probs.dtype}")
    max_time, batch, num_classes = probs.shape
    if lengths.dim() != 1 or lengths.shape[0] != batch:
        raise Error(f"{op}: lengths must have shape [{batch}] (the batch size of probs), got "
                    f"{list(lengths.shape)}")
    blank = _require_count(op, "blank", blank)
    beam_width = _require_count(op, "beam_width", beam_width)
    top_paths = _require_count(op, "top_paths", top_paths)
    if not 0 <= blank < num_classes:
        raise Error(f"{op}: blank must be in [0, {num_classes}) (num_classes), got {blank}")
    if beam_width < 1:
        raise Error(f"{op}: beam_width must be >= 1, got {beam_width}")
    if not 1 <= top_paths <= beam_width:
        raise Error(f"{op}: top_paths must be in [1, beam_width ({beam_width})], got "
                    f"{top_paths}")
    import numpy as np

    from ..ops.ctc_decoder import ctc_beam_search_decoder_with_log_probs

    lens = lengths.detach().cpu().to(torch.int64).numpy()  # PopTorch casts them to UINT32
    if batch and (lens.min() < 0 or lens.max() > max_time):
        bad = int(lens.min() if lens.min() < 0 else lens.max())
        raise Error(f"{op}: lengths must be in [0, {max_time}] (input_length), got {bad}")
    x = probs.detach().cpu().to(torch.float32).numpy()  # syncs device
    label_probs, label_lengths, decoded = ctc_beam_search_decoder_with_log_probs(
        x, lens.astype(np.int32), beam_width=beam_width, top_paths=top_paths,
        blank_index=blank)
    out_dtype = torch.float16 if probs.dtype == torch.float16 else torch.float32
    return [torch.from_numpy(np.asarray(label_probs.numpy())).to(probs.device, out_dtype),
            torch.from_numpy(np.asarray(label_lengths.numpy())).to(probs.device, torch.int32),
            torch.from_numpy(np.asarray(decoded.numpy())).to(probs.device, torch.int32)]


# ---- custom ops ----------------------------------------------------------------------------
_CUSTOM_OPS: dict = {}
_FLOAT_MAX = float(torch.finfo(torch.float32).max)


def register_custom_op(name, domain, fn, domain_version=None):
    """Emulator only (PopTorch has no such function): run ``fn(*inputs, **attributes)`` for
    ``poptorch.custom_op(inputs, name, domain, domain_version, ...)``. ``fn`` returns a
    tensor or a list/tuple of tensors matching the call's ``example_outputs``; written with
    torch ops it is differentiable, so a custom op in a ``trainingModel`` trains. A
    ``domain_version`` of None serves every version. Registering again replaces ``fn``.

    Raises:
      TypeError: ``name``/``domain`` not strings, ``fn`` not callable, or a
        ``domain_version`` that is not an integer or None."""
    if not isinstance(name, str) or not isinstance(domain, str):
        raise TypeError(f"register_custom_op: name and domain must be strings, got {name!r} "
                        f"and {domain!r}")
    if not callable(fn):
        raise TypeError(f"register_custom_op: fn must be callable, got {fn!r}")
    if domain_version is not None and (not isinstance(domain_version, int)
                                       or isinstance(domain_version, bool)):
        raise TypeError(f"register_custom_op: domain_version must be an int or None, got "
                        f"{domain_version!r}")
    _CUSTOM_OPS[(name, domain, domain_version)] = fn


def _check_ascii(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            _check_ascii(v)
    if isinstance(value, str) and any(ord(ch) >= 128 for ch in value):
        raise ValueError(f"{value} contains non-ASCII characters.")


def _check_float_range(value):
    for v in (value if isinstance(value, (list, tuple)) else [value]):
        if isinstance(v, float):
            if v > _FLOAT_MAX:
                raise Error(f"{v:g} is too high for a Popart float attribute.")
            if v < -_FLOAT_MAX:
                raise Error(f"{v:g} is too low for a Popart float attribute.")


def _check_attributes(attributes):
    for key, value in attributes.items():
        if not isinstance(key, str):
            raise ValueError("All attribute keys must be strings.")
        if not isinstance(value, (float, int, str, list, tuple)):
            raise ValueError("Attribute values must be floats, ints, strings or a list/tuple "
                             "of float, ints of strings.")
        if isinstance(value, (list, tuple)) and \
                any(not isinstance(v, type(value[0])) for v in value):
            raise ValueError("The types in a list/tuple attribute must all be the same.")
    for key in attributes:
        _check_ascii(key)
    for value in attributes.values():
        _check_ascii(value)
    for value in attributes.values():
        _check_float_range(value)


def custom_op(inputs, name, domain, domain_version, example_outputs, attributes=None):
    """Apply the PopART custom op ``domain::name`` (version ``domain_version``) to
    ``inputs``; returns its outputs as a list shaped like ``example_outputs``.

    The emulator cannot load PopART C++ ops: it runs the PyTorch implementation registered
    with ``poptorch.register_custom_op(name, domain, fn)``. Without one, inside a wrapped
    model it raises; outside one it returns zeros shaped like ``example_outputs``, as
    PopTorch's CPU path does.

    Raises:
      ValueError: an attribute key that is not a string, a value that is not a float, int,
        string or homogeneous list/tuple of them, or non-ASCII text (PopTorch's messages).
      poptorch.Error: a float attribute outside float32's range (PopTorch's message), no
        registered implementation, or outputs that do not match ``example_outputs``."""
    templates = list(example_outputs)
    if attributes is not None:
        _check_attributes(attributes)
    fn = _CUSTOM_OPS.get((name, domain, domain_version), _CUSTOM_OPS.get((name, domain, None)))
    if fn is None:
        if not isRunningOnIpu():
            return [torch.zeros_like(t, requires_grad=t.requires_grad) for t in templates]
        raise Error(f"custom_op: the PopART custom op '{name}' (domain '{domain}', version "
                    f"{domain_version}) cannot run in the emulator, which cannot load PopART "
                    "C++ ops. Register a PyTorch implementation before running the model: "
                    f"poptorch.register_custom_op({name!r}, {domain!r}, fn), where "
                    "fn(*inputs, **attributes) returns the outputs.")
    outputs = _as_list(fn(*inputs, **(attributes or {})))
    if len(outputs) != len(templates):
        raise Error(f"custom_op: the implementation of '{name}' returned {len(outputs)} "
                    f"outputs, example_outputs has {len(templates)}")
    for i, (out, want) in enumerate(zip(outputs, templates)):
        if not isinstance(out, torch.Tensor) or out.shape != want.shape or \
                out.dtype != want.dtype:
            got = (f"{out.dtype} {list(out.shape)}" if isinstance(out, torch.Tensor)
                   else type(out).__name__)
            raise Error(f"custom_op: output {i} of '{name}' must be a {want.dtype} tensor of "
                        f"shape {list(want.shape)} (example_outputs[{i}]), got {got}")
    return outputs


# ---- host ops ------------------------------------------------------------------------------
class CPU:
    """Run ``layer_to_call`` on the host in the middle of an (inference) model: calling the
    wrapper calls it with the positional arguments (keyword arguments are ignored, as
    PopTorch). Inside a wrapped model it gets detached host copies of the inputs and its
    outputs come back on the inputs' device with no gradient (a host callback); returns one
    tensor, or a list for several outputs. A ``torch.nn.Module`` stops requiring gradients,
    as PopTorch makes it."""

    def __init__(self, layer_to_call, ID):  # noqa: N803 - PopTorch's name
        self._layer_to_call = layer_to_call
        if isinstance(layer_to_call, torch.nn.Module):
            layer_to_call.requires_grad_(False)
        self._ID = ID
        self.in_shapes = None
        self.out_shapes = None

    def __call__(self, *input, **kwargs):  # noqa: A002 - PopTorch's name
        device = input[0].device if input and isinstance(input[0], torch.Tensor) else None
        if isRunningOnIpu():
            with torch.no_grad():
                outputs = self._layer_to_call(*[t.detach().cpu() for t in input])
        else:
            outputs = self._layer_to_call(*input)
        single = not isinstance(outputs, (list, tuple))
        outputs = [outputs] if single else list(outputs)
        if isRunningOnIpu() and device is not None:
            outputs = [o.to(device) for o in outputs]
        self.in_shapes = [t.shape for t in input]
        self.out_shapes = [o.shape for o in outputs]
        return outputs[0] if single else outputs


# ---- overlapped IO -------------------------------------------------------------------------
def _map_tensors(fn, x):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, dict):
        return type(x)({k: _map_tensors(fn, v) for k, v in x.items()})
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_map_tensors(fn, v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_map_tensors(fn, v) for v in x)
    return x


def _check_overlap_settings():
    options = _CALL.executor.options
    strategy = getattr(options, "_execution_strategy", None)
    if strategy is not None and strategy.backendOptions().get("execution_mode") == 0:
        raise Error("Overlapped IO is not supported with poptorch.PipelinedExecution. If you "
                    "are using only one IPU, please switch to poptorch.ShardedExecution.")
    if not options.TensorLocations._values.get("numIOTiles", 0):
        raise Error("No IO tiles allocated. You must allocate at least 32 IO tiles using "
                    "poptorch.Options().TensorLocations.numIOTiles.")
    if int(options.output_mode) not in (OutputMode.All.value, OutputMode.Sum.value):
        raise Error("Unsupported output mode for overlapped IO. Please switch output mode to "
                    "poptorch.OutputMode.All or poptorch.OutputMode.Sum.")


def set_overlap_for_input(input_tensors, mode):
    """Overlap the host-to-IPU copy of ``input_tensors`` (a tensor, or tuples, lists and
    dicts of them; other values pass through) with computation per ``mode``, a
    ``poptorch.OverlapMode``; returns them unchanged (the copy timing changes no value).

    Raises:
      poptorch.Error: inside a wrapped model, a tensor that is not one of the model's
        inputs, or an overlapping ``mode`` under PipelinedExecution, with no IO tiles or
        with an output mode other than All or Sum; when the model compiles, an input that
        another op uses too (``set_overlap_for_input`` must be the only op applied to it,
        used at most once) (PopTorch's messages)."""
    mode = OverlapMode(mode.value)  # PopTorch reads mode.value
    if isRunningOnIpu():
        for t in tensor_leaves(input_tensors):
            if not any(t is x for x in _CALL.inputs):
                raise Error("poptorch.set_overlap_for_input applied on a node which is not a "
                            "tensor input to the model.")
        if mode is not OverlapMode.NoOverlap:
            _check_overlap_settings()
        if _CALL.input_uses:
            # the trace: a new tensor stands for the marked input (PopTorch's graph has a
            # set_overlap_for_input node), so that other uses of the input itself show
            for t in tensor_leaves(input_tensors):
                _CALL.input_uses[id(t)][2] += 1
            return _map_tensors(lambda t: t.view_as(t), input_tensors)
    return _map_tensors(lambda t: t, input_tensors)


def set_overlap_for_output(output_tensors, mode):
    """Overlap the IPU-to-host copy of ``output_tensors`` (structured as for
    ``set_overlap_for_input``) with computation per ``mode``, a ``poptorch.OverlapMode``;
    returns them unchanged. The model must return each marked tensor exactly once.

    Raises:
      poptorch.Error: inside a wrapped model, an overlapping ``mode`` under
        PipelinedExecution, with no IO tiles or with an output mode other than All or Sum;
        when the model compiles, a marked tensor it does not return, or returns twice
        (PopTorch's messages)."""
    mode = OverlapMode(mode.value)
    if isRunningOnIpu():
        if mode is not OverlapMode.NoOverlap:
            _check_overlap_settings()
        _CALL.overlapped.extend(tensor_leaves(output_tensors))
    return _map_tensors(lambda t: t, output_tensors)
