"""streamlearn.river against river's LogisticRegression on a news20 stream (issue 29).

Data: the first ``--lines`` (5,000) lines of ``news20/news20.train.vw.xz`` (the shared real data; see its
README), each turned once into a flat dict ``{token: count}`` (the line's namespace ``w`` dropped, a
token repeated on the line summed) and a bool label: the file's own binary target, a post of one of
the ``comp.*`` groups (+1) against every other group. The file is sorted by newsgroup, so these lines
are alt.atheism (480, False), then the five comp.* groups (2,936, True), then misc.forsale, rec.autos and
part of rec.motorcycles (False): progressive accuracy here also measures how fast a model follows a
change of label. The same examples are also run shuffled (``--seed``). Both tools get the same dicts
and labels.

Method: progressive validation in one pass: for each example ``predict_one`` (the bool), counted
against the label, then ``learn_one``. Every model runs ``--runs`` times on a fresh instance, the
models alternating within a round (the first of a round rotates); timing is ``time.perf_counter``
around the whole loop over data already in memory, one untimed warm-up run of each of ours first (the
numba cache; river needs none). Reported: progressive accuracy (the same each run: nothing is
random), the fastest and median microseconds per example of predict + learn, and for streamlearn the
two calls timed alone over the stream (a loop of ``learn_one`` over all the examples, then a loop of
``predict_one`` over them with the trained model: each loop pays its own first touch of the dicts).

Usage: ``python -m bench run river_compare [--lines N] [--runs R] [--out bench/RESULTS.md]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import lzma
import random
import statistics
import time

from bench.harness import Case, Context, Section, machine_facts, say, shared, version

SECTION = Section("bench_river")
DATA = "/work/shared/data/real/news20/news20.train.vw.xz"


def read(path: str, n: int):
    out = []
    with lzma.open(path, "rt") as f:
        for line in itertools.islice(f, n):
            head, body = line.split("|", 1)
            x = {}
            for tok in body.split()[1:]:        # the namespace's name first
                k, _, v = tok.partition(":")
                x[k] = x.get(k, 0.0) + (float(v) if v else 1.0)
            out.append((x, head.split()[0] == "1"))
    return out


def models():
    """(label, factory) of the models compared."""
    from river import linear_model, optim

    from streamlearn.river import LinearClassifier
    return [
        ("river `LogisticRegression(l1=1e-6)` (SGD 0.01)", lambda: linear_model.LogisticRegression(l1=1e-6)),
        ("river `LogisticRegression(optimizer=optim.AdaGrad(0.1))`",
         lambda: linear_model.LogisticRegression(optimizer=optim.AdaGrad(0.1))),
        ("streamlearn `LinearClassifier(l1=1e-6)` (VW's default rule, --l1)", lambda: LinearClassifier(l1=1e-6)),
        ("streamlearn `LinearClassifier(algo='tg', l1=1e-6)` (truncated gradient)",
         lambda: LinearClassifier(algo="tg", l1=1e-6)),
        ("streamlearn `LinearClassifier(adaptive=True, learning_rate=0.1, l1=1e-6)` (VW's --adaptive alone: "
         "AdaGrad)", lambda: LinearClassifier(adaptive=True, learning_rate=0.1, l1=1e-6)),
    ]


def progressive(model, data):
    right = 0
    t0 = time.perf_counter()
    for x, y in data:
        right += model.predict_one(x) == y
        model.learn_one(x, y)
    return right / len(data), time.perf_counter() - t0


def alone(model, data):
    t0 = time.perf_counter()
    for x, y in data:
        model.learn_one(x, y)
    t1 = time.perf_counter()
    for x, _ in data:
        model.predict_one(x)
    return t1 - t0, time.perf_counter() - t1


HEADER = ("| model | progressive accuracy | us per example, predict + learn: fastest / median | alone: learn_one / "
          "predict_one (us, fastest) |")


def measure(cases, data, runs):
    """The table rows of the models on one stream, and their wall times."""
    n = len(data)
    acc = {}
    walls = {label: [] for label, _ in cases}
    learn_alone = {label: [] for label, _ in cases if label.startswith("streamlearn")}
    predict_alone = {label: [] for label in learn_alone}
    for r in range(runs):
        order = cases[r % len(cases):] + cases[:r % len(cases)]
        for label, make in order:
            a, wall = progressive(make(), data)
            acc[label] = a
            walls[label].append(wall)
            if label in learn_alone:
                tl, tp = alone(make(), data)
                learn_alone[label].append(tl)
                predict_alone[label].append(tp)
        say(f"round {r + 1}/{runs}: " + ", ".join(f"{w[-1] / n * 1e6:.1f}" for w in walls.values()) + " us/example")
    rows = []
    for label, _ in cases:
        w = walls[label]
        extra = "-"
        if label in learn_alone:
            extra = f"{min(learn_alone[label]) / n * 1e6:.1f} / {min(predict_alone[label]) / n * 1e6:.1f}"
        rows.append(f"| {label} | {acc[label]:.4f} | {min(w) / n * 1e6:.1f} / {statistics.median(w) / n * 1e6:.1f} "
                    f"| {extra} |")
        say(rows[-1])
    return rows, walls


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=5000, help="first lines of news20.train.vw.xz")
    shared(ap, "runs", default=5)
    shared(ap, "seed", default=29, help="seed of the shuffled order")
    ap.add_argument("--data", default=DATA, help="the news20 VW file (xz)")
    shared(ap, "out")


def run(args: argparse.Namespace, ctx: Context):
    try:
        import river  # noqa: F401
    except ImportError:
        say("river is not installed (pip install streamlearn[river]): nothing measured")
        return 0
    facts = machine_facts()
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    data = read(args.data, args.lines)
    n = len(data)
    pos = sum(y for _, y in data)
    feats = sum(len(x) for x, _ in data) / n
    say(f"{n:,} examples ({pos:,} True), {feats:.1f} features per example")
    cases = models()
    for label, make in cases:
        if label.startswith("streamlearn"):
            progressive(make(), data[:50])      # warm-up: the numba cache
    shuffled = list(data)
    random.Random(args.seed).shuffle(shuffled)
    tables, raw = [], []
    for name, stream in (("file order", data), (f"shuffled (random.Random({args.seed}).shuffle)", shuffled)):
        say(f"-- {name}")
        rows, walls = measure(cases, stream, args.runs)
        tables += [f"**{name}:**", "", HEADER, "|---|---|---|---|", *rows, ""]
        raw += [f"- {name}, {label}: " + ", ".join(f"{w:.3f}" for w in walls[label]) for label, _ in cases]
    end_load = machine_facts()["load"]
    text = [
        SECTION.start,
        "## streamlearn.river against river's LogisticRegression, news20 stream (issue 29; bench/cases/river_compare.py)",
        "",
        f"- Run {started}; produced by {ctx.produced_by()}",
        f"- Machine: nproc {facts['nproc']}, {facts['cpu']}, RAM {facts['ram']}, load average {facts['load']} at the "
        f"start, {end_load} at the end (the machine is shared); python {facts['python']}, numba {facts['numba']}, "
        f"river {version('river')}, streamlearn commit {facts['commit']}",
        f"- Data: the first {n:,} lines of `news20/news20.train.vw.xz` as dicts `{{token: count}}` "
        f"({feats:.1f} features per example); target: the file's binary label, a `comp.*` group (True, {pos:,}) "
        f"against the others (False, {n - pos:,}). The file is sorted by group (alt.atheism, the comp.* groups, "
        f"misc.forsale, rec.*), so the label changes twice in the stream; the same examples are also run in a "
        f"shuffled order.",
        f"- Method: progressive validation, one pass: `predict_one` then `learn_one` for each example, the same "
        f"dicts for every model; {args.runs} rounds, the models alternating within a round (the first rotates), a "
        f"fresh model each run; one untimed warm-up of each streamlearn model (numba cache). Time: the whole loop "
        f"over data in memory. 'alone': a loop of `learn_one` over the stream, then one of `predict_one` over it "
        f"with the trained model (fastest run of each).",
        "",
        *tables,
        "Raw wall times (s), run by run:",
        "",
        *raw,
        SECTION.end,
    ]
    if args.out:
        SECTION.write(args.out, "\n".join(text) + "\n")


CASE = Case("river_compare", arguments, run, __doc__)
