"""Issue 24's probe table: how streamlearn behaves under bad files, faults and root, through the CLI.

Every trial runs ``python -m streamlearn`` as a subprocess (with ``--repo DIR`` first on PYTHONPATH, so
another checkout can be probed) and is classified as

* clean  -- exit 1 with exactly one stderr line that is not an "internal error", or success where
            success is correct (a harmless run; a corrupt cache rebuilt from the input);
* crash  -- killed by a signal, a traceback, an "internal error", or a hang (timeout);
* silent -- corrupt data accepted with exit 0 and no message, a device node replaced, a model that
            holds inf/NaN without a message, a partial model or a stray temporary file;
* other  -- anything else (several stderr lines, a usage error, a valid input refused): listed below
            the table.

Probes: (a) corrupt --cache-file, (b) device nodes as outputs, (c) crafted model headers with a
valid checksum, (d) values that overflow float32, (e) kill -9 during a large -f save, (f) the
environment (full device, file-size limit, directories, missing directories, permissions, FIFOs,
a zero device, a closed pipe), (g) the Python API's CSR checks. Device nodes are made with
``os.mknod`` in a temporary directory (root only; the probes that need them are skipped otherwise);
the machine's own /dev is never touched.

    python -m bench run probe_trust --repo /tmp/before               # the table, on stdout
    python -m bench run probe_trust --out bench/RESULTS.md --label "after (commit abc1234)"

Seeded (``--seed``); ``--trials`` scales the random probes (1 = the default sizes, about 5-10 minutes
on two cores).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.harness import REPO as ROOT, Case, Context, shared, write_titled_section

SAMPLE = ROOT / "data" / "samples" / "sparse.train.vw"
COMPILING = re.compile(r"^streamlearn: (compiling|\d+ kernels? compiled)")
OUTCOMES = ("clean", "crash", "silent", "other")
PROBES = {
    "a": "corrupt --cache-file (bit flips, truncations, crafted indices)",
    "b": "device node as an output (null, full)",
    "c": "crafted model headers (valid checksum)",
    "d": "values overflowing float32 / divergence",
    "e": "kill -9 during a large -f save",
    "f": "environment (ENOSPC, EFBIG, EISDIR, ENOENT, EACCES, EPIPE, FIFO, zero device)",
    "g": "Python API (CSR indices, shapes, dtypes, finiteness)",
}


# ----------------------------------------------------------------------------------------- running

@dataclass
class Result:
    rc: int | None
    out: bytes
    err: str
    timed_out: bool

    @property
    def lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip() and not COMPILING.match(ln)]


@dataclass
class Trial:
    probe: str
    case: str
    outcome: str
    detail: str = ""


class Runner:
    def __init__(self, repo: str | None, python: str, timeout: float, cwd: str):
        self.repo = repo
        self.cwd = cwd          # not the checkout this script is in: python -m puts the cwd first on sys.path
        self.python = python
        self.timeout = timeout
        env = dict(os.environ)
        if repo:
            env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.pop("NUMBA_CACHE_DIR", None)
        self.env = env

    def run(self, args, stdin=None, stdout=None, timeout=None, preexec=None, env=None, cwd=None,
            module=True, raw=False) -> Result:
        if raw:
            cmd = list(map(str, args))
        else:
            cmd = [self.python, "-m", "streamlearn", *map(str, args)] if module else [self.python, *args]
        timeout = self.timeout if timeout is None else timeout
        p = subprocess.Popen(cmd, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                             stdout=stdout if stdout is not None else subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env or self.env, cwd=cwd or self.cwd, preexec_fn=preexec,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            timed_out = True
        return Result(p.returncode, out or b"", (err or b"").decode("utf-8", "replace"), timed_out)


def crash_of(r: Result) -> str | None:
    """Why a run is a crash (None: it is not)."""
    if r.timed_out:
        return "hang (timeout)"
    if r.rc is not None and r.rc < 0:
        return f"killed by signal {-r.rc}"
    if "Traceback" in r.err:
        return "traceback: " + (r.lines[-1] if r.lines else "")
    if "internal error" in r.err:
        return next((ln for ln in r.lines if "internal error" in ln), "internal error")
    return None


def refused(r: Result) -> bool:
    return r.rc == 1 and len(r.lines) == 1


def brief(r: Result) -> str:
    text = " | ".join(r.lines[:3])
    return f"exit {r.rc}: {text[:200]}" if text else f"exit {r.rc}, no message"


def judge(probe, case, r: Result, ok_success: bool, silent_why: str = "accepted without a message") -> Trial:
    """The common rule: crash, one-line refusal (clean), success (clean when ``ok_success``, else
    silent without a message, clean with one), anything else other."""
    why = crash_of(r)
    if why:
        return Trial(probe, case, "crash", why)
    if refused(r):
        return Trial(probe, case, "clean", brief(r))
    if r.rc == 0:
        if ok_success or r.lines:
            return Trial(probe, case, "clean", brief(r))
        return Trial(probe, case, "silent", silent_why)
    return Trial(probe, case, "other", brief(r))


# -------------------------------------------------------------------------------- model files (v1)

MODEL_MAGIC = b"SLMODEL\x00"


def read_model(data: bytes):
    """(header, index bytes, rows bytes, isize) of a version-1 model file, or None if it is not one
    with a valid checksum (the format of streamlearn.io.model_file, re-read here so that a model
    can be crafted and checked without the library)."""
    if len(data) < 24 or data[:8] != MODEL_MAGIC:
        return None
    version, crc, hlen = struct.unpack_from("<IIQ", data, 8)
    if version != 1 or zlib.crc32(data[16:]) != crc or len(data) < 24 + hlen:
        return None
    try:
        header = json.loads(data[24:24 + hlen])
        count, columns, bits = int(header["count"]), int(header["columns"]), int(header["bits"])
    except (ValueError, KeyError, TypeError):
        return None
    isize = 4 if bits <= 32 else 8
    pos = 24 + hlen
    if len(data) != pos + count * (isize + 8 * columns):
        return None
    return header, data[pos:pos + count * isize], data[pos + count * isize:], isize


def write_model(header, index: bytes, rows: bytes, raw_header: bytes | None = None) -> bytes:
    head = raw_header if raw_header is not None else json.dumps(header, sort_keys=True).encode()
    body = struct.pack("<Q", len(head)) + head + index + rows
    return MODEL_MAGIC + struct.pack("<II", 1, zlib.crc32(body)) + body


def model_nonfinite(path) -> bool | None:
    """True when the model file at ``path`` holds a non-finite stored value (None: not a model)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    m = read_model(data)
    if m is None:
        return None
    rows = m[2]
    vals = struct.unpack(f"<{len(rows) // 8}d", rows)
    state = m[0].get("state", {}) if isinstance(m[0], dict) else {}
    svals = [v for v in state.values() if isinstance(v, float)] if isinstance(state, dict) else []
    return any(not math.isfinite(v) for v in (*vals, *svals))


