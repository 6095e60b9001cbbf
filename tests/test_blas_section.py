"""kernels/_blas's single-threaded BLAS sections: the cheap object (the tiled GEMM's) and the
generator nest and overlap, OpenBLAS runs on one thread while any is open, and the last to
close restores the count the process had."""

from __future__ import annotations

import ctypes
import threading

import pytest
from threadpoolctl import threadpool_limits

from ipu_gpu.kernels import _blas


def _openblas_threads():
    """The thread count of numpy's own OpenBLAS (the library the sections set; threadpoolctl
    also lists other OpenBLAS copies, such as scipy's), or None."""
    lib = _blas.numpy_blas_library()
    getter = None if lib is None else _blas._openblas_symbol(lib, "get_num_threads")
    if getter is None:
        return None
    getter.argtypes, getter.restype = [], ctypes.c_int
    return getter()


pytestmark = pytest.mark.skipif(_blas.thread_setter() is None or _openblas_threads() is None,
                                reason="numpy's BLAS is not an OpenBLAS with a thread setter")


def test_cheap_section_nests_with_the_generator_and_restores():
    cheap = _blas.single_threaded_blas_cheap()
    assert cheap is _blas.single_threaded_blas_cheap()
    with threadpool_limits(2, "blas"):
        assert not _blas.section_open()
        with cheap:
            assert _blas.section_open() and _openblas_threads() == 1
            with _blas.single_threaded_blas():
                with cheap:
                    assert _openblas_threads() == 1
                assert _openblas_threads() == 1
            assert _openblas_threads() == 1 and _blas.section_open()
        assert not _blas.section_open() and _openblas_threads() == 2


def test_cheap_section_restores_after_an_exception():
    with threadpool_limits(2, "blas"):
        with pytest.raises(KeyError):
            with _blas.single_threaded_blas_cheap():
                raise KeyError("x")
        assert not _blas.section_open() and _openblas_threads() == 2


def test_overlapping_sections_in_threads():
    cheap = _blas.single_threaded_blas_cheap()
    inside = threading.Barrier(2)
    seen = []

    def work():
        with cheap:
            inside.wait()
            seen.append(_openblas_threads())
            inside.wait()

    with threadpool_limits(2, "blas"):
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == [1, 1]
        assert not _blas.section_open() and _openblas_threads() == 2
