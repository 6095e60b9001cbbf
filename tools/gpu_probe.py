"""Measurements on a real GPU that no pytest row makes (issue 19): CUDA-graph mechanics of
cupy, replicas overlapping on their streams, infeed copies hidden behind compute, and the
per-iteration cost of ``loops.repeat`` inside a compiled program.

Run on the GPU machine: ``IPU_GPU_BACKEND=gpu python3 tools/gpu_probe.py [OUT.json]``.
Prints one line per measurement and writes them all as JSON.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

import numpy as np

RESULTS: dict = {}


def record(name, **values):
    RESULTS[name] = values
    print(f"[probe] {name}: {json.dumps(values, default=str)}", flush=True)


def section(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - a probe reports, never stops the others
        record(fn.__name__, error=f"{type(e).__name__}: {e}",
               trace=traceback.format_exc()[-1500:])
    return fn


def cupy_capture_mechanics():
    import cupy

    s = cupy.cuda.Stream(non_blocking=True)
    record("capture_api", begin_capture_doc=(cupy.cuda.Stream.begin_capture.__doc__ or "")[:600],
           end_capture_doc=(cupy.cuda.Stream.end_capture.__doc__ or "")[:300],
           graph_attrs=[a for a in dir(cupy.cuda.graph.Graph) if not a.startswith("__")],
           runtime_modes=[a for a in dir(cupy.cuda.runtime) if "apture" in a])
    x = cupy.arange(1 << 20, dtype=cupy.float32)
    with s:
        ref = x * 2 + 1
        s.synchronize()
        s.begin_capture()
        y = x * 2 + 1
        g = s.end_capture()
        g.launch(stream=s)
        s.synchronize()
    record("capture_elementwise", equal=bool((y == ref).all()))

    # a fresh allocation size inside a capture (the pool must cudaMalloc)
    with s:
        s.begin_capture()
        try:
            z = cupy.empty(123_456_789 // 4, cupy.float32)
            z.fill(3)
            g = s.end_capture()
            g.launch(stream=s)
            s.synchronize()
            record("capture_fresh_malloc", ok=True, value=float(z[:1].get()[0]))
        except Exception as e:  # noqa: BLE001
            _abort(s)
            record("capture_fresh_malloc", ok=False, error=f"{type(e).__name__}: {e}")

    # host to device copy of a pageable numpy array inside a capture
    host = np.full(1000, 5.0, np.float32)
    with s:
        s.begin_capture()
        try:
            d = cupy.asarray(host)
            w = d + 1
            g = s.end_capture()
            host[:] = 7.0
            g.launch(stream=s)
            s.synchronize()
            record("capture_pageable_h2d", ok=True, replay_value=float(w[:1].get()[0]),
                   note="6 = value at capture time copied; 8 = host memory read at replay")
        except Exception as e:  # noqa: BLE001
            _abort(s)
            record("capture_pageable_h2d", ok=False, error=f"{type(e).__name__}: {e}")

    # a host read inside a capture
    with s:
        s.begin_capture()
        try:
            v = float((x * 2)[:1].get()[0])
            g = s.end_capture()
            record("capture_host_read", ok=True, value=v)
        except Exception as e:  # noqa: BLE001
            _abort(s)
            record("capture_host_read", ok=False, error=f"{type(e).__name__}: {e}")
        try:
            after = float((x + 1)[1:2].get()[0])
            s.synchronize()
            record("stream_after_failed_capture", ok=True, value=after)
        except Exception as e:  # noqa: BLE001
            record("stream_after_failed_capture", ok=False, error=f"{type(e).__name__}: {e}")

    # cuBLAS in a capture: bitwise the same as eager
    a = cupy.random.default_rng(0).standard_normal((1024, 1024), dtype=cupy.float32)
    with s:
        eager = a @ a
        s.begin_capture()
        try:
            c = a @ a
            g = s.end_capture()
            g.launch(stream=s)
            s.synchronize()
            record("capture_cupy_cublas", bitwise=bool((c == eager).all()))
        except Exception as e:  # noqa: BLE001 - cupy 14 refuses cuBLAS in captures
            _abort(s)
            record("capture_cupy_cublas", ok=False, error=f"{type(e).__name__}: {e}")

    # launch cost of a graph of one tiny kernel
    with s:
        t = cupy.zeros(1, cupy.float32)
        s.begin_capture()
        t += 1
        g = s.end_capture()
        g.upload(stream=s) if hasattr(g, "upload") else None
        for _ in range(100):
            g.launch(stream=s)
        s.synchronize()
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            g.launch(stream=s)
        s.synchronize()
        dt = (time.perf_counter() - t0) / n
        t1 = time.perf_counter()
        for _ in range(n):
            t += 1
        s.synchronize()
        de = (time.perf_counter() - t1) / n
    record("graph_launch_cost", graph_launch_us=dt * 1e6, eager_add_us=de * 1e6,
           value=float(t.get()[0]))


def _abort(s):
    try:
        s.end_capture()
    except Exception:  # noqa: BLE001
        pass


def _configure(n):
    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import config

    system.reset()
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = n
    cfg.configure_ipu_system()


def _compile(fn, inputs=None):
    from ipu_gpu.ipu import ipu_compiler, scopes

    with scopes.ipu_scope("/device:IPU:0"):
        return ipu_compiler.compile(fn, inputs)


def _timed_program(prog, graphs: str):
    """(seconds of the second compile-and-run of ``prog``, the loop report inside it)."""
    import os

    from ipu_gpu.emulation import graph_replay

    os.environ["IPU_GPU_LOOP_GRAPHS"] = graphs
    reports = []

    def wrapped():
        out = prog()
        reports.append(graph_replay.last_loop())
        return out
    _compile(wrapped)
    t0 = time.perf_counter()
    _compile(wrapped)
    dt = time.perf_counter() - t0
    os.environ["IPU_GPU_LOOP_GRAPHS"] = "1"
    rep = reports[-1]
    return dt, (rep.captured, rep.reason) if rep is not None else None


def loop_overhead():
    import ipu_gpu
    from ipu_gpu.ipu import loops

    _configure(1)
    out = {}
    x0 = ipu_gpu.constant(np.zeros(4, np.float32))
    for n in (100, 5000):
        for what, body, inputs in (("empty", lambda: None, None), ("carry", lambda x: x, [x0]),
                                   ("add_one", lambda x: x + 1.0, [x0])):
            for graphs in ("1", "0"):
                def prog(body=body, inputs=inputs, n=n):
                    return loops.repeat(n, body, inputs)
                dt, rep = _timed_program(prog, graphs)
                out[f"{what}_n{n}_graphs{graphs}"] = {"us_per_iteration": dt / n * 1e6,
                                                      "captured": rep[0], "reason": rep[1]}
    record("loops_repeat_per_iteration", **out)


def replica_overlap():
    import cupy

    import ipu_gpu
    from ipu_gpu.emulation import context
    from ipu_gpu.ipu import loops

    out = {}
    for size, k in ((256, 400), (512, 200), (1024, 60), (2048, 12)):
        a = ipu_gpu.constant(np.random.default_rng(0).standard_normal((size, size))
                             .astype(np.float32) / np.sqrt(size))
        for graphs in ("1", "0"):
            for r in (1, 4):
                _configure(r)
                spans = {}

                def prog(a=a, k=k, spans=spans):
                    stream = cupy.cuda.get_current_stream()
                    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
                    e0.record(stream)
                    y = loops.repeat(k, lambda x: ipu_gpu.matmul(x, a), [a])
                    e1.record(stream)
                    spans[context.current().replica_index] = (e0, e1)
                    return y
                wall, rep = _timed_program(prog, graphs)
                e_base = spans[0][0]
                rel = {i: [round(cupy.cuda.get_elapsed_time(e_base, s0), 3),
                           round(cupy.cuda.get_elapsed_time(e_base, s1), 3)]
                       for i, (s0, s1) in sorted(spans.items())}
                out[f"n{size}_k{k}_graphs{graphs}_R{r}"] = {
                    "wall_ms": wall * 1e3, "captured": rep[0], "spans_ms": str(rel)}
            w1 = out[f"n{size}_k{k}_graphs{graphs}_R1"]["wall_ms"]
            w4 = out[f"n{size}_k{k}_graphs{graphs}_R4"]["wall_ms"]
            out[f"n{size}_k{k}_graphs{graphs}_R4_over_R1"] = {"ratio": w4 / w1,
                                                              "gflop_R1": 2 * size**3 * k / 1e9}
    record("replica_overlap", **out)


def infeed_overlap():
    import cupy

    import ipu_gpu
    from ipu_gpu.ipu import loops
    from ipu_gpu.ipu.ipu_infeed_queue import IPUInfeedQueue

    _configure(1)
    elem = np.random.default_rng(1).standard_normal((4096, 1024)).astype(np.float32)  # 16 MiB
    w = ipu_gpu.constant(np.random.default_rng(2).standard_normal((1024, 1024))
                         .astype(np.float32) / 32)
    steps = 40

    class Endless:
        def __iter__(self):
            while True:
                yield elem

    def body_compute(acc, x, reps):
        y = x
        for _ in range(reps):
            y = ipu_gpu.matmul(y, w)
        return acc + ipu_gpu.reduce_sum(y)

    out = {}
    pinned = cupy.cuda.alloc_pinned_memory(elem.nbytes)
    staged = np.frombuffer(pinned, elem.dtype, elem.size).reshape(elem.shape)
    staged[...] = elem
    d = cupy.empty_like(cupy.asarray(elem))
    s = cupy.cuda.Stream(non_blocking=True)
    for _ in range(3):
        d.set(staged, stream=s)
    s.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        d.set(staged, stream=s)
    s.synchronize()
    out["h2d_copy_ms_per_element"] = (time.perf_counter() - t0) / steps * 1e3
    out["h2d_GBps"] = elem.nbytes / (out["h2d_copy_ms_per_element"] / 1e3) / 1e9
    import concurrent.futures

    from ipu_gpu.ipu.ipu_infeed_queue import _stage
    pool = concurrent.futures.ThreadPoolExecutor(4)
    for name, fn in (("host_copy_1_thread", lambda: np.copyto(staged, elem)),
                     ("host_copy_4_threads", lambda: _stage(pool, staged, elem)),
                     ("pageable_upload", lambda: (cupy.asarray(elem), s.synchronize()))):
        fn()
        t0 = time.perf_counter()
        for _ in range(10):
            fn()
        out[f"{name}_ms_per_element"] = (time.perf_counter() - t0) / 10 * 1e3
    pool.shutdown()
    for reps in (2, 8, 32):
        x_dev = ipu_gpu.constant(cupy.asarray(elem))
        acc0 = ipu_gpu.constant(np.float32(0))

        def compute_only(reps=reps, x_dev=x_dev, acc0=acc0):
            return loops.repeat(steps, lambda acc: body_compute(acc, x_dev, reps), [acc0])
        tc, rep_c = _timed_program(compute_only, "1")
        q = IPUInfeedQueue(Endless())
        q.initializer.run()

        def fed(reps=reps, q=q, acc0=acc0):
            return loops.repeat(steps, lambda acc, x: body_compute(acc, x, reps), [acc0],
                                infeed_queue=q)
        tf, rep_f = _timed_program(fed, "1")
        copies = out["h2d_copy_ms_per_element"] * steps / 1e3
        out[f"reps{reps}"] = {"compute_only_ms": tc * 1e3, "infeed_loop_ms": tf * 1e3,
                              "copies_alone_ms": copies * 1e3,
                              "hidden_fraction_of_smaller": (tc + copies - tf) / min(tc, copies),
                              "captured_compute": rep_c[0], "captured_fed": rep_f[0],
                              "reason_fed": rep_f[1]}
    record("infeed_overlap", **out)


def mlp_training_loop():
    """The MLP 784-512-512-10 SGD step at batch 256 (bench/test_bench_mlp.py's problem) in a
    loops.repeat, replayed from a CUDA graph or eager, against torch CUDA's eager step."""
    import torch

    import ipu_gpu as tf
    from ipu_gpu.ipu import loops

    rng = np.random.default_rng(0)
    sizes = (784, 512, 512, 10)
    ws0 = [(rng.standard_normal((a, b)) * np.sqrt(2 / a)).astype(np.float32)
           for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.integers(0, 10, 256).astype(np.int32)
    steps = 100
    _configure(1)
    out = {}
    for graphs in ("1", "0"):
        ws = [tf.Variable(tf.constant(w)) for w in ws0]
        bs = [tf.Variable(tf.zeros([w.shape[1]])) for w in ws0]
        xs, ys = tf.constant(x), tf.constant(y)

        def body(total, ws=ws, bs=bs, xs=xs, ys=ys):
            with tf.GradientTape() as tape:
                h = xs
                for i, (w, b) in enumerate(zip(ws, bs)):
                    h = tf.matmul(h, w) + b
                    if i < len(ws) - 1:
                        h = tf.nn.relu(h)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=h))
            grads = tape.gradient(loss, ws + bs)
            for v, g in zip(ws + bs, grads):
                v.assign_sub(0.01 * g)
            return total + loss

        def prog(body=body):
            return loops.repeat(steps, body, [tf.constant(0.0)])
        dt, rep = _timed_program(prog, graphs)
        out[f"ipu_gpu_graphs{graphs}"] = {"ms_per_step": dt / steps * 1e3, "captured": rep[0],
                                          "reason": rep[1]}
    dev = torch.device("cuda")
    tw = [torch.tensor(w, device=dev, requires_grad=True) for w in ws0]
    tb = [torch.zeros(w.shape[1], device=dev, requires_grad=True) for w in ws0]
    tx, ty = torch.tensor(x, device=dev), torch.tensor(y, device=dev).long()

    def torch_step():
        h = tx
        for i, (w, b) in enumerate(zip(tw, tb)):
            h = h @ w + b
            if i < len(tw) - 1:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, ty)
        grads = torch.autograd.grad(loss, tw + tb)
        with torch.no_grad():
            for v, g in zip(tw + tb, grads):
                v.sub_(0.01 * g)
        return loss
    for _ in range(10):
        torch_step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        torch_step()
    torch.cuda.synchronize()
    t_torch = (time.perf_counter() - t0) / steps
    out["torch_cuda_eager"] = {"ms_per_step": t_torch * 1e3}
    for graphs in ("1", "0"):
        out[f"ipu_gpu_graphs{graphs}"]["over_torch_cuda"] = (
            out[f"ipu_gpu_graphs{graphs}"]["ms_per_step"] / (t_torch * 1e3))
    record("mlp_training_loop_b256", **out)


def main():
    import os

    only = os.environ.get("PROBE_ONLY", "").split(",")
    for fn in (cupy_capture_mechanics, loop_overhead, replica_overlap, infeed_overlap,
               mlp_training_loop):
        if only != [""] and fn.__name__ not in only:
            continue
        t0 = time.perf_counter()
        section(fn)
        print(f"[probe] {fn.__name__} took {time.perf_counter() - t0:.1f} s", flush=True)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(RESULTS, f, indent=1, default=str)


if __name__ == "__main__":
    main()
