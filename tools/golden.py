"""Byte-identical outputs before and after a restructuring (issue 26).

A fixed set of runs covers every learner (through the CLI, in process): for each, ``train`` writes the
model (``-f``), the progressive predictions (``-p``) and the readable model (multiclass runs also the
raw scores, ``-r``), and ``predict`` reads the model back on the test file (multiclass runs also with
``--scores``). Every file is hashed (SHA-256); the hashes of a
whole set are kept in a JSON file.

    .venv/bin/python tools/golden.py --write tools/golden.json     # record (before a change)
    .venv/bin/python tools/golden.py --check tools/golden.json     # compare (after it); exit 1 on a difference

A run that fails is recorded with its exit code and its error line, so a changed message also shows up.
The data are the repository's own samples (``data/samples``); the multiclass file is derived from
them deterministically.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "data" / "samples"

def learners() -> dict:
    """Options that make each binary learner valid: its spec's example (``LearnerSpec.example``, which
    warm-up runs too), sgd with none."""
    from streamlearn.learners import SPECS

    out = {"sgd": []}
    for spec in SPECS:
        if spec.name != "sgd" and not spec.joint:
            out[spec.name] = ["--algo", spec.name, *spec.example]
    return out

#: variations run on top of every learner that accepts them (a refused combination is recorded too)
FLAVOURS = {
    "logistic": ["--loss", "logistic"],
    "squared-sgd": ["--loss", "squared", "--sgd"],
    "hinge-passes": ["--loss", "hinge", "--passes", "3", "--holdout-off"],
    "quadratic": ["--loss", "logistic", "-q", "::", "-b", "20"],
    "batch": ["--loss", "logistic", "--batch-size", "7"],
}

#: the multiclass runs (labels 1..3 derived from the sparse sample)
MULTICLASS = {
    "oaa-sgd": ["--oaa", "3", "--loss", "logistic"],
    "oaa-tg": ["--oaa", "3", "--algo", "tg", "--l1", "1e-4", "--loss", "logistic"],
    "oaa-fobos": ["--oaa", "3", "--algo", "fobos", "--l1", "1e-4", "--loss", "logistic"],
    "softmax-l1": ["--oaa", "3", "--algo", "softmax", "--loss", "softmax", "--l1", "1e-4"],
    "softmax-l1l2": ["--oaa", "3", "--algo", "softmax", "--loss", "softmax", "--reg", "l1l2", "--lambda", "1e-4"],
}


def multiclass_file(src: Path, dst: Path) -> Path:
    """The sparse sample with each label replaced by 1 + (line number mod 3), features unchanged."""
    out = []
    for n, line in enumerate(src.read_text().splitlines()):
        out.append(f"{1 + n % 3} |{line.split('|', 1)[1]}")
    dst.write_text("\n".join(out) + "\n")
    return dst


def cases(tmp: Path):
    """(name, training file, test file, options) of every run."""
    sparse_tr, sparse_te = SAMPLES / "sparse.train.vw", SAMPLES / "sparse.test.vw"
    gauss_tr, gauss_te = SAMPLES / "gauss.train.vw", SAMPLES / "gauss.test.vw"
    for algo, opts in learners().items():
        for flavour, extra in FLAVOURS.items():
            yield f"{algo}/{flavour}/sparse", sparse_tr, sparse_te, opts + extra
        yield f"{algo}/logistic/gauss", gauss_tr, gauss_te, opts + FLAVOURS["logistic"]
    yield ("sgd/libsvm", SAMPLES / "sparse.train.libsvm", SAMPLES / "sparse.test.libsvm",
           ["--loss", "logistic", "--format", "libsvm"])
    mc_tr = multiclass_file(sparse_tr, tmp / "mc.train.vw")
    mc_te = multiclass_file(sparse_te, tmp / "mc.test.vw")
    for name, opts in MULTICLASS.items():
        yield name, mc_tr, mc_te, opts


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def run_case(runner, main, name, train, test, opts, tmp: Path) -> dict:
    d = tmp / name.replace("/", "_")
    d.mkdir()
    multiclass = "--oaa" in opts
    files = {"model": d / "m.slm", "pred": d / "p.txt", "readable": d / "readable.txt", "predict": d / "q.txt"}
    extra = []
    if multiclass:                       # raw scores (train) and probabilities (predict) of every class
        files.update(raw=d / "r.txt", predict_scores=d / "qs.txt")
        extra = ["-r", str(files["raw"])]
    res = runner.invoke(main, ["train", "-d", str(train), *opts, "-f", str(files["model"]), "-p", str(files["pred"]),
                               "--readable-model", str(files["readable"]), *extra, "--quiet"])
    out = {"train_exit": res.exit_code}
    if res.exit_code != 0:
        out["error"] = (res.stderr or res.output).strip().splitlines()[-1:]
        return out
    res = runner.invoke(main, ["predict", "-i", str(files["model"]), "-d", str(test), "-p", str(files["predict"]),
                               "--quiet"])
    out["predict_exit"] = res.exit_code
    if res.exit_code == 0 and multiclass:
        res = runner.invoke(main, ["predict", "-i", str(files["model"]), "-d", str(test), "--scores", "-p",
                                   str(files["predict_scores"]), "--quiet"])
        out["predict_scores_exit"] = res.exit_code
    if res.exit_code != 0:
        out["error"] = (res.stderr or res.output).strip().splitlines()[-1:]
    out.update({k: digest(p) for k, p in files.items()})
    return out


def collect() -> dict:
    sys.path.insert(0, str(REPO))
    from click.testing import CliRunner

    from streamlearn.cli import main

    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        return {name: run_case(runner, main, name, tr, te, opts, tmp) for name, tr, te, opts in cases(tmp)}


def main_(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="JSON", help="record the hashes")
    group.add_argument("--check", metavar="JSON", help="compare with recorded hashes")
    args = ap.parse_args(argv)
    got = collect()
    if args.write:
        Path(args.write).write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"{len(got)} runs recorded in {args.write}")
        return 0
    want = json.loads(Path(args.check).read_text())
    # a run that is not recorded (a new learner's) is new, not a difference: record it with --write
    new = sorted(set(got) - set(want))
    bad = [name for name in sorted(want) if want[name] != got.get(name)]
    for name in bad:
        w, g = want[name], got.get(name, {})
        diff = sorted(k for k in set(w) | set(g) if w.get(k) != g.get(k))
        print(f"DIFFERS {name}: {', '.join(diff) if name in got else 'no longer run'}")
    print(f"{len(want) - len(bad)} of {len(want)} runs byte-identical" + ("" if not bad else f"; {len(bad)} differ")
          + (f"; {len(new)} new runs not recorded ({', '.join(new)})" if new else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main_())
