"""Issue 30: what ``--threads`` buys on this machine, and a model of how it extends to more cores.

For each stream (``bench`` and ``wide``, as in ``bench.cases.vs_vw``) and case (``--sgd`` and the default
rule, both with ``--l1``, ``-b 20``, logistic loss), in one process:

* P: the parse alone, one thread (``bench.data.parse_blocks``: the blocks the learner would get, timed
  as the consumer asks for them, nothing else running);
* L: the learner alone over the parsed blocks (``bench.cases.profile_core.learn_time``), fastest of R;
* S: the CLI's start-up and finish (the CLI on the first 10 lines), fastest of R;
* the CLI end to end with ``--onethread`` (parse on the learner's thread) and ``--threads 1, 2, 3``,
  alternating the four in each of R rounds; fastest and median wall time.

The model: the learner is one thread, the parsers are N threads and the reading and hand-over are one
more (the dispatcher, ``streamlearn.run.stream``). With c cores, N = c - 1 parse threads (the default) and
no contention, the run takes about S + max(L, P / N); it can never go below S + L, the learner alone.
On 2 cores, N parsers and the learner share two cores: at best S + max(L, (P + L) / 2). The table
gives the model's figures for 2, 4, 8 and 16 cores beside the measured 2-core ones.

Usage: ``python -m bench run threads [--lines N] [--wide-lines N] [--runs R] [--out bench/RESULTS.md]``
(with ``--out`` the tables go between ``<!-- bench_threads:start -->`` and ``<!-- bench_threads:end -->``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics

from bench.cases.profile_core import learn_time
from bench.cases.vs_vw import stream_file
from bench.data import copy_head, parse_blocks, read_through
from bench.harness import REPO, Case, Context, Section, machine_facts, say, shared
from bench.timing import run_once, streamlearn_base

SECTION = Section("bench_threads")

#: case -> (train_config options, CLI options); both with -b 20, logistic loss
CASES = {
    "--sgd --l1": ({"algo": "tg", "sgd": True, "l1": 1e-7}, ["--algo", "tg", "--sgd", "--l1", "1e-7"]),
    "default rule --l1": ({"algo": "tg", "l1": 1e-7}, ["--algo", "tg", "--l1", "1e-7"]),
}
MODES = {"--onethread": ["--onethread"], "--threads 1": ["--threads", "1"], "--threads 2": ["--threads", "2"],
         "--threads 3": ["--threads", "3"]}
CORES = (2, 4, 8, 16)


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=1_000_000)
    ap.add_argument("--wide-lines", type=int, default=500_000, help="lines of the wide stream")
    shared(ap, "runs", default=5)
    shared(ap, "out")


def model(S: float, P: float, L: float, cores: int) -> float:
    """The modelled wall time on ``cores`` cores with cores - 1 parse threads (see the docstring)."""
    if cores == 2:      # one parser and the learner, or more parsers sharing the two cores with it
        return S + max(L, min(P, (P + L) / 2))
    return S + max(L, P / (cores - 1))


def run(args: argparse.Namespace, ctx: Context) -> None:
    from streamlearn.config import train_config

    facts = machine_facts()
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = []
    for stream in ("bench", "wide"):
        lines = args.wide_lines if stream == "wide" else args.lines
        path = stream_file(stream, lines, False)
        small = REPO / path.with_name(path.stem + "-head10.vw")
        if not small.exists():
            copy_head(path, small, 10)
        read_through(path)
        mb = (REPO / path).stat().st_size / 1e6
        measured, modelled, cmds = [], [], []
        for name, (opts, cli_opts) in CASES.items():
            cfg = train_config({"sources": (str(path),), "bits": 20, "loss": "logistic", **opts})
            learn_time(cfg, parse_blocks(small, cfg)[0])       # warm: compiled kernels loaded, not timed
            blocks, P = parse_blocks(path, cfg)
            L = min(learn_time(cfg, blocks) for _ in range(args.runs))
            del blocks
            base = streamlearn_base() + ["train", "-b", "20", "--loss", "logistic", "--quiet", *cli_opts]
            S = min(run_once(base + ["-d", str(small)]).wall for _ in range(args.runs))
            walls = {m: [] for m in MODES}
            for m, extra in MODES.items():      # warm-up
                run_once(base + ["-d", str(path), *extra])
            for i in range(args.runs):
                order = list(MODES) if i % 2 == 0 else list(reversed(MODES))
                for m in order:
                    walls[m].append(run_once(base + ["-d", str(path), *MODES[m]]).wall)
                say(f"  {stream} {name} round {i + 1}: " + ", ".join(f"{m} {walls[m][-1]:.2f}" for m in MODES))
            cmds.append(f"- {name}: `{' '.join(base + ['-d', str(path)])} [--onethread | --threads N]`")
            measured.append(f"| {name} | {P:.2f} ({mb / P:.0f} MB/s) | {L:.2f} | {S:.2f} | "
                            + " | ".join(f"{min(w):.2f} / {statistics.median(w):.2f}" for w in walls.values()) + " |")
            modelled.append(f"| {name} | " + " | ".join(f"{model(S, P, L, c):.2f}" for c in CORES)
                            + f" | {S + L:.2f} | {(S + P + L) / (S + L):.2f}x |")
            say(measured[-1])
        out += [f"### Stream `{stream}`, {lines:,} lines ({mb:.0f} MB)", "",
                "| case | P: parse alone, 1 thread (s) | L: learn alone (s) | S: start-up (s) | "
                + " | ".join(f"{m}, fastest / median (s)" for m in MODES) + " |",
                "|---" * (4 + len(MODES)) + "|", *measured, "",
                "Model (s): S + max(L, P / (c - 1)) on c cores with c - 1 parse threads; on 2 cores "
                "S + max(L, min(P, (P + L) / 2)); the floor is S + L, the learner alone.", "",
                "| case | " + " | ".join(f"{c} cores" for c in CORES) + " | floor S + L | best speed-up over one "
                "thread doing everything |", "|---" * (3 + len(CORES)) + "|", *modelled, "", "Commands:", "", *cmds, ""]
    end_load = machine_facts()["load"]
    head = [SECTION.start, "## Issue 30: parse threads, measured on 2 cores and modelled for more (bench/cases/threads.py)",
            "", f"- Run {started}; produced by `python -m bench run threads --lines {args.lines} --wide-lines "
            f"{args.wide_lines} --runs {args.runs}`",
            f"- Machine: nproc {facts['nproc']}, {facts['cpu']}, load average {facts['load']} at the start, "
            f"{end_load} at the end; streamlearn commit {facts['commit']}", ""]
    text = "\n".join(head + out + [SECTION.end]) + "\n"
    print(text)
    if args.out:
        SECTION.write(args.out, text)


CASE = Case("threads", arguments, run, __doc__)
