"""TF's string hashes, for ``Hashing`` on integer inputs (which TF hashes as their decimal
strings, ``tf.as_string``): FarmHash ``Fingerprint64`` (``tf.strings.to_hash_bucket_fast``)
and SipHash-2-4 keyed by two 64-bit words (``tf.strings.to_hash_bucket_strong``)."""

from __future__ import annotations

import struct

__all__ = ["fingerprint64", "siphash24"]

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
