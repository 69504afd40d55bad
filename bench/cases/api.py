"""The Python API's speed against the CLI on the same data (issue 14).

(a) ``SparseLinearClassifier(bits=20, loss="logistic", algo="tg", sgd=True, l1=1e-7).partial_fit`` over a
    synthetic 2^20-column CSR matrix in chunks of ``--chunk`` rows, against ``streamlearn train`` on the same
    rows written as LIBSVM (``dump_svmlight_file(zero_based=True)``, which is what the estimator's column j
    means); the two models are checked to be byte for byte the same.
(b) ``Model(loss="logistic", algo="tg", sgd=True, l1=1e-7, bits=20).learn_many`` on the first ``--lines``
    lines of ``bench/data/bench-2m.vw`` (``bench.data.core_head``), held in memory as a list of bytes,
    against ``streamlearn train`` with the same options on the same file; models checked equal.
(c) river's ``linear_model.LogisticRegression().learn_one`` on the same lines as dicts, if river is
    installed (it is not installed by this script).

Timing: the CLI runs as a child process (``bench.timing.run_once``: wall time from start to reap, so it
includes the interpreter's start-up and reading the file); the API is timed in this process
(``time.perf_counter`` around the training call on data already in memory, a fresh estimator/Model each
run; one untimed warm-up run fills the numba cache). The two alternate for ``--runs`` rounds (the one
that goes first alternates); reported: fastest and median, ratio = API fastest / CLI fastest (target
1.3).

Usage: ``python -m bench run api [--lines N] [--rows N] [--runs R] [--out bench/RESULTS.md]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from pathlib import Path

import numpy as np

from bench.data import core_head, read_through
from bench.harness import REPO, Case, Context, Section, machine_facts, say, shared, version
from bench.timing import run_once, streamlearn_base

SECTION = Section("bench_api")
TARGET = 1.3
OPTS = dict(loss="logistic", algo="tg", sgd=True, l1=1e-7, bits=20)
CLI_OPTS = ["--loss", "logistic", "--algo", "tg", "--sgd", "--l1", "1e-07", "-b", "20", "--quiet"]


def csr_data(rows: int, seed: int = 7):
    """A (rows, 2^20) CSR matrix (about 30 entries a row, Zipf-like columns) and ±1 labels."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    nnz = rng.integers(10, 50, size=rows)
    indptr = np.zeros(rows + 1, np.int64)
    np.cumsum(nnz, out=indptr[1:])
    cols = (rng.zipf(1.3, size=indptr[-1]) - 1) % (1 << 20)
    vals = rng.uniform(0.1, 1.0, size=indptr[-1]).round(4)
    X = sp.csr_matrix((vals, cols, indptr), shape=(rows, 1 << 20))
    X.sum_duplicates()
    truth = rng.normal(size=1 << 20) * (rng.random(1 << 20) < 0.01)
    y = np.where(X @ truth + rng.normal(scale=0.1, size=rows) > 0, 1, -1)
    return X, y


def libsvm_file(X, y, rows: int) -> Path:
    path = REPO / "bench" / "data" / f"api-csr-{rows}.libsvm"
    if not path.exists():
        from sklearn.datasets import dump_svmlight_file
        tmp = path.with_name(path.name + ".tmp")
        dump_svmlight_file(X, y, str(tmp), zero_based=True)
        tmp.replace(path)
    return path


def fastest_median(walls):
    return min(walls), statistics.median(walls)


def compare(label, api_run, cli_cmd, runs):
    """Alternate the API (in-process) and the CLI (child); their wall times."""
    api_run()      # warm-up (numba cache, page cache)
    run_once(cli_cmd)
    api, cli = [], []
    for i in range(runs):
        order = ("api", "cli") if i % 2 == 0 else ("cli", "api")
        for who in order:
            if who == "api":
                t0 = time.perf_counter()
                api_run()
                api.append(time.perf_counter() - t0)
            else:
                cli.append(run_once(cli_cmd).wall)
        say(f"  {label} round {i + 1}/{runs}: API {api[-1]:.3f} s, CLI {cli[-1]:.3f} s")
    return api, cli


def arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--lines", type=int, default=200_000, help="VW lines for (b) and (c)")
    ap.add_argument("--rows", type=int, default=200_000, help="CSR rows for (a)")
    ap.add_argument("--chunk", type=int, default=20_000, help="rows per partial_fit call")
    shared(ap, "runs", default=5)
    ap.add_argument("--river-lines", type=int, default=20_000, help="lines river learns (it is slow)")
    shared(ap, "out")


def run(args: argparse.Namespace, ctx: Context) -> None:
    from streamlearn import Model, SparseLinearClassifier
    facts = machine_facts()
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    say(f"machine: nproc {facts['nproc']}, {facts['cpu']}, load {facts['load']}")
    base = streamlearn_base()
    rows_out, raw, cmds = [], [], []
    out_dir = REPO / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)

    # (a) partial_fit over CSR vs train on LIBSVM
    X, y = csr_data(args.rows)
    svm = libsvm_file(X, y, args.rows)
    read_through(svm)
    model_a = out_dir / "api-csr.slm"
    cli_a = base + ["train", "-d", str(svm.relative_to(REPO)), "--format", "libsvm", *CLI_OPTS]
    holder = {}

    def fit_csr():
        clf = SparseLinearClassifier(**OPTS)
        for s in range(0, X.shape[0], args.chunk):
            clf.partial_fit(X[s:s + args.chunk], y[s:s + args.chunk], classes=[-1, 1])
        holder["a"] = clf

    api, cli = compare("(a) partial_fit", fit_csr, cli_a, args.runs)
    run_once(cli_a + ["-f", str(model_a)])
    same_a = holder["a"].to_bytes() == model_a.read_bytes()
    cmds.append(f"(a) CLI: `{' '.join(['streamlearn'] + cli_a[len(base):])}`; API: "
                f"`SparseLinearClassifier({', '.join(f'{k}={v!r}' for k, v in OPTS.items())}).partial_fit"
                f"(X[s:s+{args.chunk}], y[s:s+{args.chunk}], classes=[-1, 1])` over the chunks")
    rows_out.append(("(a) `SparseLinearClassifier.partial_fit`, CSR " f"{args.rows:,} x 2^20, {X.nnz:,} entries",
                     api, cli, same_a))

    # (b) Model.learn_many on VW lines vs train on the file
    core = core_head(args.lines)
    read_through(core)
    lines = (REPO / core).read_bytes().splitlines()
    model_b = out_dir / "api-vw.slm"
    cli_b = base + ["train", "-d", str(core), *CLI_OPTS]

    def learn_vw():
        m = Model(**OPTS)
        m.learn_many(lines)
        holder["b"] = m

    api_b, cli_b_w = compare("(b) learn_many", learn_vw, cli_b, args.runs)
    run_once(cli_b + ["-f", str(model_b)])
    same_b = holder["b"].to_bytes() == model_b.read_bytes()
    cmds.append(f"(b) CLI: `{' '.join(['streamlearn'] + cli_b[len(base):])}`; API: "
                f"`Model({', '.join(f'{k}={v!r}' for k, v in OPTS.items())}).learn_many(lines)`")
    rows_out.append((f"(b) `Model.learn_many`, {len(lines):,} VW lines ({core})", api_b, cli_b_w, same_b))

    # (c) river
    try:
        import river  # noqa: F401
        river_note = None
    except ImportError:
        river_note = "river: not installed (not installed by this script), so not measured"
    if river_note is None:
        from river import linear_model

        n = min(args.river_lines, len(lines))

        def as_dict(line: bytes):
            head, *parts = line.decode().split("|")
            label = 1 if head.split()[0] == "1" else 0
            x = {}
            for part in parts:
                toks = part.split()
                ns = toks[0] if part[:1] != " " else " "
                for t in (toks[1:] if part[:1] != " " else toks):
                    f, _, v = t.partition(":")
                    x[f"{ns}^{f}"] = x.get(f"{ns}^{f}", 0.0) + (float(v) if v else 1.0)
            return x, label

        data = [as_dict(ln) for ln in lines[:n]]
        walls = []
        for _ in range(min(args.runs, 3)):
            lr = linear_model.LogisticRegression()
            t0 = time.perf_counter()
            for x, lab in data:
                lr.learn_one(x, lab)
            walls.append(time.perf_counter() - t0)
        per = min(walls) / n
        ours = min(api_b) / len(lines)
        river_note = (f"river {version('river')} `linear_model.LogisticRegression().learn_one` on the first {n:,} "
                      f"lines as dicts: fastest {min(walls):.3f} s ({per * 1e6:.2f} us/example) vs `Model.learn_many` "
                      f"{ours * 1e6:.2f} us/example: river / Model = {per / ours:.1f}x")
    say(river_note)

    tiny = core_head(10)
    cli_tiny = base + ["train", "-d", str(tiny), *CLI_OPTS]
    run_once(cli_tiny)
    startup = min(run_once(cli_tiny).wall for _ in range(5))
    say(f"CLI start-up (10 lines, fastest of 5): {startup:.3f} s")
    end_load = machine_facts()["load"]
    table = []
    for name, api_w, cli_w, same in rows_out:
        af, am = fastest_median(api_w)
        cf, cm = fastest_median(cli_w)
        ratio = af / cf
        ok = "met" if ratio <= TARGET else "MISSED"
        net = af / max(cf - startup, 1e-9)
        table.append(f"| {name} | {af:.3f} / {am:.3f} | {cf:.3f} / {cm:.3f} | {ratio:.2f} | {net:.2f} "
                     f"| <= {TARGET} ({ok}) "
                     f"| {'yes' if same else 'NO'} |")
        raw.append(f"- {name}: API " + ", ".join(f"{w:.3f}" for w in api_w) + "; CLI "
                   + ", ".join(f"{w:.3f}" for w in cli_w))
        say(table[-1])
    command = (f"python -m bench run api --lines {args.lines} --rows {args.rows} --chunk {args.chunk} "
               f"--runs {args.runs}" + (f" --out {args.out}" if args.out else ""))
    text = [
        SECTION.start,
        "## The Python API against the CLI (bench/cases/api.py)",
        "",
        f"- Run {started}; produced by `{command}`",
        f"- Machine: nproc {facts['nproc']}, {facts['cpu']}, RAM {facts['ram']}, load average {facts['load']} "
        f"at the start, {end_load} at the end; python {facts['python']}, numba {facts['numba']}, "
        f"streamlearn commit {facts['commit']}",
        f"- Data: (a) a synthetic CSR matrix (`csr_data`, seed 7: 10..49 entries a row, Zipf(1.3) columns mod 2^20, values 0.1..1, ±1 labels from a sparse hidden model) and the same rows written by `dump_svmlight_file(zero_based=True)`; (b) the first lines of `bench/data/bench-2m.vw` read into a list of bytes\n- Method: one warm-up of each, then {args.runs} rounds alternating API and CLI (the first alternates). "
        "The CLI is a child process timed from start to reap (start-up and file reading included); the API is "
        "timed in-process around the training call on data already in memory (a fresh estimator/Model each run). "
        "Ratio = API fastest / CLI fastest; 'same model' = the API's model bytes equal the CLI's `-f` file.",
        "",
        "| case | API fastest / median (s) | CLI fastest / median (s) | ratio | ratio to CLI less start-up "
        "| target | same model |",
        "|---|---|---|---|---|---|---|",
        *table,
        "",
        f"- CLI start-up: `streamlearn train` on a 10-line file, fastest of 5: {startup:.3f} s ('ratio to CLI "
        "less start-up' = API fastest / (CLI fastest - start-up), the training loops compared alone)",
        f"- {river_note}",
        "",
        "Raw wall times (s), round by round:",
        "",
        *raw,
        "",
        "Commands:",
        "",
        *[f"- {c}" for c in cmds],
        SECTION.end,
    ]
    if args.out:
        SECTION.write(args.out, "\n".join(text) + "\n")


CASE = Case("api", arguments, run, __doc__)
