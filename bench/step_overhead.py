"""Where the eager MLP step's time goes beyond its GEMMs (issue 15; the
``step_vs_kernels-mlp-b256-784-512-512-10`` row of test_bench_train_step.py).

    .venv/bin/python bench/step_overhead.py ratio [ROUNDS] [TIMEOUTS]
        step / its 8 GEMMs at each OpenBLAS thread timeout (``2**T`` clock ticks of spinning
        before an idle worker sleeps; ipu_gpu sets 16, kernels/_blas.py), all interleaved in
        one process (each round switches the timeout as ``limit_thread_spin`` does), median
        of the per-round ratios; and the same at one BLAS thread. Needs a quiet machine.
    .venv/bin/python bench/step_overhead.py parts [STEPS]
        per-statement thread CPU time of the step at one BLAS thread, its GEMMs replaced by
        fresh outputs of their shapes: what the step adds, statement by statement.
    .venv/bin/python bench/step_overhead.py opcodes
        Python opcodes and function calls one step executes, by function: the dispatch and
        tape work, counted, so the same on a loaded machine.
    .venv/bin/python bench/step_overhead.py opcost [ROUNDS]
        what Python costs inside the real step: each GEMM call is preceded by a small op chain
        on a 4x4 Tensor (add, bias_add, relu, reduce_mean: the registry, fusion and kernel
        calls the step makes, about 1,000 opcodes) or by a bare counting loop of as many
        opcodes; padded and plain steps alternate (blocks of 4, medians of the per-block
        differences of thread CPU time), against the same padding run warm in a loop.
    .venv/bin/python bench/step_overhead.py kernels [ROUNDS]
        the real step at one BLAS thread (real GEMMs, so caches as cold as in the bench):
        thread CPU time of each jitted elementwise/softmax/optimizer kernel per step, of the
        step and of its GEMMs (interleaved blocks, medians); the step less the time of its
        own GEMM calls and kernels is the Python, numpy-call and allocation work (load
        changes the GEMMs' time by more than that, so it is not taken from the GEMMs alone).
        Each kernel's floor: the bytes it reads and writes over np.copyto's bandwidth, cache-warm
        and right after the GEMMs; and the minor page faults per step (fresh outputs that
        fault pages each step would show here).

``parts`` times each statement where the step runs it, after the GEMMs' and the full-size
passes' traffic has evicted its code and data from L1/L2: a small op there costs 2-5x its warm
time (reduce_mean of the 256 losses: 40-70 us in the step, 13-23 us alone or when repeated at
once; an 8 MB memset before it costs as much as a GEMM does, the same call tree and opcodes,
no copy, float32 accumulator), so each Python opcode the step saves is worth more than a warm
loop shows.

With 2 BLAS threads the GEMMs use both cores and whatever else the step does runs on one, so
the ratio is about ``1 + 2 * s`` where ``s`` is that work's share of the single-thread GEMM
time (``ratio`` shows both).

``kernels`` with floors, same machine and load (3-4, 2026-11-28 13:45 UTC): sub_product 225 us
for 8.0 MB (floor 189 us warm, 442 us at the post-GEMM bandwidth), bias+relu 86 us for 2.1 MB
(49 / 116), relu-grad with column sums 72 us for 3.2 MB (74 / 173), cross-entropy 19 us; copy
bandwidth 39-43 GB/s warm, 18 GB/s after the GEMMs; 0.07-0.08 minor faults per step (host
memory pool: no first-touch of fresh outputs). The jitted passes run at the warm copy floor;
the rest (Python, numpy calls) was 757-796 us, about two thirds of what the step adds.

``opcost`` on the 2-core EPYC (load 0.4-1.0, 2026-11-28 16:35-16:43 UTC, two runs): the op
chain's opcodes cost 50-53 ns each in the step (25-43 ns warm), about 13 us an op call on a
4x4 Tensor; the counting loop's 1.5-4.4 ns. An opcode's price is what it calls (frames,
numpy, Numba dispatch, attribute and dict lookups on cold objects): the count ranks paths, a
path's calls price it. Cutting 10999 -> 9635 opcodes a step (218 -> 174 calls: matmul's
check and backward of matrices, 4-argument plan kernels, tuple records, the tape's dense
branch, the deferred bias_add's check) took the ``parts`` total from 446-496 us to 448-482 us
(medians 488 -> 464, alternating runs of the two trees) and moved the interleaved ratio to
torch within its noise (0.935-0.942 -> 0.916-0.938, 120 rounds each, load 0.1-1.2).

``kernels`` on the 2-core EPYC with other work running (load 4-5, 2026-11-28): the step's
jitted kernels took 440-520 us per step (the SGD updates about 55%, bias+relu 20%, relu and
bias gradients 18%, the cross-entropy 5%): single-core passes over 2.7 MB of weights and 0.5
MB activations, memory-bound, while the second core idles between GEMMs; the rest (9875
Python opcodes in 186 calls, about 20 numpy calls, allocation) 610-800 us. Under such load
the wall-clock ``ratio`` swings 0.97-1.4 from run to run: compare CPU times (``kernels``,
``parts``) and opcode counts, alternating runs of the two trees.
"""

