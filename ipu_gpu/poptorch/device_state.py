"""What the emulated IPU holds for one compiled ``PoplarExecutor`` besides the weights it
shares with the host module (research/poptorch_semantics.md sections 1.2, 1.4, 7):

* ``ReplicaBuffers``: every replica's own copy of the module's buffers. Replica 0's copy is
  the module's own tensors, so after a call the host module reads replica 0; replicas
  1..R-1 hold clones that are swapped into the module's buffer slots around their forward
  passes (no deep copy of the module, a few dict writes per micro-batch).
* ``DeviceRandom``: the device's random streams (dropout, stochastic rounding), seeded from
  ``Options.randomSeed`` (``seed + r`` for replica r, as PopART); the host's ``torch``
  generator is left untouched by a call.
* ``stochastic_round_half``/``HalfUpdatesInFloat32``: ``Precision.enableStochasticRounding``
  for float16 weight updates.
* ``synthetic_micro_batches``: ``enableSyntheticData`` inputs.
* ``CompileChecks``: what PopTorch refuses while tracing the first call (buffers or
  parameters reassigned/removed in ``forward``, buffers changed in place under replication
  while ``broadcastBuffers`` is on).
"""

from __future__ import annotations

import logging
import struct

import torch

from ._tensor_tree import tensor_leaves
from .errors import Error
from .input_groups import host_micro_batches

logger = logging.getLogger("poptorch::python")

__all__ = ["CompileChecks", "DeviceRandom", "DeviceState", "HalfUpdatesInFloat32",
           "ReplicaBuffers", "draws_integers", "stochastic_round_half", "synthetic_batch",
           "synthetic_micro_batches", "synthetic_mode"]

# The modules PopTorch lets change their buffers inside forward (its _impl.BUFFERS_CAN_CHANGE);
# Graphcore's CNN examples train BatchNorm models replicated with broadcastBuffers left on.
BUFFERS_CAN_CHANGE = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)

_BROADCAST_ERROR = ("PopTorch does not support broadcasting buffers. If your model is able to "
                    "tolerate buffers becoming out of sync between replicas, you can disable "
                    "buffer broadcasting using poptorch.Options.broadcastBuffers(False).")


def _buffer_slots(model):
    """``[(module, name, qualified name)]`` of every buffer slot holding a tensor."""
    return [(mod, name, f"{prefix}.{name}" if prefix else name)
            for prefix, mod in model.named_modules()
            for name, buf in mod._buffers.items() if buf is not None]


class ReplicaBuffers:
    """Per-replica buffers of ``model`` for ``replicas`` replicas (see the module doc).
    ``broadcast()`` is the upload of the host's buffers to every replica (PopTorch's
    ``copyWeightsToDevice``, ``load_state_dict`` or attach)."""

    def __init__(self, model, replicas: int) -> None:
        self.replicas = replicas
        slots = _buffer_slots(model) if replicas > 1 else []
        self._slots = [(mod, name) for mod, name, _ in slots]
        self._names = [qualified for _, _, qualified in slots]
        self._stores = []
        self.broadcast()

    def _read(self):
        return [mod._buffers.get(name) for mod, name in self._slots]

    def _write(self, store):
        for (mod, name), t in zip(self._slots, store):
            mod._buffers[name] = t

    def broadcast(self) -> None:
        """Every replica restarts from the module's buffers (replica 0 keeps the tensors)."""
        host = self._read()
        self._stores = [host] + [[_clone(t) for t in host] for _ in range(self.replicas - 1)]

    def begin_call(self) -> None:
        """Take the module's buffers as replica 0's."""
        if self.replicas > 1:
            self._stores[0] = self._read()

    def enter(self, replica: int) -> None:
        """Put ``replica``'s buffers into the module before its forward."""
        if self.replicas > 1:
            self._write(self._stores[replica])

    def leave(self, replica: int) -> None:
        """Keep what ``replica``'s forward left in the buffer slots (in place or rebound)."""
        if self.replicas > 1:
            self._stores[replica] = self._read()

    def end_call(self) -> None:
        """Leave replica 0's buffers in the host module."""
        if self.replicas > 1:
            self._write(self._stores[0])

    def replica(self, replica: int) -> dict:
        """``{qualified name: tensor}`` of ``replica``'s buffers as of the last call's end
        (empty with one replica: the module holds them)."""
        return dict(zip(self._names, self._stores[replica]))


def _clone(t):
    return None if t is None else t.detach().clone()


