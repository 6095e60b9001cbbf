"""TF's string hashes vectorised for ``Hashing`` on integer inputs (which TF hashes as their
decimal strings, ``tf.as_string``): FarmHash ``Fingerprint64``
(``tf.strings.to_hash_bucket_fast``) and SipHash-2-4 keyed by two 64-bit words
(``tf.strings.to_hash_bucket_strong``); the one-string forms are ``ipu_gpu.fingerprint``'s."""

from __future__ import annotations

import numpy as np

from ....fingerprint import fingerprint64, siphash24

__all__ = ["fingerprint64", "fingerprint64_ints", "siphash24", "siphash24_ints"]

_M = (1 << 64) - 1
_K0 = 0xc3a5c85c97cb3127
_K1 = 0xb492b66fbe98f273
_K2 = 0x9ae16a3b2f90404f


# ---- vectorised over the decimal strings of integer arrays ------------------------------
_U = np.uint64


def _decimal_bytes(values: np.ndarray):
    """(bytes [n, 24] uint8, zero-padded, lengths [n]) of each integer's decimal string
    (``tf.as_string``: an optional "-", then the digits without leading zeros)."""
    v = np.asarray(values).astype(np.int64).reshape(-1)
    neg = (v < 0).astype(np.int64)
    magnitude = np.abs(v).astype(_U)  # abs(int64 min) wraps to itself: 2**63 as uint64
    digits = np.zeros((v.size, 20), np.uint8)  # least significant first
    ndigits = np.ones(v.size, np.int64)
    rest = magnitude
    for i in range(20):
        rest, digits[:, i] = np.divmod(rest, _U(10))
        more = rest != 0
        if not more.any():
            break
        ndigits += more
    lengths = ndigits + neg
    pos = np.arange(24)[None, :]
    index = np.clip(ndigits[:, None] - 1 - (pos - neg[:, None]), 0, 19)
    buf = (np.take_along_axis(digits, index, axis=1) + ord("0")).astype(np.uint8)
    buf[(pos < neg[:, None]).nonzero()] = ord("-")
    buf[pos >= lengths[:, None]] = 0
    return buf, lengths


def _fetch(buf: np.ndarray, offsets: np.ndarray, width: int) -> np.ndarray:
    """Little-endian words of ``width`` bytes read at each row's offset, as uint64."""
    idx = offsets[:, None] + np.arange(width)
    chunk = np.ascontiguousarray(np.take_along_axis(buf, idx, axis=1))
    return chunk.view("<u8" if width == 8 else "<u4").reshape(-1).astype(_U)


def _rot(v: np.ndarray, shift: int) -> np.ndarray:
    return (v >> _U(shift)) | (v << _U(64 - shift))


def _len16_vec(u, v, mul):
    a = (u ^ v) * mul
    a ^= a >> _U(47)
    b = (v ^ a) * mul
    b ^= b >> _U(47)
    return b * mul


def fingerprint64_ints(values: np.ndarray) -> np.ndarray:
    """``fingerprint64`` of each integer's decimal string (uint64, the input's shape)."""
    buf, n = _decimal_bytes(values)
    out = np.empty(n.size, _U)
    nu = n.astype(_U)
    with np.errstate(over="ignore"):
        mul = _U(_K2) + nu * _U(2)
        short = n < 4  # "0".."-99": 1 to 3 bytes
        if short.any():
            b, k = buf[short].astype(_U), n[short]
            rows = np.arange(k.size)
            y = b[:, 0] + (b[rows, k >> 1] << _U(8))
            z = nu[short] + (b[rows, k - 1] << _U(2))
            h = (y * _U(_K2)) ^ (z * _U(_K0))
            out[short] = (h ^ (h >> _U(47))) * _U(_K2)
        mid = (n >= 4) & (n < 8)
        if mid.any():
            b, k = buf[mid], n[mid]
            a = _fetch(b, np.zeros_like(k), 4)
            out[mid] = _len16_vec(nu[mid] + (a << _U(3)), _fetch(b, k - 4, 4), mul[mid])
        long = (n >= 8) & (n <= 16)
        if long.any():
            b, k, m = buf[long], n[long], mul[long]
            a = _fetch(b, np.zeros_like(k), 8) + _U(_K2)
            c = _fetch(b, k - 8, 8)
            out[long] = _len16_vec(_rot(c, 37) * m + a, (_rot(a, 25) + c) * m, m)
        longer = n > 16  # at most 20 bytes
        if longer.any():
            b, k, m = buf[longer], n[longer], mul[longer]
            a = _fetch(b, np.zeros_like(k), 8) * _U(_K1)
            c8 = _fetch(b, np.full_like(k, 8), 8)
            c = _fetch(b, k - 8, 8) * m
            d = _fetch(b, k - 16, 8) * _U(_K2)
            out[longer] = _len16_vec(_rot(a + c8, 43) + _rot(c, 30) + d,
                                     a + _rot(c8 + _U(_K2), 18) + c, m)
    return out.reshape(np.shape(values))


def _sipround_vec(v0, v1, v2, v3):
    v0 = v0 + v1
    v1 = _rot(v1, 64 - 13) ^ v0
    v0 = _rot(v0, 64 - 32)
    v2 = v2 + v3
    v3 = _rot(v3, 64 - 16) ^ v2
    v0 = v0 + v3
    v3 = _rot(v3, 64 - 21) ^ v0
    v2 = v2 + v1
    v1 = _rot(v1, 64 - 17) ^ v2
    v2 = _rot(v2, 64 - 32)
    return v0, v1, v2, v3


def siphash24_ints(key0: int, key1: int, values: np.ndarray) -> np.ndarray:
    """``siphash24`` of each integer's decimal string (uint64, the input's shape)."""
    buf, n = _decimal_bytes(values)
    k0, k1 = _U(key0 & _M), _U(key1 & _M)
    size = n.size
    v0 = np.full(size, k0 ^ _U(0x736f6d6570736575))
    v1 = np.full(size, k1 ^ _U(0x646f72616e646f6d))
    v2 = np.full(size, k0 ^ _U(0x6c7967656e657261))
    v3 = np.full(size, k1 ^ _U(0x7465646279746573))
    words = np.ascontiguousarray(buf).view("<u8").astype(_U)  # [n, 3], zero-padded
    blocks = n // 8  # full 8-byte blocks; then the tail word with the length on top
    length_byte = (n.astype(_U) & _U(0xff)) << _U(56)
    with np.errstate(over="ignore"):
        for i in range(3):
            word = np.where(blocks > i, words[:, i], length_byte | words[:, i])
            r = _sipround_vec(*_sipround_vec(v0, v1, v2, v3 ^ word))
            live = blocks >= i  # rows whose string has no word i are done
            v0 = np.where(live, r[0] ^ word, v0)
            v1 = np.where(live, r[1], v1)
            v2 = np.where(live, r[2], v2)
            v3 = np.where(live, r[3], v3)
        v2 = v2 ^ _U(0xff)
        for _ in range(4):
            v0, v1, v2, v3 = _sipround_vec(v0, v1, v2, v3)
    return (v0 ^ v1 ^ v2 ^ v3).reshape(np.shape(values))