from __future__ import annotations

import collections
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchutil  # noqa: E402,F401  # thread counts as the bench sets them
import test_bench_train_step as train_step  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import ipu_gpu as tf  # noqa: E402
from ipu_gpu.kernels import _blas  # noqa: E402
from ipu_gpu.ops import matmul as matmul_module  # noqa: E402


def _mlp():
    x, y, init = train_step._mlp_problem()
    return x, y, init, train_step._mlp_step(x, y, init), train_step._mlp_gemms(x, init)


def _set_thread_timeout(t: int) -> None:
    lib = _blas.numpy_blas_library()
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(t)
    with _blas._lock:
        lib.openblas_read_env()
        lib.blas_thread_shutdown_()  # the workers start again with the new timeout


def ratio(rounds: int = 20, timeouts=(16, 20, 24)) -> None:
    _, _, _, step, gemms = _mlp()
    per = {t: [] for t in timeouts}
    single = []
    pc = time.perf_counter
    for _ in range(rounds):
        for t in timeouts:
            _set_thread_timeout(t)
            for _ in range(3):
                step(), gemms()
            t0 = pc()
            for _ in range(8):
                step()
            t1 = pc()
            for _ in range(8):
                gemms()
            per[t].append((t1 - t0) / (pc() - t1))
        with threadpool_limits(1):
            t0 = pc()
            for _ in range(4):
                step()
            t1 = pc()
            for _ in range(4):
                gemms()
            single.append((t1 - t0) / (pc() - t1))
    for t in timeouts:
        print(f"OPENBLAS_THREAD_TIMEOUT={t}: step / GEMMs {np.median(per[t]):.3f}")
    print(f"1 BLAS thread: step / GEMMs {np.median(single):.3f}")


def _fake_gemms():
    """Replace ipu_gpu's matmul engine by fresh outputs of the step's product shapes."""
    shapes = []
    real = matmul_module._mm

    def record(xp, a, b):
        out = real(xp, a, b)
        shapes.append((out.shape, out.dtype))
        return out
    return real, record, shapes


def parts(steps: int = 2000) -> None:
    x, y, init, step, _ = _mlp()
    real, record, shapes = _fake_gemms()
    matmul_module._mm = record
    step()
    turn = [0]

    def fresh(xp, a, b):
        shape, dtype = shapes[turn[0]]
        turn[0] = (turn[0] + 1) % len(shapes)
        return np.empty(shape, dtype)
    matmul_module._mm = fresh
    xt, yt = tf.constant(x), tf.constant(y)
    params = [tf.Variable(a) for a in init]
    clock = time.thread_time_ns
    names = ["tape enter"]
    for layer in range(len(params) // 2):
        names += [f"matmul {layer}", f"bias_add {layer}"]
        if layer + 1 < len(params) // 2:
            names.append(f"relu {layer}")
    names += ["sparse xent", "reduce_mean", "tape exit", "gradient"]
    names += [f"{what} {j}" for j in range(len(params)) for what in ("lr * g", "assign_sub")]

    def timed_step():
        marks = [clock()]
        with tf.GradientTape() as tape:
            marks.append(clock())
            h = xt
            for i in range(0, len(params), 2):
                h = tf.matmul(h, params[i])
                marks.append(clock())
                h = tf.nn.bias_add(h, params[i + 1])
                marks.append(clock())
                if i + 2 < len(params):
                    h = tf.nn.relu(h)
                    marks.append(clock())
            h = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yt, logits=h)
            marks.append(clock())
            loss = tf.reduce_mean(h)
            marks.append(clock())
        del h
        marks.append(clock())
        grads = tape.gradient(loss, params)
        marks.append(clock())
        for v, g in zip(params, grads):
            d = 0.01 * g
            marks.append(clock())
            v.assign_sub(d)
            marks.append(clock())
        return marks

    try:
        with threadpool_limits(1):
            for _ in range(100):
                timed_step()
            total = np.zeros(len(names))
            for _ in range(steps):
                total += np.diff(np.array(timed_step()))
    finally:
        matmul_module._mm = real
    total /= steps * 1000
    for name, us in zip(names, total):
        print(f"{name:14s} {us:7.1f} us")
    print(f"{'all':14s} {total.sum():7.1f} us (thread CPU time, GEMMs excluded)")


