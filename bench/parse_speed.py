"""Single-thread speed of the compiled VW text parser alone (issue 30).

Times ``streamlearn.io.blocks.parse_block`` over line-aligned blocks of ``DEFAULT_BLOCK_SIZE`` bytes
held in memory (no file reading, no threads, no learner), reusing one ``Outputs`` as ``train`` does,
warm kernels, best of R rounds, on two streams:

* ``bench``: the project's benchmark stream (``python -m streamlearn.datasets bench FILE --lines N
  --seed 1``): short lines, 4 namespaces, mostly unit values;
* ``wide``: generated here, other statistics: label, importance and tag, 6 namespaces (two with a
  namespace value), ~60 features a line, longer names, numeric names, values of several shapes
  (integers, decimals, exponents, negatives).

With ``--profile`` it also times variants that do part of the work over the same bytes (``scan``:
find the bars and walk the names and values; ``scan+hash``: also murmur every name; ``scan+num``:
scan and parse every value; ``stop positions``: a branch-free pass recording where names end) so
that the breakdown of the full parse can be read off.

With ``--cpu`` the rounds are timed by the thread's CPU time (``time.thread_time``) rather than the wall
clock: on a shared machine the wall clock also counts the time other processes hold the core.

Usage: ``python bench/parse_speed.py [--lines N] [--rounds R] [--profile] [--cpu] [--label TEXT]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit


def wide_stream(lines: int, seed: int = 2) -> bytes:
    """A stream with other statistics than ``bench``'s (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(lines):
        parts = [f"{rng.integers(-1, 2) or 1} {rng.integers(1, 4)} 'ex{i}"]
        parts.append("|user age:" + str(int(rng.integers(18, 90))) + " country_" + str(int(rng.integers(0, 200)))
                     + " device_" + ("mobile" if rng.random() < 0.5 else "desktop"))
        words = rng.zipf(1.3, size=int(rng.integers(15, 40))) % 200000
        parts.append("|text " + " ".join(f"token{w}" for w in words))
        ids = rng.integers(0, 10**7, size=8)
        parts.append("|ids " + " ".join(str(x) for x in ids))
        vals = rng.normal(size=6)
        parts.append("|dense:0.5 " + " ".join(f"f{j}:{v:.6f}" for j, v in enumerate(vals)))
        parts.append("|exp " + " ".join(f"e{j}:{v:.3e}" for j, v in enumerate(rng.exponential(size=3))))
        parts.append("|c:2 a" + str(int(rng.integers(0, 30))) + " b" + str(int(rng.integers(0, 30))))
        out.append(" ".join(parts))
    return ("\n".join(out) + "\n").encode()


def bench_stream(lines: int, seed: int = 1) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.vw"
        subprocess.run([sys.executable, "-m", "streamlearn.datasets", "bench", str(path), "--lines", str(lines),
                        "--seed", str(seed)], check=True)
        return path.read_bytes()


def blocks_of(data: bytes, block_size: int):
    """Line-aligned blocks (uint8 array, line ends) as the reader cuts them."""
    from streamlearn.io.blocks import line_ends
    buf = np.frombuffer(data, dtype=np.uint8)
    out, s = [], 0
    while s < buf.size:
        e = min(s + block_size, buf.size)
        if e < buf.size:
            nl = data.rfind(b"\n", s, e)
            e = nl + 1 if nl >= s else data.find(b"\n", e) + 1 or buf.size
        b = buf[s:e].copy()
        out.append((b, line_ends(b)))
        s = e
    return out


# ----------------------------------------------------------------------------- partial-work variants

def make_variants():
    from streamlearn.features.hashing import NAME_STOP as _NAME_STOP, scan_hash
    from streamlearn.io.parsing import line_span, parse_number

    @njit(nogil=True)
    def variant(buf, ends, do_hash, do_num):
        acc = np.int64(0)
        vacc = 0.0
        for li in range(ends.size):
            ls, e = line_span(buf, ends, li)
            p = ls
            while p < e and buf[p] != 124:
                p += 1
            while p < e:
                c = buf[p]
                if c == 124 or c == 32 or c == 9:
                    p += 1
                    continue
                q = p
                if do_hash:
                    q, h = scan_hash(buf, p, e, 0, 0, False)
                    acc += h
                else:
                    while q < e and not _NAME_STOP[buf[q]]:
                        q += 1
                if q < e and buf[q] == 58:
                    if do_num:
                        v, r, kind, _ = parse_number(buf, q + 1, e)
                        vacc += v
                        q = r if r > q + 1 else q + 1
                    else:
                        q += 1
                        while q < e and not _NAME_STOP[buf[q]]:
                            q += 1
                p = max(q, p + 1)
        return acc, vacc

    @njit(nogil=True)
    def stops(buf, ends, pos):
        """Branch-free pass: the position of every byte that ends a name, per line (the lower bound
        of a scan without a mispredicted loop exit per token)."""
        total = 0
        for li in range(ends.size):
            ls, e = line_span(buf, ends, li)
            n = 0
            for p in range(ls, e):
                pos[n] = p
                n += _NAME_STOP[buf[p]]
            total += n
        return total
    return variant, stops


def time_best(fn, rounds: int, clock=time.perf_counter) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--cpu", action="store_true",
                    help="time the thread's CPU time instead of the wall clock (steadier on a busy machine)")
    args = ap.parse_args(argv)

    from streamlearn.io.blocks import FMT_VW, Outputs, parse_block
    from streamlearn.io.reader import DEFAULT_BLOCK_SIZE

    mask = (1 << 20) - 1
    streams = {"bench": bench_stream(args.lines), "wide": wide_stream(args.lines)}
    variant, stops = make_variants() if args.profile else (None, None)
    what = "best CPU (s)" if args.cpu else "best (s)"
    print(f"| stream{args.label and ' (' + args.label + ')'} | MB | lines | work | {what} | MB/s | lines/s |")
    print("|---|---|---|---|---|---|---|")
    for name, data in streams.items():
        blocks = blocks_of(data, DEFAULT_BLOCK_SIZE)
        out = Outputs()
        mb = len(data) / 1e6
        nlines = sum(e.size for _, e in blocks)

        def parse():
            for b, e in blocks:
                parse_block(name, b, 1, FMT_VW, mask, False, 0, 0, ends=e, out=out)

        works = [("parse_block", parse)]
        if variant is not None:
            for label, h, n in (("scan", False, False), ("scan+hash", True, False), ("scan+num", False, True),
                                ("scan+hash+num", True, True)):
                works.append((label, lambda h=h, n=n: [variant(b, e, h, n) for b, e in blocks]))
            pos = np.empty(1 << 20, np.int64)
            works.append(("stop positions (branch-free)", lambda: [stops(b, e, pos) for b, e in blocks]))
        for label, fn in works:
            t = time_best(fn, args.rounds, time.thread_time if args.cpu else time.perf_counter)
            print(f"| {name} | {mb:.1f} | {nlines} | {label} | {t:.4f} | {mb / t:.0f} | {nlines / t:,.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
