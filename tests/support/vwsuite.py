"""VW's own test suite (``../shared/data/vw/suite/vw-test.tar.xz``) for tests that check a learner or
an option against VW's reference outputs: extracting the files some cases need, VW's fuzzy comparison
of numbers (test/run_tests.py, at VW CI's epsilon 1e-3), and running a case through ``streamlearn
train`` with its outputs compared to the references."""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parents[3] / "shared" / "data" / "vw" / "suite" / "vw-test.tar.xz"


def extract(root: Path, ids, names) -> tuple[Path, dict]:
    """The suite's ``test/`` folder under ``root`` with ``core.vwtest.json`` and the members whose
    path contains one of ``names``; returns (that folder, id -> case) for the cases ``ids``. Skips
    the test when the suite is absent."""
    if not SUITE.is_file():
        pytest.skip("../shared/data/vw/suite is absent")
    with tarfile.open(SUITE) as tar:
        wanted = [m for m in tar.getmembers() if m.isfile() and (
            m.name.endswith("core.vwtest.json") or any(k in m.name for k in names))]
        tar.extractall(root, members=wanted, filter="data")
    test = root / "test"
    (test / "models").mkdir(exist_ok=True)
    cases = {c["id"]: c for c in json.loads((test / "core.vwtest.json").read_text()) if c["id"] in ids}
    return test, cases


def fuzzy_equal(a: str, b: str, eps: float = 1e-3) -> bool:
    """VW's test rule for two numbers (test/run_tests.py): equal when they differ by less than eps,
    or, when |b| > 1, when their ratio differs from 1 by less than eps."""
    x, y = float(a), float(b)
    if (math.isinf(x) and math.isinf(y)) or (math.isnan(x) and math.isnan(y)):
        return True
    if abs(x - y) < eps:
        return True
    return abs(y) > 1.0 and abs(x / y - 1.0) < eps


def same_tokens(mine: str, theirs: str) -> None:
    """VW's comparison of two outputs: the same tokens (split on white space and ':'), numbers by
    ``fuzzy_equal`` and the rest (tags) exactly."""
    a, b = re.split(r"[\s:]+", mine.strip()), re.split(r"[\s:]+", theirs.strip())
    assert len(a) == len(b), (len(a), len(b))
    for x, y in zip(a, b):
        try:
            same = fuzzy_equal(x, y)
        except ValueError:
            same = x == y
        assert same, (x, y)


def weight_lines(text: str) -> dict:
    """slot -> (name or None, [values]) of the weight lines of a VW or streamlearn readable model."""
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"(?:(.*):)?(\d+):(\S+(?: \S+)*)", line.strip())
        if m is None or line.startswith(("Min label", "Max label", "bits", "options", "Checksum")):
            continue
        out[int(m.group(2))] = (m.group(1), m.group(3).split())
    return out


def same_weight_lines(mine: str, theirs: str) -> None:
    a, b = weight_lines(mine), weight_lines(theirs)
    assert sorted(a) == sorted(b), (sorted(set(a) ^ set(b)))[:10]
    for slot in b:
        (na, va), (nb, vb) = a[slot], b[slot]
        assert na == nb and len(va) == len(vb), (slot, a[slot], b[slot])
        assert all(fuzzy_equal(x, y) for x, y in zip(va, vb)), (slot, va, vb)


def average_loss(stderr: str) -> str:
    return [line for line in stderr.splitlines() if line.startswith("average loss")][0].split("=")[1].split()[0]


def run_case(test: Path, case: dict, cli, drop=()) -> int:
    """Run a case's ``vw_command`` as ``streamlearn train`` (without the arguments in ``drop``) from
    ``test`` (the caller chdirs there) and compare every output the case names with its reference:
    the ``average loss`` of stderr, an empty stdout, predictions number by number, readable models
    weight line by weight line. Returns how many outputs were compared."""
    args = [a for a in shlex.split(case["vw_command"]) if a not in drop]
    res = cli("train", *args)
    compared = 0
    for produced, reference in case["diff_files"].items():
        ref = (test / reference).read_text()
        if produced == "stderr":
            assert average_loss(res.stderr) == average_loss(ref)
        elif produced == "stdout":
            assert res.stdout == ref == ""
        elif produced.endswith(".predict"):
            same_tokens((test / produced).read_text(), ref)
        else:
            same_weight_lines((test / produced).read_text(), ref)
        compared += 1
    return compared


def vw_run(cwd, args):
    """VW 9.11.9 itself (``python -m vowpalwabbit``, the test extra) on ``args`` in ``cwd``; skips the
    test when it is not installed."""
    pytest.importorskip("vowpalwabbit")
    return subprocess.run([sys.executable, "-m", "vowpalwabbit", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=True)
