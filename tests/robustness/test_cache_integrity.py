"""Caches are checked before compiled code sees them (issue 24, "Caches"): every single-bit flip and
every truncation of a cache is caught; crafted blocks with valid checksums (indices outside the
table, a bad indptr, sizes larger than the file) are refused; a corrupt cache found at start-up is
rebuilt from the input files (saying so) or refused when the input is stdin; corruption found in a
later pass is one line naming the file and the block; a --cache-file that is not a regular file is
refused without being read or replaced; a write that fails (a file-size limit) is one line.

The runs that train on damaged caches go through a subprocess (``_runs``), so that a segmentation
fault would show as a negative return code instead of taking pytest down."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn.cli import main
from streamlearn.io import cache as C

BITS = 12
RECORD = struct.Struct("<QQQQIIQ")
#: multiplies the random damage of the probes (``make fuzz`` sets it; 1 here)
SCALE = max(1, int(os.environ.get("STREAMLEARN_FUZZ_SCALE", "1")))


def _text(n: int = 60) -> bytes:
    """VW lines with tags, weights and a few features each (three namespaces)."""
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        feats = " ".join(f"f{int(j)}:{rng.uniform(-1, 1):.3f}" for j in rng.choice(30, 4, replace=False))
        tag = f"'t{i}" if i % 3 else ""
        out.append(f"{1 if rng.random() < 0.5 else -1} {1 + i % 2} {tag}|a {feats} |b g{i % 5}\n")
    return "".join(out).encode()


def _train(*args) -> None:
    res = CliRunner().invoke(main, ["train", *map(str, args), "--quiet"])
    assert res.exit_code == 0, (args, res.output, res.exception)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(text path, cache path, the model trained without a cache): a cache of three blocks."""
    d = tmp_path_factory.mktemp("cache")
    text = d / "d.vw"
    text.write_bytes(_text())
    cache = d / "d.cache"
    _train("-d", text, "--cache-file", cache, "--block-size", 1200, "-b", BITS, "-q", "ab")
    _train("-d", text, "-f", d / "plain.model", "--block-size", 1200, "-b", BITS, "-q", "ab")
    return text, cache, (d / "plain.model").read_bytes()


def _layout(data: bytes) -> list[dict]:
    """The blocks of a cache: offset of the record, sizes, flags, and each array's (offset, dtype, count)."""
    hlen = struct.unpack("<I", data[12:16])[0]
    pos = 16 + hlen + 4
    out = []
    while True:
        n, nf, ntag, flags, _, _, _ = RECORD.unpack_from(data, pos)
        blk = {"at": pos, "n": n, "nf": nf, "ntag": ntag, "flags": flags, "arrays": {}}
        out.append(blk)
        if flags & 4:
            return out
        p = pos + RECORD.size
        spec = [("labels", "<f8", n), ("weights", "<f8", n), ("bases", "<f8", n), ("lines", "<i8", n),
                ("indptr", "<i8", n + 1), ("idx", "<u4", nf), ("val", "<f4", nf)]
        if flags & 2:
            spec.append(("counts", "<i8", n))
        if flags & 1:
            spec += [("tag_s", "<i8", n), ("tag_e", "<i8", n), ("tags", "u1", ntag)]
        for name, dt, count in spec:
            blk["arrays"][name] = (p, dt, count)
            p += np.dtype(dt).itemsize * count
        blk["end"] = p
        pos = p


def _recrc(data: bytearray, layout: list[dict]) -> bytearray:
    """The same bytes with every checksum recomputed (a crafted file: valid checksums, any content);
    ``layout``: the blocks' places (``_layout`` of the file before the edit)."""
    hlen = struct.unpack("<I", data[12:16])[0]
    data[16 + hlen:20 + hlen] = struct.pack("<I", zlib.crc32(bytes(data[:16 + hlen])))
    shift = len(data) - layout[-1]["at"] - RECORD.size       # a header that changed length
    for blk in layout:
        blk = {"at": blk["at"] + shift, "end": blk.get("end", blk["at"] + RECORD.size) + shift}
        at = blk["at"]
        rec = bytes(data[at:at + 32])
        rcrc = zlib.crc32(rec)
        crc = zlib.crc32(bytes(data[at + RECORD.size:blk.get("end", at + RECORD.size)]), rcrc)
        data[at + 32:at + 40] = struct.pack("<II", rcrc, crc)
    return data


