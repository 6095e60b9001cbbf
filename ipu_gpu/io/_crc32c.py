"""CRC-32C (Castagnoli), the checksum of the TFRecord format, and TFRecord's masking.

Slicing-by-8 (eight 256-entry tables, Intel's method) in a Numba kernel: about a byte per
cycle, so verifying records costs little next to reading them. The kernel compiles on first
use (and is cached), never at import. By the house layout it belongs in
``kernels/crc32c_cpu.py``; it lives here with its only user until then.
"""

from __future__ import annotations

import numpy as np

_POLY = 0x82F63B78  # CRC-32C, reflected
_MASK_DELTA = 0xA282EAD8

_TABLES = None
_KERNEL = None


def _make_tables() -> np.ndarray:
    t = np.zeros((8, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (_POLY if c & 1 else 0)
        t[0, i] = c
    for k in range(1, 8):
        prev = t[k - 1].astype(np.uint64)
        t[k] = ((prev >> 8) ^ t[0][(prev & 0xFF).astype(np.intp)]).astype(np.uint32)
    return t


def _kernel():
    global _KERNEL, _TABLES
    if _KERNEL is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def crc32c_update(crc, data, t):
            """CRC-32C of uint8 ``data`` continuing from ``crc`` (0 to start)."""
            c = np.uint64(crc) ^ np.uint64(0xFFFFFFFF)
            n = data.shape[0]
            i = 0
            while i + 8 <= n:
                lo = (np.uint64(data[i]) | (np.uint64(data[i + 1]) << np.uint64(8))
                      | (np.uint64(data[i + 2]) << np.uint64(16))
                      | (np.uint64(data[i + 3]) << np.uint64(24)))
                hi = (np.uint64(data[i + 4]) | (np.uint64(data[i + 5]) << np.uint64(8))
                      | (np.uint64(data[i + 6]) << np.uint64(16))
                      | (np.uint64(data[i + 7]) << np.uint64(24)))
                c ^= lo
                c = (np.uint64(t[7, c & np.uint64(0xFF)])
                     ^ np.uint64(t[6, (c >> np.uint64(8)) & np.uint64(0xFF)])
                     ^ np.uint64(t[5, (c >> np.uint64(16)) & np.uint64(0xFF)])
                     ^ np.uint64(t[4, (c >> np.uint64(24)) & np.uint64(0xFF)])
                     ^ np.uint64(t[3, hi & np.uint64(0xFF)])
                     ^ np.uint64(t[2, (hi >> np.uint64(8)) & np.uint64(0xFF)])
                     ^ np.uint64(t[1, (hi >> np.uint64(16)) & np.uint64(0xFF)])
                     ^ np.uint64(t[0, (hi >> np.uint64(24)) & np.uint64(0xFF)]))
                i += 8
            while i < n:
                c = np.uint64(t[0, (c ^ np.uint64(data[i])) & np.uint64(0xFF)]) ^ (
                    c >> np.uint64(8))
                i += 1
            return c ^ np.uint64(0xFFFFFFFF)

        _TABLES = _make_tables()
        _KERNEL = crc32c_update
    return _KERNEL


def crc32c(data, crc: int = 0) -> int:
    """The CRC-32C of ``data`` (bytes-like), continuing from ``crc``."""
    kernel = _kernel()
    buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(0, np.uint8)
    return int(kernel(crc, buf, _TABLES))


def masked_crc32c(data) -> int:
    """TFRecord's masked CRC-32C: rotated right by 15 bits plus a constant."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF
