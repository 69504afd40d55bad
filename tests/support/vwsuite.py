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


#: VW's token separators (test/run_tests.py is_line_different): white space, ':', ',', '@', '=', brackets,
#: and '-' between two numbers (a range)
_TOKENS = re.compile(r"[ \t:,@=\[\]]+|(?<=\d)-(?=-?\d)")


def same_tokens(mine: str, theirs: str) -> None:
    """VW's comparison of two outputs (test/run_tests.py, fuzzy mode): the same number of lines (each
    stripped), and line by line the same tokens (``_TOKENS``), numbers by ``fuzzy_equal`` and the rest
    (tags) exactly."""
    a, b = ([line.strip() for line in t.strip().splitlines()] for t in (mine, theirs))
    assert len(a) == len(b), ("lines", len(a), len(b))
    for la, lb in zip(a, b):
        ta, tb = _TOKENS.split(la), _TOKENS.split(lb)
        assert len(ta) == len(tb), (la[:60], lb[:60])
        for x, y in zip(ta, tb):
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


# ----------------------------------------------------------------------------- the whole suite (issue 27)

def extract_all(root: Path) -> Path:
    """The suite's whole ``test/`` folder under ``root`` (23 MB); skips the test when it is absent."""
    if not SUITE.is_file():
        pytest.skip("../shared/data/vw/suite is absent")
    with tarfile.open(SUITE) as tar:
        tar.extractall(root, members=[m for m in tar.getmembers() if m.isfile()], filter="data")
    test = root / "test"
    (test / "models").mkdir(exist_ok=True)
    return test


def load_cases(test: Path) -> dict:
    """id -> case of ``core.vwtest.json``."""
    return {c["id"]: c for c in json.loads((test / "core.vwtest.json").read_text())}


def refused_option(args: list) -> str | None:
    """The first option of a VW command line ``streamlearn train`` does not accept (as click parses it),
    None when it takes them all. A value it refuses (``--loss_function poisson``) is not a refused
    option: the test is in scope, and fails until the value is taken."""
    import contextlib
    import io

    import click
    from streamlearn.cli import main
    try:
        with contextlib.redirect_stdout(io.StringIO()):     # --help prints
            main.commands["train"].make_context("train", list(args), resilient_parsing=False)
    except click.NoSuchOption as exc:
        return exc.option_name
    except click.BadParameter:
        return None
    except click.UsageError as exc:
        return str(exc).split("\n")[0]
    except click.exceptions.Exit:       # --help, --version: not a run
        return "--help"
    return None


def vw_model_options(path: Path) -> list | None:
    """The options a VW model file holds (VW merges them into the command line of a run reading it
    with -i), None when ``path`` is not a readable VW model's header."""
    from streamlearn.io import vw_model

    class Header(Exception):
        pass

    def stop(model):
        raise Header(model.options)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not vw_model.looks_like(data[:8]):
        return None
    try:
        vw_model.parse(data, str(path), check=stop)
    except Header as exc:
        return shlex.split(exc.args[0])
    except Exception:
        return None
    return None


def initial_model(args: list) -> str | None:
    """The -i file of a VW command line."""
    for j, arg in enumerate(args[:-1]):
        if arg in ("-i", "--initial_regressor"):
            return args[j + 1]
    return None


def scope(cases: dict, test: Path | None = None) -> tuple[list, dict]:
    """(the ids in scope, in an order that runs every test's dependencies first; option -> the ids it
    keeps out). A test is in scope when it is a ``vw_command`` test and ``streamlearn train`` accepts
    every option of it and of the tests it depends on (the suite's README), and those of the VW model
    it reads with -i, when that is one of the suite's files (``test``: the suite's folder)."""
    refused = {}
    for cid, case in cases.items():
        if "vw_command" in case:
            args = shlex.split(case["vw_command"])
            model = initial_model(args)
            held = vw_model_options(test / model) if test is not None and model else None
            refused[cid] = refused_option(args + (held or []))
    out, keeps_out, done = [], {}, {}

    def ok(cid, seen=()) -> str | None:
        """None when the test and its dependencies are in scope, else the option keeping it out."""
        if cid in done:
            return done[cid]
        case = cases.get(cid)
        why = "a shell test" if case is None or "vw_command" not in case else refused[cid]
        for dep in (case or {}).get("depends_on", []):
            if why is None and dep not in seen:
                why = ok(dep, seen + (cid,))
        done[cid] = why
        return why

    def add(cid):
        for dep in cases[cid].get("depends_on", []):
            if dep not in out:
                add(dep)
        if cid not in out:
            out.append(cid)

    for cid in sorted(cases):
        why = ok(cid)
        if why is None:
            add(cid)
        elif "vw_command" in cases[cid]:
            keeps_out.setdefault(why, []).append(cid)
    return out, keeps_out


