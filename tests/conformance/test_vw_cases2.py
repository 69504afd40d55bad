"""Conformance with VW 9.11.9 on the feature-expansion cases of ../shared/data/vw/cases2
(vw-spec-2.md §2h): interactions, wildcards, n-grams, --ignore/--keep/--redefine, --invert_hash,
--readable_model, --audit and -t.

Each case runs ``streamlearn train`` followed by the case's exact VW arguments, in a copy of
``train-sets/`` with an empty ``models/``, in case-file order (a case may read the model an earlier
one wrote). Then

* the ``-p`` file equals VW's stored one: the same number of lines, tags equal, predictions to 1e-4
  relative or 1e-5 absolute (streamlearn computes in float64, VW in float32);
* the weight lines of ``--invert_hash`` / ``--readable_model`` equal VW's: the same slots, the same
  names, the same number of values, numbers to 1e-4 relative or 1e-5 absolute;
* ``total feature number`` in the summary equals VW's;
* ``--audit`` output (stdout) holds VW's entries: per example the prediction line, then the
  ``name:slot:value:weight[@G]`` entries, compared as sets of name:slot:value with weights to tolerance.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamlearn.cli import main

CASES_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "vw" / "cases2"
PREFIXES = ("q_", "cubic", "interactions", "wild", "ngram", "ignore", "keep", "redefine", "invert",
            "readable_q", "audit_q", "train_q_model", "test_q_invert_audit", "ftrl", "oaa")

pytestmark = pytest.mark.skipif(not CASES_DIR.is_dir(), reason="../shared/data/vw/cases2 is absent")


def _cases():
    if not CASES_DIR.is_dir():
        return []
    cases = json.loads((CASES_DIR / "cases.json").read_text())
    return [c for c in cases if c["name"].startswith(PREFIXES)]


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5) or (math.isnan(a) and math.isnan(b))


def numbers_close(mine: str, theirs: str) -> bool:
    """Whitespace-separated tokens: numbers to tolerance, other tokens equal."""
    a, b = mine.split(), theirs.split()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        kx, _, x = x.rpartition(":")           # "k:v" tokens (--scores, --probabilities, -r)
        ky, _, y = y.rpartition(":")
        if kx != ky:
            return False
        try:
            if not close(float(x), float(y)):
                return False
        except ValueError:
            if x != y:
                return False
    return True


def weight_lines(text: str) -> dict[int, tuple[str | None, list[float]]]:
    """slot -> (name or None, values) of the weight lines ``[name:]slot:v1 v2 ...`` of a VW or
    streamlearn readable model (state and header lines are not of that form)."""
    out = {}
    for line in text.splitlines():
        parts = line.rsplit(":", 2)
        if len(parts) == 2:
            name, slot, values = None, parts[0], parts[1]
        elif len(parts) == 3:
            name, slot, values = parts
        else:
            continue
        if not re.fullmatch(r"\d+", slot):
            continue
        try:
            nums = [float(v) for v in values.split()]
        except ValueError:
            continue
        if not nums:
            continue
        out[int(slot)] = (name, nums)
    return out


def summary_value(stderr: str, key: str) -> str | None:
    for line in stderr.splitlines():
        if line.startswith(key + " = "):
            return line[len(key) + 3:].strip()
    return None


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cases2")
    shutil.copytree(CASES_DIR / "train-sets", d / "train-sets")
    (d / "models").mkdir()
    return d


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["name"])
def test_case(case, workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    args = shlex.split(case["args"])
    result = CliRunner().invoke(main, ["train"] + args)
    assert result.exit_code == case.get("exit_code", 0), result.output
    ref = CASES_DIR / "installed-9.11.9" / case["name"]
    stderr = result.stderr if hasattr(result, "stderr") else result.output
    vw_stderr = (ref / "stderr").read_text()
    assert summary_value(stderr, "total feature number") == summary_value(vw_stderr, "total feature number")
    for out_name, stored in case["outputs"].items():
        if out_name in ("stdout", "stderr"):
            continue
        theirs = (CASES_DIR / stored).read_text()
        mine = (workdir / out_name).read_text()
        if out_name.endswith((".predict", ".raw")):
            a, b = mine.splitlines(), theirs.splitlines()
            assert len(a) == len(b)
            bad = [(i + 1, x, y) for i, (x, y) in enumerate(zip(a, b)) if not numbers_close(x, y)]
            assert not bad, f"{len(bad)} prediction lines differ, first: {bad[:3]}"
        else:
            a, b = weight_lines(mine), weight_lines(theirs)
            assert b, "no weight lines in VW's file"
            assert sorted(a) == sorted(b), (f"slots only in streamlearn's: {sorted(set(a) - set(b))[:5]}, "
                                            f"only in VW's: {sorted(set(b) - set(a))[:5]}")
            bad = [(s, a[s], b[s]) for s in b
                   if a[s][0] != b[s][0] or len(a[s][1]) != len(b[s][1])
                   or not all(close(x, y) for x, y in zip(a[s][1], b[s][1]))]
            assert not bad, f"{len(bad)} weight lines differ, first: {bad[:3]}"
    if "--audit" in args:
        check_audit(result.stdout, (ref / "stdout").read_text())


def audit_examples(text: str) -> list[tuple[str, list[str]]]:
    """(prediction line, entries) per example of --audit output (other stdout lines skipped)."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if lines[i + 1].startswith("\t") and not line.startswith("\t"):
            out.append((line, lines[i + 1].strip("\t").split("\t")))
    return out


def check_audit(mine: str, theirs: str) -> None:
    a, b = audit_examples(mine), audit_examples(theirs)
    assert len(a) == len(b) and b
    for k, ((pa, ea), (pb, eb)) in enumerate(zip(a, b)):
        assert numbers_close(pa, pb), (k, pa, pb)
        assert len(ea) == len(eb), (k, ea, eb)

        def parse(entry):
            name, slot, value, weight = entry.rsplit(":", 3)
            w, _, g = weight.partition("@")
            return name, int(slot), float(value), float(w), float(g) if g else None

        da = sorted(parse(x)[:2] for x in ea)
        db = sorted(parse(x)[:2] for x in eb)
        assert da == db, (k, ea, eb)
        for x, y in zip(ea, eb):            # same order (sorted by |w x|; ties in generation order)
            nx, sx, vx, wx, gx = parse(x)
            ny, sy, vy, wy, gy = parse(y)
            assert (nx, sx) == (ny, sy) and close(vx, vy) and close(wx, wy), (k, x, y)
            assert (gx is None) == (gy is None) and (gx is None or close(gx, gy)), (k, x, y)