def _array(data: bytearray, block: int, name: str) -> np.ndarray:
    """A writable view of one array of a block of ``data``."""
    off, dt, count = _layout(bytes(data))[block]["arrays"][name]
    return np.frombuffer(memoryview(data)[off:off + np.dtype(dt).itemsize * count], dtype=dt)


def test_a_good_cache_reads_back_and_has_several_blocks(built):
    _, cache, _ = built
    data = cache.read_bytes()
    blocks = _layout(data)
    assert len(blocks) >= 3 and blocks[-1]["flags"] == 4     # two blocks or more, then the end record
    assert any(b["flags"] & 1 for b in blocks[:-1])           # tags are stored
    assert C.verify_cache(str(cache), BITS) == 60 == C.verify_cache(data) == C.cache_examples(str(cache))


def test_every_single_bit_flip_is_caught(built):
    """CRC-32 over the header and over each record and block: no flipped bit goes unnoticed. Every bit
    of the header and of the records, one bit of every other byte (a CRC-32 catches every single-bit
    error whatever the bit; all of them take ~10 s)."""
    data = built[1].read_bytes()
    hlen = struct.unpack("<I", data[12:16])[0]
    every = set(range(16 + hlen + 4))
    for blk in _layout(data):
        every.update(range(blk["at"], blk["at"] + RECORD.size))
    missed = []
    buf = bytearray(data)
    for pos in range(len(data)):
        for bit in (range(8) if pos in every or SCALE > 1 else [pos * 5 % 8]):
            buf[pos] ^= 1 << bit
            try:
                C.verify_cache(buf, BITS)
                missed.append((pos, bit))
            except C.InputError as exc:
                assert "\n" not in str(exc)
            buf[pos] ^= 1 << bit
    assert not missed


def test_every_truncation_is_caught(built):
    """Including cuts at block boundaries (the end record counts the blocks and examples)."""
    data = built[1].read_bytes()
    for cut in range(len(data)):
        with pytest.raises(C.InputError):
            C.verify_cache(data[:cut], BITS)
    with pytest.raises(C.CacheCorrupt, match="block 4 at byte .*: the file ends before the end record"):
        C.verify_cache(data[:_layout(data)[-1]["at"]], BITS)
    with pytest.raises(C.CacheCorrupt, match="bytes after the end record"):
        C.verify_cache(data + b"\0", BITS)


def _crafted(data: bytes):
    """(name, crafted bytes with valid checksums, the reason expected) for the structural checks."""
    def edit(fn):
        buf = bytearray(data)
        fn(buf)
        return bytes(_recrc(buf, _layout(data)))

    def record(block, **fields):
        def fn(buf):
            at = _layout(bytes(buf))[block]["at"]
            n, nf, ntag, flags = struct.unpack_from("<QQQQ", buf, at)
            vals = {**dict(n=n, nf=nf, ntag=ntag, flags=flags), **fields}
            struct.pack_into("<QQQQ", buf, at, vals["n"], vals["nf"], vals["ntag"], vals["flags"])
        return fn

    def put(block, name, i, value):
        def fn(buf):
            _array(buf, block, name)[i] = value
        return fn

    def header(**options):
        def fn(buf):
            hlen = struct.unpack("<I", buf[12:16])[0]
            head = json.loads(bytes(buf[16:16 + hlen]))
            head.update(options)
            new = json.dumps(head, sort_keys=True).encode()
            buf[12:20 + hlen] = struct.pack("<I", len(new)) + new + b"\0\0\0\0"
        return fn

    return [
        ("index = 2^bits", edit(put(1, "idx", 3, 1 << BITS)), "feature index out of range at feature 3"),
        ("index = 2^32 - 1", edit(put(0, "idx", 0, 2**32 - 1)), "feature index out of range at feature 0"),
        ("indptr decreasing", edit(put(0, "indptr", 5, 2)), "indptr decreases at example"),
        ("indptr not from 0", edit(put(0, "indptr", 0, 1)), "indptr does not start at 0"),
        ("indptr past nf", edit(put(1, "indptr", -1, 10**9)), "indptr decreases|does not end at"),
        ("tag outside", edit(put(0, "tag_e", 1, 10**6)), "tag of example 1 lies outside"),
        ("negative weight", edit(put(0, "weights", 2, -1.0)), "importance weight of example 2"),
        ("infinite label", edit(put(1, "labels", 0, np.inf)), "label of example 0 is infinite"),
        ("NaN value", edit(put(0, "val", 4, np.nan)), "value of feature 4 is not finite"),
        ("infinite value", edit(put(1, "val", 0, -np.inf)), "value of feature 0 is not finite"),
        ("line 0", edit(put(0, "lines", 0, 0)), "line number of example 0"),
        ("huge n", edit(record(0, n=2**40)), "exceed the .* bytes left"),
        ("huge nf", edit(record(1, nf=2**62)), "exceed the .* bytes left"),
        ("unknown flag", edit(record(0, flags=64 | 1)), "unknown flags"),
        ("end count", edit(record(-1, n=59)), "the end record counts 59 examples"),
        ("bits 33", edit(header(bits=33)), "bits 33 is not an integer"),
        ("bits other", edit(header(bits=BITS + 2)), f"built with -b {BITS + 2}, this run uses -b {BITS}"),
    ]


