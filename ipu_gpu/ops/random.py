"""Random numbers (``tf.random``) and ``tf.nn.dropout``.

The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC 2011), the counter-based generator of TensorFlow's CPU kernels, used with TF's key and
counter layout, TF's distributions (``random_distributions.h``) and TF's per-kernel counter
bookkeeping. A seeded op therefore gives TensorFlow's own CPU numbers: bit for bit for uniform
floats and ints, dropout masks, shuffles and categorical samples, and for normal and truncated
normal values to within the last-bit rounding of float32 log/sin/cos (TF calls glibc's float32
functions; here they are computed in float64 and rounded once).

Identical on CPU and GPU: Philox is 32/64-bit integer arithmetic, which numpy and cupy compute
alike, and uniform values are made from its bits by exact bit operations followed by at most
one IEEE-rounded operation per step, so uniform ops, integer ops and dropout masks are computed
on the device with the same ``xp`` code. Every transform that calls a transcendental function
(normal and truncated normal's Box-Muller, categorical's exp) runs on the host in numpy and the
result is copied to the device (``# syncs device`` where the input lives there). A seed thus
gives the same bits on either backend, and a stream never depends on which backend drew it.

Seeds, outside IPU programs (TF2 eager, ``tf.random.set_seed``): an op's (seed, seed2) pair
comes from TF's ``get_seed``: global and op seed set -> both; global only -> an op seed drawn
from ``random.Random(global_seed)`` (a fresh stream per call, the same sequence every run);
op seed only -> (87654321, op seed); neither -> a nondeterministic stream. As TF's cached
kernels, each (op, dtypes, seed, seed2) keeps a counter that every call advances (by 256
counter values per output element, TF's reservation), so repeated calls with the same seed
continue one stream; ``set_seed`` resets every counter.

Inside tf.data functions (map, filter, flat_map, interleave, reduce), which TF traces once:
the k-th unseeded random op of a call gets the op seed k (TF's per-graph counter) with the
global seed of the time the function was made, and every op's kernel belongs to the iteration
(``iter(ds)``, an infeed's reading): each iteration repeats the same numbers, advancing per
element, whatever other draws happen meanwhile (``FunctionCall``, ``IterationSeeds``). Without
any seed the kernels are seeded from the OS, as TF.

Inside an IPU program (``emulation.context.current()`` is a replica), TF's stateful random
ops are lowered by XLA to the IPU's hardware generator and their TF seeds are ignored: each
execution, every replica gets a seed from the device's seed generator (Graphcore's
``DistinctReplicaSeedGenerator``: different replicas get different numbers, unseeded runs are
nondeterministic; after ``ipu.utils.reset_ipu_seed(s)`` the executions are reproducible, and
with ``experimental_identical_replicas=True`` all replicas get the same numbers). Here the
replica's seed is the key of one Philox stream that all stateful random ops of the replica
advance in program order. Stateless ops and ``Generator`` depend only on their seed or state.
"""

from __future__ import annotations

import enum
import itertools
import math
import numbers
import random as _pyrandom
import secrets
import threading
import weakref

import numpy as np

from ..core import backend, capture, dtypes
from ..core.convert import to_array
from ..core.allocation import check_allocation
from ..core.registry import recorded_call, register, symbolic_call
from ..core.tensor import Tensor, Variable, wrap
from ..emulation import context, rollback
from ..errors import InvalidArgumentError
from . import math as math_ops
from ._util import quiet, shape_str

_MASK32 = 0xFFFFFFFF
_MASK64 = 2**64 - 1
_MASK128 = 2**128 - 1
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_INTS = (dtypes.int32, dtypes.int64)

# ---- Philox4x32-10 ---------------------------------------------------------------------------
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def philox_at(xp, key, lo, hi):
    """Philox4x32-10 of the 128-bit counters ``lo + 2**64 * hi`` (uint64 arrays) under
    ``key = (k0, k1)``: uint32 ``[n, 4]``, the four words TF's ``PhiloxRandom()`` returns."""
    u64 = xp.uint64
    m32, s32 = u64(_MASK32), u64(32)
    c0, c1, c2, c3 = lo & m32, lo >> s32, hi & m32, hi >> s32
    k0, k1 = key
    for _ in range(10):
        p0 = c0 * u64(_PHILOX_M[0])  # 32 x 32 -> 64 bits: exact in uint64
        p1 = c2 * u64(_PHILOX_M[1])
        c0, c1, c2, c3 = ((p1 >> s32) ^ c1 ^ u64(k0), p1 & m32,
                          (p0 >> s32) ^ c3 ^ u64(k1), p0 & m32)
        k0, k1 = (k0 + _PHILOX_W[0]) & _MASK32, (k1 + _PHILOX_W[1]) & _MASK32
    out = xp.empty((lo.shape[0], 4), dtype=xp.uint32)
    for j, c in enumerate((c0, c1, c2, c3)):
        out[:, j] = c
    return out


def _counters(xp, counter, offsets):
    """The 128-bit counters ``counter + offsets`` as (lo, hi) uint64 arrays (TF's ``Skip``)."""
    base_lo = counter & _MASK64
    lo = offsets + xp.uint64(base_lo)  # wraps modulo 2**64
    hi = xp.full(offsets.shape, xp.uint64((counter >> 64) & _MASK64), dtype=xp.uint64)
    hi += (lo < offsets).astype(xp.uint64)  # the carry into the high word
    return lo, hi


