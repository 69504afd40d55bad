"""Feature hashing exactly as Vowpal Wabbit 9.11.9 does it (vw-spec.md §1b).

* MurmurHash3 x86_32 over the raw bytes, blocks read little-endian; equal to
  ``mmh3.hash(key, seed, signed=False)``.
* ``--hash strings`` (default): strip leading and trailing bytes 0x00-0x20; a name made only of ASCII
  digits hashes to ``(int(name) + seed) mod 2**32`` ("007" -> 7); anything else is murmured.
  ``--hash all`` murmurs every name unchanged.
* Namespace hash = hash(namespace name, hash_seed); the default namespace has hash 0 when the seed is
  0, else ``murmur3(b"", seed)``.
* Feature index = hash(feature name, seed=namespace hash) & mask. A string-valued feature ``name:str``
  uses hash(str, hash(name, ns)). An anonymous feature ``:v`` gets ``ns_hash + k`` (k = 0, 1, ...).
* The constant (bias) feature has raw index 11650396.

The compiled functions work on a byte array and a [start, end) range so the parser can hash names
in place; the Python helpers below wrap them for tests and for users who want to map names to
indices (e.g. to read a readable model).
"""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types
from numba.extending import intrinsic

CONSTANT_RAW_INDEX = 11650396
HASH_STRINGS = 0
HASH_ALL = 1
HASH_MODES = {"strings": HASH_STRINGS, "all": HASH_ALL}

_M32 = np.uint64(0xFFFFFFFF)
_C1 = np.uint64(0xCC9E2D51)
_C2 = np.uint64(0x1B873593)
_N1 = np.uint64(0xE6546B64)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)
_FIVE = np.uint64(5)
_S8 = np.uint64(8)
_S13 = np.uint64(13)
_S15 = np.uint64(15)
_S16 = np.uint64(16)
_S17 = np.uint64(17)
_S19 = np.uint64(19)
_S24 = np.uint64(24)
_S32 = np.uint64(32)


@njit(cache=True, nogil=True, inline="always")
def _rotl32(x, r, rr):
    return ((x << r) | (x >> rr)) & _M32


@njit(cache=True, nogil=True, inline="always")
def _scramble(k):
    """MurmurHash3 x86_32: scramble one 4-byte block (or the tail) before it enters the state."""
    k = (k * _C1) & _M32
    k = _rotl32(k, _S15, _S17)
    return (k * _C2) & _M32


@njit(cache=True, nogil=True, inline="always")
def _mix(h, k):
    """Mix a full 4-byte block into the state."""
    h ^= _scramble(k)
    h = _rotl32(h, _S13, _S19)
    return (h * _FIVE + _N1) & _M32


@njit(cache=True, nogil=True, inline="always")
def _finish(h, n):
    """Mix in the length and apply the final avalanche (fmix32)."""
    h ^= np.uint64(n) & _M32
    h ^= h >> _S16
    h = (h * _F1) & _M32
    h ^= h >> _S13
    h = (h * _F2) & _M32
    h ^= h >> _S16
    return np.int64(h)


