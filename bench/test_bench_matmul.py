"""matmul: ipu_gpu vs numpy, torch and tensorflow (CPU); ipu_gpu on cupy vs torch CUDA and cupy.

One group per size. 64x64 shows the per-call overhead, the large sizes the BLAS engine.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import as_impl, check_close, impl_params, require, rng

import ipu_gpu

SIZES = {  # name -> (a shape, b shape)
    "64x64x64": ((64, 64), (64, 64)),
    "512x512x512": ((512, 512), (512, 512)),
    "1024x1024x1024": ((1024, 1024), (1024, 1024)),
    "batched-64x(128x256)@(256x128)": ((64, 128, 256), (64, 256, 128)),
}


def _matmul_fn(impl, p, a, b):
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        return lambda: ipu_gpu.matmul(a, b)
    if impl == "numpy":
        return lambda: np.matmul(a, b)
    if impl in ("torch", "torch_cuda"):
        return lambda: p.torch.matmul(a, b)
    if impl == "tensorflow":
        return lambda: p.tf.linalg.matmul(a, b)
    if impl == "cupy":
        return lambda: p.cupy.matmul(a, b)
    raise ValueError(impl)


@pytest.mark.parametrize("impl", impl_params())
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(group=f"matmul-{s}"))
                                  for s in SIZES])
def test_matmul(run, ipu_backend, size, impl):
    p = require(impl)
    sa, sb = SIZES[size]
    g = rng(1)
    a = g.standard_normal(sa, dtype=np.float32)
    b = g.standard_normal(sb, dtype=np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    fn = _matmul_fn(impl, p, as_impl(impl, a), as_impl(impl, b))
    k = sa[-1]
    check_close(f"matmul {size} {impl}", fn(), want, rtol=1e-4, atol=2e-5 * k)
    run(fn, impl=impl, sizes={"a": list(sa), "b": list(sb), "dtype": "float32"})
