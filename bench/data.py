"""The data cache of the benchmarks: files in ``bench/data/`` (git-ignored), each generated or derived
file with a ``.meta.json`` stamp next to it, so that a stale or partial file is rebuilt and a good one
reused.

* The benchmark stream (``ensure_data``: ``python -m streamlearn.datasets bench``), its heads
  (``ensure_head``, ``core_head``) and its 20-class relabelling (``ensure_throughput_data``).
* The real text datasets of ``../shared/data/real`` without tags and shuffled (``Dataset``,
  ``DATASETS``, ``prepare_train``, ``prepare_test``): the frontier protocol, also used by the Dask case.
* ``parse_blocks``: a file parsed into blocks held in memory (the kernel-only timings).

Paths are relative to the repository root (children run with cwd=REPO) unless said otherwise.
"""

from __future__ import annotations

import json
import lzma
import os
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.harness import REPO, say

DATA_DIR = Path("bench/data")
DATA_ROOT = REPO.parent / "shared" / "data" / "real"
DEFAULT_LINES = 2_000_000
DEFAULT_SEED = 20261122  # the default of `python -m streamlearn.datasets bench`
STARTUP_LINES = 10  # bench-10.vw: the head that start-up and warm-up runs read
MIB = 2**20
BLOCK = 4 * MIB


# --------------------------------------------------------------------------- stamps


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def read_meta(path: Path) -> dict | None:
    try:
        return json.loads((REPO / meta_path(path)).read_text())
    except (OSError, ValueError):
        return None


def write_meta(path: Path, meta: dict) -> None:
    target = REPO / meta_path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, target)


def file_size(path: Path) -> int | None:
    try:
        return (REPO / path).stat().st_size
    except OSError:
        return None


def fresh(path: Path, want: dict) -> dict | None:
    """The stamp of ``path`` when it has every item of ``want`` and the file's size, else None."""
    meta = read_meta(path)
    size = file_size(path)
    if meta and size is not None and all(meta.get(k) == v for k, v in want.items()) and meta.get("size") == size:
        return meta
    return None


def count_lines(path: Path) -> int:
    n = 0
    last = b"\n"
    with open(REPO / path, "rb") as f:
        while block := f.read(BLOCK):
            n += block.count(b"\n")
            last = block[-1:]
    return n if last == b"\n" else n + 1


def read_through(path: Path) -> None:
    """Read the file once so that every timed run finds it in the page cache."""
    with open(REPO / path, "rb") as f:
        while f.read(BLOCK):
            pass


# --------------------------------------------------------------------------- the benchmark stream


def data_name(lines: int, seed: int) -> str:
    """bench-2m.vw for 2,000,000 lines, bench-50k.vw for 50,000, bench-12345.vw otherwise.

    A seed other than the default adds -s<seed>: bench-2m-s7.vw.
    """
    if lines % 1_000_000 == 0:
        size = f"{lines // 1_000_000}m"
    elif lines % 1_000 == 0:
        size = f"{lines // 1_000}k"
    else:
        size = str(lines)
    suffix = "" if seed == DEFAULT_SEED else f"-s{seed}"
    return f"bench-{size}{suffix}.vw"


def ensure_data(lines: int, seed: int) -> tuple[Path, dict]:
    """The benchmark stream for (lines, seed): reused when its stamp matches, else (re)generated."""
    path = DATA_DIR / data_name(lines, seed)
    want = {"kind": "bench-stream", "lines": lines, "seed": seed}
    meta = fresh(path, want)
    if meta:
        return path, meta
    size = file_size(path)
    if read_meta(path) is None and size is not None and seed == DEFAULT_SEED and count_lines(path) == lines:
        # A file built with the generator's defaults before stamps existed: adopt it.
        meta = {**want, "size": size, "adopted": True}
        write_meta(path, meta)
        return path, meta
    (REPO / DATA_DIR).mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "streamlearn.datasets", "bench", str(path),
           "--lines", str(lines), "--seed", str(seed)]
    say(f"generating {path} ({lines:,} lines) ...")
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    meta = {**want, "size": file_size(path)}
    write_meta(path, meta)
    return path, meta


def copy_head(src: Path, dst: Path, lines: int) -> None:
    """Write the first `lines` lines of src to dst (atomically)."""
    tmp = REPO / dst.with_name(dst.name + ".part")
    left = lines
    with open(REPO / src, "rb") as fin, open(tmp, "wb") as fout:
        while left > 0 and (block := fin.read(BLOCK)):
            n = block.count(b"\n")
            if n < left:
                fout.write(block)
                left -= n
                continue
            end = -1
            for _ in range(left):
                end = block.index(b"\n", end + 1)
            fout.write(block[: end + 1])
            left = 0
    if left > 0:
        tmp.unlink()
        raise RuntimeError(f"{src} has fewer than {lines} lines")
    os.replace(tmp, REPO / dst)


