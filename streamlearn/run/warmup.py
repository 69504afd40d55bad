"""``streamlearn warm-up``: compile every kernel now rather than on first use.

numba compiles a kernel on its first call with given argument types and caches the machine code on
disk (next to the sources, see ``streamlearn._cache``). So the warm-up calls every kernel the way the
runs do: it trains, predicts and continues training (``-i``) on a few generated examples with every
learner and every variant of a learner's kernels (fobos's and softmax's regularizers), the update
rules, interactions, one-against-all and the joint multiclass learner, in both input formats. With the
kernels cached it only loads them (a second or so).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from streamlearn import learners


def _runs_of(spec) -> tuple:
    """A learner's runs: with its example options (``LearnerSpec.example``), and with each of its
    variants' (``LearnerSpec.variants``: fobos's and softmax's regularizers, a kernel each), each one
    one-against-all too where the learner runs so."""
    runs = [(spec.name, ["--algo", spec.name, *spec.example])]
    variants = {name: (v.example, v.oaa_kernel) for name, v in spec.variants.items()} or {
        "": (spec.example, spec.oaa_kernel)}
    for name, (example, oaa_kernel) in variants.items():
        what, options = f"{spec.name} {name}".rstrip(), ["--algo", spec.name, *example]
        if tuple(example) != tuple(spec.example):
            runs.append((what, options))
        if oaa_kernel is not None:
            runs.append((f"{what} --oaa", options + ["--oaa", "3"]))
    return tuple(runs)


#: (what, train options) of the runs; every one is then predicted with, and continued with -i: the
#: update rules and the input features, every learner (``_runs_of``), then multiclass
RUNS = (
    ("default rule", []),
    ("default rule, --l1", ["--l1", "1e-4"]),
    ("--sgd", ["--sgd"]),
    ("--sgd --l1", ["--sgd", "--l1", "1e-4"]),
    ("-q interactions", ["-q", "ab", "--l1", "1e-4"]),
) + tuple(run for spec in learners.SPECS if spec.name != "sgd" and not spec.joint for run in _runs_of(spec)) + (
    ("libsvm input", ["--format", "libsvm", "--l1", "1e-4"]),
    ("--oaa", ["--oaa", "3", "--l1", "1e-4"]),
    ("--oaa --sgd", ["--oaa", "3", "--sgd"]),
) + tuple(run for spec in learners.SPECS if spec.joint for run in _runs_of(spec))


def _examples(path: str, fmt: str, classes: int, n: int = 40) -> None:
    with open(path, "w", encoding="ascii") as f:
        for i in range(n):
            label = (i % classes) + 1 if classes else (1 if i % 3 else -1)
            feats = [(i * 7 + j * 13) % 50 + 1 for j in range(5)]
            if fmt == "libsvm":
                f.write(f"{label} " + " ".join(f"{k}:1" for k in sorted(set(feats))) + "\n")
            else:
                f.write(f"{label} |a " + " ".join(f"f{k}" for k in feats[:3])
                        + " |b " + " ".join(f"g{k}:0.5" for k in feats[3:]) + "\n")


def warm_up(run_argv, out=None) -> int:
    """Run every warm-up run through ``run_argv`` (a function that runs one command line, given as a
    list, as ``streamlearn`` would: the CLI passes its own); print one line per run on ``out``
    (stderr) and a summary. Returns the number of kernels compiled (0 when all were cached)."""
    from streamlearn import _cache

    _cache.install_kernel_loader()
    out = _cache._raw(out or sys.stderr)     # its lines follow the dots of the kernels compiled
    print("streamlearn warm-up: compiling every kernel once (about a minute when none is cached; "
          "fast when they are)", file=out, flush=True)
    start_all = time.perf_counter()
    # the per-run lines below say what is compiled: no first-use notice, but its dots (one a kernel)
    saved = dict(_cache._progress)
    _cache._progress.update(announced=True, t0=start_all, stream=out, open=False)
    try:
        compiled = _runs(out, run_argv)
    finally:
        _cache._progress.clear()
        _cache._progress.update(saved)
    print(f"streamlearn warm-up: done, {compiled} kernels compiled, "
          f"{time.perf_counter() - start_all:.1f} s", file=out, flush=True)
    return compiled


def _runs(out, run_argv) -> int:
    from streamlearn import _cache

    compiled0 = _cache.compile_count()
    with tempfile.TemporaryDirectory(prefix="streamlearn-warmup-") as tmp:
        for what, options in RUNS:
            multiclass = "--oaa" in options
            fmt = "libsvm" if "libsvm" in options else "vw"
            data = os.path.join(tmp, f"{fmt}{'-mc' if multiclass else ''}.txt")
            if not os.path.exists(data):
                _examples(data, fmt, 3 if multiclass else 0)
            model, preds = os.path.join(tmp, "m.slm"), os.path.join(tmp, "p.txt")
            before, t0 = _cache.compile_count(), time.perf_counter()
            print(f"  {what}: ", end="", file=out, flush=True)
            run_argv(["train", "-d", data, "--quiet", "-b", "12", "-f", model, *options])
            predict = ["predict", "-d", data, "--quiet", "-i", model, "-p", preds]
            run_argv(predict)
            if multiclass:
                run_argv(predict + ["--probabilities"])
            passes = options[options.index("--passes"):options.index("--passes") + 2] if "--passes" in options else []
            run_argv(["train", "-d", data, "--quiet", "-i", model, *passes])    # what after_load rebuilds (a
            # batch learner, bfgs, takes its passes again: VW's --bfgs needs at least 2)
            n = _cache.compile_count() - before
            state = f"{n} kernel{'s' if n != 1 else ''} compiled" if n else "cached"
            print(f"{' ' if n else ''}{state} ({time.perf_counter() - t0:.1f} s)", file=out, flush=True)
    return _cache.compile_count() - compiled0