class DeviceRandom:
    """The device's random streams, entered around a call with ``with``: ``torch``'s default
    CPU generator (and a CUDA device's, for a model there) runs a device stream inside and
    gets the host's state back on exit.

    As PopART lowers ``randomSeed`` (``IrLowering``'s seed set-up, ``RngStateLowering``):
    replica ``r``'s random ops (dropout, ``torch.rand``...) draw from a stream seeded with
    ``seed + r``, so replicas draw different values; a replica-identical stream seeded with
    ``seed`` serves stochastic rounding of weight updates (``use(IDENTICAL)``), so that the
    replicas' weights stay equal.

    ``seed``: ``Options.randomSeed`` when set. Unset, PopART draws a nondeterministic seed;
    the emulator draws it from the host's ``torch`` generator at compile time instead, so a
    program that calls ``torch.manual_seed`` repeats exactly.

    Switching streams costs a generator state read and write per micro-batch. A model whose
    first call (its compilation: PopTorch's graph, random ops included, is fixed then) drew
    nothing from any replica's stream is not switched between replicas afterwards
    (``draws`` False); should such a model draw later after all, the call's end sees the
    stream moved, warns, and switches again from the next call on. With one replica there
    is nothing to switch, and ``draws`` stays None (no states compared per call)."""

    IDENTICAL = -1  # ``use()``'s key for the replica-identical stream

    def __init__(self, seed: int | None, replicas: int = 1, cuda_devices=()) -> None:
        if seed is None:
            seed = int(torch.randint(0, 2 ** 62, (), dtype=torch.int64))
        self.replicas = int(replicas)
        self._cuda_devices = tuple(cuda_devices)
        self._host = None
        self._current = 0
        self.draws = None  # whether the replicas' streams are used: None until a call ends
        self._entered = None  # the states loaded at the call's start (``draws`` unknown)
        self.reseed(seed)

    def _keys(self):
        return [*range(self.replicas), self.IDENTICAL]

    def reseed(self, seed: int) -> None:
        """Every stream restarts from ``seed`` (PopART's ``setRandomSeed``)."""
        self.seed = int(seed)
        self._states = {}
        for key in self._keys():
            stream_seed = self.seed + (0 if key == self.IDENTICAL else key)
            cpu = torch.Generator().manual_seed(stream_seed).get_state()
            cuda = [torch.Generator(device=d).manual_seed(stream_seed).get_state()
                    for d in self._cuda_devices]
            self._states[key] = (cpu, cuda)
        if self._host is not None:  # inside a call: the live generators restart too
            self._load(self._current)

    def _load(self, key) -> None:
        cpu, cuda = self._states[key]
        torch.set_rng_state(cpu)
        for d, state in zip(self._cuda_devices, cuda):
            torch.cuda.set_rng_state(state, d)
        self._current = key

    def _save(self) -> None:
        self._states[self._current] = (
            torch.get_rng_state(), [torch.cuda.get_rng_state(d) for d in self._cuda_devices])

    def use(self, key) -> None:
        """Inside a call: draw from replica ``key``'s stream (or ``IDENTICAL``) from now on."""
        if self.draws is False and key != self.IDENTICAL:
            key = 0  # no replica draws: replica 0's stream stands for every replica's
        if key != self._current:
            self._save()
            self._load(key)

    def __enter__(self):
        self._host = (torch.get_rng_state(),
                      [torch.cuda.get_rng_state(d) for d in self._cuda_devices])
        self._load(0)
        if self.draws is not True and self.replicas > 1:
            self._entered = dict(self._states)
        return self

    def __exit__(self, *exc):
        self._save()
        if self._entered is not None:
            moved = any(not _same(self._states[k], self._entered[k])
                        for k in range(self.replicas))
            if self.draws is False and moved and self.replicas > 1:
                logger.warning(
                    "The model drew random numbers in a call after a first call that drew "
                    "none: this call's replicas drew from replica 0's stream; later calls "
                    "give each replica its own stream.")
            if moved:
                self.draws = True
            elif self.draws is None and exc[0] is None:
                self.draws = False
            self._entered = None
        cpu, cuda = self._host
        torch.set_rng_state(cpu)
        for d, state in zip(self._cuda_devices, cuda):
            torch.cuda.set_rng_state(state, d)
        self._host = None
        return False

    # ``PoplarExecutor.rng_state``: the streams' states as 32-bit words, in ``_keys()``
    # order, CPU state then each CUDA device's
    def words(self) -> list:
        """Every stream's generator state as a list of unsigned 32-bit integers."""
        out = []
        for key in self._keys():
            cpu, cuda = self._states[key]
            for state in (cpu, *cuda):
                out.extend(_to_words(state))
        return out

    def set_words(self, words) -> None:
        """Restore the states ``words()`` returned.

        Raises:
          poptorch.Error: not the number of words this model's streams hold."""
        sizes = [(key, [t.numel() for t in (cpu, *cuda)])
                 for key, (cpu, cuda) in self._states.items()]
        want = sum(n for _, ns in sizes for n in ns) // 4
        words = [int(w) for w in words]
        if len(words) != want:
            raise Error(f"Invalid RNG state: this model's random state has {want} words "
                        f"(one random stream per replica and one shared stream), got "
                        f"{len(words)}")
        at = 0
        for key, ns in sizes:
            tensors = []
            for n in ns:
                tensors.append(_from_words(words[at:at + n // 4]))
                at += n // 4
            self._states[key] = (tensors[0], tensors[1:])
        if self._host is not None:
            self._load(self._current)


def _same(a, b) -> bool:
    """Whether two (cpu, [cuda...]) generator states are equal."""
    return a[0] is b[0] or (torch.equal(a[0], b[0])
                            and all(torch.equal(x, y) for x, y in zip(a[1], b[1])))


def _to_words(state: torch.Tensor) -> list:
    data = bytes(state.numpy())
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def _from_words(words) -> torch.Tensor:
    data = struct.pack(f"<{len(words)}I", *[w & 0xFFFFFFFF for w in words])
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).clone()


def stochastic_round_half(x: torch.Tensor) -> torch.Tensor:
    """``x`` (float32/float64) rounded to float16 up or down at random, up with probability
    equal to the distance from the float16 below over the gap, so the expectation is ``x``
    (unbiased). Draws from ``torch``'s default generator. Values float16 represents exactly,
    infinities and NaN are kept; beyond float16's range the result is round-to-nearest's."""
    nearest = x.to(torch.float16)
    wide = nearest.to(x.dtype)
    toward = torch.where(wide > x, torch.full_like(nearest, float("-inf")),
                         torch.full_like(nearest, float("inf")))
    other = torch.nextafter(nearest, toward)
    lo = torch.minimum(nearest, other).to(x.dtype)
    hi = torch.maximum(nearest, other).to(x.dtype)
    p_up = (x - lo) / (hi - lo)
    up = torch.rand(x.shape, dtype=x.dtype, device=x.device) < p_up
    rounded = torch.where(up, hi, lo).to(torch.float16)
    keep = (wide == x) | ~torch.isfinite(nearest) | ~torch.isfinite(other)
    return torch.where(keep, nearest, rounded)


class HalfUpdatesInFloat32:
    """Around ``optimizer.step()``: float16 parameters (and their gradients) are computed on
    in float32, then the new values are rounded to float16 with ``stochastic_round_half``.
    The optimizer's state for those parameters is created and kept in float32."""

    def __init__(self, params) -> None:
        self._params = [p for p in params if p.dtype == torch.float16]
        self._grads = []

    def __enter__(self):
        self._grads = []
        for p in self._params:
            grad = p.grad
            p.grad = None
            p.data = p.data.float()
            p.grad = None if grad is None else grad.float()
            self._grads.append(grad)
        return self

    def __exit__(self, *exc):
        for p, grad in zip(self._params, self._grads):
            p.grad = None
            p.data = stochastic_round_half(p.data)
            p.grad = grad
        self._grads = []
        return False


# PopART's SyntheticDataMode values (options._Popart "syntheticDataMode")
SYNTHETIC_OFF, SYNTHETIC_ZEROS, SYNTHETIC_RANDOM_NORMAL, SYNTHETIC_RANDOM_UNIFORM = 0, 1, 2, 3
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    """C's ``roundf``: halves away from zero (``torch.round`` rounds them to even)."""
    return torch.where(x < 0, torch.ceil(x - 0.5), torch.floor(x + 0.5))


def _uniform(shape, dtype, gen) -> torch.Tensor:
    """PopART's RandomUniform (``Ir::generateSyntheticUniformData``): float16 in
    [-65504, 65504), float32 over its finite range, integers over their whole range, bool
    False or True."""
    if dtype.is_floating_point:
        high = 65504.0 if dtype in (torch.float16, torch.bfloat16) else _FLOAT32_MAX
        u = torch.rand(shape, generator=gen, dtype=torch.float64)
        return (u * (2 * high) - high).clamp(-high, high).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    # PopTorch streams int64 inputs as int32
    info = torch.iinfo(torch.int32 if dtype == torch.int64 else dtype)
    return torch.randint(info.min, info.max + 1, shape, generator=gen,
                         dtype=torch.int64).to(dtype)


def _normal(shape, dtype, gen) -> torch.Tensor:
    """PopART's RandomNormal: N(0, 1) float samples converted as ``convertFloatToDataType``
    converts them: floats take them, bool is ``sample != 0``, integers ``roundf(sample)``
    (an unsigned type wraps a negative value around, as C's conversion does on x86)."""
    sample = torch.randn(shape, generator=gen, dtype=torch.float32)
    if dtype.is_floating_point:
        return sample.to(dtype)
    if dtype == torch.bool:
        return sample != 0
    return _round_half_away(sample).to(torch.int64).to(dtype)


def synthetic_micro_batches(leaves, n: int, mode: int, integers: bool = True) -> list:
    """One micro-batch tensor per input tensor in ``leaves`` (dim 0 divided by ``n``; a
    0-dim input keeps its shape), with the input's dtype and device, filled once (PopART's
    ``Ir`` sets each synthetic stream's data at compile time and the device reads that same
    micro-batch every iteration).

    ``SYNTHETIC_ZEROS``: zeros. ``SYNTHETIC_RANDOM_NORMAL`` (what ``enableSyntheticData(True)``
    sets) and ``SYNTHETIC_RANDOM_UNIFORM``: PopART's values (``_normal``, ``_uniform``) from a
    generator restarted for every input, so two inputs of one shape and dtype get the same
    values; the emulator's generator is a fixed-seed torch generator, not PopART's mt19937
    with Boost's distributions, so the values differ and their distribution does not.

    ``integers=False``: integer inputs get zeros instead (the executor's fallback when
    torch's index-checked ops reject the random labels or indices that the IPU reads out
    of range without an error)."""
    out = []
    for t in leaves:
        shape = (t.shape[0] // n, *t.shape[1:]) if t.dim() else ()
        integer = not t.is_floating_point() and t.dtype != torch.bool
        gen = torch.Generator().manual_seed(0)  # restarted per input, as PopART's
        if mode == SYNTHETIC_ZEROS or (integer and not integers):
            values = torch.zeros(shape, dtype=t.dtype)
        elif mode == SYNTHETIC_RANDOM_UNIFORM:
            values = _uniform(shape, t.dtype, gen)
        else:
            values = _normal(shape, t.dtype, gen)
        out.append(values.to(t.device))
    return out


def synthetic_mode(options) -> int:
    """``_Popart`` ``syntheticDataMode`` (``SYNTHETIC_OFF`` when unset)."""
    return int(options._Popart.options.get("syntheticDataMode", SYNTHETIC_OFF))


def draws_integers(options, args, kwargs) -> bool:
    """Whether synthetic data fills an integer input with random values."""
    return synthetic_mode(options) in (SYNTHETIC_RANDOM_NORMAL, SYNTHETIC_RANDOM_UNIFORM) and any(
        not t.is_floating_point() and t.dtype != torch.bool
        for t in tensor_leaves([list(args), kwargs]))


def synthetic_batch(options, args, kwargs, map_leaves, factors, integers: bool = True):
    """``(args, kwargs)`` as the device sees them: unchanged without synthetic data, else
    every tensor replaced by the synthetic micro-batch repeated to the call's batch (what
    the compile-time trace reads)."""
    mode = synthetic_mode(options)
    if mode == SYNTHETIC_OFF:
        return args, kwargs
    n = host_micro_batches(options, *factors)
    leaves = tensor_leaves([list(args), kwargs])
    it = iter(synthetic_micro_batches(leaves, n, mode, integers))

    def full(_):
        micro = next(it)
        return micro.repeat(n, *([1] * (micro.dim() - 1))) if micro.dim() else micro
    return map_leaves(full, list(args)), map_leaves(full, kwargs)


class CompileChecks:
    """What PopTorch's first call (the trace) refuses, checked around the first micro-batch's
    forward: a buffer or parameter reassigned or removed (``poptorch.Error`` with PopTorch's
    messages; BatchNorm modules' buffers may change), and, with ``replicas > 1`` and
    ``broadcastBuffers`` on, a buffer other than those changed in place. On error the
    module's parameters and buffers are put back as before the call."""

    def __init__(self, model, replicas: int, broadcast_buffers: bool, params=None) -> None:
        self._model = model
        self._check_in_place = replicas > 1 and broadcast_buffers
        self._buffers = self._named_buffers()
        # ``params``: the parameters before the compile-time trace (which may rebind them)
        self._params = dict(model.named_parameters()) if params is None else params
        self._versions = {k: t._version for k, t in self._buffers.items()}
        self._slots = [(mod, name, mod._buffers[name], mod._buffers[name].detach().clone())
                       for mod, name, _ in _buffer_slots(model)]

    def _named_buffers(self):
        found = {}
        for prefix, mod in self._model.named_modules():
            if isinstance(mod, BUFFERS_CAN_CHANGE):
                continue
            for name, buf in mod.named_buffers(prefix=prefix, recurse=False):
                found[name] = buf
        return found

    def check(self) -> None:
        """Raise ``poptorch.Error`` (after restoring the module) if the forward just run did
        what PopTorch refuses."""
        message = self._problem()
        if message is not None:
            self.restore()
            raise Error(message)

    def _problem(self):
        buffers = self._named_buffers()
        params = dict(self._model.named_parameters())
        if self._check_in_place:
            for name, buf in self._buffers.items():
                now = buffers.get(name)
                if now is buf and buf._version != self._versions[name]:
                    return _BROADCAST_ERROR
        for kind, old, new in (("Buffer", self._buffers, buffers),
                               ("Parameter", self._params, params)):
            for name, t in old.items():
                if name not in new:
                    return (f"{kind} {name} is removed from the model when calling the "
                            "forward method.")
                if new[name] is not t:
                    return (f"{kind} {name} is reassigned within the model when calling the "
                            "forward method. This is not supported. Consider using "
                            f"self.{name}.copy_(src) to copy data from a source tensor, where "
                            "src is the name of the source tensor.")
        return None

    def restore(self) -> None:
        """Put back the parameter objects and the buffer objects and values seen at
        construction."""
        for mod, name, buf, value in self._slots:
            mod._buffers[name] = buf
            with torch.no_grad():
                buf.copy_(value)
        for qualified, param in self._params.items():
            *path, name = qualified.split(".")
            mod = self._model
            for part in path:
                mod = getattr(mod, part)
            mod._parameters[name] = param


class DeviceState:
    """What ``PoplarExecutor``'s first call sets up besides the weights (PopTorch compiles
    and uploads there): per-replica buffers, the random stream, the first-call checks,
    synthetic inputs, and whether float16 updates round stochastically.

    Raises:
      Error: ``OutputMode.EveryN`` with a period above ``deviceIterations`` or not dividing
        it (PopART's messages)."""

    def __init__(self, executor, leaves, factors, params=None) -> None:
        from . import loss_scaling
        from .enums import OutputMode

        opts = executor.options
        s, r, a = factors
        if int(opts.output_mode) == OutputMode.EveryN.value:
            period = int(opts.output_return_period)
            if period > s:
                raise Error("Return period must be <= to the number of batches per step")
            if s % period:
                raise Error("Return period must be a factor of the number of batches per "
                            "step")
        popart = opts._Popart.options
        model = executor.model
        self.signature = executor._signature
        self.buffers = ReplicaBuffers(model, r)
        cuda = sorted({t.device for t in [*model.parameters(), *model.buffers()]
                       if t.is_cuda}, key=str)
        seed = opts.random_seed if opts.exists("random_seed") else None
        self.random = DeviceRandom(seed, r, cuda)
        self.checks = CompileChecks(model, r, bool(opts.broadcast_buffers), params)
        self.stochastic_rounding = bool(popart.get("enableStochasticRounding", False))
        synthetic = synthetic_mode(opts)
        integers = getattr(executor, "_synthetic_integers", True)
        self.synthetic = (synthetic_micro_batches(leaves, host_micro_batches(opts, s, r, a),
                                                  synthetic, integers)
                          if synthetic != SYNTHETIC_OFF else None)
        self.scale_dtype = None  # the loss scale's numpy dtype, from the first loss
        self.loss_scaling = None  # Training.setAutomaticLossScaling
        if executor.training and loss_scaling.enabled(opts):
            self.loss_scaling = loss_scaling.AutomaticLossScaling(opts, model)