@njit(cache=True, nogil=True, inline="always")
def murmur3_32(buf, start, end, seed):
    """MurmurHash3 x86_32 of buf[start:end] (uint8 array) with a 32-bit seed; returns int64 in [0, 2^32).

    Austin Appleby's reference algorithm; the arithmetic is done in uint64 and masked to 32 bits.
    """
    h = np.uint64(seed) & _M32
    n = end - start
    p = start
    for _ in range(n // 4):
        h = _mix(h, np.uint64(buf[p]) | (np.uint64(buf[p + 1]) << _S8) | (np.uint64(buf[p + 2]) << _S16)
                 | (np.uint64(buf[p + 3]) << _S24))
        p += 4
    tail = n & 3
    if tail > 0:
        k = np.uint64(0)
        if tail == 3:
            k ^= np.uint64(buf[p + 2]) << _S16
        if tail >= 2:
            k ^= np.uint64(buf[p + 1]) << _S8
        k ^= np.uint64(buf[p])
        h ^= _scramble(k)
    return _finish(h, n)


@njit(cache=True, nogil=True, inline="always")
def hash_name(buf, start, end, seed, mode):
    """VW's hasher for a name in buf[start:end]: ``hashstring`` (mode 0) or ``hashall`` (mode 1).

    Returns the 32-bit hash as int64. VW computes the numeric case in 64 bits and truncates later;
    arithmetic modulo 2^32 gives the same low 32 bits.
    """
    if mode == HASH_ALL:
        return murmur3_32(buf, start, end, seed)
    s = start
    e = end
    while s < e and buf[s] <= 0x20:
        s += 1
    while e > s and buf[e - 1] <= 0x20:
        e -= 1
    v = np.int64(0)
    for p in range(s, e):
        c = buf[p]
        if c < 48 or c > 57:
            return murmur3_32(buf, s, e, seed)
        v = (v * 10 + (np.int64(c) - 48)) & 0xFFFFFFFF
    return (v + np.int64(seed)) & 0xFFFFFFFF


# Bytes that end a name (space, TAB, ':', '|', CR) and a string value (space, TAB, CR, newline): the
# tables of the byte loop, the same sets as scan_hash's word path.
NAME_STOP = np.zeros(256, np.bool_)
NAME_STOP[[32, 9, 58, 124, 13]] = True
WS_STOP = np.zeros(256, np.bool_)
WS_STOP[[32, 9, 13, 10]] = True
_BIG_ENDIAN = sys.byteorder != "little"


@intrinsic
def load_u64(typingctx, buf, p):
    """The 8 bytes buf[p:p + 8] of a contiguous uint8 array as one little-endian uint64 (an unaligned
    load; the caller checks p + 8 <= buf.size)."""
    if not (isinstance(buf, types.Array) and buf.dtype == types.uint8 and buf.ndim == 1 and buf.layout == "C"):
        return None
    sig = types.uint64(buf, types.intp)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i64 = ir.IntType(64)
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i64.as_pointer())
        w = builder.load(ptr, align=1)
        if _BIG_ENDIAN:
            w = builder.bswap(w)
        return w

    return sig, codegen


@intrinsic
def trailing_zeros(typingctx, w):
    """The number of trailing zero bits of a nonzero uint64 (LLVM's cttz)."""
    if w != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(w), codegen


@intrinsic
def pick(typingctx, c, a, b):
    """``a if c != 0 else b`` for uint64s, as a select marked unpredictable (LLVM's ``!unpredictable``), so
    that LLVM keeps it a conditional move: a plain select whose operand costs (scan_hash's mix of a
    word's first half) it made a branch, mispredicted whenever the names' lengths vary (issue 30)."""
    if not (c == types.uint64 and a == types.uint64 and b == types.uint64):
        return None

    def codegen(context, builder, signature, args):
        cv, av, bv = args
        sel = builder.select(builder.icmp_unsigned("!=", cv, ir.Constant(cv.type, 0)), av, bv)
        sel.set_metadata("unpredictable", builder.module.add_metadata([]))
        return sel

    return types.uint64(c, a, b), codegen


_LO = np.uint64(0x0101010101010101)
_HI = np.uint64(0x8080808080808080)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_COLON8 = np.uint64(0x3A3A3A3A3A3A3A3A)
_BAR8 = np.uint64(0x7C7C7C7C7C7C7C7C)
_LT8 = np.uint64(0x2121212121212121)
_S3 = np.uint64(3)
_ONE = np.uint64(1)
_FOUR = np.uint64(4)
_ZERO = np.uint64(0)


@njit(cache=True, nogil=True, inline="always")
def _zero_bytes(x):
    """High bit of every byte of x that is 0 (and maybe of bytes above the lowest such: only the lowest
    set bit is exact, which is all the scan reads)."""
    return (x - _LO) & (x ^ _ALL)


# The stop bytes below 0x21, a bit each: scan_hash's word path flags every byte < 0x21 (one test instead of
# one a stop byte) and leaves a name holding any other such byte to the byte loop.
_NAME_LOW_STOPS = np.uint64((1 << 32) | (1 << 9) | (1 << 13))
_WS_LOW_STOPS = np.uint64((1 << 32) | (1 << 9) | (1 << 13) | (1 << 10))
_BYTE = np.uint64(0xFF)
_X21 = np.uint64(0x21)