def test_crafted_blocks_with_valid_checksums_are_refused(built):
    data = built[1].read_bytes()
    for name, crafted, reason in _crafted(data):
        with pytest.raises(C.CacheCorrupt, match=reason):
            C.verify_cache(crafted, BITS)
        assert crafted != data, name


# ----------------------------------------------------------------------------- runs in a subprocess

_RUNNER = r"""
import hashlib, json, sys
from click.testing import CliRunner
from streamlearn.cli import main
from streamlearn.io import cache as C
later = None
_commit = C.CacheWriter.commit
def commit(self):                   # flips a byte of the cache just written (a later pass reads it)
    _commit(self)
    if later is not None:
        with open(self.path, "r+b") as f:
            f.seek(later)
            b = f.read(1)
            f.seek(later)
            f.write(bytes([b[0] ^ 0x10]))
C.CacheWriter.commit = commit
out = []
for case in json.load(open(sys.argv[1])):
    later = case.get("later")
    stdin = open(case["stdin"], "rb").read() if case.get("stdin") else None
    if case.get("cache_bytes"):
        open(case["cache"], "wb").write(bytes.fromhex(case["cache_bytes"]))
    res = CliRunner().invoke(main, case["args"], input=stdin)
    model = None
    if res.exit_code == 0 and case.get("model"):
        model = hashlib.sha256(open(case["model"], "rb").read()).hexdigest()
    out.append({"code": res.exit_code, "stderr": res.stderr, "model": model,
                "exc": None if res.exception is None or isinstance(res.exception, SystemExit)
                else repr(res.exception)})
json.dump(out, open(sys.argv[2], "w"))
"""


def _runs(tmp_path, cases: list[dict]) -> list[dict]:
    """Run ``streamlearn`` once per case in one fresh Python process; asserts it ended without a signal."""
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(tmp_path / "cases.json"), str(tmp_path / "out.json")],
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode()[-2000:])
    return json.loads((tmp_path / "out.json").read_text())


def _sha(b: bytes) -> str:
    import hashlib
    return hashlib.sha256(b).hexdigest()


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error")]