def philox(xp, key, counter, words):
    """The first ``words`` uint32 of the Philox stream from 128-bit ``counter`` under ``key``,
    block after block as TF's kernels consume it."""
    blocks = -(-words // 4)
    lo, hi = _counters(xp, counter, xp.arange(blocks, dtype=xp.uint64))
    return philox_at(xp, key, lo, hi).reshape(-1)[:words]


def _key(seed: int) -> tuple:
    """A 64-bit seed as a Philox key: its low and high 32-bit words."""
    return seed & _MASK32, (seed >> 32) & _MASK32


# ---- TF's distributions (random_distributions.h), from the stream's uint32 words ---------------
def _u32_to_f32(xp, x):
    """Uint32ToFloat: 23 random mantissa bits in [1, 2), minus 1 (exact)."""
    return (x & xp.uint32(0x7FFFFF) | xp.uint32(0x3F800000)).view(xp.float32) - xp.float32(1)


def _u32_to_f16(xp, x):
    """Uint16ToHalf of the low 16 bits: 10 random mantissa bits in [1, 2), minus 1 (exact)."""
    h = (x & xp.uint32(0x3FF)).astype(xp.uint16) | xp.uint16(0x3C00)
    return h.view(xp.float16) - xp.float16(1)


def _u64_to_f64(xp, x0, x1):
    """Uint64ToDouble: 52 random mantissa bits (20 from x0, 32 from x1) in [1, 2), minus 1."""
    u64 = xp.uint64
    man = (x0.astype(u64) & u64(0xFFFFF)) << u64(32) | x1.astype(u64)
    return (man | u64(0x3FF0000000000000)).view(xp.float64) - xp.float64(1)


def _u64_words(xp, bits):
    """Pairs of uint32 words as uint64 ``x0 | x1 << 32`` (TF's 64-bit integer samples)."""
    u64 = xp.uint64
    return bits[0::2].astype(u64) | bits[1::2].astype(u64) << u64(32)


def _words_per_value(dtype) -> int:
    return 2 if np.dtype(dtype).itemsize == 8 else 1


def raw_uniform(xp, key, counter, n, dtype):
    """``n`` uniform [0, 1) values of a float ``dtype``, as TF's UniformDistribution."""
    bits = philox(xp, key, counter, n * _words_per_value(dtype))
    if dtype == dtypes.float64:
        return _u64_to_f64(xp, bits[0::2], bits[1::2])
    return _u32_to_f16(xp, bits) if dtype == dtypes.float16 else _u32_to_f32(xp, bits)


def raw_uniform_int(xp, key, counter, n, lo, hi, dtype):
    """``n`` integers in [lo, hi) as TF's UniformDistribution<int>: ``lo + bits % (hi - lo)``
    (biased unless the range is a power of two, as TF)."""
    if dtype == dtypes.int32:
        bits = philox(xp, key, counter, n)
        r = bits % xp.uint32((hi - lo) & _MASK32)
        return (r.astype(xp.int64) + lo).astype(xp.int32)
    bits = _u64_words(xp, philox(xp, key, counter, 2 * n))
    r = bits % xp.uint64((hi - lo) & _MASK64)
    return (r + xp.uint64(lo & _MASK64)).view(xp.int64)  # lo + r wraps as in C++


def raw_full_int(xp, key, counter, n, dtype):
    """``n`` integers over the whole range of ``dtype`` (TF's UniformFullIntDistribution)."""
    if dtype == dtypes.int32:
        return philox(xp, key, counter, n).view(xp.int32)
    return _u64_words(xp, philox(xp, key, counter, 2 * n)).view(xp.int64)


def _f32(a):
    return a.astype(np.float32)


def _box_muller_f32(x0, x1):
    """TF's BoxMullerFloat (host numpy). log/sin/cos are taken in float64 and rounded to
    float32 once, so the result does not depend on numpy's SIMD float32 code paths."""
    u1 = np.maximum(_u32_to_f32(np, x0), np.float32(1e-7))  # never log(0)
    v1 = _f32(2.0 * math.pi * _u32_to_f32(np, x1).astype(np.float64))  # 2.0f * M_PI * u: double
    u2 = np.sqrt(np.float32(-2.0) * _f32(np.log(u1.astype(np.float64))))
    v = v1.astype(np.float64)
    return _f32(np.sin(v)) * u2, _f32(np.cos(v)) * u2


def _box_muller_f64(x0, x1, x2, x3):
    """TF's BoxMullerDouble (host numpy)."""
    u1 = np.maximum(_u64_to_f64(np, x0, x1), 1e-7)
    v1 = 2.0 * math.pi * _u64_to_f64(np, x2, x3)
    u2 = np.sqrt(-2.0 * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


def _normal_candidates(bits, dtype):
    """Box-Muller values of a stream's words in stream order: [..., words] -> [..., words]
    (float32 for float16/float32: one per word; float64: one per two words)."""
    if dtype == dtypes.float64:
        a, b = _box_muller_f64(bits[..., 0::4], bits[..., 1::4], bits[..., 2::4],
                               bits[..., 3::4])
    else:
        a, b = _box_muller_f32(bits[..., 0::2], bits[..., 1::2])
    return np.stack([a, b], axis=-1).reshape(*bits.shape[:-1], -1)


def raw_normal(key, counter, n, dtype):
    """``n`` standard normal values (TF's NormalDistribution), computed on the host."""
    words = n * _words_per_value(dtype)
    bits = philox(np, key, counter, -(-words // 4) * 4)
    return _normal_candidates(bits, dtype)[:n].astype(dtype)


def raw_truncated_normal(key, counter, n, dtype):
    """``n`` standard normal values redrawn outside (-2, 2), as TF's CPU kernels: outputs come
    in groups (4 values; 2 for float64); group g reads the stream from counter + g * skip
    (256 and 128 blocks: TF's kReservedSamplesPerOutput) and keeps the first values of
    magnitude < 2. Computed on the host."""
    group, skip = (2, 128) if dtype == dtypes.float64 else (4, 256)
    groups = -(-n // group)
    out = np.empty((groups, group), np.float64 if dtype == dtypes.float64 else np.float32)
    todo = np.arange(groups, dtype=np.uint64)
    blocks = 2  # 8 candidates for 4 values (4 for 2): enough for all but ~1e-5 of the groups
    while todo.size:
        offsets = todo[:, None] * np.uint64(skip) + np.arange(blocks, dtype=np.uint64)
        lo, hi = _counters(np, counter, offsets.reshape(-1))
        bits = philox_at(np, key, lo, hi).reshape(todo.size, blocks * 4)
        z = _normal_candidates(bits, dtype)
        keep = np.abs(z) < 2
        first = np.argsort(~keep, axis=1, kind="stable")[:, :group]  # first kept, in order
        done = keep.sum(axis=1) >= group
        out[todo[done].astype(np.intp)] = np.take_along_axis(z, first, axis=1)[done]
        todo = todo[~done]
        blocks *= 2
    return out.reshape(-1)[:n].astype(dtype)


def raw_categorical(key, counter, logits, num_samples, dtype):
    """TF's CPU multinomial sampler (host numpy): per row, the running sum of
    exp(logit - max finite logit) over the finite logits (non-finite classes get no mass), and
    each sample is the first class whose running sum exceeds uniform * total. Samples draw
    their doubles from one stream in row-major order (TF's single-shard order); a row whose
    logits are all non-finite gives ``num_classes``, as TF."""
    rows, classes = logits.shape
    bits = philox(np, key, counter, 2 * rows * num_samples)
    u = _u64_to_f64(np, bits[0::2], bits[1::2]).reshape(rows, num_samples)
    lg = logits.astype(np.float64)
    finite = np.isfinite(lg)
    lowest = float(np.finfo(logits.dtype).min)  # TF starts the max at lowest<T>()
    top = np.max(np.where(finite, lg, lowest), axis=1, initial=lowest)
    with np.errstate(all="ignore"):
        mass = np.where(finite, np.exp(lg - top[:, None]), 0.0)
    cdf = np.cumsum(mass, axis=1)
    out = np.empty((rows, num_samples), dtype)
    for b in range(rows):
        out[b] = np.searchsorted(cdf[b], u[b] * cdf[b, -1], side="right")
    return out


# ---- seeds: TF's eager rules -------------------------------------------------------------------
_MAXINT32 = 2**31 - 1
_DEFAULT_GRAPH_SEED = 87654321


class _HostSeeds:
    """TF's eager context for random ops: the global seed, the generator of made-up op seeds
    (``random.Random(global_seed)``) and the cached kernels' counters."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seed = None
        self.rng = _pyrandom.Random(None)
        self.kernels = {}  # (op, attrs, seed, seed2) -> [philox key, counter base, position]


_HOST = _HostSeeds()


def _seed_value(op: str, arg: str, seed):
    """A seed as TF takes it: an int (numpy ints and floats truncate, as TF's int attrs)."""
    if isinstance(seed, Tensor):
        a = np.asarray(seed)  # syncs device
        if a.ndim != 0 or a.dtype.kind not in "iu":
            raise TypeError(f"{op}: {arg} must be an int, got a {a.dtype} Tensor of shape "
                            f"{shape_str(a.shape)}")
        return int(a)
    if isinstance(seed, (numbers.Integral, np.integer)):
        return int(seed)
    if isinstance(seed, (float, np.floating)) and math.isfinite(seed):
        return seed
    raise TypeError(f"{op}: {arg} must be an int or None, got {seed!r}")


def set_seed(seed) -> None:
    """Set the global random seed (``tf.random.set_seed``).

    With a global seed, ops without an op seed get op seeds drawn from a generator seeded by
    it (the same sequence every run); ops with an op seed use both. ``None`` removes the
    global seed. Every op's internal counter is reset, so a seeded sequence restarts.

    Raises:
      TypeError: ``seed`` is not an int, a float or None (TF accepts any hashable value and
        fails at the next random op).
    """
    value = None if seed is None else _seed_value("set_seed", "seed", seed)
    with _HOST.lock:
        _HOST.seed = value
        _HOST.rng = _pyrandom.Random(value)
        _HOST.kernels.clear()


def get_seed(op_seed):
    """TF's ``get_seed``: the (seed, seed2) an op uses, or (None, None) for a random one."""
    return _get_seed(op_seed)[0]


def _get_seed(op_seed):
    """``get_seed``'s pair, and whether the op seed was made up from the global seed (a fresh
    kernel that no later call asks for again)."""
    if op_seed is not None:
        op_seed = _seed_value("random op", "seed", op_seed)
    call = _LOCAL.call
    if call is not None:
        return call.seeds(op_seed), False
    with _HOST.lock:
        global_seed = _HOST.seed
        fresh = global_seed is not None and op_seed is None
        if fresh:
            op_seed = _HOST.rng.randint(0, _MAXINT32)  # TF's internal_operation_seed
        if global_seed is not None:
            seeds = (global_seed % _MAXINT32, op_seed % _MAXINT32)
        elif op_seed is not None:
            seeds = (_DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
        else:
            return (None, None), False
    if seeds == (0, 0):  # (0, 0) means "random" to the kernels
        return (0, _MAXINT32), fresh
    return (int(seeds[0]), int(seeds[1])), fresh


class _Seeds:
    """What an op call got from ``get_seed`` (host) or its replica (inside a program); inside
    a dataset function, the call and the op's position in it (``slot``)."""

    __slots__ = ("pair", "fresh", "replica", "call", "slot")

    def __init__(self, pair, fresh, replica, call=None, slot=None):
        self.pair = pair
        self.fresh = fresh  # the op seed was made up: a kernel nobody calls again
        self.replica = replica
        self.call = call
        self.slot = slot


def stateful_seeds(op_seed) -> _Seeds:
    """The seeds of one stateful op call; call it once per call, before any check that TF's
    kernel makes (TF draws a made-up op seed even when the kernel then fails)."""
    call = _LOCAL.call  # a dataset function runs on the host, even read by a replica
    ctx = None if call is not None else context.current()
    if ctx is not None:  # XLA ignores TF seeds: the IPU's per-replica generator
        if op_seed is not None:
            _seed_value("random op", "seed", op_seed)
        return _Seeds(None, False, ctx)
    slot = None if call is None else call.ops  # before _get_seed counts this op
    pair, fresh = _get_seed(op_seed)
    return _Seeds(pair, fresh, None, call, slot)


def reserve(op_key, seeds: _Seeds, blocks: int):
    """(philox key, first counter) for a stateful op that reserves ``blocks`` counter values,
    advancing its kernel's counter (TF's ``GuardedPhiloxRandom::ReserveSamples128``)."""
    capture.refuse("a stateful random op (its Philox counter advances on the host)")
    if seeds.replica is not None:
        return _replica_reserve(seeds.replica, blocks)
    seed1, seed2 = seeds.pair
    if seeds.call is not None:
        return seeds.call.reserve(seeds.slot, op_key, seed1, seed2, blocks)
    with _HOST.lock:
        name = (op_key, seed1 or 0, seed2 or 0)
        entry = None if seeds.fresh else _HOST.kernels.get(name)
        if entry is None:
            if seed1 is None:  # TF seeds a kernel whose seeds are (0, 0) from the OS
                seed1, seed2 = secrets.randbits(64), secrets.randbits(64)
            entry = [_key(seed1), (seed2 & _MASK64) << 64, 0]
            if not seeds.fresh:  # a made-up op seed is never asked for again
                _HOST.kernels[name] = entry
        start = (entry[1] + entry[2]) & _MASK128
        entry[2] += blocks
    return entry[0], start


# ---- seeds inside dataset functions ----------------------------------------------------------
# TF traces a tf.data function once: an unseeded random op gets its op seed at trace time from
# the function graph's counter (0 for the first such op, 1 for the next: random_seed.get_seed
# in a graph) with the global seed of that time, and each op's kernel (its Philox counter)
# belongs to the function as instantiated for one iterator. ipu_gpu calls the function once
# per element; a FunctionCall stands for the trace while it runs (thread-local), numbering the
# random ops of the call in order, and an IterationSeeds holds the kernels of one iterator.
class _Local(threading.local):
    state = None  # the running iteration's IterationSeeds
    call = None  # the running FunctionCall


_LOCAL = _Local()
_FUNCTION_KEYS = itertools.count()


class IterationSeeds:
    """The kernels of the random ops of the dataset functions of one iteration of a dataset
    (TF: one iterator, ``iter(ds)``), by (function, op position). A ``probe`` one stands for
    TF's tracing (calls that find an output spec): Generator draws in it do not advance the
    Generator's state."""

    __slots__ = ("kernels", "lock", "probe")

    def __init__(self, probe: bool = False):
        self.kernels = {}
        self.lock = threading.Lock()
        self.probe = probe


def current_iteration():
    """The IterationSeeds of the dataset iteration running in this thread, or None."""
    return _LOCAL.state


def swap_iteration(state):
    """Makes ``state`` the running iteration's in this thread; returns the one before."""
    prev = _LOCAL.state
    _LOCAL.state = state
    return prev


class in_iteration:
    """Context manager: ``state`` is the running iteration's in this thread (None: none)."""

    __slots__ = ("state", "prev")

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        self.prev = _LOCAL.state
        _LOCAL.state = self.state
        return self.state

    def __exit__(self, *exc):
        _LOCAL.state = self.prev


def in_dataset_function() -> bool:
    """Whether a dataset function is being called in this thread (it runs on the host: its
    random numbers are TF's, not the IPU's, even when a replica's infeed reads it)."""
    return _LOCAL.call is not None


def function_key():
    """A key naming a dataset function made now: inside a call of another dataset function
    (TF traces it inside that function's trace), (that function's key, how many were made
    before it in the call), so every call makes the same keys; else a new key."""
    call = _LOCAL.call
    if call is None:
        return next(_FUNCTION_KEYS)
    call.nested += 1
    return (call.key, call.nested)


def traced_global_seed():
    """The global seed a dataset function made now is traced with: the enclosing function's
    inside a call of one (TF: the outer function graph's seed), else the current one."""
    call = _LOCAL.call
    if call is not None:
        return call.seed
    with _HOST.lock:
        return _HOST.seed


class CallOrder:
    """Makes the random draws of calls run on several threads (a parallel map) happen in
    call order: the first draw of call ``i`` waits until calls ``0 .. i-1`` have ended, so
    the results are the sequential ones. Calls must start in index order (a FIFO pool)."""

    def __init__(self):
        self.cond = threading.Condition(threading.Lock())
        self.low = 0  # every call before it has ended
        self.ended = set()

    def wait_turn(self, index: int) -> None:
        with self.cond:
            while self.low < index:
                self.cond.wait()

    def end(self, index: int) -> None:
        self.end_all(index, index + 1)

    def end_all(self, start: int, stop: int) -> None:
        """Calls ``start .. stop-1`` have ended (again, for some: no matter)."""
        with self.cond:
            self.ended.update(range(max(start, self.low), stop))
            while self.low in self.ended:
                self.ended.remove(self.low)
                self.low += 1
            self.cond.notify_all()


class FunctionCall:
    """Calls of a dataset function, as a context manager entered once per call (by one
    thread at a time): ``key`` names the function (``function_key()``), ``seed`` is the
    global seed it was traced with; random ops in a call get TF's trace-time seeds and their
    kernels live in ``state`` (default: the running iteration's). With ``order``, call
    ``index``'s draws wait for its turn (``CallOrder``); such an object serves one call."""

    __slots__ = ("state", "key", "seed", "ops", "unseeded", "nested", "order", "index",
                 "turned", "prev_call", "prev_state")

    def __init__(self, key, seed, state=None, order=None, index=0):
        if state is None:
            state = _LOCAL.state or IterationSeeds()
        self.state, self.key, self.seed = state, key, seed
        self.order, self.index = order, index

    def __enter__(self):
        local = _LOCAL
        self.ops = self.unseeded = self.nested = 0
        self.turned = self.order is None
        self.prev_call, self.prev_state = local.call, local.state
        local.call, local.state = self, self.state
        return self

    def __exit__(self, *exc):
        local = _LOCAL
        local.call, local.state = self.prev_call, self.prev_state
        if self.order is not None:
            self.order.end(self.index)

    def turn(self) -> None:
        if not self.turned:
            self.order.wait_turn(self.index)
            self.turned = True

    def seeds(self, op_seed):
        """TF's ``get_seed`` in the traced function: an unseeded op's op seed is the number
        of unseeded ops before it in the function."""
        self.turn()
        self.ops += 1
        if op_seed is None:
            if self.seed is None:
                return (None, None)
            op_seed = self.unseeded
            self.unseeded += 1
        first = _DEFAULT_GRAPH_SEED if self.seed is None else self.seed % _MAXINT32
        pair = (int(first), int(op_seed % _MAXINT32))
        return (0, _MAXINT32) if pair == (0, 0) else pair

    def reserve(self, slot, op_key, seed1, seed2, blocks: int):
        """(philox key, first counter) from the kernel of the op at ``slot`` of this
        function in this iteration (created on its first call, then advanced)."""
        name = (self.key, slot, op_key, seed1 or 0, seed2 or 0)
        with self.state.lock:
            entry = self.state.kernels.get(name)
            if entry is None:
                if seed1 is None:  # no seed at all: TF seeds the kernel from the OS
                    seed1, seed2 = secrets.randbits(64), secrets.randbits(64)
                entry = self.state.kernels[name] = [_key(seed1), (seed2 & _MASK64) << 64, 0]
            start = (entry[1] + entry[2]) & _MASK128
            entry[2] += blocks
        return entry[0], start


def _generator_draw_lasts() -> bool:
    """Whether a Generator draw now advances its state: not while a dataset function is
    probed for its spec (TF traces it without drawing). In a parallel map the draw waits for
    its call's turn."""
    call = _LOCAL.call
    if call is not None:
        call.turn()
    state = _LOCAL.state
    return state is None or not state.probe


# ---- seeds inside IPU programs -------------------------------------------------------------
_REPLICA_LOCK = threading.Lock()
_PROGRAM_STREAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_DEVICE_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_REPLICA_SEED_KEY = (0x5EED5EED, 0x1D0C5EED)


class _ReplicaStreams:
    __slots__ = ("keys", "positions", "__weakref__")

    def __init__(self, keys):
        self.keys = keys
        self.positions = [0] * len(keys)


class _RunsPoint:
    __slots__ = ("runs", "before")

    def __init__(self, runs: list):
        self.runs, self.before = runs, list(runs)

    def undo(self) -> None:
        self.runs[:] = self.before

    def close(self) -> None:
        pass


def _replica_keys(device, replicas: int) -> list:
    """One Philox key per replica for one execution: random, or after ``reset_ipu_seed`` a
    function of (seed, execution since the reset, replica; replica 0 for all when identical)."""
    seed = getattr(device, "seed", None)
    if seed is None:
        return [(secrets.randbits(32), secrets.randbits(32)) for _ in range(replicas)]
    generation = getattr(device, "seed_generation", 0)
    runs = _DEVICE_RUNS.get(device)
    if runs is None or runs[0] != generation:
        runs = _DEVICE_RUNS[device] = [generation, 0]
    if rollback.is_open():  # an undone execution does not count (emulation/rollback.py)
        rollback.save(runs, lambda: _RunsPoint(runs))
    execution = runs[1]
    runs[1] += 1
    identical = bool(getattr(device, "identical_replicas", False))
    keys = []
    for r in range(replicas):
        counter = (seed & _MASK64) | execution << 64 | (0 if identical else r) << 96
        w = philox(np, _REPLICA_SEED_KEY, counter & _MASK128, 2)
        keys.append((int(w[0]), int(w[1])))
    return keys


def _replica_reserve(ctx, blocks: int):
    owner = ctx.program if ctx.program is not None else ctx
    streams = _PROGRAM_STREAMS.get(owner)
    if streams is None:
        with _REPLICA_LOCK:
            streams = _PROGRAM_STREAMS.get(owner)
            if streams is None:
                streams = _ReplicaStreams(_replica_keys(ctx.device, ctx.replication_factor))
                _PROGRAM_STREAMS[owner] = streams
    r = ctx.replica_index  # each replica runs in one thread: its position is its own
    start = streams.positions[r]
    streams.positions[r] = start + blocks
    return streams.keys[r], start


# ---- argument conversion ---------------------------------------------------------------------
def _dim(op: str, shape, d) -> int:
    if isinstance(d, Tensor):  # tf.random.normal([tf.shape(x)[0], 3]): TF packs the list
        if d.ndim == 0 and d.dtype in _INTS:
            return int(_host(d._value))
    elif isinstance(d, (numbers.Integral, np.integer)) and not isinstance(d, (bool, np.bool_)):
        return int(d)
    raise InvalidArgumentError(f"{op}: shape must be a list of ints, got {shape!r}")


def _shape(op: str, shape):
    """TF's ``shape`` argument (a 1-D int32/int64 Tensor or array, or a list of ints or int
    scalar Tensors) as a tuple, and the index dtype TF's kernel is keyed by (int64 for int64
    arrays and values beyond int32)."""
    if isinstance(shape, (Tensor, np.ndarray)) or backend.is_cupy_array(shape):
        a = _host(shape._value if isinstance(shape, Tensor) else shape)  # syncs device
        if a.dtype not in _INTS:
            raise InvalidArgumentError(f"{op}: shape must be an int32 or int64 vector, got "
                                       f"dtype {a.dtype}")
        if a.ndim != 1:
            raise InvalidArgumentError(f"{op}: shape must be a vector of int32/int64, got shape "
                                       f"{shape_str(a.shape)}")
        index, dims = a.dtype, [int(d) for d in a.tolist()]
    elif isinstance(shape, (list, tuple)) or hasattr(shape, "as_list"):  # a tf.TensorShape
        dims = [_dim(op, shape, d) for d in (shape if isinstance(shape, (list, tuple))
                                             else shape.as_list())]
        index = dtypes.int32 if all(-(2**31) <= d < 2**31 for d in dims) else dtypes.int64
    elif isinstance(shape, (numbers.Number, np.generic)):
        raise InvalidArgumentError(f"{op}: shape must be a vector of int32/int64, got the "
                                   f"scalar {shape!r}")
    else:
        raise TypeError(f"{op}: shape must be a list of ints or an int Tensor, got "
                        f"{type(shape).__name__}")
    for d in dims:
        if d < 0:  # TF: "Dimension -1 must be >= 0"
            raise InvalidArgumentError(f"{op}: shape must not have negative sizes, got {dims}")
    return tuple(dims), index


def _float_dtype(op: str, dtype):
    d = dtypes.as_dtype(dtype, f"{op}: dtype")
    if d not in _FLOATS:
        raise TypeError(f"{op}: dtype must be float16, float32 or float64, got {d.name}")
    return d


def _dtype_in(op: str, dtype, accepted):
    d = dtypes.as_dtype(dtype, f"{op}: dtype")
    if d not in accepted:  # TF: ValueError "Argument `dtype` got invalid value ..."
        raise ValueError(f"{op}: dtype must be one of {[a.name for a in accepted]}, got "
                         f"{d.name}")
    return d


def _param(op: str, arg: str, value, dtype, xp):
    """``ops.convert_to_tensor(value, dtype=dtype)``: a Tensor of another dtype is a
    ValueError (TF's "Tensor conversion requested dtype ..."); Python values convert."""
    if isinstance(value, Tensor):
        if value.dtype != dtype:
            raise ValueError(f"{op}: {arg} must have dtype {dtype.name}, got a Tensor of dtype "
                             f"{value.dtype.name}")
        return value
    if value is None:
        raise ValueError(f"{op}: {arg} must be a number or a Tensor, got None")
    return wrap(to_array(value, dtype, arg=arg, op=op, xp=xp))


def _scalar_int(op: str, arg: str, t) -> int:
    """The value of a 0-d integer parameter (``# syncs device`` for a GPU Tensor)."""
    a = t._value
    if a.ndim != 0:
        raise InvalidArgumentError(f"{op}: {arg} must be a scalar (0-D), got shape "
                                   f"{shape_str(a.shape)}")
    return int(a.get() if backend.is_cupy_array(a) else a)


def _host(a):
    return a.get() if backend.is_cupy_array(a) else a  # syncs device


def _to_device(a, xp):
    return a if xp is np else xp.asarray(a)


def _output(op: str, dims, dtype):
    xp = backend.default_xp()
    check_allocation(op, xp, dims, dtype)
    return xp, math.prod(dims)


def _scale_shift(rnd, scale, shift):
    """``rnd * scale + shift`` with TF's ops (so Tensors broadcast and take gradients)."""
    return math_ops.add(math_ops.multiply(rnd, scale), shift)


def _normal_from(op, raw, key_counter, shape, mean, stddev, dtype):
    """The body shared by the normal and truncated normal ops (stateful, stateless and
    ``Generator``): ``raw`` (``raw_normal`` or ``raw_truncated_normal``) draws standard values;
    ``key_counter(dtype, index, n)`` is called only once the arguments are checked."""
    d = _float_dtype(op, dtype)
    dims, index = _shape(op, shape)
    xp, n = _output(op, dims, d)
    mean, stddev = _param(op, "mean", mean, d, xp), _param(op, "stddev", stddev, d, xp)
    key, counter = key_counter(d, index, n)
    rnd = _to_device(raw(key, counter, n, d).reshape(dims), xp)
    return _scale_shift(wrap(rnd), stddev, mean)


# ---- stateful ops ------------------------------------------------------------------------------
def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None) -> Tensor:
    """Random values from a normal distribution (``tf.random.normal``).

    Args:
      shape: a list of ints or a 1-D int32/int64 Tensor.
      mean, stddev: numbers or Tensors of ``dtype``, broadcastable with ``shape`` (the
        result is ``standard_normal * stddev + mean`` with gradients to Tensor arguments).
      dtype: float16, float32 or float64.
      seed: the op seed (see ``set_seed``).

    Raises:
      InvalidArgumentError: a malformed shape or a negative size.
      TypeError: a non-float ``dtype``. ValueError: a ``mean``/``stddev`` Tensor of another
        dtype.
    """
    node = recorded_call(normal, (shape,), dict(mean=mean, stddev=stddev, dtype=dtype,
                                                seed=seed, name=name))
    if node is not NotImplemented:  # built into a TF1 graph: drawn per Session.run
        return node
    return _normal_from(
        "normal", raw_normal,
        lambda d, index, n: reserve(("RandomStandardNormal", d, index), stateful_seeds(seed),
                                    n * 256),
        shape, mean, stddev, dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None,
                     name=None) -> Tensor:
    """Normal values redrawn when more than two standard deviations from the mean
    (``tf.random.truncated_normal``); arguments and errors as ``normal``."""
    node = recorded_call(truncated_normal, (shape,), dict(mean=mean, stddev=stddev,
                                                          dtype=dtype, seed=seed, name=name))
    if node is not NotImplemented:  # built into a TF1 graph: drawn per Session.run
        return node
    return _normal_from(
        "truncated_normal", raw_truncated_normal,
        lambda d, index, n: reserve(("TruncatedNormal", d, index), stateful_seeds(seed), n * 256),
        shape, mean, stddev, dtype)


def _int_bounds(op, minval, maxval, n):
    lo = _scalar_int(op, "minval", minval)
    hi = _scalar_int(op, "maxval", maxval)
    if n and lo >= hi:  # TF checks only for a non-empty output ("Need minval < maxval")
        raise InvalidArgumentError(f"{op}: minval must be < maxval, got {lo} >= {hi}")
    return lo, hi


def _stateful_uniform(xp, dims, index, d, seeds):
    """The raw [0, 1) draw of ``tf.random.uniform`` (TF's RandomUniform kernel) on ``xp``."""
    n = math.prod(dims)
    key, counter = reserve(("RandomUniform", d, index), seeds, n * 256)
    return raw_uniform(xp, key, counter, n, d).reshape(dims)


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None) -> Tensor:
    """Random values uniform in [minval, maxval) (``tf.random.uniform``).

    Floats default to [0, 1) and are ``u * (maxval - minval) + minval`` for TF's 23-bit
    (10-bit for float16, 52-bit for float64) uniform u. Integers need ``maxval`` and scalar
    bounds; they are ``minval + bits % (maxval - minval)`` (slightly biased unless the range
    is a power of two, as TF).

    Raises:
      ValueError: a dtype other than float16/32/64 or int32/64; an integer dtype without
        ``maxval``; a bound Tensor of another dtype.
      InvalidArgumentError: a malformed shape; non-scalar integer bounds;
        ``minval >= maxval`` for a non-empty integer output.
    """
    node = recorded_call(uniform, (shape,), dict(minval=minval, maxval=maxval, dtype=dtype,
                                                 seed=seed, name=name))
    if node is not NotImplemented:  # built into a TF1 graph: drawn per Session.run
        return node
    d = _dtype_in("uniform", dtype, _FLOATS + _INTS)
    if maxval is None:
        if d in _INTS:
            raise ValueError(f"uniform: maxval must be given for integer dtype {d.name}, got "
                             "None")
        maxval = 1
    dims, index = _shape("uniform", shape)
    xp, n = _output("uniform", dims, d)
    plain = (isinstance(minval, int) and minval == 0, isinstance(maxval, int) and maxval == 1)
    if not all(plain) or d in _INTS:
        minval = _param("uniform", "minval", minval, d, xp)
        maxval = _param("uniform", "maxval", maxval, d, xp)
    seeds = stateful_seeds(seed)
    if d in _INTS:
        lo, hi = _int_bounds("uniform", minval, maxval, n)
        if n == 0:
            return wrap(xp.empty(dims, d))
        key, counter = reserve(("RandomUniformInt", d, index), seeds, n * 256)
        return wrap(raw_uniform_int(xp, key, counter, n, lo, hi, d).reshape(dims))
    rnd = wrap(_stateful_uniform(xp, dims, index, d, seeds))
    if plain[0]:
        return rnd if plain[1] else math_ops.multiply(rnd, maxval)
    return _scale_shift(rnd, math_ops.subtract(maxval, minval), minval)


def _logits(op: str, logits):
    a = to_array(logits, arg="logits", op=op)
    if a.dtype not in _FLOATS:  # TF has no integer kernel (NotFoundError)
        raise TypeError(f"{op}: logits must be float16, float32 or float64, got {a.dtype}")
    return a


def _num_samples(op: str, num_samples) -> int:
    if isinstance(num_samples, Tensor):
        return _scalar_int(op, "num_samples", num_samples)
    if isinstance(num_samples, bool) or not isinstance(num_samples, (numbers.Integral,
                                                                     np.integer)):
        raise TypeError(f"{op}: num_samples must be an int, got {num_samples!r}")
    return int(num_samples)


def _categorical_checks(op, a, num_samples):
    if a.ndim != 2:
        raise InvalidArgumentError(f"{op}: logits must be a matrix, got shape "
                                   f"{shape_str(a.shape)}")
    if num_samples < 0:
        raise InvalidArgumentError(f"{op}: num_samples must be non-negative, got "
                                   f"{num_samples}")
    if a.shape[1] == 0:
        raise InvalidArgumentError(f"{op}: logits must have at least one class, got shape "
                                   f"{shape_str(a.shape)}")


def _categorical_blocks(rows: int, num_samples: int) -> int:
    # TF's CPU kernel: rows * ceil4(num_samples) * 2 words, times the usual 256
    return rows * (-(-num_samples // 4) * 4) * 2 * 256


def categorical(logits, num_samples, dtype=None, seed=None, name=None) -> Tensor:
    """Samples from categorical distributions (``tf.random.categorical``).

    Args:
      logits: [batch_size, num_classes] unnormalized log-probabilities (float).
      num_samples: samples per row (an int or a 0-d int Tensor).
      dtype: int32 or int64 (default) for the output [batch_size, num_samples].

    Non-finite logits get probability 0; a row with none finite gives ``num_classes``, as TF.
    The sampling runs on the host (``# syncs device`` for GPU logits).

    Raises:
      ValueError: another ``dtype``. TypeError: integer logits, a non-int ``num_samples``.
      InvalidArgumentError: logits not a matrix, no classes, a negative ``num_samples``.
    """
    a = _logits("categorical", logits)
    d = dtypes.int64 if dtype is None else _dtype_in("categorical", dtype, _INTS)
    s = _num_samples("categorical", num_samples)
    seeds = stateful_seeds(seed)
    _categorical_checks("categorical", a, s)
    xp = backend.xp_of(a)
    rows = a.shape[0]
    if rows * s == 0:
        return wrap(xp.empty((rows, s), d))
    key, counter = reserve(("Multinomial", a.dtype, d), seeds, _categorical_blocks(rows, s))
    return wrap(_to_device(raw_categorical(key, counter, _host(a), s, d), xp))


def shuffle(value, seed=None, name=None) -> Tensor:
    """``value`` with its first dimension randomly permuted (``tf.random.shuffle``): TF's
    Fisher-Yates, swapping element i with i + bits_i % (n - i). The permutation is made on
    the host; the rows are gathered on the value's device."""
    a = to_array(value, arg="value", op="shuffle")
    seeds = stateful_seeds(seed)
    if a.size <= 1 or a.shape[0] <= 1:
        return value if isinstance(value, Tensor) else wrap(a)
    n = a.shape[0]
    key, counter = reserve(("RandomShuffle", a.dtype), seeds, -(-(n - 1) // 4))
    bits = philox(np, key, counter, n - 1).astype(np.int64)
    targets = (np.arange(n - 1) + bits % np.arange(n, 1, -1)).tolist()
    perm = list(range(n))
    for i, j in enumerate(targets):  # sequential by nature: each swap sees the previous
        perm[i], perm[j] = perm[j], perm[i]
    xp = backend.xp_of(a)
    return wrap(xp.take(a, _to_device(np.asarray(perm, np.int64), xp), axis=0))


# ---- stateless ops -----------------------------------------------------------------------------
_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)


class Algorithm(enum.Enum):
    """The RNG algorithms of ``tf.random.Generator`` and the stateless ops."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _alg(op: str, alg) -> int:
    """An algorithm as TF's ``convert_alg_to_int``; ThreeFry is NotImplementedError (TF's CPU
    kernels have none either: "Non-XLA devices don't support the ThreeFry algorithm")."""
    if alg is None:
        value = Algorithm.AUTO_SELECT.value
    elif isinstance(alg, Algorithm):
        value = alg.value
    elif isinstance(alg, (int, np.integer)) and not isinstance(alg, bool):
        value = int(alg)
    elif isinstance(alg, str):
        canon = alg.strip().lower().replace("-", "").replace("_", "")
        value = {"philox": 1, "threefry": 2, "autoselect": 3}.get(canon)
    else:
        value = None
    if value not in (1, 2, 3):
        raise ValueError(f"{op}: alg must be 'philox', 'threefry' or 'auto_select', got "
                         f"{alg!r}")
    if value == Algorithm.THREEFRY.value:
        raise NotImplementedError(f"{op}: alg 'threefry' is not supported (TF's CPU kernels "
                                  "have no ThreeFry either); use 'philox' or 'auto_select'")
    return value


def _seed_array(op: str, seed):
    if seed is None:
        raise ValueError(f"{op}: seed must be a shape [2] int32/int64 tensor, got None")
    s = _host(to_array(seed, arg="seed", op=op, xp=np))
    if s.dtype not in _INTS:
        raise InvalidArgumentError(f"{op}: seed must be an int32 or int64 tensor, got "
                                   f"{s.dtype}")
    if s.shape != (2,):
        raise InvalidArgumentError(f"{op}: seed must have shape [2], got {shape_str(s.shape)}")
    return s


def stateless_key_counter(op: str, seed):
    """TF's StatelessRandomGetKeyCounter: Philox under a fixed key scrambles the two seeds
    (sign-extended to 64 bits) into a key and the high words of a counter."""
    s = _seed_array(op, seed)
    s0, s1 = (int(v) & _MASK64 for v in s)
    mix = philox(np, _SCRAMBLE_KEY, s0 | s1 << 64, 4).tolist()
    return (mix[0], mix[1]), mix[2] << 64 | mix[3] << 96


def _checked_stateless_key_counter(op: str, alg, seed):
    """``stateless_key_counter`` once ``alg`` is checked (the stateless normal ops check it
    after their other arguments, before the seed)."""
    _alg(op, alg)
    return stateless_key_counter(op, seed)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                     alg="auto_select") -> Tensor:
    """Normal values that depend only on ``seed`` (shape [2], int32/int64):
    ``tf.random.stateless_normal``. Arguments and errors as ``normal``; a malformed seed is an
    InvalidArgumentError."""
    op = "stateless_normal"
    return _normal_from(op, raw_normal,
                        lambda d, index, n: _checked_stateless_key_counter(op, alg, seed),
                        shape, mean, stddev, dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name=None, alg="auto_select") -> Tensor:
    """Truncated normal values that depend only on ``seed``
    (``tf.random.stateless_truncated_normal``)."""
    op = "stateless_truncated_normal"
    return _normal_from(op, raw_truncated_normal,
                        lambda d, index, n: _checked_stateless_key_counter(op, alg, seed),
                        shape, mean, stddev, dtype)


def _uniform_from(op, key_counter, dims, minval, maxval, d, xp, n):
    """The body shared by ``stateless_uniform`` and ``Generator.uniform`` (TF's V2 ops):
    ``key_counter()`` is called only once the arguments are checked."""
    if d in _INTS and minval is None:
        key, counter = key_counter()
        return wrap(raw_full_int(xp, key, counter, n, d).reshape(dims))
    minval = _param(op, "minval", minval, d, xp)
    maxval = _param(op, "maxval", maxval, d, xp)
    if d in _INTS:
        lo, hi = _int_bounds(op, minval, maxval, n)
        key, counter = key_counter()
        return wrap(raw_uniform_int(xp, key, counter, n, lo, hi, d).reshape(dims))
    key, counter = key_counter()
    rnd = wrap(raw_uniform(xp, key, counter, n, d).reshape(dims))
    return _scale_shift(rnd, math_ops.subtract(maxval, minval), minval)


def _int_range_args(op, d, minval, maxval):
    if d in _INTS:
        if (minval is None) != (maxval is None):
            raise ValueError(f"{op}: minval and maxval must be both None or both given for "
                             f"integer dtype {d.name}, got minval={minval!r} and "
                             f"maxval={maxval!r}")
    elif maxval is None:
        maxval = 1
    return maxval


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None,
                      alg="auto_select") -> Tensor:
    """Uniform values that depend only on ``seed`` (``tf.random.stateless_uniform``). For
    integer dtypes ``minval`` and ``maxval`` are both given, or both None for the full
    range."""
    op = "stateless_uniform"
    d = _dtype_in(op, dtype, _FLOATS + _INTS)
    maxval = _int_range_args(op, d, minval, maxval)
    dims, _ = _shape(op, shape)
    xp, n = _output(op, dims, d)
    _alg(op, alg)
    return _uniform_from(op, lambda: stateless_key_counter(op, seed), dims, minval, maxval, d,
                         xp, n)


def stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64, name=None) -> Tensor:
    """Categorical samples that depend only on ``seed`` (``tf.random.stateless_categorical``);
    as ``categorical`` otherwise."""
    op = "stateless_categorical"
    a = _logits(op, logits)
    d = dtypes.int64 if dtype is None else _dtype_in(op, dtype, _INTS)
    s = _num_samples(op, num_samples)
    key, counter = stateless_key_counter(op, seed)
    _categorical_checks(op, a, s)
    xp = backend.xp_of(a)
    if a.shape[0] * s == 0:
        return wrap(xp.empty((a.shape[0], s), d))
    return wrap(_to_device(raw_categorical(key, counter, _host(a), s, d), xp))


def split(seed, num=2, alg="auto_select") -> Tensor:
    """``num`` new seeds [num, 2] from ``seed``, of ``seed``'s dtype
    (``tf.random.experimental.stateless_split``)."""
    s = _seed_array("stateless_split", seed)
    return stateless_uniform([_num_samples("stateless_split", num), 2], s, minval=None,
                             maxval=None, dtype=s.dtype, alg=alg)


def fold_in(seed, data, alg="auto_select") -> Tensor:
    """A new seed [2] from ``seed`` and the int ``data``: ``[full-range int from seed, data]``
    in ``data``'s dtype (``tf.random.fold_in``)."""
    v = to_array(data, arg="data", op="stateless_fold_in", xp=np)
    if v.dtype not in _INTS or v.ndim != 0:
        raise InvalidArgumentError(f"stateless_fold_in: data must be an int32 or int64 scalar, "
                                   f"got {v.dtype} of shape {shape_str(v.shape)}")
    first = _host(stateless_uniform([], seed, minval=None, maxval=None, dtype=v.dtype,
                                    alg=alg)._value)
    out = np.stack([first, _host(v)])
    return wrap(_to_device(out, backend.default_xp()))


# ---- Generator ---------------------------------------------------------------------------------
_STATE_SIZE = {1: 3, 2: 2, 3: 3}


def _to_int64(v: int) -> int:
    v &= _MASK64
    return v - 2**64 if v >= 2**63 else v


def create_rng_state(seed, alg) -> np.ndarray:
    """A state for ``alg`` from a seed (``tf.random.create_rng_state``): an int is cut into
    64-bit words, lowest first ([1234, 0, 0] for Philox); an array is cast to int64, cut to
    the state size and padded with zeros on the left."""
    size = _STATE_SIZE[_alg_any("create_rng_state", alg)]
    if isinstance(seed, (numbers.Integral, np.integer)):
        seed = int(seed)
        words = []
        for _ in range(size):
            words.append(_to_int64(seed))
            seed >>= 64
        return np.array(words, np.int64)
    a = _host(to_array(seed, arg="seed", op="create_rng_state", xp=np))
    if a.dtype.kind not in "iuf":
        raise TypeError(f"create_rng_state: seed must be an int or an integer array, got "
                        f"{a.dtype}")
    a = a.astype(np.int64).reshape(-1)[:size]
    return np.concatenate([np.zeros(size - a.size, np.int64), a])


def _alg_any(op, alg) -> int:
    try:
        return _alg(op, alg)
    except NotImplementedError:
        return Algorithm.THREEFRY.value


class Generator:
    """A random number generator with a state (``tf.random.Generator``): the Philox counter
    (two int64 words) and key (one), in an int64 Variable (``state``). Each draw of n values
    reads the state and advances the counter by 256 * n, as TF; the numbers are TF's CPU
    numbers for the same state. Draws are serialised by a lock; inside a replicated program
    the replicas share the generator (as host Variables), so their order is the threads'.

    Deliberate differences: ThreeFry is NotImplementedError; ``uniform_full_int`` defaults to
    int64 (ipu_gpu has no uint64); ``binomial`` is missing.
    """

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("Generator: give copy_from or state and alg, not both")
            state, alg = copy_from._read(), copy_from.algorithm
        elif state is None or alg is None:
            raise ValueError("Generator: state and alg must be given together (or use "
                             "from_seed / from_non_deterministic_state)")
        self._alg = _alg("Generator", alg)
        self._state_var = Variable(self._check_state("Generator", state), trainable=False,
                                   name="StateVar")
        self._lock = threading.Lock()

    def _check_state(self, op, state) -> np.ndarray:
        a = _host(to_array(state, arg="state", op=op, xp=np))
        if a.dtype.kind not in "iu":
            raise TypeError(f"{op}: state must be an integer array, got {a.dtype}")
        size = _STATE_SIZE[self._alg]
        if a.shape != (size,):
            raise ValueError(f"{op}: state must have shape [{size}], got {shape_str(a.shape)}")
        return a.astype(np.int64)

    @classmethod
    def from_state(cls, state, alg) -> Generator:
        return cls(state=state, alg=alg)

    @classmethod
    def from_seed(cls, seed, alg=None) -> Generator:
        """A generator whose state is ``create_rng_state(seed, alg)`` (Philox by default)."""
        alg = Algorithm.PHILOX if alg is None else alg
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None) -> Generator:
        """A generator with a state from the operating system's entropy."""
        alg = Algorithm.PHILOX if alg is None else alg
        size = _STATE_SIZE[_alg("Generator.from_non_deterministic_state", alg)]
        return cls(state=[_to_int64(secrets.randbits(64)) for _ in range(size)], alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg) -> Generator:
        return cls(state=cls._key_counter_state(key, counter), alg=alg)

    @staticmethod
    def _key_counter_state(key, counter):
        c = _host(to_array(counter, arg="counter", op="Generator", xp=np)).astype(np.int64)
        k = _host(to_array(key, arg="key", op="Generator", xp=np)).astype(np.int64)
        if k.ndim != 0:
            raise ValueError(f"Generator: key must be a scalar, got shape {shape_str(k.shape)}")
        return np.concatenate([c.reshape(-1), k.reshape(1)])

    def reset(self, state) -> None:
        with self._lock:
            self._state_var.assign(self._check_state("Generator.reset", state))

    def reset_from_seed(self, seed) -> None:
        self.reset(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key, counter) -> None:
        self.reset(self._key_counter_state(key, counter))

    @property
    def state(self) -> Variable:
        """The state Variable (int64 [3]: counter low, counter high, key)."""
        return self._state_var

    @property
    def algorithm(self) -> int:
        return self._alg

    @property
    def key(self) -> Tensor:
        return wrap(self._read()[-1:].reshape(()))

    def _read(self) -> np.ndarray:
        return np.array(_host(self._state_var._value), np.int64)

    def skip(self, delta) -> Tensor:
        """Advance the counter as a draw of ``delta`` values would; returns the old state."""
        delta = _num_samples("Generator.skip", delta)
        lasts = _generator_draw_lasts()  # before the lock: it may wait for a call's turn
        with self._lock:
            old = self._read()
            u = old.astype(np.uint64).tolist()
            counter = (u[0] | u[1] << 64) + 256 * delta & _MASK128
            new = np.array([_to_int64(counter), _to_int64(counter >> 64), old[2]], np.int64)
            if lasts:
                self._state_var.assign(new)
        return wrap(old)

    def _key_counter(self, n: int):
        old = self.skip(n)._value.astype(np.uint64).tolist()
        return _key(old[2]), old[0] | old[1] << 64

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None) -> Tensor:
        """Normal values (``Generator.normal``); arguments as ``tf.random.normal``."""
        return _normal_from("Generator.normal", raw_normal,
                            lambda d, index, n: self._key_counter(n), shape, mean, stddev,
                            dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                         name=None) -> Tensor:
        """Truncated normal values (``Generator.truncated_normal``)."""
        return _normal_from("Generator.truncated_normal", raw_truncated_normal,
                            lambda d, index, n: self._key_counter(n), shape, mean, stddev,
                            dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None) -> Tensor:
        """Uniform values (``Generator.uniform``); integer dtypes take both bounds or neither
        (the full range)."""
        op = "Generator.uniform"
        d = dtypes.as_dtype(dtype, f"{op}: dtype")
        maxval = _int_range_args(op, d, minval, maxval)
        d = _dtype_in(op, d, _FLOATS + _INTS)
        dims, _ = _shape(op, shape)
        xp, n = _output(op, dims, d)
        return _uniform_from(op, lambda: self._key_counter(n), dims, minval, maxval, d, xp, n)

    def uniform_full_int(self, shape, dtype=dtypes.int64, name=None) -> Tensor:
        """Integers over the whole range of int32 or int64 (TF's default is uint64)."""
        op = "Generator.uniform_full_int"
        d = _dtype_in(op, dtype, _INTS)
        dims, _ = _shape(op, shape)
        xp, n = _output(op, dims, d)
        key, counter = self._key_counter(n)
        return wrap(raw_full_int(xp, key, counter, n, d).reshape(dims))

    def make_seeds(self, count=1) -> Tensor:
        """Seeds for stateless ops: int64 [2, count] (random keys over zeros)."""
        keys = self.uniform_full_int([_num_samples("Generator.make_seeds", count)])
        xp = backend.xp_of(keys._value)
        return wrap(xp.stack([keys._value, xp.zeros_like(keys._value)]))

    def split(self, count=1) -> list:
        """``count`` new generators, each with a random key and a zero counter."""
        keys = _host(self.uniform_full_int([_num_samples("Generator.split", count)])._value)
        return [Generator(state=[0, 0, int(k)], alg=self._alg) for k in keys]


_GLOBAL_GENERATOR: list = []


def get_global_generator() -> Generator:
    """The global Generator, made from a nondeterministic state on first use."""
    with _HOST.lock:
        if not _GLOBAL_GENERATOR:
            _GLOBAL_GENERATOR.append(Generator.from_non_deterministic_state())
        return _GLOBAL_GENERATOR[0]


def set_global_generator(generator) -> None:
    """Replace the global Generator (TF does not check the type; ipu_gpu raises TypeError)."""
    if not isinstance(generator, Generator):
        raise TypeError(f"set_global_generator: generator must be a Generator, got "
                        f"{type(generator).__name__}")
    with _HOST.lock:
        _GLOBAL_GENERATOR[:] = [generator]


# ---- dropout -----------------------------------------------------------------------------------
def _check_dropout(x, keep, *, scale, divide):
    if x.dtype.kind != "f":
        raise TypeError(f"dropout: x must be a floating-point tensor, got {x.dtype}")
    if keep.dtype != np.bool_:
        raise TypeError(f"dropout: keep_mask must be bool, got {keep.dtype}")
    try:
        np.broadcast_shapes(x.shape, keep.shape)
    except ValueError:
        raise InvalidArgumentError(f"dropout: noise_shape must be broadcastable to x's shape "
                                   f"{shape_str(x.shape)}, got {shape_str(keep.shape)}") from None


def _scaled(xp, a, scale, divide):
    s = xp.asarray(scale, dtype=a.dtype)
    return a / s if divide else a * s


def _dropout_forward(k, xp, x, keep, *, scale, divide):
    with quiet(xp):  # a Tensor rate of 1 scales by inf; where() drops every value anyway
        y = xp.where(keep, _scaled(xp, x, scale, divide), xp.zeros((), x.dtype))
    return y, (keep, x.shape)


def _dropout_backward(k, xp, res, g, *, scale, divide):
    keep, x_shape = res
    gx = _scaled(xp, xp.where(keep, g, xp.zeros((), g.dtype)), scale, divide)
    extra = gx.ndim - len(x_shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, d in enumerate(x_shape)
                                       if d == 1 and gx.shape[i + extra] != 1)
    if axes:  # a noise_shape that widened the output: sum back onto x
        gx = xp.sum(gx, axis=axes, keepdims=True).reshape(x_shape)
    return gx, None


_DROPOUT = register("dropout", args=("x", "keep_mask"), check=_check_dropout,
                    forward=_dropout_forward, backward=_dropout_backward)


def _noise_shape(x_shape, noise_shape):
    if noise_shape is None:
        return tuple(x_shape), dtypes.int32
    if isinstance(noise_shape, (list, tuple)) and len(noise_shape) == len(x_shape):
        noise_shape = [x_shape[i] if d is None else d for i, d in enumerate(noise_shape)]
    return _shape("dropout", noise_shape)


def dropout(x, rate, noise_shape=None, seed=None, name=None) -> Tensor:
    """Zero elements of ``x`` with probability ``rate`` and scale the rest by 1 / (1 - rate)
    (``tf.nn.dropout``, TF2).

    The keep mask is ``uniform(noise_shape, seed=seed, dtype=x.dtype) >= rate`` (TF's
    stream), broadcast against ``x``; ``noise_shape`` entries of None take ``x``'s sizes.
    The gradient is the output gradient where kept, times the same scale: it reuses the
    forward mask. ``rate == 0`` returns ``x``.

    Raises:
      ValueError: a number ``rate`` outside [0, 1); a non-scalar or non-number ``rate``;
        an integer ``x``; a Tensor ``rate`` of another dtype (all TF's ValueErrors).
      InvalidArgumentError: a ``noise_shape`` that does not broadcast with ``x``.

    Deliberate difference: a Tensor ``rate`` is read (``# syncs device``) and takes no
    gradient.
    """
    number = isinstance(rate, numbers.Real) and not isinstance(rate, Tensor)
    if number and (rate < 0 or rate >= 1):
        raise ValueError(f"dropout: rate must be a scalar tensor or a float in the range "
                         f"[0, 1), got {rate}")
    if isinstance(x, Tensor):
        xt = x
    else:
        graph_node = symbolic_call(dropout, (x,), dict(rate=rate, noise_shape=noise_shape,
                                                       seed=seed, name=name))
        if graph_node is not NotImplemented:
            return graph_node
        xt = wrap(to_array(x, arg="x", op="dropout"))
    d = xt.dtype
    if d.kind != "f":  # TF: ValueError "`x.dtype` must be a floating point tensor"
        raise ValueError(f"dropout: x must be a floating-point tensor, got {d}")
    if number and rate == 0:
        stateful_seeds(seed)  # TF still draws the op seed, so later streams do not shift
        return xt
    if number:
        scale, divide, r = 1 / (1 - float(rate)), False, float(rate)
    elif isinstance(rate, Tensor):
        if rate.ndim != 0:
            raise ValueError(f"dropout: rate must be a scalar tensor, got shape "
                             f"{shape_str(rate.shape)}")
        if rate.dtype != d:
            raise ValueError(f"dropout: rate must have x's dtype {d.name}, got {rate.dtype.name}")
        r = float(_host(rate._value))
        scale, divide = float(np.asarray(1, d) - np.asarray(r, d)), True
    else:
        raise ValueError(f"dropout: rate must be a scalar or a scalar tensor, got {rate!r}")
    dims, index = _noise_shape(xt.shape, noise_shape)
    xp = backend.xp_of(xt._value)  # the mask is drawn on x's device
    check_allocation("dropout", xp, dims, d)
    rnd = _stateful_uniform(xp, dims, index, d, stateful_seeds(seed))
    keep = rnd >= xp.asarray(r, dtype=d)  # the rate in x's dtype, as TF compares
    return _DROPOUT(xt, keep, scale=scale, divide=divide)


__all__ = [
    "Algorithm", "Generator", "categorical", "create_rng_state", "dropout", "fold_in",
    "get_global_generator", "get_seed", "normal", "set_global_generator", "set_seed", "shuffle",
    "split", "stateless_categorical", "stateless_normal", "stateless_truncated_normal",
    "stateless_uniform", "truncated_normal", "uniform",
]
