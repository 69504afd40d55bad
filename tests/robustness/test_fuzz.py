"""Fuzzing (issue 24, "Fuzzing in the test suite"): hypothesis drives random bytes, mutations of valid
input and crafted structures into the VW and LIBSVM block parsers, the model loader and the cache
reader, and checks that nothing but a streamlearn error (one line) ever comes out, and that whatever
does come out is safe for the compiled kernels:

* parsers: every parsed block is well formed (indptr from 0, non-decreasing, ending at the feature
  count; indices inside 2^b; line numbers and faults inside the block) and no feature value,
  importance weight or base that is not finite leaves the parser unless its example carries a fault;
* model loader: random bytes and byte mutations of a valid model (with and without a recomputed
  checksum) are refused with a ModelError or load a model that is what was written (a change the
  checksum did not catch would be silent corruption) or, with the checksum recomputed, has finite
  rows and sorted unique indices inside 2^b;
* cache reader: bit flips and truncations of a cache written by ``CacheWriter`` are refused (the
  header check or ``read_cache`` raising a streamlearn error) or read back exactly what was written;
  text parsed, cached and read back is what was parsed.

The sizes are small here (the file takes a few seconds); ``make fuzz`` runs the same tests with
STREAMLEARN_FUZZ_SCALE (default there 40) times the examples and the ``fuzz`` hypothesis profile
(tests/conftest.py). A crash found becomes an ``@example``.
"""

from __future__ import annotations

import json
import math
import os
import struct
import zlib

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamlearn.cli import main
from streamlearn.errors import StreamlearnError
from streamlearn.features.hashing import HASH_MODES
from streamlearn.io import cache as C
from streamlearn.io.blocks import FAULTS, FMT_LIBSVM, FMT_VW, parse_block
from streamlearn.io.model_file import parse_model
from streamlearn.io.textformats import AffixConverter, TextFormat, parse_affix

pytestmark = pytest.mark.fuzz

SCALE = max(1, int(os.environ.get("STREAMLEARN_FUZZ_SCALE", "1") or 1))
BITS = 12
MASK = (1 << BITS) - 1


def fuzz_settings(n: int):
    """``n`` examples (times SCALE), no deadline (the first call compiles), no health checks."""
    return settings(max_examples=n * SCALE, deadline=None, suppress_health_check=list(HealthCheck))


# ------------------------------------------------------------------------------------------ parsers

#: tokens that stress the number and structure parsing (overflow, NaN, separators, odd bytes)
TOKENS = [b"|", b"|a", b"| ", b":", b"::", b"'", b"'t", b" ", b"\t", b"\r", b"\n", b"\x00", b"\xff", b"\x80",
          b"1e39", b"-1e39", b"3.5e38", b"1e308", b"1e-50", b"nan", b"NaN", b"inf", b"-inf", b"Infinity",
          b"1e999999999", b"0x1p3", b"-0", b"+", b"-", b".", b"e5", b"1e", b"99999999999999999999",
          b"a:1e39", b"a:nan", b"a:inf", b"b:3e38", b":1e39", b"|x:1e39", b"|x:nan", b"1:1e39", b"2:nan",
          b"qid:3", b"4294967296:1", b"-1:2", b"#", b"1 1e39 |", b"1 nan |", b"1 -2 |", b"1 1 1e39 |"]

VW_LINES = [b"1 | a b c\n", b"-1 2 'tag |ns x:0.5 y:-2 |other z\n", b"0.5 |a w:1e3 v:3e-5\n",
            b"1 1 0.5 'q |a:2 p q r:4\n", b"|a x y\n", b"-1 |a \n", b"\n", b"2 'only-tag |\n",
            b"1 |a 17 23:2 |b 5\n"]
LIBSVM_LINES = [b"1 1:0.5 3:2 17:-1\n", b"-1 2:1\n", b"0.25 qid:3 1:1 2:2\n", b"1\n", b"3 4:1e3 5:-2e-3\n",
                b"# a comment\n", b"-1 1:1 # trailing comment\n"]