def test_damaged_caches_are_rebuilt_from_files_and_refused_from_stdin(built, tmp_path):
    """Bit flips in each part of the file (header, records, arrays, end record), cuts, and crafted
    blocks with valid checksums: from a file input the cache is rebuilt (one warning line) and the
    model is the one trained without a cache; from stdin the run is refused with one line naming the
    file and the block. No run ends in a signal, a traceback or an internal error."""
    text, cache, plain = built
    good = cache.read_bytes()
    lay = _layout(good)
    rng = np.random.default_rng(5)
    damaged = []    # (bytes, expected: "corrupt", "foreign" (the magic: refused), "version" (rebuilt quietly))
    for pos in [20, lay[0]["at"] + 3, lay[0]["at"] + 36, lay[1]["arrays"]["idx"][0] + 1,
                lay[1]["arrays"]["indptr"][0] + 9, lay[-1]["at"] + 1] + rng.integers(0, len(good), 4 * SCALE).tolist():
        buf = bytearray(good)
        buf[pos] ^= 1 << int(rng.integers(8))
        damaged.append((bytes(buf), "foreign" if pos < 8 else "version" if pos < 12 else "corrupt"))
    cuts = [lay[1]["at"], len(good) - 3] + rng.integers(1, len(good), 2 * SCALE).tolist()
    damaged += [(good[:c], "corrupt") for c in cuts]
    damaged += [(crafted, "corrupt") for name, crafted, _ in _crafted(good) if "bits" not in name]
    # the same cache built from stdin (its options name stdin), for the refusals
    stdin_cache = tmp_path / "s.cache"
    res = CliRunner().invoke(main, ["train", "--cache-file", str(stdin_cache), "--block-size", "1200", "-b",
                                    str(BITS), "-q", "ab", "--quiet"], input=text.read_bytes())
    assert res.exit_code == 0, res.output
    sgood = stdin_cache.read_bytes()
    assert _layout(sgood) and len(sgood) != len(good)
    cases = []
    model = str(tmp_path / "m")
    common = ["--block-size", "1200", "-b", str(BITS), "-q", "ab", "--quiet", "-f", model]
    for i, (bad, expect) in enumerate(damaged):
        path = str(tmp_path / f"c{i}.cache")
        cases.append({"args": ["train", "-d", str(text), "--cache-file", path, *common], "cache": path,
                      "cache_bytes": bad.hex(), "model": model, "expect": expect})
    for i, (name, crafted, _) in enumerate(_crafted(sgood)):
        if "bits" in name:
            continue
        path = str(tmp_path / f"s{i}.cache")
        cases.append({"args": ["train", "--cache-file", path, *common], "cache": path, "stdin": str(text),
                      "cache_bytes": crafted.hex(), "refuse": True})
    results = _runs(tmp_path, cases)
    for case, res in zip(cases, results):
        assert res["exc"] is None, (case["args"], res)
        errors = _errors(res["stderr"])
        if case.get("refuse"):
            assert res["code"] == 1 and len(errors) == 1, res
            assert f"cache file {case['cache']} is corrupt (block " in errors[0] or "header" in errors[0], errors
            assert "cannot be rebuilt from stdin" in errors[0]
        elif case["expect"] == "foreign":
            assert res["code"] == 1 and errors == [f"Error: {case['cache']} exists and is not a streamlearn "
                                                   f"cache; name another --cache-file, or give --kill-cache to "
                                                   f"overwrite it"], res
        else:
            warned = [line for line in res["stderr"].splitlines() if "rebuilding it from the input" in line]
            assert res["code"] == 0 and len(warned) == (case["expect"] == "corrupt"), res
            assert not warned or f"cache file {case['cache']} is corrupt (" in warned[0]
            assert res["model"] == _sha(plain), case["args"]
            assert open(case["cache"], "rb").read() == good       # rebuilt
    assert sum(1 for c in cases if c.get("refuse")) >= 10


def test_corruption_found_in_a_later_pass_is_one_line(built, tmp_path):
    """The cache written by the first pass is damaged before the second reads it: one line naming the
    file and the block (no training on the damaged block)."""
    text, cache, _ = built
    lay = _layout(cache.read_bytes())
    path = str(tmp_path / "p.cache")
    base = ["train", "-d", str(text), "--cache-file", path, "--passes", "3", "--block-size", "1200", "-b",
            str(BITS), "-q", "ab", "--quiet", "--holdout-off"]
    cases = [{"args": base, "later": lay[1]["arrays"]["val"][0] + 2},
             {"args": base, "later": lay[2]["arrays"]["idx"][0] + 3},
             {"args": base + ["--shuffle"], "later": lay[0]["at"] + 1}]
    results = _runs(tmp_path, cases)
    for case, res, block in zip(cases, results, (2, 3, 1)):
        errors = _errors(res["stderr"])
        assert res["code"] == 1 and res["exc"] is None and len(errors) == 1, res
        assert f"cache file {path} is corrupt (block {block} at byte " in errors[0], errors