def ensure_head(src: Path, src_meta: dict, dst: Path, lines: int) -> Path:
    """dst = first `lines` lines of src; reused when its stamp names the same source and size."""
    want = {"kind": "head", "lines": lines,
            "source": {k: src_meta[k] for k in ("lines", "seed", "size")}}
    if fresh(dst, want):
        return dst
    say(f"writing {dst} (first {lines:,} lines of {src}) ...")
    copy_head(src, dst, lines)
    write_meta(dst, {**want, "size": file_size(dst)})
    return dst


def core_head(lines: int) -> Path:
    """The core benchmark file (2,000,000 lines), or its first ``lines`` lines (``profile-N.vw``)."""
    src, meta = ensure_data(DEFAULT_LINES, DEFAULT_SEED)
    return src if lines >= DEFAULT_LINES else ensure_head(src, meta, src.with_name(f"profile-{lines}.vw"), lines)


# --------------------------------------------------------------------------- the 20-class stream

MULTICLASS_DIR = Path("bench/data/multiclass")
MULTICLASS_PREP_VERSION = 1  # bump when the preparation of the data files changes
TP_CLASSES = 20


def mc_label(i: int) -> int:
    """Class 1..TP_CLASSES of 0-based line i: a deterministic 64-bit mix (splitmix64's finalizer)."""
    z = (i + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) % TP_CLASSES + 1


def ensure_throughput_data(lines: int) -> tuple[Path, dict]:
    """The benchmark stream of `lines` lines with its labels replaced by mc_label(line number)."""
    src, src_meta = ensure_data(lines, DEFAULT_SEED)
    dst = MULTICLASS_DIR / src.name.replace(".vw", f".oaa{TP_CLASSES}.vw")
    want = {"kind": "multiclass-stream", "version": MULTICLASS_PREP_VERSION, "classes": TP_CLASSES,
            "source": str(src), "source_meta": {k: src_meta.get(k) for k in ("lines", "seed", "size")}}
    meta = fresh(dst, want)
    if meta:
        return dst, meta
    say(f"writing {dst} ({lines:,} lines of {src}, labels 1..{TP_CLASSES} from a hash of the line number) ...")
    (REPO / MULTICLASS_DIR).mkdir(parents=True, exist_ok=True)
    tmp = REPO / dst.with_name(dst.name + ".part")
    counts = Counter()
    i = 0
    with open(REPO / src, "rb") as fin, open(tmp, "wb") as fout:
        buf = []
        for line in fin:
            _, sep, rest = line.partition(b" |")
            if not sep:
                raise ValueError(f"{src}: line {i + 1} has no ' |'")
            c = mc_label(i)
            counts[c] += 1
            buf.append(b"%d |%s" % (c, rest))
            i += 1
            if len(buf) >= 100_000:
                fout.write(b"".join(buf))
                buf.clear()
        fout.write(b"".join(buf))
    os.replace(tmp, REPO / dst)
    meta = {**want, "lines": i, "size": file_size(dst), "class_counts": [counts[c + 1] for c in range(TP_CLASSES)]}
    write_meta(dst, meta)
    return dst, meta


# --------------------------------------------------------------------------- a stream with other statistics

WIDE_VERSION = 1  # bump when the generator (bench.parse_speed.wide_stream) changes


def ensure_wide(lines: int, multiclass: bool = False) -> Path:
    """``bench/data/wide-N.vw``: ``bench.parse_speed.wide_stream`` (issue 30's second stream: labels with
    importance and tag, 6 namespaces, ~60 features a line of varied names and values, ~480 B a line);
    with ``multiclass`` its labels replaced by ``mc_label(line number)`` (``wide-N.oaa20.vw``)."""
    from bench.parse_speed import wide_stream

    name = data_name(lines, DEFAULT_SEED).replace("bench-", "wide-")
    if multiclass:
        name = name.replace(".vw", f".oaa{TP_CLASSES}.vw")
    dst = DATA_DIR / name
    want = {"kind": "wide-stream", "version": WIDE_VERSION, "lines": lines, "multiclass": multiclass}
    if fresh(dst, want):
        return dst
    say(f"generating {dst} ({lines:,} lines) ...")
    (REPO / DATA_DIR).mkdir(parents=True, exist_ok=True)
    tmp = REPO / dst.with_name(dst.name + ".part")
    with open(tmp, "wb") as out:
        step = 100_000
        for first in range(0, lines, step):
            chunk = wide_stream(min(step, lines - first), seed=2 + first)
            if multiclass:     # the first token (the label) replaced; importance and tag kept
                rows = chunk.split(b"\n")[:-1]
                chunk = b"".join(b"%d %s\n" % (mc_label(first + i), r.split(b" ", 1)[1]) for i, r in enumerate(rows))
            out.write(chunk)
    os.replace(tmp, REPO / dst)
    write_meta(dst, {**want, "size": file_size(dst)})
    return dst