@st.composite
def mutated_text(draw, lines):
    """A few valid lines, then a few edits: insert a token or random bytes, delete, duplicate."""
    text = bytearray(b"".join(draw(st.lists(st.sampled_from(lines), min_size=1, max_size=6))))
    for _ in range(draw(st.integers(0, 6))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["token", "token", "bytes", "delete", "dup"]))
        if op == "token":
            text[pos:pos] = draw(st.sampled_from(TOKENS))
        elif op == "bytes":
            text[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete":
            del text[pos:pos + draw(st.integers(1, 5))]
        else:
            text[pos:pos] = text[max(0, pos - 8):pos]
    return bytes(text)


def check_block(b, text: bytes, first_line: int = 1) -> None:
    """A parsed block is well formed, and nothing non-finite leaves the parser unflagged."""
    n, nf = b.n, b.idx.shape[0]
    nlines = text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)
    assert n <= max(nlines, 0)
    assert b.indptr.shape[0] == n + 1
    assert int(b.indptr[0]) == 0 and int(b.indptr[n]) == nf
    assert np.all(np.diff(b.indptr) >= 0)
    assert np.all(b.idx <= MASK)
    assert b.val.shape[0] == nf
    if n:
        assert int(b.lines.min()) >= first_line and int(b.lines.max()) < first_line + nlines
        assert np.all(np.diff(b.lines) > 0)
        assert np.all(b.tag_s <= b.tag_e) and np.all(b.tag_s >= 0) and np.all(b.tag_e <= len(b.tag_buf))
    faulty = set()
    for ex, code, s, e in b.faults.tolist():
        assert 0 <= ex < n and code in FAULTS and 0 <= s <= e <= len(text)
        faulty.add(ex)
    for line, reason, consequence in b.fault_lines():   # the messages can be formed, one line each
        assert "\n" not in reason and "\n" not in consequence
    bad_val = ~np.isfinite(b.val)
    rows = np.repeat(np.arange(n), np.diff(b.indptr)) if n else np.zeros(0, np.int64)
    unflagged = sorted(set(rows[bad_val].tolist()) - faulty)
    assert not unflagged, f"non-finite feature values in examples {unflagged} without a fault"
    for name in ("weights", "bases"):
        a = getattr(b, name)
        bad = sorted(set(np.flatnonzero(~np.isfinite(a)).tolist()) - faulty)
        assert not bad, f"non-finite {name} in examples {bad} without a fault"
    assert not np.any(b.weights[np.isfinite(b.weights)] < 0) or faulty


def parse(text: bytes, fmt: int, noconstant: bool, seed: int, mode: str):
    try:
        b = parse_block("fuzz.txt", text, 1, fmt, MASK, noconstant, seed, HASH_MODES[mode])
    except StreamlearnError as exc:
        assert "\n" not in str(exc)
        return None
    check_block(b, text)
    return b


PARSE_OPTS = dict(noconstant=st.booleans(), seed=st.sampled_from([0, 1, 12345, -7]),
                  mode=st.sampled_from(sorted(HASH_MODES)))


@fuzz_settings(150)
@given(text=st.binary(max_size=400), **PARSE_OPTS)
@example(text=b"1 | a:1e39\n", noconstant=False, seed=0, mode="strings")
@example(text=b"1 1e39 | a\n", noconstant=False, seed=0, mode="strings")
@example(text=b"1 |x:1e39 a\n", noconstant=False, seed=0, mode="strings")
def test_vw_random_bytes(text, noconstant, seed, mode):
    parse(text, FMT_VW, noconstant, seed, mode)


@fuzz_settings(150)
@given(text=mutated_text(VW_LINES), **PARSE_OPTS)
def test_vw_mutated_lines(text, noconstant, seed, mode):
    parse(text, FMT_VW, noconstant, seed, mode)


@fuzz_settings(150)
@given(text=st.binary(max_size=400), **PARSE_OPTS)
@example(text=b"1 1:1e39\n", noconstant=False, seed=0, mode="strings")
def test_libsvm_random_bytes(text, noconstant, seed, mode):
    parse(text, FMT_LIBSVM, noconstant, seed, mode)


@fuzz_settings(150)
@given(text=mutated_text(LIBSVM_LINES), **PARSE_OPTS)
def test_libsvm_mutated_lines(text, noconstant, seed, mode):
    parse(text, FMT_LIBSVM, noconstant, seed, mode)