def opcodes() -> None:
    _, _, _, step, _ = _mlp()
    for _ in range(3):
        step()
    ops = collections.Counter()
    calls = collections.Counter()

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            ops[(frame.f_code.co_filename, frame.f_code.co_name)] += 1
        elif event == "call":
            calls[(frame.f_code.co_filename, frame.f_code.co_name)] += 1
        return tracer
    sys.settrace(tracer)
    try:
        step()
    finally:
        sys.settrace(None)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    print(f"one step: {sum(ops.values())} Python opcodes in {sum(calls.values())} calls")
    for (path, name), n in ops.most_common(25):
        print(f"{n:6d} {calls[(path, name)]:4d}x {path.replace(root, '')}:{name}")


def _count_opcodes(fn) -> int:
    count = [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            count[0] += 1
        return tracer
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count[0]


def opcost(rounds: int = 60) -> None:
    _, _, _, step, _ = _mlp()
    tiny = tf.constant(np.ones((4, 4), np.float32))
    bias = tf.constant(np.ones(4, np.float32))

    def ops():
        tf.reduce_mean(tf.nn.relu(tf.nn.bias_add(tiny + tiny, bias)))
    ops()
    n = _count_opcodes(ops)

    def loop(k=n // 6):  # about six opcodes an iteration
        i = 0
        while i < k:
            i += 1
    real = matmul_module._mm
    clock = time.thread_time
    for name, pad in (("op chain", ops), ("counting loop", loop)):
        extra = _count_opcodes(pad) * 8  # the step's eight GEMM calls

        def padded(xp, a, b, _pad=pad):
            _pad()
            return real(xp, a, b)
        for _ in range(5):
            step()
        diffs = []
        try:
            for _ in range(rounds):
                t0 = clock()
                for _ in range(4):
                    step()
                t1 = clock()
                matmul_module._mm = padded
                for _ in range(4):
                    step()
                diffs.append(((clock() - t1) - (t1 - t0)) / 4)
                matmul_module._mm = real
        finally:
            matmul_module._mm = real
        t0 = clock()
        for _ in range(2000):
            pad()
        warm = (clock() - t0) / 2000 * 8
        cold = float(np.median(diffs))
        print(f"{name:14s} +{extra} opcodes a step: +{cold * 1e6:6.1f} us thread CPU in the step "
              f"({cold / extra * 1e9:5.1f} ns an opcode), {warm * 1e6:6.1f} us warm "
              f"({warm / extra * 1e9:5.1f} ns)")


def kernels(rounds: int = 20) -> None:
    from numba.core.registry import CPUDispatcher

    from ipu_gpu.kernels import elementwise_cpu, optimizer_cpu, softmax_cpu

    _, _, _, step, gemms = _mlp()
    step()  # compiled before the patch: a jitted kernel calling a patched one cannot type it
    spent = collections.Counter()
    moved = collections.Counter()  # bytes the kernels read and write (arguments, once each)
    clock = time.thread_time_ns
    patched = []
    for module in (elementwise_cpu, softmax_cpu, optimizer_cpu):
        short = module.__name__.rsplit(".", 1)[1]
        for name, fn in list(vars(module).items()):
            if isinstance(fn, CPUDispatcher):
                def timed(*args, _fn=fn, _key=f"{short}.{name}"):
                    t0 = clock()
                    out = _fn(*args)
                    spent[_key] += clock() - t0
                    moved[_key] += sum(a.nbytes for a in args if type(a) is np.ndarray) + (
                        args[0].nbytes if _key.rsplit(".", 1)[1] in _IN_PLACE else 0)
                    return out
                patched.append((module, name, fn))
                setattr(module, name, timed)
    real_mm = matmul_module._mm

    def timed_mm(xp, a, b):
        t0 = clock()
        out = real_mm(xp, a, b)
        spent["GEMMs (in the step)"] += clock() - t0
        return out
    matmul_module._mm = timed_mm
    steps, gemm = [], []
    try:
        with threadpool_limits(1):
            for _ in range(10):
                step(), gemms()
            spent.clear()
            moved.clear()
            rest = []
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in range(rounds):
                before = sum(spent.values())
                t0 = clock()
                for _ in range(4):
                    step()
                t1 = clock()
                rest.append((t1 - t0 - (sum(spent.values()) - before)) / 4e3)
                for _ in range(4):
                    gemms()
                steps.append((t1 - t0) / 4e3)
                gemm.append((clock() - t1) / 4e3)
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            warm_bw, cold_bw = _copy_bandwidth(gemms)
    finally:
        matmul_module._mm = real_mm
        for module, name, fn in patched:
            setattr(module, name, fn)
    n = rounds * 4
    in_step = spent.pop("GEMMs (in the step)") / n / 1e3
    print(f"{'kernel (thread CPU per step)':45s} {'us':>7s} {'MB':>6s} {'floor us':>17s}")
    for key, ns in spent.most_common():
        mb = moved[key] / n / 1e6
        print(f"{key:45s} {ns / n / 1e3:7.1f} {mb:6.2f} {mb * 1e3 / warm_bw:7.1f} warm "
              f"{mb * 1e3 / cold_bw:5.1f} cold")
    k = sum(spent.values()) / n / 1e3
    s, g = np.median(steps), np.median(gemm)
    print(f"{'kernels':45s} {k:7.1f} us\n{'step - GEMMs':45s} {s - g:7.1f} us (step {s:.0f}, "
          f"GEMMs alone {g:.0f}, in the step {in_step:.0f})\n"
          f"{'rest (Python, numpy calls, allocation)':45s} {np.median(rest):7.1f} us "
          f"(the step less its own GEMM calls and kernels, median of rounds)\n"
          f"copy bandwidth (np.copyto, 2 x 2.7 MB): {warm_bw:.0f} GB/s warm, {cold_bw:.0f} GB/s "
          f"just after the GEMMs; minor page faults per step {faults / n / 2:.2f} (step and "
          f"GEMMs rounds together, halved)")


# kernels whose first argument is read and written (counted twice in the bytes moved)
_IN_PLACE = frozenset({"sub_product", "add_product", "sgd", "adam", "momentum",
                       "_relu_grad_into", "_relu_grad_column_sums_into", "_bias_relu_rows"})


def _copy_bandwidth(gemms, rounds: int = 20):
    """GB/s (read + write bytes over thread CPU time) of np.copyto of 2.7 MB, the step's
    weights: repeated (cache-warm) and right after the GEMMs (evicted as in the step)."""
    src = np.ones(670_000, np.float32)
    dst = np.empty_like(src)
    clock = time.thread_time_ns
    warm, cold = [], []
    for _ in range(rounds):
        gemms()
        t0 = clock()
        np.copyto(dst, src)
        cold.append(clock() - t0)
        t0 = clock()
        for _ in range(4):
            np.copyto(dst, src)
        warm.append((clock() - t0) / 4)
    return 2 * src.nbytes / np.median(warm), 2 * src.nbytes / np.median(cold)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "opcodes"
    args = sys.argv[2:]
    if what == "ratio":
        ratio(int(args[0]) if args else 20,
              tuple(int(t) for t in args[1].split(",")) if len(args) > 1 else (16, 20, 24))
    elif what == "parts":
        parts(int(args[0]) if args else 2000)
    elif what == "opcodes":
        opcodes()
    elif what == "opcost":
        opcost(int(args[0]) if args else 60)
    elif what == "kernels":
        kernels(int(args[0]) if args else 20)
    else:
        raise SystemExit(__doc__)
