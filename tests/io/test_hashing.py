"""MurmurHash3 and VW's feature-index rules."""

import csv

import mmh3
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.features.hashing import (
    constant_index, feature_index, hash_name, hash_string, murmur3, murmur3_32, namespace_hash, scan_hash,
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


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=16) | st.from_regex(rb"\A[0-9]{0,12}[ :]?[a-z]?\Z"),
       st.integers(0, 2**32 - 1), st.sampled_from([0, 1]))
def test_scan_hash_equals_scan_then_hash(data, seed, mode):
    """The parser's one-pass scan-and-hash equals finding the name's end, then hash_name."""
    stop = np.zeros(256, np.bool_)
    stop[[32, 9, 58, 124, 13]] = True
    # a writable array, as the parser's buffer: one compiled specialization (the parser inlines
    # scan_hash; a read-only view of the bytes would compile it a second time)
    buf = np.frombuffer(bytearray(data), np.uint8)
    q, h = scan_hash(buf, 0, buf.size, seed, mode, stop)
    expected_end = next((i for i, c in enumerate(data) if stop[c]), len(data))
    assert q == expected_end and h == hash_name(buf, 0, q, seed, mode)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 12), st.sampled_from([b" ", b"\t", b":", b"|", b"\r", b""]),
       st.binary(max_size=12), st.integers(0, 2**32 - 1), st.sampled_from([0, 1]),
       st.sampled_from([b"a", b"w1", b"Z9_", b"\x01"]))
def test_scan_hash_every_name_length(n, sep, rest, seed, mode, head):
    """Every name length around the 8 bytes scan_hash reads at once (issue 30), each stop byte or the
    end after it, and any bytes after that: the same end and hash as finding the end, then hash_name."""
    name = (head * 12)[:n]
    data = name + sep + rest
    stop = np.zeros(256, np.bool_)
    stop[[32, 9, 58, 124, 13]] = True
    buf = np.frombuffer(bytearray(data), np.uint8)
    q, h = scan_hash(buf, 0, buf.size, seed, mode, stop)
    expected_end = next((i for i, c in enumerate(data) if stop[c]), len(data))
    assert q == expected_end and h == hash_name(buf, 0, q, seed, mode)