# ------------------------------------------------- CSV and JSON input, --affix (streamlearn.io.textformats)

CSV_LINES = [b"_label,_tag,a|x,b|y,z,c|\n", b'1,t,0.5,hello,"q ""r""",3\n', b"-1 2,'u,,1e39,x y,\n",
             b'0,,"",-0,nan,inf\n', b"a;b|c;d\n", b"1;2;3\n"]
JSON_LINES = [b'{"_label":1,"a":1.5,"s":"x y","b":true,"n":{"x":2,"i":{"z":3}},"arr":[1,0,null,{"k":1}]}\n',
              b'{"_label":{"Label":-1,"Weight":2},"_tag":"t","_text":"a b:c|d","":{"e":1}}\n',
              b'{"_label":"0.5 3"," sp":{"f":1e39},"7x":{"g":"h"}}\n', b"\n", b'{"a":[[1]]}\n']
TEXT_OPTS = dict(seed=st.sampled_from([0, 1, 12345]), mode=st.sampled_from(sorted(HASH_MODES)))


def convert_and_parse(conv, text: bytes, seed: int) -> None:
    """A converter's VW text (or one streamlearn error line) parses into a well-formed block, one VW
    line per input line."""
    buf = np.frombuffer(text, np.uint8)
    ends = np.flatnonzero(buf == 10)
    if text and not text.endswith(b"\n"):
        ends = np.append(ends, len(text))
    try:
        out, out_ends = conv.block(buf, ends, 1)
    except StreamlearnError as exc:
        assert "\n" not in str(exc)
        return
    assert out_ends.size == ends.size
    vw = out.tobytes()
    b = parse_block("fuzz.txt", vw, 1, FMT_VW, MASK, False, seed, HASH_MODES["strings"])
    check_block(b, vw)


@fuzz_settings(150)
@given(text=st.one_of(st.binary(max_size=300), mutated_text(CSV_LINES)),
       sep=st.sampled_from([",", ";", "\\t"]), ns_value=st.sampled_from(["", "a:0.5,:3"]), **TEXT_OPTS)
@example(text=b'a\n"\n', sep=",", ns_value="", seed=0, mode="strings")
def test_csv_converter(text, sep, ns_value, seed, mode):
    conv = TextFormat("csv", csv_separator=sep, csv_ns_value=ns_value).converter("fuzz.csv", seed, mode)
    convert_and_parse(conv, text, seed)


@fuzz_settings(150)
@given(text=st.one_of(st.binary(max_size=300), mutated_text(JSON_LINES)), chain=st.booleans(), **TEXT_OPTS)
@example(text=b'{"a":' * 3000 + b"\n", chain=False, seed=0, mode="strings")
def test_json_converter(text, chain, seed, mode):
    conv = TextFormat("json", chain_hash=chain).converter("fuzz.json", seed, mode)
    convert_and_parse(conv, text, seed)


@fuzz_settings(150)
@given(text=st.one_of(st.binary(max_size=300), mutated_text(VW_LINES)),
       affix=st.sampled_from(["-2", "+1,-3a", "7b,+2"]), **TEXT_OPTS)
def test_affix_and_dictionary_converter(text, affix, seed, mode):
    tables = {32: [{b"a": [(5, 2.0)], b"c": [(7, 1.0), (9, -0.5)]}], ord("n"): [{b"x": [(11, 3.0)]}]}
    convert_and_parse(AffixConverter(parse_affix(affix), "fuzz.vw", seed, mode, dictionaries=tables), text, seed)


# --------------------------------------------------------------------------------------- models

def _validate(data: bytes, name: str = "fuzz.model"):
    """Every check a model's bytes get before use: the models helper's ``validate_model`` when present,
    else ``parse_model`` and the options as a configuration."""
    try:
        from streamlearn.run.model_io import validate_model
    except ImportError:
        from streamlearn.config import train_config
        from streamlearn.run.model_io import model_options
        model = parse_model(data, name)
        return model, train_config({}, model_options(model[0], name))
    return validate_model(data, name)