# ---------------------------------------------------------------------------------------- the probe

class Probe:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.tmp = Path(tempfile.mkdtemp(prefix="probe-trust-"))
        self.runner = Runner(args.repo, args.python, args.timeout, str(self.tmp))
        self.run = self.runner.run
        self.root = os.geteuid() == 0
        self.notes: list[str] = []
        lines = SAMPLE.read_bytes().splitlines(keepends=True)
        # a small data file with tags (so a cache holds tag arrays too)
        small = [ln.replace(b"1 |", b"1 'e%d |" % i, 1) if i % 3 == 0 else ln for i, ln in enumerate(lines[:300])]
        self.data = self.tmp / "small.vw"
        self.data.write_bytes(b"".join(small))
        self.full = SAMPLE
        self.n = max(1, args.trials)

    def path(self, name) -> Path:
        d = Path(tempfile.mkdtemp(dir=self.tmp, prefix=name + "-"))
        return d

    def warm(self):
        """Compile the kernels once (the first run of a checkout compiles for ~1 minute)."""
        d = self.path("warm")
        self.run(["train", "-d", self.data, "--quiet", "-f", d / "m", "--passes", "2", "--cache-file", d / "c",
                  "--readable-model", d / "r", "--invert-hash", d / "ih", "--trace", d / "t"], timeout=900)
        self.run(["predict", "-i", d / "m", "-d", self.data, "-p", d / "p", "--quiet"], timeout=900)
        self.run(["train", "-d", self.data, "-i", d / "m", "--quiet", "-q", "ab", "--strict", "-f", d / "m2"],
                 timeout=900)

    # ---- (a) caches
    def cache_trials(self):
        d = self.path("cache")
        c0, m0 = d / "c0.cache", d / "m0"
        r = self.run(["train", "-d", self.data, "--quiet", "--cache-file", c0, "-f", m0])
        ref = d / "ref"
        r2 = self.run(["train", "-d", self.data, "--quiet", "--cache-file", c0, "-f", ref])
        if r.rc or r2.rc or not c0.exists():
            self.notes.append(f"(a) could not build the cache: {brief(r)} / {brief(r2)}")
            return []
        good, ref_model = c0.read_bytes(), ref.read_bytes()
        jobs = []
        for i in range(30 * self.n):
            bit = self.rng.randrange(len(good) * 8)
            b = bytearray(good)
            b[bit // 8] ^= 1 << (bit % 8)
            jobs.append((f"flip bit {bit} (byte {bit // 8})", bytes(b)))
        for i in range(10 * self.n):
            cut = self.rng.randrange(len(good))
            jobs.append((f"truncate to {cut} of {len(good)} bytes", good[:cut]))
        out = [lambda case=case, data=data: self._cache_one(case, data, ref_model) for case, data in jobs]
        for kind in CRAFTS:
            out.append(lambda kind=kind: self._cache_crafted(kind, ref_model))
        return out

    def _cache_one(self, case, data, ref_model, d=None) -> Trial:
        d = d or self.path("c")
        c, m = d / "c.cache", d / "m"
        if data is not None:
            c.write_bytes(data)
        planted = c.read_bytes()
        r = self.run(["train", "-d", self.data, "--quiet", "--cache-file", c, "-f", m])
        why = crash_of(r)
        if why:
            return Trial("a", case, "crash", why)
        if refused(r):
            return Trial("a", case, "clean", brief(r))
        if r.rc != 0:
            return Trial("a", case, "other", brief(r))
        if r.lines:
            return Trial("a", case, "clean", brief(r))
        same_model = m.exists() and m.read_bytes() == ref_model
        used = c.exists() and c.read_bytes() == planted
        shutil.rmtree(d, ignore_errors=True)
        if not same_model:
            return Trial("a", case, "silent", "trained on the corrupt cache without a message (model differs)")
        if used:
            return Trial("a", case, "silent", "corrupt cache accepted without a message (same model)")
        return Trial("a", case, "clean", "rebuilt from the input (quietly), same model")

    def _cache_crafted(self, kind, ref_model) -> Trial:
        """A cache written by the library's own CacheWriter (so its checksums, if any, are right)
        from blocks altered just before they are written."""
        d = self.path("craft")
        c = d / "c.cache"
        r = self.run(["-c", CRAFT_SCRIPT, kind, str(self.data), str(c), str(d / "m")], module=False)
        if r.rc != 0 or not c.exists():
            return Trial("a", f"crafted {kind}", "other", f"could not craft: {brief(r)}")
        return self._cache_one(f"crafted {kind}", None, ref_model, d)

    # ---- (b) device nodes as outputs
    OUTPUTS = ("-f", "--readable-model", "--invert-hash", "--trace", "--cache-file", "--plot", "-p", "--audit")

    def device_trials(self):
        if not self.root:
            self.notes.append("(b) skipped: os.mknod needs root")
            return []
        return [lambda opt=opt, node=node: self._device_one(opt, node)
                for opt in self.OUTPUTS for node in (("null", 3), ("full", 7))]

    def _device_one(self, opt, node) -> Trial:
        name, minor = node
        d = self.path("dev")
        dev = d / f"{name}.png"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        case = f"{opt} {name} node"
        if opt == "--audit":
            with open(dev, "wb") as fout:
                r = self.run(["train", "-d", self.data, "--quiet", "--audit"], stdout=fout)
        else:
            r = self.run(["train", "-d", self.data, "--quiet", opt, dev])
        still = stat.S_ISCHR(os.lstat(dev).st_mode) if os.path.lexists(dev) else False
        stray = [p.name for p in d.iterdir() if p.name != dev.name]
        shutil.rmtree(d, ignore_errors=True)
        why = crash_of(r)
        if why:
            return Trial("b", case, "crash", why)
        if not still:
            return Trial("b", case, "silent", "the device node was replaced by a regular file")
        if stray:
            return Trial("b", case, "silent", f"stray files left: {stray}")
        if name == "null":
            if r.rc == 0:
                return Trial("b", case, "clean", brief(r))
            if refused(r) and opt != "-f":
                return Trial("b", case, "clean", brief(r))
            return Trial("b", case, "other", ("-f /dev/null refused: " if opt == "-f" else "") + brief(r))
        return judge("b", case, r, ok_success=False, silent_why="write to a full device reported success")

    # ---- (c) crafted model headers
    def model_trials(self):
        d = self.path("model")
        base = d / "base"
        r = self.run(["train", "-d", self.data, "--quiet", "-f", base])
        m = read_model(base.read_bytes()) if base.exists() else None
        if m is None:
            self.notes.append(f"(c) could not read a version-1 model: {brief(r)}")
            return []
        header, index, rows, isize = m
        legacy = self._legacy()
        values = [("string", "x"), ("null", None), ("NaN", float("nan")), ("inf", float("inf")), ("-1", -1),
                  ("1e308", 1e308), ("2^64", 2 ** 64), ("list", []), ("dict", {}), ("true", True),
                  ("-0.5", -0.5), ("empty string", "")]
        keys = [k for k in header if k not in ("state",)] + [f"state.{k}" for k in header.get("state", {})]
        combos = [(k, v) for k in keys for v in values] + [(k, "drop") for k in keys]
        self.rng.shuffle(combos)
        crafted = []
        for key, val in combos[:40 * self.n]:
            h = json.loads(json.dumps(header))
            target, k = (h["state"], key[6:]) if key.startswith("state.") else (h, key)
            if val == "drop":
                del target[k]
                benign = key in legacy or key == "streamlearn"
                crafted.append((f"drop {key}", write_model(h, index, rows), benign))
            else:
                unchanged = json.dumps(target.get(k)) == json.dumps(val[1])     # e.g. invariant = true
                target[k] = val[1]
                crafted.append((f"{key} = {val[0]}", write_model(h, index, rows), key == "streamlearn" or unchanged))
        crafted += self._structural(header, index, rows, isize)
        out = []
        for case, data, benign in crafted:
            for cmd in ("predict", "train"):
                out.append(lambda case=case, data=data, benign=benign, cmd=cmd: self._model_one(case, data, benign, cmd))
        return out

    def _legacy(self) -> set:
        r = self.run(["-c", "import json; from streamlearn.config import LEGACY_MODEL_OPTIONS as L; "
                      "print(json.dumps(sorted(L)))"], module=False)
        try:
            return set(json.loads(r.out))
        except ValueError:
            return set()

    def _structural(self, header, index, rows, isize):
        count, columns = header["count"], header["columns"]
        idx = list(struct.unpack(f"<{count}{'I' if isize == 4 else 'Q'}", index))
        vals = list(struct.unpack(f"<{count * columns}d", rows))
        pack_i = lambda xs: struct.pack(f"<{len(xs)}{'I' if isize == 4 else 'Q'}", *xs)  # noqa: E731
        pack_r = lambda xs: struct.pack(f"<{len(xs)}d", *xs)  # noqa: E731
        out = []
        h = dict(header, unknown_key=1)
        out.append(("unknown key added", write_model(h, index, rows), False))
        out.append(("indices decreasing", write_model(header, pack_i(idx[::-1]), rows), False))
        dup = [idx[0]] + idx[:-1]
        out.append(("duplicate index", write_model(header, pack_i(dup), rows), False))
        out.append(("index = 2^bits", write_model(header, pack_i(idx[:-1] + [1 << header["bits"]]), rows), False))
        out.append(("NaN weight", write_model(header, index, pack_r([float("nan")] + vals[1:])), False))
        out.append(("inf weight", write_model(header, index, pack_r([float("inf")] + vals[1:])), False))
        out.append(("NaN in every column", write_model(header, index, pack_r([float("nan")] * columns + vals[columns:])),
                    False))
        h = dict(header, column_names=header["column_names"][:-1])
        out.append(("column_names shorter than columns", write_model(h, index, rows), False))
        h = dict(header, column_names=header["column_names"] + ["q"])
        out.append(("column_names longer than columns", write_model(h, index, rows), False))
        h = dict(header, column_names=["x"] * columns)
        out.append(("unknown column names", write_model(h, index, rows), False))
        # one more column of zeros than column_names says
        wide = []
        for i in range(count):
            wide += vals[i * columns:(i + 1) * columns] + [0.0]
        h = dict(header, columns=columns + 1)
        out.append(("columns = names + 1 (data consistent)", write_model(h, index, pack_r(wide)), False))
        h = dict(header, columns=columns - 1, column_names=header["column_names"][:-1])
        narrow = []
        for i in range(count):
            narrow += vals[i * columns:i * columns + columns - 1]
        out.append(("learner column missing", write_model(h, index, pack_r(narrow)), False))
        out.append(("header is a JSON list", write_model(None, index, rows, raw_header=b"[1, 2]"), False))
        out.append(("header is not UTF-8", write_model(None, index, rows, raw_header=b'{"a": "\xff"}'), False))
        h = dict(header, bits=40)
        out.append(("bits 40 with 32-bit indices", write_model(h, index, rows), False))
        h = dict(header, count=count + 10 ** 12)
        out.append(("count 10^12 (header says)", write_model(h, index, rows), False))
        h = dict(header, state="x")
        out.append(("state is a string", write_model(h, index, rows), False))
        return out

    def _model_one(self, case, data, benign, cmd) -> Trial:
        d = self.path("m")
        m = d / "model"
        m.write_bytes(data)
        case = f"{cmd}: {case}"
        if cmd == "predict":
            r = self.run(["predict", "-i", m, "-d", self.data, "-p", d / "p", "--quiet"])
        else:
            r = self.run(["train", "-i", m, "-d", self.data, "-f", d / "out", "--quiet"])
        bad_out = False
        if r.rc == 0:
            if cmd == "predict" and (d / "p").exists():
                bad_out = bool(re.search(rb"nan|inf", (d / "p").read_bytes(), re.I))
            elif (d / "out").exists():
                bad_out = bool(model_nonfinite(d / "out"))
        shutil.rmtree(d, ignore_errors=True)
        t = judge("c", case, r, ok_success=benign, silent_why="odd value loaded without a message")
        if t.outcome == "clean" and r.rc == 0 and bad_out and not r.lines:
            t = Trial("c", case, "silent", "non-finite output without a message")
        return t

    # ---- (d) overflow and divergence
    def overflow_trials(self):
        cases = {
            "a:1e39": (b"1 | a:1e39 b:1\n-1 | b:1 c:2\n" * 20, []),
            "a:-1e39": (b"1 | a:-1e39 b:1\n-1 | b:1 c:2\n" * 20, []),
            "-q xy product 3e38*3e38": (b"1 |x a:3e38 |y b:3e38\n-1 |x a:1 |y c:1\n" * 20, ["-q", "xy"]),
            "--cubic product 1e20^3": (b"1 |x a:1e20 |y b:1e20 |z c:1e20\n0 |x a:1\n" * 20, ["--cubic", "xyz"]),
            "label 1e300 (diverges)": (b"1e300 | a:1 b:1\n-1e300 | a:2\n" * 20, ["--sgd", "-l", "10"]),
            "a:1e30 --sgd (diverges)": (b"1 | a:1e30\n-1 | a:-1e30\n" * 50, ["--sgd", "-l", "10"]),
            "weight 1e39": (b"1 1e39 | a:1\n-1 | b:1\n" * 20, []),
        }
        out = []
        for name, (text, extra) in cases.items():
            for strict in (False, True):
                out.append(lambda name=name, text=text, extra=extra, strict=strict:
                           self._overflow_one(name, text, extra, strict))
        return out

    def _overflow_one(self, name, text, extra, strict) -> Trial:
        d = self.path("ovf")
        f = d / "data.vw"
        f.write_bytes(text)
        args = ["train", "-d", f, "--quiet", "-f", d / "m", *extra] + (["--strict"] if strict else [])
        r = self.run(args)
        case = f"{name}{' --strict' if strict else ''}"
        why = crash_of(r)
        nonfinite = model_nonfinite(d / "m") if r.rc == 0 else None
        shutil.rmtree(d, ignore_errors=True)
        if why:
            return Trial("d", case, "crash", why)
        if refused(r):
            return Trial("d", case, "clean", brief(r))
        if r.rc == 0:
            if nonfinite and not r.lines:
                return Trial("d", case, "silent", "the saved model holds inf/NaN, no message")
            if nonfinite is None:
                return Trial("d", case, "other", "no readable model saved")
            if nonfinite and not re.search(r"line \d+", r.err):
                return Trial("d", case, "other", "the model holds inf/NaN; the message names no example: "
                             + brief(r))
            return Trial("d", case, "clean", brief(r) + ("" if not nonfinite else " (model non-finite)"))
        return Trial("d", case, "other", brief(r))

    # ---- (e) kill -9 during -f
    def kill_trials(self):
        d = self.path("kill")
        big = d / "big.vw"
        with open(big, "wb") as f:
            for i in range(1000):
                f.write(b"1 | " + b" ".join(b"%d" % (i * 1000 + j) for j in range(1000)) + b"\n")
        t0 = time.monotonic()
        r = self.run(["train", "-d", big, "-b", "20", "--quiet", "-f", d / "probe.model"], timeout=300)
        total = time.monotonic() - t0
        if r.rc != 0:
            self.notes.append(f"(e) the large save failed: {brief(r)}")
            return []
        size = (d / "probe.model").stat().st_size
        self.notes.append(f"(e) large model: {size / 1e6:.0f} MB, a whole run {total:.1f} s")
        return [lambda i=i: self._kill_one(i, big, total) for i in range(20 * self.n)]

    def _kill_one(self, i, big, total) -> Trial:
        d = self.path("k")
        target = d / "model"
        shutil.copy(self.tmp / "small.vw", d / "small.vw")
        r0 = self.run(["train", "-d", d / "small.vw", "--quiet", "-f", target])
        old = target.read_bytes() if r0.rc == 0 else None
        cmd = [self.args.python, "-m", "streamlearn", "train", "-d", big, "-b", "20", "--quiet", "-f", target]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=self.runner.env, cwd=self.tmp)
        rng = random.Random(self.args.seed * 1000 + i)
        when = "never"
        if i % 2 == 0:                          # a random moment of the run
            delay = rng.uniform(0.2, 1.05) * total
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                p.kill()
                when = f"at {delay:.2f} s"
        else:                                   # while the temporary file of the save exists
            end = time.monotonic() + total * 3
            while p.poll() is None and time.monotonic() < end:
                if any(q.name != "model" and q.name != "small.vw" for q in d.iterdir()):
                    time.sleep(rng.uniform(0, 0.02))
                    if p.poll() is None:
                        p.kill()
                        when = "during the save"
                    break
                time.sleep(0.002)
        p.wait()
        data = target.read_bytes() if target.exists() else None
        complete = data is not None and (data == old or read_model(data) is not None)
        # the next successful run to the same target
        r = self.run(["train", "-d", d / "small.vw", "--quiet", "-f", target])
        stray = sorted(q.name for q in d.iterdir() if q.name not in ("model", "small.vw"))
        stray_bytes = sum((d / q).stat().st_size for q in stray if (d / q).exists())
        shutil.rmtree(d, ignore_errors=True)
        case = f"kill -9 {when}"
        if data is not None and not complete:
            return Trial("e", case, "silent", f"partial model ({len(data)} bytes)")
        if r.rc != 0:
            return Trial("e", case, "other", "the next run failed: " + brief(r))
        if stray:
            return Trial("e", case, "silent", f"stray files after the next run: {len(stray)} "
                                              f"({stray_bytes / 1e6:.1f} MB)")
        return Trial("e", case, "clean", "model complete, nothing left over")

    # ---- (f) environment
    def env_trials(self):
        out = []
        d = self.path("env")
        full_model = d / "full.model"
        self.run(["train", "-d", self.full, "--quiet", "-f", full_model])
        if self.root:
            fullnode = d / "fullnode"
            os.mknod(fullnode, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
            out.append(lambda: self._env_full_stdout(["train", "-d", self.data, "--quiet", "--audit"], "--audit > full device"))
            out.append(lambda: self._env_full_stdout(["predict", "-i", full_model, "-d", self.data, "--quiet"],
                                                     "predict -p - > full device"))
        limit = 8000

        def fsize():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        for opt in ("-f", "--cache-file", "-p", "--readable-model", "--invert-hash", "--trace"):
            out.append(lambda opt=opt: self._env_out(f"{opt} over RLIMIT_FSIZE {limit}", opt, "file", preexec=fsize,
                                                     data=self.full))
        out.append(lambda: self._env_audit_fsize(fsize))
        for opt in ("-f", "--cache-file", "-p", "--readable-model", "--invert-hash", "--trace", "--plot"):
            out.append(lambda opt=opt: self._env_out(f"{opt} a directory", opt, "dir"))
            out.append(lambda opt=opt: self._env_out(f"{opt} in a missing directory", opt, "missing"))
        out.append(lambda: judge("f", "predict -i a directory",
                                 self.run(["predict", "-i", d, "-d", self.data, "--quiet"]), ok_success=False))
        out.append(lambda: judge("f", "predict -i a missing file",
                                 self.run(["predict", "-i", d / "nope", "-d", self.data, "--quiet"]), ok_success=False))
        out.append(lambda: judge("f", "train -d a missing file",
                                 self.run(["train", "-d", d / "nope.vw", "--quiet"]), ok_success=False))
        out.append(lambda: judge("f", "train -d a directory",
                                 self.run(["train", "-d", d, "--quiet"]), ok_success=False))
        out.append(lambda: self._env_epipe(["predict", "-i", full_model, "-d", self._many(), "--quiet", "-p", "-"],
                                           "predict -p - into a closed pipe"))
        out.append(lambda: self._env_epipe(["train", "-d", self._many(), "--quiet", "-p", "-"],
                                           "train -p - into a closed pipe"))
        out.append(lambda: self._env_epipe(["train", "-d", self._many(), "--quiet", "--audit"],
                                           "train --audit into a closed pipe"))
        out.append(lambda: self._env_fifo_model(full_model, feed=False))
        out.append(lambda: self._env_fifo_model(full_model, feed=True))
        out.append(lambda: self._env_fifo_data())
        if self.root:
            out.append(lambda: self._env_zero("-i"))
            if self._nobody_can_run():
                out.append(lambda: self._env_nobody(writable=True))
                out.append(lambda: self._env_nobody(writable=False))
            else:
                self.notes.append("(f) the other-user probes skipped: user nobody "
                                  f"cannot run {self.args.python}")
            if shutil.which("unshare") and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0:
                out.append(lambda: self._env_readonly(package=True))
                out.append(lambda: self._env_readonly(package=True, home=False))
                out.append(lambda: self._env_readonly(package=False))
            else:
                self.notes.append("(f) the read-only package probes skipped: no unshare -m")
        else:
            self.notes.append("(f) device, zero-device and other-user probes skipped: not root")
        return out

    _many_lock = threading.Lock()

    def _many(self) -> Path:
        with self._many_lock:
            p = self.tmp / "many.vw"
            if not p.exists():
                p.write_bytes(self.full.read_bytes() * 20)
            return p

    def _env_full_stdout(self, args, case) -> Trial:
        d = self.path("full")
        node = d / "full"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        with open(node, "wb") as fout:
            r = self.run(args, stdout=fout)
        return judge("f", case, r, ok_success=False, silent_why="write to a full device reported success")

    def _env_out(self, case, opt, kind, preexec=None, data=None) -> Trial:
        d = self.path("o")
        if kind == "dir":
            target = d / "adir.png"
            target.mkdir()
        elif kind == "missing":
            target = d / "missing" / "out.png"
        else:
            target = d / "out.png"
        args = ["train", "-d", data or self.data, "--quiet", opt, target]
        if opt == "--trace" and kind == "file":
            args += ["--trace-every", "1"]      # a row per example: past the file-size limit (the default is ~200 bytes)
        r = self.run(args, preexec=preexec)
        stray = [q.name for q in d.iterdir() if q.name not in ("adir.png", "out.png")]
        shutil.rmtree(d, ignore_errors=True)
        t = judge("f", case, r, ok_success=False, silent_why="the write failed but the run reported success")
        if t.outcome == "clean" and stray:
            t = Trial("f", case, "silent", f"stray files: {stray}")
        return t

    def _env_audit_fsize(self, fsize) -> Trial:
        d = self.path("afs")
        with open(d / "audit.txt", "wb") as fout:
            r = self.run(["train", "-d", self.full, "--quiet", "--audit"], stdout=fout, preexec=fsize)
        shutil.rmtree(d, ignore_errors=True)
        return judge("f", "--audit > file over RLIMIT_FSIZE", r, ok_success=False,
                     silent_why="the write failed but the run reported success")

    def _env_epipe(self, args, case) -> Trial:
        cmd = [self.args.python, "-m", "streamlearn", *map(str, args)]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=self.runner.env, start_new_session=True, cwd=self.tmp)
        p.stdout.read(100)
        p.stdout.close()
        try:
            err = p.stderr.read()
            p.wait(timeout=self.args.timeout)
            r = Result(p.returncode, b"", err.decode("utf-8", "replace"), False)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            r = Result(p.returncode, b"", "", True)
        if r.rc == -signal.SIGPIPE:         # the ordinary Unix end of a writer whose reader left
            return Trial("f", case, "clean", "ended by SIGPIPE")
        if r.rc == 1 and not r.lines:       # cli.py: "| head" -- the reader has what it wanted; end quietly
            return Trial("f", case, "clean", "ended quietly, exit 1")
        return judge("f", case, r, ok_success=True)

    def _env_fifo_model(self, model, feed: bool) -> Trial:
        d = self.path("fifo")
        fifo = d / "model.fifo"
        os.mkfifo(fifo)
        case = "predict -i FIFO " + ("fed a valid model" if feed else f"with no writer ({self.args.fifo_wait:g} s)")
        if feed:
            threading.Thread(target=_feed_fifo, args=(fifo, model.read_bytes(), self.args.timeout),
                             daemon=True).start()
        r = self.run(["predict", "-i", fifo, "-d", self.data, "-p", d / "p", "--quiet"],
                     timeout=self.args.timeout if feed else self.args.fifo_wait)
        _unblock_fifo(fifo)
        return judge("f", case, r, ok_success=feed)

    def _env_fifo_data(self) -> Trial:
        d = self.path("fifod")
        fifo = d / "data.fifo"
        os.mkfifo(fifo)
        threading.Thread(target=_feed_fifo, args=(fifo, self.data.read_bytes(), self.args.timeout),
                         daemon=True).start()
        r = self.run(["train", "-d", fifo, "-f", d / "m", "--quiet"])
        _unblock_fifo(fifo)
        return judge("f", "train -d FIFO fed data", r, ok_success=True)

    def _env_zero(self, opt) -> Trial:
        d = self.path("zero")
        node = d / "zero"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 5))

        def cap():      # never let an unbounded read take the machine's memory
            resource.setrlimit(resource.RLIMIT_DATA, (3 << 30, 3 << 30))
        r = self.run(["predict", "-i", node, "-d", self.data, "--quiet", "-p", d / "p"], preexec=cap, timeout=20)
        return judge("f", "predict -i a zero device", r, ok_success=False)

    def _env_readonly(self, package: bool, home: bool = True) -> Trial:
        """In a private mount namespace (unshare -m; nothing outside it changes): the package's
        directory read-only, so its __pycache__ and numba's cache cannot be written (a user who
        cannot write the install), or -f into a read-only directory (EROFS)."""
        home_ok = home
        d = self.path("ro")
        ro = d / "ro"
        ro.mkdir()
        home = d / "home"
        home.mkdir()
        pkg = Path(self.args.repo or ROOT) / "streamlearn"
        out = home / "m" if package else ro / "m"
        mounts = (f"mount --bind -o ro {pkg} {pkg} && " if package else "") + f"mount --bind -o ro {ro} {ro}"
        env = dict(self.runner.env, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
        if not home_ok:         # as user nobody: HOME=/nonexistent
            env = dict(self.runner.env, HOME=str(d / "nonexistent"))
            env.pop("XDG_CACHE_HOME", None)
        cmd = ["unshare", "-m", "sh", "-c", mounts + ' && exec "$@"', "sh", self.args.python, "-m", "streamlearn",
               "train", "-d", str(self.data), "--quiet", "-f", str(out)]
        r = self.run(cmd, raw=True, env=env, timeout=300)
        case = ("package directory read-only (numba cache not writable): train" if package
                else "-f in a read-only directory (EROFS)") + ("" if home_ok else ", HOME missing")
        return judge("f", case, r, ok_success=package)

    def _nobody_can_run(self) -> bool:
        try:
            return subprocess.run([self.args.python, "-c", "pass"], preexec_fn=_as_nobody,
                                  capture_output=True, cwd="/").returncode == 0
        except OSError:
            return False

    def _env_nobody(self, writable: bool) -> Trial:
        """A user who cannot write the package (its __pycache__ / numba cache): can they train?"""
        d = self.path("nobody")
        os.chmod(d, 0o777)
        home = d / "home"
        home.mkdir()
        os.chown(home, 65534, 65534)
        out = home / "m" if writable else self.tmp / "root-only" / "m"
        (self.tmp / "root-only").mkdir(exist_ok=True)
        os.chmod(self.tmp, 0o755)
        data = home / "data.vw"
        shutil.copy(self.data, data)
        os.chmod(data, 0o644)
        env = dict(self.runner.env, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))

        def drop():
            os.setgid(65534)
            os.setuid(65534)
        r = self.run(["train", "-d", data, "--quiet", "-f", out], env=env, preexec=drop, cwd=home, timeout=300)
        case = ("user nobody trains (package not writable)" if writable
                else "user nobody, -f in a directory it cannot write (EACCES)")
        return judge("f", case, r, ok_success=writable)

    # ---- (g) Python API
    def api_trials(self):
        return [self._api]

    def _api(self):
        results, start = [], 0
        names = None
        while True:
            r = self.run(["-c", API_SCRIPT, str(start)], module=False, timeout=600)
            got = [json.loads(ln) for ln in r.out.decode().splitlines() if ln.startswith("{")]
            if names is None:
                names = next((g["cases"] for g in got if "cases" in g), None)
            got = [g for g in got if "case" in g]
            for g in got:
                results.append(Trial("g", g["case"], g["outcome"], g["detail"]))
            done = start + len(got)
            if names is None or done >= len(names):
                if names is None:
                    self.notes.append(f"(g) the API script failed: {brief(r)}")
                return results
            # the process died in case ``done``
            why = crash_of(r) or brief(r)
            results.append(Trial("g", names[done], "crash", why))
            start = done + 1
            if start >= len(names):
                return results

    # ---- all
    def all(self, which):
        makers = {"a": self.cache_trials, "b": self.device_trials, "c": self.model_trials,
                  "d": self.overflow_trials, "e": self.kill_trials, "f": self.env_trials, "g": self.api_trials}
        jobs = []
        for p in which:
            jobs += [(p, j) for j in makers[p]()]
        trials = []
        with ThreadPoolExecutor(self.args.jobs) as ex:
            futs = [(p, ex.submit(j)) for p, j in jobs]
            for k, (p, f) in enumerate(futs):
                try:
                    res = f.result()
                except Exception as exc:     # a bug of this script: say so, do not count it
                    self.notes.append(f"({p}) probe error: {type(exc).__name__}: {exc}")
                    continue
                trials += res if isinstance(res, list) else [res]
                if self.args.verbose:
                    print(f"[{k + 1}/{len(futs)}] {trials[-1]}", file=sys.stderr, flush=True)
        return trials