# --------------------------------------------------------------------------- the real text datasets

PREP_DIR = Path("bench/data/frontier")
PREP_VERSION = 1  # bump when the preparation of the data files changes
SHUFFLE_SEED = 20261122


@dataclass(frozen=True)
class Dataset:
    key: str
    title: str
    task: str
    train: str  # relative to the data root
    test: str


#: the binary tasks (frontier, Dask)
DATASETS = (
    Dataset("news20", "20 Newsgroups", "comp.* (+1) vs the other groups (-1)",
            "news20/news20.train.vw.xz", "news20/news20.test.vw.xz"),
    Dataset("imdb", "IMDB", "positive (+1) vs negative (-1) review",
            "imdb/imdb.train.vw.xz", "imdb/imdb.test.vw.xz"),
    Dataset("reuters", "Reuters-21578 ModApte", "'earn' (+1) vs the other topics (-1)",
            "reuters21578/reuters21578.modapte.train.vw.xz", "reuters21578/reuters21578.modapte.test.vw.xz"),
)


@dataclass
class Prepared:
    path: Path  # relative to REPO
    meta: dict


def strip_tag(line: bytes) -> bytes:
    """``label [importance] 'tag|ns ...`` -> ``label [importance] |ns ...``: keep the leading numbers of
    the head (everything before the first '|'), drop the rest of it (the tag)."""
    head, bar, rest = line.partition(b"|")
    if not bar:
        raise ValueError(f"no '|' in line: {line[:80]!r}")
    numbers = []
    for token in head.split():
        try:
            float(token)
        except ValueError:
            break
        numbers.append(token)
    if not numbers:
        raise ValueError(f"no label in line: {line[:80]!r}")
    return b" ".join(numbers) + b" |" + rest


def read_stripped(source: Path) -> list[bytes]:
    with lzma.open(source, "rb") as f:
        return [strip_tag(line.rstrip(b"\n")) + b"\n" for line in f if line.strip()]


def positives(lines: list[bytes]) -> int:
    return sum(float(line.split(None, 1)[0]) > 0 for line in lines)


def prepare(source: Path, dst: Path, seed: int | None) -> Prepared:
    """dst = source without tags (shuffled with ``seed`` unless None); reused when its stamp matches."""
    st = source.stat()
    want = {"kind": "frontier-data", "version": PREP_VERSION, "source": str(source),
            "source_size": st.st_size, "source_mtime": int(st.st_mtime), "shuffle_seed": seed}
    meta = fresh(dst, want)
    if meta:
        return Prepared(dst, meta)
    say(f"writing {dst} from {source}" + (f" (shuffled, seed {seed})" if seed is not None else "") + " ...")
    lines = read_stripped(source)
    if seed is not None:
        random.Random(seed).shuffle(lines)
    (REPO / dst.parent).mkdir(parents=True, exist_ok=True)
    tmp = REPO / dst.with_name(dst.name + ".part")
    tmp.write_bytes(b"".join(lines))
    os.replace(tmp, REPO / dst)
    meta = {**want, "lines": len(lines), "positives": positives(lines), "size": file_size(dst)}
    write_meta(dst, meta)
    return Prepared(dst, meta)


def prepare_train(root: Path, ds: Dataset, seed: int) -> Prepared:
    name = f"{ds.key}.train.vw" if seed == SHUFFLE_SEED else f"{ds.key}.train.seed{seed}.vw"
    return prepare(root / ds.train, PREP_DIR / name, seed)


def prepare_test(root: Path, ds: Dataset) -> Prepared:
    return prepare(root / ds.test, PREP_DIR / f"{ds.key}.test.vw", None)


# --------------------------------------------------------------------------- parsed blocks


def parse_blocks(path: Path, cfg):
    """(the parsed blocks, kept as copies, and the time to parse them). The parser fills a ring of
    reusable arrays (a block is valid until the next is asked for), so each block is copied; the
    copies are not timed."""
    import numpy as np

    from streamlearn.run.stream import hashing_of, text_blocks
    blocks = []
    took = 0.0
    it = text_blocks((str(path),), cfg.format, hashing_of(cfg), cfg.block_size)
    while True:
        t0 = time.perf_counter()
        b = next(it, None)
        took += time.perf_counter() - t0
        if b is None:
            return blocks, took
        blocks.append(tuple(np.array(a) for a in (b.indptr[:b.n + 1], b.idx[:b.indptr[b.n]], b.val[:b.indptr[b.n]],
                                                  b.labels[:b.n], b.weights[:b.n], b.bases[:b.n],
                                                  b.feature_counts()[:b.n])))