def _load(data: bytes):
    """(header, index, rows) or None for a one-line refusal; any other exception fails the test."""
    try:
        return _validate(data)[0]
    except StreamlearnError as exc:
        assert "\n" not in str(exc) and "internal error" not in str(exc), str(exc)
        return None


def _lines(n: int) -> str:
    rng = np.random.default_rng(11)
    out = []
    for i in range(n):
        feats = " ".join(f"f{j}:{rng.uniform(-1, 1):.3f}" for j in rng.choice(50, 4, replace=False))
        out.append(f"{1 if rng.random() < 0.5 else -1} {'' if i % 4 else chr(39) + 't' + str(i)} |a {feats} |b g{i % 7}\n")
    return "".join(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """(a valid model's bytes, the text it was trained on, the cache written by that run, options)."""
    d = tmp_path_factory.mktemp("fuzz")
    text = d / "d.vw"
    text.write_text(_lines(40))
    r = CliRunner().invoke(main, ["train", "-d", str(text), "-b", str(BITS), "-f", str(d / "m"), "--quiet",
                                  "--cache-file", str(d / "c"), "--block-size", "700"])
    assert r.exit_code == 0, r.output
    return (d / "m").read_bytes(), text.read_bytes(), (d / "c").read_bytes()


def _recrc(data: bytes) -> bytes:
    if len(data) < 16:
        return data
    return data[:12] + struct.pack("<I", zlib.crc32(data[16:])) + data[16:]


@fuzz_settings(200)
@given(data=st.one_of(st.binary(max_size=300),
                      st.binary(max_size=300).map(lambda b: b"SLMODEL\x00" + b),
                      st.binary(max_size=300).map(lambda b: _recrc(b"SLMODEL\x00\x01\x00\x00\x00" + b))))
@example(data=_recrc(b"SLMODEL\x00\x01\x00\x00\x00\x00\x00\x00\x00" + struct.pack("<Q", 2) + b"[]"))
@example(data=_recrc(b"SLMODEL\x00\x01\x00\x00\x00\x00\x00\x00\x00" + struct.pack("<Q", 1 << 62) + b"{}"))
def test_model_random_bytes(data):
    _load(data)


def _sane(model) -> None:
    header, index, rows = model
    bits = int(header["bits"])
    assert rows.ndim == 2 and rows.shape[0] == index.shape[0]
    assert np.all(np.isfinite(rows)), "a model with non-finite rows was accepted"
    assert np.all(np.diff(index.astype(np.int64)) > 0), "indices not increasing"
    assert index.size == 0 or int(index.max()) < (1 << bits)


@fuzz_settings(200)
@given(edits=st.lists(st.tuples(st.integers(0, 10 ** 9), st.integers(0, 255)), min_size=1, max_size=4),
       recrc=st.booleans(), cut=st.one_of(st.none(), st.integers(0, 10 ** 9)))
def test_model_byte_mutations(files, edits, recrc, cut):
    good = files[0]
    data = bytearray(good)
    for pos, value in edits:
        data[pos % len(data)] = value
    if cut is not None:
        data = data[:cut % len(data)]
    data = bytes(data)
    if recrc:
        data = _recrc(data)
    model = _load(data)
    if model is None:
        return
    if not recrc:
        assert data == good, "a changed model file was accepted (the checksum missed it)"
    _sane(model)


@fuzz_settings(100)
@given(key=st.integers(0, 80), value=st.one_of(
    st.sampled_from(["x", "", None, True, -1, 0, 2 ** 64, -2 ** 63, 1e308, math.nan, math.inf, [], {}, [1, "a"]]),
    st.integers(), st.floats(), st.text(max_size=5)), state=st.booleans())
def test_model_crafted_header(files, key, value, state):
    """One header (or state) value replaced, the checksum recomputed: a one-line refusal or a model
    that is sane (test_model_validation goes further, through the CLI and the Python API)."""
    good = files[0]
    head_len = struct.unpack_from("<Q", good, 16)[0]
    header = json.loads(good[24:24 + head_len])
    target = header["state"] if state else header
    keys = sorted(target) + ["unknown_key"]
    target[keys[key % len(keys)]] = value
    head = json.dumps(header, sort_keys=True).encode()
    rest = struct.pack("<Q", len(head)) + head + good[24 + head_len:]
    model = _load(good[:8] + struct.pack("<II", 1, zlib.crc32(rest)) + rest)
    if model is not None:
        _sane(model)


# --------------------------------------------------------------------------------------- caches

def _cache_options(data: bytes) -> dict:
    """The options stored in a cache's header (whatever the version's header layout, the JSON after
    the magic and the two uint32 fields)."""
    hlen = struct.unpack_from("<I", data, 12)[0]
    return json.loads(data[16:16 + hlen])


def _read_all(path) -> list | None:
    """Every block of a cache, as copied arrays, or None for a streamlearn error (one line)."""
    out = []
    try:
        for b in C.read_cache(str(path), "fuzz.cache"):
            check_block_cached(b)
            out.append([np.array(a, copy=True) for a in (b.labels, b.weights, b.bases, b.lines, b.indptr,
                                                          b.idx, b.val)] + [b.tag_list()])
    except StreamlearnError as exc:
        assert "\n" not in str(exc)
        return None
    return out


def check_block_cached(b) -> None:
    n, nf = b.n, b.idx.shape[0]
    assert int(b.indptr[n]) <= nf and np.all(np.diff(b.indptr) >= 0) and int(b.indptr[0]) >= 0
    assert np.all(b.idx <= MASK)
    assert np.all(b.tag_s >= 0) and np.all(b.tag_s <= b.tag_e) and np.all(b.tag_e <= len(b.tag_buf))


def _same(a, b) -> bool:
    if a is None or b is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        for u, v in zip(x[:-1], y[:-1]):
            if u.shape != v.shape or not np.array_equal(u, v, equal_nan=True):
                return False
        if x[-1] != y[-1]:
            return False
    return True


@fuzz_settings(150)
@given(flips=st.lists(st.integers(0, 10 ** 9), min_size=1, max_size=3), cut=st.one_of(st.none(), st.integers(0, 10 ** 9)))
def test_cache_damage(files, tmp_path_factory, flips, cut):
    """Bit flips and truncations of a cache: refused (at the header or while reading) or read back
    exactly as written -- never other examples than the ones written."""
    good = files[2]
    d = tmp_path_factory.mktemp("c", numbered=True)
    ref_path = d / "ref.cache"
    ref_path.write_bytes(good)
    ref = _read_all(ref_path)
    assert ref is not None
    data = bytearray(good)
    for bit in flips:
        bit %= len(data) * 8
        data[bit // 8] ^= 1 << (bit % 8)
    if cut is not None:
        data = data[:cut % len(data)]
    path = d / "bad.cache"
    path.write_bytes(bytes(data))
    if not C.cache_matches(str(path), _cache_options(good)):
        return                  # rebuilt from the input, never read
    got = _read_all(path)
    if got is not None:
        assert _same(got, ref), "a damaged cache was read back as other examples without an error"


@fuzz_settings(60)
@given(text=mutated_text(VW_LINES), block=st.integers(30, 400))
def test_cache_round_trip(tmp_path_factory, text, block):
    """Parsed blocks written by CacheWriter and read back by read_cache are the parsed blocks."""
    d = tmp_path_factory.mktemp("rt", numbered=True)
    blocks = []
    opts = {"bits": BITS, "fuzz": True}
    w = C.CacheWriter(str(d / "c"), opts)
    pos, line = 0, 1
    while pos < len(text):
        end = text.find(b"\n", pos + block)
        end = len(text) if end < 0 else end + 1
        chunk = text[pos:end]
        b = parse_block("fuzz.txt", chunk, line, FMT_VW, MASK, False, 0, HASH_MODES["strings"])
        line += chunk.count(b"\n")
        pos = end
        blocks.append([np.array(a, copy=True) for a in (b.labels, b.weights, b.bases, b.lines, b.indptr, b.idx,
                                                         b.val)] + [b.tag_list()])
        w.write(b)
    w.commit()
    assert C.cache_matches(str(d / "c"), opts)
    got = _read_all(d / "c")
    assert got is not None, "a cache just written was refused"
    blocks = [b for b in blocks if b[0].shape[0]]      # empty blocks need not be stored
    got = [b for b in got if b[0].shape[0]]
    assert _same(got, blocks), "a cache read back other examples than were written"