def test_old_version_caches_are_rebuilt_and_foreign_files_are_not_overwritten(built, tmp_path):
    text, cache, _ = built
    args = ["train", "-d", str(text), "--block-size", "1200", "-b", str(BITS), "-q", "ab", "--quiet"]
    old = tmp_path / "old.cache"      # version 3's header: rebuilt without a word, as before
    head = json.dumps({"bits": BITS}).encode()
    old.write_bytes(C.MAGIC + struct.pack("<II", 3, len(head)) + head + b"\0" * 40)
    res = CliRunner().invoke(main, args + ["--cache-file", str(old)])
    assert res.exit_code == 0 and "warning" not in res.stderr, res.stderr
    assert old.read_bytes() == cache.read_bytes()
    mine = tmp_path / "notes.txt"     # a file that is no cache: refused, untouched, unless --kill-cache
    mine.write_bytes(b"my notes\n")
    res = CliRunner().invoke(main, args + ["--cache-file", str(mine)])
    assert res.exit_code == 1 and mine.read_bytes() == b"my notes\n"
    assert _errors(res.stderr) == [f"Error: {mine} exists and is not a streamlearn cache; name another "
                                   f"--cache-file, or give --kill-cache to overwrite it"], res.stderr
    res = CliRunner().invoke(main, args + ["--cache-file", str(mine), "--kill-cache"])
    assert res.exit_code == 0 and mine.read_bytes() == cache.read_bytes()
    empty = tmp_path / "empty.cache"  # an empty file (mktemp's): used
    empty.write_bytes(b"")
    res = CliRunner().invoke(main, args + ["--cache-file", str(empty)])
    assert res.exit_code == 0 and empty.read_bytes() == cache.read_bytes()


def _nodes(tmp_path) -> dict:
    """Non-regular files made in a temporary directory (never the machine's /dev)."""
    nodes = {"FIFO": tmp_path / "fifo", "directory": tmp_path / "dir"}
    os.mkfifo(nodes["FIFO"])
    nodes["directory"].mkdir()
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        nodes["character device"] = tmp_path / "null"
    except (PermissionError, OSError):
        pass        # not root: the FIFO and the directory still cover the check
    return nodes


def test_a_cache_file_that_is_not_a_regular_file_is_refused_untouched(built, tmp_path):
    """Refused at start-up with one line, without opening it (a FIFO would block) or replacing it,
    with --kill-cache too."""
    text, _, _ = built
    nodes = _nodes(tmp_path)
    modes = {kind: os.stat(node).st_mode for kind, node in nodes.items()}
    cases = [{"args": ["train", "-d", str(text), "--cache-file", str(node), "--quiet", *extra], "kind": kind,
              "node": str(node)} for kind, node in nodes.items() for extra in ([], ["--kill-cache"])]
    for case, res in zip(cases, _runs(tmp_path, cases)):
        assert res["code"] == 1 and res["exc"] is None, res
        assert res["stderr"].splitlines() == [f"Error: cache file {case['node']} is a {case['kind']}, not a "
                                              f"regular file; give --cache-file a file path"], res
    for kind, node in nodes.items():
        assert os.stat(node).st_mode == modes[kind] and not stat.S_ISREG(modes[kind])
        with pytest.raises(C.InputError, match="not a regular file"):
            C.verify_cache(str(node))


def test_a_cache_write_over_the_file_size_limit_is_one_line(built, tmp_path):
    """EFBIG (RLIMIT_FSIZE; Python ignores SIGXFSZ) while the cache is written: one line naming the
    cache, no temporary file left behind."""
    resource = pytest.importorskip("resource")
    text, _, _ = built
    big = tmp_path / "big.vw"
    big.write_bytes(_text(60) * 200)
    out = tmp_path / "out"
    out.mkdir()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))

    proc = subprocess.run([sys.executable, "-m", "streamlearn", "train", "-d", str(big), "--cache-file",
                           str(out / "c.cache"), "--quiet"], capture_output=True, text=True, timeout=120,
                          preexec_fn=limit)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(out / "c.cache") in lines[0] and "too large" in lines[0].lower(), lines
    assert os.listdir(out) == []