def _as_nobody():
    os.setgid(65534)
    os.setuid(65534)


def _feed_fifo(fifo, data, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:         # no reader yet
            time.sleep(0.01)
            continue
        os.set_blocking(fd, True)
        try:
            os.write(fd, data)
        except OSError:
            pass
        finally:
            os.close(fd)
        return


def _unblock_fifo(fifo):
    """Open a FIFO for reading and writing without blocking, so a thread stuck opening it returns."""
    try:
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


# ---------------------------------------------------------------------- scripts run in the target

#: crafted caches: the alteration made to the first block's arrays before CacheWriter writes it
CRAFTS = ("idx = 2^b", "idx = 2^32-1", "indptr[n] past the features", "indptr[1] negative",
          "indptr decreasing", "val NaN", "val inf", "importance weight -1", "importance weight NaN")
# (not crafted: a NaN label is an unlabeled example; the writer recomputes tag offsets from the tags)

CRAFT_SCRIPT = r'''
import copy, sys
import numpy as np
from streamlearn.io import cache as C
kind, data, path, model = sys.argv[1:5]
orig = C.CacheWriter.write
done = []
def write(self, b):
    if not done:
        b = copy.copy(b)
        for name in ("labels", "weights", "indptr", "idx", "val", "tag_s", "tag_e"):
            setattr(b, name, np.array(getattr(b, name), copy=True))
        n, nf = b.n, b.idx.shape[0]
        if kind == "idx = 2^b": b.idx[0] = 1 << 18
        elif kind == "idx = 2^32-1": b.idx[-1] = 0xFFFFFFFF
        elif kind == "indptr[n] past the features": b.indptr[n] = nf + 10**6
        elif kind == "indptr[1] negative": b.indptr[1] = -7
        elif kind == "indptr decreasing": b.indptr[1] = b.indptr[2] + 5
        elif kind == "val NaN": b.val[0] = np.nan
        elif kind == "val inf": b.val[0] = np.inf
        elif kind == "importance weight -1": b.weights[0] = -1.0
        elif kind == "importance weight NaN": b.weights[0] = np.nan
        else: raise SystemExit("unknown craft " + kind)
        done.append(1)
    return orig(self, b)
C.CacheWriter.write = write
from streamlearn.cli import main
main(["train", "-d", data, "--quiet", "--cache-file", path, "-f", model])
'''

API_SCRIPT = r'''
import json, math, sys, warnings
import numpy as np
import scipy.sparse as sp
warnings.simplefilter("ignore")
from streamlearn.estimators import SparseLinearClassifier, SparseLinearRegressor

rng = np.random.default_rng(0)
def good(n=20, d=6):
    X = sp.random(n, d, density=0.5, format="csr", random_state=1, dtype=np.float64)
    y = np.where(np.arange(n) % 2, 1, -1)
    return X, y

def alter(fn):
    X, y = good()
    X = X.copy()
    fn(X)
    return X, y

def neg(X): X.indices[0] = -1
def past(X): X.indices[0] = X.shape[1]
def huge(X): X.indices[0] = 2**31 - 1
def nan(X): X.data[0] = np.nan
def inf(X): X.data[0] = np.inf
def dec(X): X.indptr[2], X.indptr[3] = X.indptr[3], X.indptr[2]
def last(X): X.indptr[-1] = X.indptr[-1] + 5
def unsorted(X):
    X.indices[:2] = X.indices[:2][::-1] if X.indptr[1] >= 2 else X.indices[:2]
    X.has_sorted_indices = False
def dup(X):
    if X.indptr[1] >= 2: X.indices[1] = X.indices[0]

cases = []
for est_name, Est in (("classifier", SparseLinearClassifier), ("regressor", SparseLinearRegressor)):
    def mk(Est=Est): return Est()
    for method in ("fit", "partial_fit", "predict"):
        for what, fn in (("negative column index", neg), ("column index = n_features", past),
                         ("column index 2^31-1", huge), ("NaN value", nan), ("inf value", inf),
                         ("indptr decreasing", dec), ("indptr[-1] past nnz", last)):
            cases.append((f"{est_name}.{method}: {what}", mk, method, fn, False))
    for what, fn in (("unsorted indices", unsorted), ("duplicate indices", dup)):
        cases.append((f"{est_name}.fit: {what} (valid)", mk, "fit", fn, True))
    cases.append((f"{est_name}.predict: wrong n_features", mk, "predict_shape", None, False))
    cases.append((f"{est_name}.fit: y NaN", mk, "y_nan", None, False))
    cases.append((f"{est_name}.fit: y length mismatch", mk, "y_len", None, False))
    cases.append((f"{est_name}.fit: sample_weight NaN", mk, "sw_nan", None, False))
    cases.append((f"{est_name}.fit: complex data", mk, "complex", None, False))
    cases.append((f"{est_name}.fit: 3-D array", mk, "3d", None, False))
    cases.append((f"{est_name}.fit: int8 data (valid)", mk, "int8", None, True))
print(json.dumps({"cases": [c[0] for c in cases]}), flush=True)

def run(mk, method, fn):
    est = mk()
    Xg, yg = good()
    if method == "fit":
        X, y = alter(fn); est.fit(X, y); return est.predict(Xg)
    if method == "partial_fit":
        X, y = alter(fn)
        kw = {"classes": np.array([-1, 1])} if isinstance(est, SparseLinearClassifier) else {}
        est.partial_fit(X, y, **kw); return est.predict(Xg)
    est.fit(Xg, yg)
    if method == "predict":
        X, _ = alter(fn); return est.predict(X)
    if method == "predict_shape":
        return est.predict(sp.random(5, 9, density=0.5, format="csr", random_state=2))
    if method == "y_nan":
        y = yg.astype(float); y[0] = np.nan; est.fit(Xg, y); return est.predict(Xg)
    if method == "y_len":
        est.fit(Xg, yg[:-1]); return est.predict(Xg)
    if method == "sw_nan":
        sw = np.ones(len(yg)); sw[0] = np.nan; est.fit(Xg, yg, sample_weight=sw); return est.predict(Xg)
    if method == "complex":
        est.fit(Xg.astype(np.complex128) * 1j, yg); return est.predict(Xg)
    if method == "3d":
        est.fit(np.zeros((20, 3, 2)), yg); return est.predict(Xg)
    if method == "int8":
        est.fit(sp.csr_matrix((Xg.toarray() * 10).astype(np.int8)), yg); return est.predict(Xg)
    raise AssertionError(method)

start = int(sys.argv[1])
for name, mk, method, fn, valid in cases[start:]:
    try:
        out = run(mk, method, fn)
        finite = bool(np.all(np.isfinite(np.asarray(out, dtype=float))))
        if valid:
            res = ("clean", "accepted") if finite else ("silent", "non-finite output")
        else:
            res = ("silent", "accepted" + ("" if finite else ", non-finite output"))
    except (ValueError, TypeError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else ""
        res = ("other", f"valid input refused: {type(exc).__name__}: {msg}") if valid else \
              ("clean", f"{type(exc).__name__}: {msg}"[:160])
    except Exception as exc:
        res = ("crash", f"{type(exc).__name__}: {str(exc)[:140]}")
    print(json.dumps({"case": name, "outcome": res[0], "detail": res[1]}), flush=True)
'''


# -------------------------------------------------------------------------------------- reporting

def table(trials, which) -> str:
    rows = ["| probe | tried | clean | crash | silent | other |", "|---|---:|---:|---:|---:|---:|"]
    tot = dict.fromkeys(OUTCOMES, 0)
    for p in which:
        ts = [t for t in trials if t.probe == p]
        c = {o: sum(t.outcome == o for t in ts) for o in OUTCOMES}
        for o in OUTCOMES:
            tot[o] += c[o]
        rows.append(f"| ({p}) {PROBES[p]} | {len(ts)} | {c['clean']} | {c['crash']} | {c['silent']} | {c['other']} |")
    rows.append(f"| **total** | {len(trials)} | {tot['clean']} | {tot['crash']} | {tot['silent']} | {tot['other']} |")
    return "\n".join(rows)


def details(trials, per_probe=12) -> str:
    out = []
    for p in PROBES:
        bad = [t for t in trials if t.probe == p and t.outcome != "clean"]
        if not bad:
            continue
        out.append(f"- ({p}) not clean ({len(bad)}):")
        seen = {}
        for t in bad:
            key = (t.outcome, re.sub(r"\d+", "N", t.detail))
            seen.setdefault(key, []).append(t.case)
        for (outcome, _), cases in list(seen.items())[:per_probe]:
            t = next(t for t in bad if t.case == cases[0])
            others = "; ".join(cases[1:9]) + ("; ..." if len(cases) > 9 else "")
            more = f" (+{len(cases) - 1} alike: {others})" if len(cases) > 1 else ""
            out.append(f"  - {outcome}: {cases[0]}{more}: {t.detail[:220]}")
    return "\n".join(out)


def arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--repo", help="checkout to probe (put first on PYTHONPATH); default: the installed package")
    ap.add_argument("--python", default=sys.executable, help="the interpreter with streamlearn's dependencies")
    ap.add_argument("--probes", default="abcdefg", help="which probes (letters a-g)")
    ap.add_argument("--trials", type=int, default=1, help="scale of the random probes (1: default sizes)")
    shared(ap, "seed", default=24)
    shared(ap, "jobs")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a run counts as a hang")
    ap.add_argument("--fifo-wait", type=float, default=15.0,
                    help="seconds before predict -i FIFO-without-a-writer counts as a hang (the model reader "
                         "gives up after its FIFO_WAIT, 10 s)")
    ap.add_argument("--label", default=None, help="the run's name in the report (default: the repo's commit)")
    shared(ap, "out", help="also write the table into this markdown file's section "
                                  "'Trust probes (issue 24): LABEL'")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("-v", "--verbose", action="store_true")


def run(args: argparse.Namespace, ctx: Context):
    repo = Path(args.repo).resolve() if args.repo else ROOT
    if args.repo:
        args.repo = str(repo)
    label = args.label
    if label is None:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "?"
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        label = f"commit {commit}" + (" + uncommitted changes" if dirty else "")
    probe = Probe(args)
    t0 = time.monotonic()
    try:
        probe.warm()
        trials = probe.all([p for p in args.probes if p in PROBES])
    finally:
        if not args.keep:
            shutil.rmtree(probe.tmp, ignore_errors=True)
    took = time.monotonic() - t0
    which = [p for p in args.probes if p in PROBES]
    body = (f"`python -m bench run probe_trust{' --repo ' + args.repo if args.repo else ''} --seed {args.seed} "
            f"--trials {args.trials}` on {label}, {took / 60:.1f} min, {'root' if probe.root else 'not root'}.\n\n"
            + table(trials, which) + "\n\n" + details(trials)
            + ("\n" + "\n".join(f"- note: {n}" for n in probe.notes) if probe.notes else "") + "\n")
    print(body)
    if args.out:
        write_titled_section(Path(args.out), f"Trust probes (issue 24): {label}", body)
    bad = sum(t.outcome in ("crash", "silent") for t in trials)
    return 1 if bad else 0


CASE = Case("probe_trust", arguments, run, __doc__)