@njit(cache=True, nogil=True, inline="always")
def scan_hash(buf, p, end, seed, mode, ws):
    """Scan a name from p up to the first byte that ends it (NAME_STOP: a name when ``ws`` is False,
    WS_STOP: a string value when True) or ``end``, hashing it on the way. Returns (end of the name, hash_name of it).

    SWAR, 8 bytes at a time (issue 30): one unaligned little-endian load, the bytes < 0x21 (space, TAB,
    CR, newline and the other control bytes) and for names ':' and '|' found with bit tricks, the
    word's two 4-byte halves fed to MurmurHash3's mix, no branch per byte (the byte loop's exit was
    mispredicted about once a name). A name whose first such byte is a control byte that does not end
    it (VW keeps those in the name, or strips them at its ends) is read again by the byte loop
    (``_scan_hash_bytes``); so a name the word path finishes holds no byte < 0x21. Bytes past ``end``
    may be read (never past the buffer: the last 7 bytes of the buffer go through a byte loop) but are
    ignored. Names whose first byte is a digit are numbers if all their bytes are digits (up to 7 bytes
    checked and converted by words, longer ones by ``hash_name``), else murmured.
    """
    start = p
    h = np.uint64(seed) & _M32
    k = _ZERO
    last = buf.size - 8
    while p <= last:
        w = load_u64(buf, p)
        m = (w - _LT8) & (w ^ _ALL)     # bytes < 0x21 (the lowest exact, like _zero_bytes)
        if not ws:
            m |= _zero_bytes(w ^ _COLON8) | _zero_bytes(w ^ _BAR8)
        m &= _HI
        room = end - p
        if room < 8:
            m |= np.uint64(0x80) << np.uint64(8 * max(room, 0))
        lo = w & _M32
        hi = w >> _S32
        if m != _ZERO:
            n = trailing_zeros(m) >> _S3      # the name's bytes in this word, 0-7
            c = (w >> (n << _S3)) & _BYTE     # the byte that ends it (or the one at ``end``)
            if c < _X21 and np.int64(n) < room and \
                    ((_WS_LOW_STOPS if ws else _NAME_LOW_STOPS) >> c) & _ONE == _ZERO:
                return _scan_hash_bytes(buf, start, end, seed, mode, ws)
            full = n & _FOUR                # the name holds the word's first half (n >= 4)
            h = pick(full, _mix(h, lo), h)
            k = pick(full, hi, lo) & ((_ONE << ((n & _S3) << _S3)) - _ONE)
            return _swar_end(buf, start, p + np.int64(n), seed, mode, h, k)
        h = _mix(_mix(h, lo), hi)
        p += 8
    table = WS_STOP if ws else NAME_STOP
    shift = _ZERO
    while p < end:
        c = buf[p]
        if table[c]:
            break
        k |= np.uint64(c) << shift
        shift += _S8
        if shift == _S32:
            h = _mix(h, k)
            k = _ZERO
            shift = _ZERO
        p += 1
    return _scan_hash_end(buf, start, p, seed, mode, h, k)


@njit(cache=True, nogil=True)
def _scan_hash_bytes(buf, p, end, seed, mode, ws):
    """scan_hash by the byte loop: the end of the name at p, then hash_name of it."""
    table = WS_STOP if ws else NAME_STOP
    q = p
    while q < end and not table[buf[q]]:
        q += 1
    return q, hash_name(buf, p, q, seed, mode)


@njit(cache=True, nogil=True, inline="always")
def _swar_end(buf, start, p, seed, mode, h, k):
    """scan_hash's result for the name buf[start:p] scanned by words (no byte < 0x21 in it): its full
    words mixed into h, its tail in k."""
    n = p - start
    if mode != HASH_ALL:
        if n == 0:
            return p, np.int64(seed) & 0xFFFFFFFF
        c = buf[np.uint64(start)]
        if c >= 48 and c <= 57:
            if n >= 8:
                return p, hash_name(buf, start, p, seed, mode)
            # up to 7 bytes from a digit: a number if they are all digits (SWAR), else murmured as below
            x = (load_u64(buf, start) << (np.uint64(8 - n) << _S3)) | (_ASCII0 >> (np.uint64(n) << _S3))
            if (x & _NIB_HI) | (((x + _SIX8) & _NIB_HI) >> _FOUR) == _THREE8:
                return p, (np.int64(_eight_digits(x)) + np.int64(seed)) & 0xFFFFFFFF
    h ^= _scramble(k)
    return p, _finish(h, n)


