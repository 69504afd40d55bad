"""MurmurHash3 and VW's feature-index rules."""

import csv

import mmh3
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from streamlearn.features.hashing import (
    constant_index, feature_index, hash_name, hash_string, murmur3, murmur3_32, namespace_hash, pick, scan_hash,
)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 2**32 - 1))
def test_compiled_murmur_equals_mmh3(data, seed):
    assert murmur3(data, seed) == mmh3.hash(data, seed, signed=False)


def test_murmur_on_offsets_inside_a_buffer():
    rng = np.random.default_rng(5)
    buf = rng.integers(0, 256, 300, dtype=np.uint8)
    for s, e in [(0, 0), (3, 4), (5, 12), (7, 300), (100, 137)]:
        assert murmur3_32(buf, s, e, 42) == mmh3.hash(buf[s:e].tobytes(), 42, signed=False)


def test_known_answers_from_the_spec():
    # vw-spec §1b worked example (verified with VW 9.11.9)
    assert namespace_hash("a") == 1009084850
    assert hash_string("x", 1009084850) == 3378043016
    assert feature_index("a", "x", 18) == 55432
    assert feature_index("a", "x", 24) == 5822600
    assert feature_index("a", "123", 18) == 92717
    assert feature_index("", "x", 18) == 170779
    assert feature_index("", "Constant", 18) == 59004
    assert constant_index(18) == 116060 and constant_index(24) == 11650396


def test_hashstring_rules():
    assert hash_string("007") == 7
    assert hash_string("4294967297") == 1                      # built in 64 bits, truncated to 32
    assert hash_string("123", 10) == 133                        # numeric: value + seed
    assert hash_string(" 12\x01") == 12                         # bytes <= 0x20 stripped first
    assert hash_string("-5") == mmh3.hash("-5", 0, signed=False)  # not all digits: murmur
    assert hash_string("1.5") == mmh3.hash("1.5", 0, signed=False)
    assert hash_string("12", 0, mode="all") == mmh3.hash("12", 0, signed=False)
    assert hash_string("", 9) == 9
    assert namespace_hash("", hash_seed=5) == mmh3.hash(b"", 5, signed=False)


def test_hash_name_on_buffer_range():
    buf = np.frombuffer(b"xx007yy", dtype=np.uint8)
    assert hash_name(buf, 2, 5, 0, 0) == 7


def test_all_vw_hash_vectors(shared):
    """Every row of VW 9.11.9's hash vectors (namespaces x names x {18, 24} bits)."""
    rows = list(csv.DictReader(open(shared / "data" / "vw" / "hash_vectors.tsv", encoding="utf-8"),
                               delimiter="\t"))
    assert len(rows) == 196
    for r in rows:
        assert feature_index(r["namespace"], r["feature"], int(r["bits"])) == int(r["index"]), r


_STOPS = {False: frozenset(b" \t:|\r"), True: frozenset(b" \t\r\n")}   # name / string value


def _reference_scan_hash(data: bytes, p: int, end: int, seed: int, mode: int, ws: bool):
    """Plain byte loop: the first stop byte from p (or end), then VW's hasher in Python over mmh3."""
    q = p
    while q < end and data[q] not in _STOPS[ws]:
        q += 1
    name = data[p:q]
    if mode == 0:
        name = name.strip(bytes(range(0x21)))
        if not name:
            return q, seed
        if all(48 <= c <= 57 for c in name):
            return q, (int(name) + seed) % 2**32
    return q, mmh3.hash(name, seed, signed=False)


def _scan(data: bytes, p: int, end: int, seed: int, mode: int, ws: bool):
    # a writable array, as the parser's buffer: one compiled specialization (the parser inlines
    # scan_hash; a read-only view of the bytes would compile it a second time)
    buf = np.frombuffer(bytearray(data), np.uint8) if data else np.zeros(0, np.uint8)
    q, h = scan_hash(buf, p, end, seed, mode, ws)
    return int(q), int(h)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=16) | st.from_regex(rb"\A[0-9]{0,12}[ :]?[a-z]?\Z"),
       st.integers(0, 2**32 - 1), st.sampled_from([0, 1]), st.booleans())
