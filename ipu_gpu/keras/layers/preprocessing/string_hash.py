"""TF's string hashes, for ``Hashing`` on integer inputs (which TF hashes as their decimal
strings, ``tf.as_string``): FarmHash ``Fingerprint64`` (``tf.strings.to_hash_bucket_fast``)
and SipHash-2-4 keyed by two 64-bit words (``tf.strings.to_hash_bucket_strong``)."""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["fingerprint64", "fingerprint64_ints", "siphash24", "siphash24_ints"]

_M = (1 << 64) - 1
_K0 = 0xc3a5c85c97cb3127
_K1 = 0xb492b66fbe98f273
_K2 = 0x9ae16a3b2f90404f


def _fetch64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rotate(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _hash_len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _M
        d = ((_rotate(a, 25) + b) * mul) & _M
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & _M, _fetch32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xffffffff
        z = (n + (s[n - 1] << 2)) & 0xffffffff
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _hash_len17to32(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    return _hash_len16((_rotate((a + b) & _M, 43) + _rotate(c, 30) + d) & _M,
                       (a + _rotate((b + _K2) & _M, 18) + c) & _M, mul)


def fingerprint64(s: bytes) -> int:
    """FarmHash's ``Fingerprint64`` of strings of up to 32 bytes (every int64's decimal
    form is at most 20).

    Raises:
      ValueError: a longer string.
    """
    if len(s) <= 16:
        return _hash_len0to16(s)
    if len(s) <= 32:
        return _hash_len17to32(s)
    raise ValueError(f"fingerprint64: strings longer than 32 bytes are not supported, got "
                     f"{len(s)} bytes")


def _sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & _M
    v1 = _rotate(v1, 64 - 13) ^ v0
    v0 = _rotate(v0, 64 - 32)
    v2 = (v2 + v3) & _M
    v3 = _rotate(v3, 64 - 16) ^ v2
    v0 = (v0 + v3) & _M
    v3 = _rotate(v3, 64 - 21) ^ v0
    v2 = (v2 + v1) & _M
    v1 = _rotate(v1, 64 - 17) ^ v2
    v2 = _rotate(v2, 64 - 32)
    return v0, v1, v2, v3


def siphash24(key0: int, key1: int, s: bytes) -> int:
    """SipHash-2-4 of ``s`` under the 128-bit key (key0, key1)."""
    k0, k1 = key0 & _M, key1 & _M
    v0 = k0 ^ 0x736f6d6570736575
    v1 = k1 ^ 0x646f72616e646f6d
    v2 = k0 ^ 0x6c7967656e657261
    v3 = k1 ^ 0x7465646279746573
    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _fetch64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
        v0 ^= m
    last = (n & 0xff) << 56
    for i, byte in enumerate(s[full:]):
        last |= byte << (8 * i)
    v3 ^= last
    v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
    v0 ^= last
    v2 ^= 0xff
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


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
