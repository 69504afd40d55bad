"""Feature-expansion benchmark: ``streamlearn train`` against VW 9.11.9, like with like, on the core
benchmark file, plain and with a quadratic interaction (issue 10).

Configurations (logistic loss, ``-b 20``, ``--l1 1e-7``; the same rule and the same ``-q`` for both
tools):

* ``sgd``: truncated gradient with plain SGD (streamlearn ``--algo tg --sgd --l1``; VW ``--sgd --l1``);
* ``default``: the default rule (adaptive, normalized, invariant) with ``--l1`` (streamlearn's tg with
  its defaults; VW's default learner with ``--l1``);

each plain and with ``-q ut`` (the user namespace times the ~22 tokens of each line: the feature count
doubles, 30 -> ~52 per line).

Method: every command runs as a child process (bench.timing.run_once: wall time from start to reap,
peak RSS from wait4); each tool runs once untimed as a warm-up (numba cache filled, file in the page
cache), then ``--runs`` rounds alternate the tools, the first tool alternating from round to round.
Reported per tool: the fastest and the median run; the ratio streamlearn / VW is judged on the
fastest runs, because VW's wall time on these machines is bimodal from run to run.

With ``--baseline DIR`` (a checkout of an earlier streamlearn, e.g. ``git worktree add DIR REV``)
the earlier code runs the plain configurations too, in the same rounds, to check that the change
made nothing slower.

With ``--where``, the script instead compares the two places expansion could run, in-process (no
start-up in the times): in the parsing thread (what streamlearn does: the parser thread parses and
expands the next block while the learner works) and in the learner thread (the parser only parses;
the expansion of a block runs on the learner's thread just before the learner, which is what
expanding on the fly in the example loop costs, without its fusion). The second variant is made by
patching streamlearn's stream and session for the benchmark only.

Results go to the section between ``<!-- bench_expansion:start -->`` and
``<!-- bench_expansion:end -->`` of ``bench/RESULTS.md``.

Usage: ``python -m bench run expansion [--lines N] [--runs R] [--baseline DIR] [--only NAME] [--where]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import statistics
import sys
from pathlib import Path

from bench.data import DEFAULT_SEED, ensure_data, read_through
from bench.harness import REPO, Case, Context, Section, machine_facts, say, shared
from bench.timing import run_once, streamlearn_base, vw_available, vw_base

DEFAULT_OUT = Path("bench/RESULTS.md")

SECTION = Section("bench_expansion")
WHERE = Section("bench_expansion_where")
BITS = 20
L1 = 1e-7
Q = "ut"


def configs(path: Path) -> list[tuple[str, list[str], list[str]]]:
    """(name, streamlearn arguments after `train`, VW arguments)."""
    common_sl = ["-d", str(path), "--loss", "logistic", "-b", str(BITS), "--quiet"]
    common_vw = ["-d", str(path), "--loss_function", "logistic", "-b", str(BITS), "--quiet"]
    out = []
    for q in ([], ["-q", Q]):
        tag = f" -q {Q}" if q else ""
        out.append((f"sgd{tag}", common_sl + ["--algo", "tg", "--sgd", "--l1", repr(L1)] + q,
                    common_vw + ["--sgd", "--l1", repr(L1)] + q))
        out.append((f"default{tag}", common_sl + ["--algo", "tg", "--l1", repr(L1)] + q,
                    common_vw + ["--l1", repr(L1)] + q))
    return out


def baseline_base(directory: Path) -> list[str]:
    return ["env", f"PYTHONPATH={directory}", sys.executable, "-m", "streamlearn"]


def stats(walls: list[float]) -> tuple[float, float]:
    return min(walls), statistics.median(walls)


def where_runs(path: Path, runs: int) -> list[str]:
    """In-process: expansion in the parsing thread vs in the learner thread (module docstring)."""
    import time

    from streamlearn.run import driver, session, stream
    from streamlearn.io import expand

    class PassThrough:
        def expand(self, block, out):
            return block

    def run(args, where):
        cfg, model = driver.prepare_train(args)
        real = expand.make_expander(cfg.feature_spec(), (1 << cfg.bits) - 1)
        outs = expand.ExpandedOutputs()
        original = session.Run.process
        if where == "learner thread":
            stream.make_expander = lambda spec, mask: PassThrough()
            session.Run.process = lambda self, block: original(self, real.expand(block, outs))
        try:
            t0 = time.perf_counter()
            driver.train(cfg, model)
            return time.perf_counter() - t0
        finally:
            stream.make_expander = expand.make_expander
            session.Run.process = original

    lines = []
    for name, extra in (("sgd -q ut", {"algo": "tg", "sgd": True}), ("default -q ut", {})):
        args = dict(sources=(str(REPO / path),), loss="logistic", bits=BITS, l1=L1, quadratic=(Q,),
                    quiet=True, **extra)
        places = ["parsing thread", "learner thread"]
        for where in places:
            run(args, where)                             # warm-up
        times = {w: [] for w in places}
        for i in range(runs):
            for where in (places if i % 2 == 0 else places[::-1]):
                times[where].append(run(args, where))
            say(f"  where {name} round {i + 1}/{runs}: " + ", ".join(
                f"{w} {times[w][-1]:.3f} s" for w in places))
        lines.append(f"| `{name}` | " + " | ".join(
            f"{min(times[w]):.2f} / {statistics.median(times[w]):.2f} s" for w in places) + " |")
    return lines


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=2_000_000)
    shared(ap, "runs", default=5)
    ap.add_argument("--baseline", type=Path, default=None,
                    help="checkout of an earlier streamlearn to time on the plain configurations")
    shared(ap, "only", help="run only the configurations whose name contains this")
    shared(ap, "out", default=DEFAULT_OUT)
    ap.add_argument("--where", action="store_true",
                    help="compare expansion in the parsing thread with expansion in the learner thread")


def run(args: argparse.Namespace, ctx: Context) -> None:
    if args.where:
        path, _ = ensure_data(args.lines, DEFAULT_SEED)
        read_through(path)
        rows = where_runs(path, args.runs)
        section = "\n".join([
            WHERE.start, "", "### Where expansion runs (in-process, no start-up)", "",
            f"Command: `python -m bench run expansion --where --lines {args.lines} --runs {args.runs}`; "
            "fastest / median of the alternating runs.", "",
            "| configuration | in the parsing thread (streamlearn) | in the learner thread |",
            "|---|---|---|", *rows, "", WHERE.end]) + "\n"
        WHERE.write(REPO / args.out, section)
        say(section)
        return
    if not vw_available():
        raise SystemExit("vowpalwabbit cannot be imported: install the [vw] extra")
    path, _ = ensure_data(args.lines, DEFAULT_SEED)
    read_through(path)
    results = []
    for name, sl_args, vw_args in configs(path):
        if args.only and args.only not in name:
            continue
        tools = {"streamlearn": streamlearn_base() + ["train"] + sl_args, "VW": vw_base() + vw_args}
        if args.baseline is not None and "-q" not in sl_args:
            tools["before (baseline)"] = baseline_base(args.baseline) + ["train"] + sl_args
        names = list(tools)
        for tool in names:                         # warm-up: compile caches, page cache
            run_once(tools[tool])
        runs = {tool: [] for tool in names}
        for i in range(args.runs):
            order = names if i % 2 == 0 else names[::-1]
            line = []
            for tool in order:
                r = run_once(tools[tool])
                runs[tool].append(r)
                line.append(f"{tool} {r.wall:.3f} s")
            say(f"  {name} round {i + 1}/{args.runs}: " + ", ".join(line))
        results.append((name, tools, runs))
    section = render(results, args)
    SECTION.write(REPO / args.out, section)
    say(section)


def render(results, args) -> str:
    m = machine_facts()
    lines = [SECTION.start, "", "## Feature expansion: streamlearn vs VW, like with like (issue 10)", "",
             f"Run {dt.date.today().isoformat()} on {m['cpu']} ({m['nproc']} cores), Python {m['python']}, "
             f"vowpalwabbit {m['vowpalwabbit']}, streamlearn commit {m['commit']}.",
             f"Command: `python -m bench run expansion --lines {args.lines} --runs {args.runs}"
             + (f" --baseline {args.baseline}" if args.baseline else "") + "`. "
             f"{args.runs} alternating rounds after one warm-up run of each tool; wall time of the whole "
             "process; ratio on the fastest runs.", "",
             "| configuration | streamlearn fastest / median | VW fastest / median | ratio (fastest) |"
             + (" before this issue fastest / median | now / before (fastest) |" if args.baseline else ""),
             "|---|---|---|---|" + ("---|---|" if args.baseline else "")]
    for name, tools, runs in results:
        sl = stats([r.wall for r in runs["streamlearn"]])
        vw = stats([r.wall for r in runs["VW"]])
        row = f"| `{name}` | {sl[0]:.2f} / {sl[1]:.2f} s | {vw[0]:.2f} / {vw[1]:.2f} s | {sl[0] / vw[0]:.2f} |"
        if args.baseline:
            if "before (baseline)" in runs:
                b = stats([r.wall for r in runs["before (baseline)"]])
                row += f" {b[0]:.2f} / {b[1]:.2f} s | {sl[0] / b[0]:.2f} |"
            else:
                row += " – | – |"
        lines.append(row)
    lines += ["", "Peak RSS (MiB, median): " + "; ".join(
        f"`{name}` streamlearn {statistics.median(r.rss_mib for r in runs['streamlearn']):.0f}, "
        f"VW {statistics.median(r.rss_mib for r in runs['VW']):.0f}" for name, _, runs in results) + ".", "",
        "Commands:", ""]
    for name, tools, _ in results:
        for tool, cmd in tools.items():
            lines.append(f"- `{name}`, {tool}: `{shlex.join(cmd).replace(str(REPO) + '/', '')}`")
    lines += ["", "Raw runs (s):", ""]
    for name, _, runs in results:
        lines.append(f"- `{name}`: " + "; ".join(
            f"{tool} " + ", ".join(f"{r.wall:.3f}" for r in rs) for tool, rs in runs.items()))
    lines += ["", SECTION.end]
    return "\n".join(lines) + "\n"


CASE = Case("expansion", arguments, run, __doc__)