def test_scan_hash_equals_scan_then_hash(data, seed, mode, ws):
    """The parser's one-pass scan-and-hash equals finding the name's end, then hashing it."""
    assert _scan(data, 0, len(data), seed, mode, ws) == _reference_scan_hash(data, 0, len(data), seed, mode, ws)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 12), st.sampled_from([b" ", b"\t", b":", b"|", b"\r", b"\n", b""]),
       st.binary(max_size=12), st.integers(0, 2**32 - 1), st.sampled_from([0, 1]),
       st.sampled_from([b"a", b"w1", b"Z9_", b"\x01"]), st.booleans())
def test_scan_hash_every_name_length(n, sep, rest, seed, mode, head, ws):
    """Every name length around the 8 bytes scan_hash reads at once (issue 30), each stop byte or the
    end after it, and any bytes after that: the same end and hash as the byte loop."""
    data = (head * 12)[:n] + sep + rest
    assert _scan(data, 0, len(data), seed, mode, ws) == _reference_scan_hash(data, 0, len(data), seed, mode, ws)


_NAME_BYTES = st.sampled_from([b"a", b"Z", b"_", b"0", b"7", b"9", b"-", b".", b"\x00", b"\x01", b"\x1f", b"\x0b",
                               b"\x80", b"\xa0", b"\xff", b"\xe2\x82\xac", b"\x7f", b"'", b"\\"])


@settings(max_examples=3000, deadline=None)
@given(st.binary(max_size=20), st.integers(0, 40), st.data(),
       st.sampled_from([b" ", b"\t", b":", b"|", b"\r", b"\n", b""]), st.binary(max_size=20),
       st.integers(0, 2**32 - 1), st.sampled_from([0, 1]), st.booleans(), st.integers(0, 30))
def test_swar_scan_hash_equals_byte_loop(prefix, n, data, sep, rest, seed, mode, ws, cut):
    """SWAR scan_hash == the plain byte loop on random bytes: names of every length 0..40 (ASCII,
    digits, bytes <= 0x20, non-ASCII) starting anywhere in the buffer (unaligned), every stop byte or
    none after them, and ``end`` anywhere from the name's start to the buffer's end, so that names end
    at ``end`` with bytes after it, at the buffer's end (fewer than 8 bytes left), or at a stop byte."""
    name = b"".join(data.draw(st.lists(_NAME_BYTES, min_size=n, max_size=n)))[:n]
    if data.draw(st.booleans()):
        name = bytes(c for c in name if c not in _STOPS[ws])   # or with a stop byte inside
    buf = prefix + name + sep + rest
    p = len(prefix)
    end = max(p, len(buf) - cut)
    assert _scan(buf, p, end, seed, mode, ws) == _reference_scan_hash(buf, p, end, seed, mode, ws)


@settings(max_examples=2000, deadline=None)
@given(st.text("0123456789", min_size=1, max_size=12), st.sampled_from([b"", b"a", b"/", b":", b"\x01", b"\xff", b"0"]),
       st.sampled_from([b" ", b"\t", b":", b"|", b"\r", b"\n"]), st.binary(min_size=8, max_size=16),
       st.integers(0, 2**32 - 1), st.sampled_from([0, 1]), st.booleans(), st.integers(0, 3))
def test_scan_hash_numeric_names(digits, tail, sep, rest, seed, mode, ws, at):
    """Names starting with a digit, read by words (issue 30: up to 7 bytes checked and converted at
    once): all digits (a number, + seed), or digits then another byte (murmured), any length around 7
    and 8, anywhere in a buffer with 8 bytes or more after them: the byte loop's end and hash."""
    buf = b"x" * at + digits.encode() + tail + sep + rest
    assert _scan(buf, at, len(buf), seed, mode, ws) == _reference_scan_hash(buf, at, len(buf), seed, mode, ws)


@njit(cache=True)
def _pick(c, a, b):
    return pick(c, a, b)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 4, 2**63]), st.integers(0, 2**64 - 1),
       st.integers(0, 2**64 - 1))
def test_pick_is_a_select(c, a, b):
    """scan_hash's branch-free choice (issue 30): a when c != 0, else b, over the whole uint64 range."""
    assert int(_pick(np.uint64(c), np.uint64(a), np.uint64(b))) == (a if c != 0 else b)