_ASCII0 = np.uint64(0x3030303030303030)
_NIB_HI = np.uint64(0xF0F0F0F0F0F0F0F0)
_SIX8 = np.uint64(0x0606060606060606)
_THREE8 = np.uint64(0x3333333333333333)
_EVERY4 = np.uint64(0x000000FF000000FF)
_D100 = np.uint64(100 + (1000000 << 32))
_D1 = np.uint64(1 + (10000 << 32))
_TEN = np.uint64(10)


@njit(cache=True, nogil=True, inline="always")
def _eight_digits(x):
    """The number written by the 8 ASCII digits of x (the first, most significant, in the lowest byte):
    pairs, then fours, then the eight, combined by multiplications (all below 10^8)."""
    v = x - _ASCII0
    v = v * _TEN + (v >> _S8)
    return ((v & _EVERY4) * _D100 + ((v >> _S16) & _EVERY4) * _D1) >> _S32


@njit(cache=True, nogil=True, inline="always")
def _scan_hash_end(buf, start, p, seed, mode, h, k):
    """scan_hash's result for the name buf[start:p], its full words mixed into h and its tail in k."""
    n = p - start
    if mode != HASH_ALL:
        if n == 0:
            return p, np.int64(seed) & 0xFFFFFFFF
        c = buf[start]
        if c <= 0x20 or (c >= 48 and c <= 57) or buf[p - 1] <= 0x20:
            return p, hash_name(buf, start, p, seed, mode)
    h ^= _scramble(k)
    return p, _finish(h, n)


_EMPTY = np.zeros(1, dtype=np.uint8)


@njit(cache=True, nogil=True)
def default_namespace_hash(seed):
    """Hash of the default namespace: 0 for seed 0, else murmur3 of the empty string (vw-spec §1b)."""
    if seed == 0:
        return np.int64(0)
    return _finish(np.uint64(seed) & _M32, 0)      # murmur3 of no bytes: the seed, finished


# --------------------------------------------------------------------------- Python helpers

def _as_array(data: bytes | str) -> np.ndarray:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return np.frombuffer(data, dtype=np.uint8) if data else _EMPTY[:0]


def murmur3(data: bytes | str, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of ``data`` (str is UTF-8 encoded), unsigned. Same as mmh3.hash(data, seed, signed=False)."""
    a = _as_array(data)
    return int(murmur3_32(a if a.size else _EMPTY, 0, a.size, seed & 0xFFFFFFFF))


def hash_string(name: bytes | str, seed: int = 0, mode: str = "strings") -> int:
    """VW's name hash (``--hash strings`` or ``--hash all``)."""
    a = _as_array(name)
    return int(hash_name(a if a.size else _EMPTY, 0, a.size, seed & 0xFFFFFFFF, HASH_MODES[mode]))


def namespace_hash(namespace: bytes | str, hash_seed: int = 0, mode: str = "strings") -> int:
    """Hash of a namespace name; '' or ' ' means the default namespace."""
    if namespace in ("", " ", b"", b" "):
        return int(default_namespace_hash(hash_seed & 0xFFFFFFFF))
    return hash_string(namespace, hash_seed, mode)


def feature_index(namespace: bytes | str, feature: bytes | str, bits: int = 18, hash_seed: int = 0,
                  mode: str = "strings", string_value: bytes | str | None = None) -> int:
    """The weight index VW gives feature ``feature`` (or ``feature:string_value``) in ``namespace``."""
    ns = namespace_hash(namespace, hash_seed, mode)
    h = hash_string(feature, ns, mode)
    if string_value is not None:
        h = hash_string(string_value, h, mode)
    return h & ((1 << bits) - 1)


def constant_index(bits: int = 18) -> int:
    """Index of the constant (bias) feature at ``bits``."""
    return CONSTANT_RAW_INDEX & ((1 << bits) - 1)
