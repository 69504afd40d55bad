"""Soak test (issue 24, "Soak"): stream 10^8 generated examples through ``streamlearn train`` on stdin
and record the train process's memory every 10^7 examples; memory must stay flat (the last reading
within 2% of the first).

A buffer of 10^5 varied VW lines (labels, importance weights, tags, two namespaces, names drawn
from a vocabulary of 10^6, values) is made once and written to the process's stdin again and again;
nothing is stored on disk. At every checkpoint the script reads ``VmRSS`` and ``VmHWM`` (peak RSS)
from /proc/PID/status of the train process (the examples written so far less the pipe's and the
reader's few buffered blocks have been read).

    python -m bench run soak                        # 10^8 examples
    python -m bench run soak --examples 10000000 --every 1000000
    python -m bench run soak --out bench/RESULTS.md

Exit status 1 when the last RSS is more than 2% above the first (or the run fails).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.harness import Case, Context, shared, write_titled_section


def make_buffer(lines: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    vocab = 10 ** 6
    out = []
    labels = rng.choice([-1, 1], lines)
    nfeat = rng.integers(3, 25, lines)
    for i in range(lines):
        a = rng.integers(0, vocab, nfeat[i])
        vals = rng.uniform(-2, 2, nfeat[i] // 3 + 1)
        parts = [f"{labels[i]}"]
        if i % 7 == 0:
            parts.append(f" {rng.uniform(0.5, 2):.2f}")
        if i % 5 == 0:
            parts.append(f" 'ex{i}")
        parts.append(" |a " + " ".join(f"w{x}" for x in a))
        parts.append(" |b " + " ".join(f"v{j}:{v:.3f}" for j, v in enumerate(vals)))
        out.append("".join(parts) + "\n")
    return "".join(out).encode()


def memory(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process, in MiB."""
    rss = hwm = float("nan")
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return rss, hwm


def arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--examples", type=int, default=10 ** 8)
    ap.add_argument("--every", type=int, default=10 ** 7, help="examples between two memory readings")
    shared(ap, "lines", default=10 ** 5, help="lines of the repeated buffer")
    shared(ap, "seed", default=0)
    ap.add_argument("--streamlearn", default=str(Path(sys.executable).with_name("streamlearn")),
                    help="the console script to run")
    ap.add_argument("--tolerance", type=float, default=0.02)
    shared(ap, "out", help="also write the table into this markdown file's 'Soak (issue 24)' section")
    ap.add_argument("train_args", nargs="*", help="extra options for train (after --)")


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.every % args.lines:
        ctx.error("--every must be a multiple of --lines")
    buf = make_buffer(args.lines, args.seed)
    cmd = [args.streamlearn, "train", "--quiet", *args.train_args]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    rows = []
    written = 0
    try:
        while written < args.examples:
            n = min(args.lines, args.examples - written)
            p.stdin.write(buf if n == args.lines else b"".join(buf.splitlines(keepends=True)[:n]))
            written += n
            if written % args.every == 0:
                rss, hwm = memory(p.pid)
                el = time.monotonic() - t0
                rows.append((written, rss, hwm, el))
                print(f"{written:>12,d} examples  RSS {rss:8.1f} MiB  peak {hwm:8.1f} MiB  {el:7.1f} s  "
                      f"{written / el / 1e6:.2f} M/s", flush=True)
        p.stdin.close()
    except BrokenPipeError:
        pass
    err = p.stderr.read().decode(errors="replace")
    rc = p.wait()
    took = time.monotonic() - t0
    if rc != 0:
        print(f"train failed (exit {rc}): {err.strip()[:500]}", file=sys.stderr)
        return 1
    if not rows:
        print("no checkpoint reached", file=sys.stderr)
        return 1
    first, last = rows[0][1], rows[-1][1]
    growth = (last - first) / first
    ok = growth <= args.tolerance
    table = ["| examples | RSS (MiB) | peak RSS (MiB) | elapsed (s) |", "|---:|---:|---:|---:|"]
    table += [f"| {w:,d} | {r:.1f} | {h:.1f} | {e:.0f} |" for w, r, h, e in rows]
    verdict = (f"last RSS {last:.1f} MiB vs first {first:.1f} MiB: {100 * growth:+.2f}% "
               f"({'flat' if ok else 'GROWS'}; limit +{100 * args.tolerance:.0f}%); peak {rows[-1][2]:.1f} MiB; "
               f"{args.examples:,d} examples in {took:.0f} s ({args.examples / took / 1e6:.2f} M examples/s)")
    print("\n".join(table))
    print(verdict)
    if args.out:
        body = (f"`python -m bench run soak --examples {args.examples} --every {args.every}"
                f"{' -- ' + ' '.join(args.train_args) if args.train_args else ''}`: a generator writes a buffer "
                f"of {args.lines:,d} varied VW lines (2 namespaces, 3-25 names from a vocabulary of 10^6, weights, "
                f"tags) again and again to `streamlearn train --quiet` on stdin; the train process's VmRSS and "
                f"VmHWM from /proc at every checkpoint. {os.cpu_count()} cores.\n\n"
                + "\n".join(table) + "\n\n" + verdict + "\n")
        write_titled_section(Path(args.out), "Soak (issue 24)", body)
    return 0 if ok else 1


CASE = Case("soak", arguments, run, __doc__)