def compare_output(produced: str, mine: str, reference: str) -> str | None:
    """VW's comparison of one output with its reference (None: the same): stderr by its ``average
    loss`` (the table around it differs by design), every other file token by token with VW's fuzzy
    rule (``same_tokens``); stdout without VW's console diagnostics (``[info]``, ``[warning]``, ``[error]``
    lines), which are not outputs (what is left is --audit's)."""
    if produced == "stdout":
        mine, reference = (_without_diagnostics(t) for t in (mine, reference))
    if produced == "stderr":
        want = [line for line in reference.splitlines() if line.startswith("average loss")]
        if not want:
            return None
        got = [line for line in mine.splitlines() if line.startswith("average loss")]
        if not got:
            return "stderr has no average loss"
        a, b = got[0].split("=")[1].split()[0], want[0].split("=")[1].split()[0]
        try:
            return None if fuzzy_equal(a, b) else f"average loss {a} against {b}"
        except ValueError:
            return None if a == b else f"average loss {a} against {b}"
    try:
        same_tokens(mine, reference)
    except AssertionError as exc:
        return f"{produced}: {str(exc)[:120]}"
    return None


def _without_diagnostics(text: str) -> str:
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith(("[info]", "[warning]", "[error]", "[critical]")))


def run_suite_case(test: Path, case: dict) -> str | None:
    """Run one test's ``vw_command`` as ``streamlearn train`` in ``test`` (the caller's working folder)
    and compare what it names; None when it passes, else why not (one line)."""
    from click.testing import CliRunner
    from streamlearn.cli import main
    res = CliRunner().invoke(main, ["train", *shlex.split(case["vw_command"])])
    if res.exit_code != 0:
        lines = [line for line in res.stderr.splitlines() if line.strip()] or [repr(res.exception)]
        return f"exit {res.exit_code}: {lines[-1][:160]}"
    for produced, reference in case.get("diff_files", {}).items():
        mine = res.stderr if produced == "stderr" else res.stdout if produced == "stdout" else None
        if mine is None:
            path = test / produced
            if not path.is_file():
                return f"{produced} was not written"
            mine = path.read_text(errors="replace")
        why = compare_output(produced, mine, (test / reference).read_text(errors="replace"))
        if why is not None:
            return why
    return None


def run_suite(test: Path, only=None) -> tuple[dict, dict]:
    """Run every test in scope (``only``: those ids and their dependencies) from ``test``: (id -> None
    or why it failed, option -> ids it keeps out). A test whose dependency failed fails too."""
    import os
    cases = load_cases(test)
    order, keeps_out = scope(cases, test)
    if only is not None:
        wanted = set()

        def need(cid):
            wanted.add(cid)
            for dep in cases[cid].get("depends_on", []):
                need(dep)
        for cid in only:
            need(cid)
        order = [cid for cid in order if cid in wanted]
    results = {}
    here = os.getcwd()
    os.chdir(test)
    try:
        for cid in order:
            failed = [d for d in cases[cid].get("depends_on", []) if results.get(d)]
            results[cid] = (f"depends on test {failed[0]}, which fails" if failed
                            else run_suite_case(test, cases[cid]))
    finally:
        os.chdir(here)
    return results, keeps_out


#: the classes a test in scope is counted in (the first whose options it uses), for the report
CLASSES = (
    ("multiclass and cost-sensitive", ("--oaa", "--csoaa", "--multilabel_oaa", "--named_labels", "--csoaa_ldf",
                                       "--wap_ldf")),
    ("FTRL and parameter-free", ("--ftrl", "--coin", "--pistol", "--freegrad")),
    ("input formats", ("--csv", "--json", "--affix", "--dictionary", "--interact")),
    ("readable models, audit", ("--readable_model", "--invert_hash", "--audit", "--audit_regressor")),
    ("model files (-i, -f, --feature_mask)", ("-i", "-f", "--feature_mask", "--initial_regressor")),
)
DEFAULT_CLASS = "gd: rules, losses, regularization, run options"


def class_of(case: dict) -> str:
    """The class a test is counted in (``CLASSES``)."""
    args = {a.split("=")[0] for a in shlex.split(case.get("vw_command", ""))}
    return next((name for name, flags in CLASSES if args & set(flags)), DEFAULT_CLASS)


def report(results: dict, keeps_out: dict, most: int = 25, cases: dict | None = None) -> str:
    """The suite's figures as text: in scope, passed, failed (each with why), with ``cases`` the
    count per class (``CLASSES``), and the options keeping the most tests out."""
    failed = {cid: why for cid, why in results.items() if why}
    lines = [f"in scope: {len(results)}; passed: {len(results) - len(failed)}; failed: {len(failed)}"]
    lines += [f"  test {cid}: {why}" for cid, why in sorted(failed.items())]
    if cases is not None:
        lines.append("by class (in scope / passed):")
        for name in [n for n, _ in CLASSES] + [DEFAULT_CLASS]:
            ids = [cid for cid in results if class_of(cases[cid]) == name]
            lines.append(f"  {name}: {len(ids)} / {sum(1 for cid in ids if not results[cid])}")
    lines.append("options keeping tests out (tests):")
    ranked = sorted(keeps_out.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    lines += [f"  {name}: {len(ids)}" for name, ids in ranked[:most]]
    return "\n".join(lines)


if __name__ == "__main__":      # python tests/support/vwsuite.py: the whole report
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        test_dir = extract_all(Path(tmp))
        print(report(*run_suite(test_dir), cases=load_cases(test_dir)))
