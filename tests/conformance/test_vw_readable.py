"""VW's readable models and --invert_hash files (issue 27): streamlearn writes VW's header (Version,
Id, the labels' bounds, bits, lda, n-grams, skips, VW's options line, VW's checksum), ``:1`` and the
save_resume block from the run's counters (``:0`` with --predict_only_model), then the weight lines,
checked against VW 9.11.9 itself on VW command lines (every line but the Version, token by token by
VW's rule); and --audit over the passes of a cached run against VW's own --audit."""

from __future__ import annotations

import re
import shlex

import pytest

from support import vwsuite
from support.helpers import cli

#: VW command lines over the suite's 0001.dat / 0002_25.dat: the default rule and its flags, --sgd with
#: the rate options VW keeps, passes with a holdout, interactions, n-grams and skips, the namespaces
#: VW merges, --oaa (VW prints class 1's normalizer), ftrl and coin, --quiet and not, -b and --link
COMMANDS = [
    "-d train-sets/0002_25.dat",
    "-d train-sets/0002_25.dat --quiet",
    "-d train-sets/0002_25.dat --sgd -l 0.3 --power_t 0.4",
    "-d train-sets/0002_25.dat --sgd -l 0.3 --predict_only_model",
    "-d train-sets/0002_25.dat --passes 2 -c -k",
    "-d train-sets/0001.dat --passes 3 -c -k --holdout_period 5 --quiet",
    "-d train-sets/0002_25.dat -q ab --noconstant --ngram 2 --ngram a3 --skips 1 --ignore_linear a",
    "-d train-sets/0001.dat --cubic abc --interactions ab -q :: --redefine a:=b --keep a --ignore c",
    "-d train-sets/0001.dat --invariant --hash all --hash_seed 5",
    "-d train-sets/0001.dat --normalized --noconstant",
    "-d train-sets/0001.dat --oaa 3 --indexing 1",
    "-d train-sets/0002_25.dat --ftrl --ftrl_alpha 0.1",
    "-d train-sets/0002_25.dat --coin",
    "-d train-sets/0002_25.dat --predict_only_model -b 10 --link logistic --binary",
]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    return vwsuite.extract(tmp_path_factory.mktemp("vwreadable"), (), ("0001.dat", "0002_25.dat"))[0]


def _without_version(text: str) -> str:
    lines = text.splitlines()
    assert re.fullmatch(r"Version \d+\.\d+\.\d+", lines[0]), lines[0]
    return "\n".join(lines[1:])


@pytest.mark.parametrize("command", COMMANDS)
def test_readable_model_is_vws(suite, command, monkeypatch):
    monkeypatch.chdir(suite)
    args = shlex.split(command)
    passes = "--passes" in args         # VW refuses --invert_hash with a cache
    names = [] if passes else ["--invert_hash", "{}.inv"]
    vwsuite.vw_run(suite, [*args, "--readable_model", "vw.txt", *[a.format("vw") for a in names]])
    cli("train", *args, "--readable_model", "sl.txt", *[a.format("sl") for a in names])
    for ours, theirs in (("sl.txt", "vw.txt"),) + (() if passes else (("sl.inv", "vw.inv"),)):
        mine, vw = (_without_version((suite / name).read_text()) for name in (ours, theirs))
        mine_lines, vw_lines = mine.splitlines(), vw.splitlines()
        assert len(mine_lines) == len(vw_lines), (ours, len(mine_lines), len(vw_lines))
        for a, b in zip(mine_lines, vw_lines):
            vwsuite.same_tokens(a, b)
    head = (suite / "sl.txt").read_text().splitlines()
    assert head[0] == "Version 9.11.2"
    assert head[10] == (":0" if "--predict_only_model" in args else ":1")


def test_audit_of_every_pass_is_vws(suite, monkeypatch):
    """-c --passes 2 --audit: the cached pass prints its audit too, as VW's does: the features of the
    example from the cache (in VW's order, only the constant named: VW's cache keeps no names), the
    weights before it is learned. The whole output equals VW's (labels 1 and 2: VW reads the suite's
    "1:1" labels by their numeric prefix, which streamlearn refuses, docs/vw.md)."""
    monkeypatch.chdir(suite)
    (suite / "cia.txt").write_text(
        "1 |s p^the_man w^the w^man |t p^un_homme w^un w^homme\n"
        "2 |s p^the_man w^the w^man |t p^le_homme w^le w^homme\n"
        "1 |s p^a_man w^a w^man |t p^un_homme w^un w^homme\n"
        "2 |s p^a_man w^a w^man |t p^le_homme w^le w^homme\n")
    args = ["-c", "-k", "--passes", "2", "-d", "cia.txt", "-q", "st", "--audit"]
    vw = vwsuite.vw_run(suite, args).stdout
    vw = "".join(line + "\n" for line in vw.splitlines() if not line.startswith("["))
    mine = cli("train", *args).stdout
    assert mine == vw
    lines = mine.splitlines()
    assert len(lines) == 16                      # 4 examples x 2 passes, a prediction and a feature line
    first, cached = lines[1:8:2], lines[9::2]
    for a, b in zip(first, cached):              # the same features; names only in the first pass
        ea, eb = a.strip().split("\t"), b.strip().split("\t")
        assert len(ea) == len(eb) == 16
        assert {e.split(":")[0] for e in eb} == {"", "Constant"}
        assert sorted(e.split(":")[1] for e in ea) == sorted(e.split(":")[1] for e in eb)


@pytest.mark.parametrize("first", ["", "--sgd -l 0.3", "--adaptive", "-q ab --power_t 0.4"])
@pytest.mark.parametrize("then", ["-t", ""])
def test_readable_model_after_i_is_vws(suite, first, then, monkeypatch):
    """A model trained by each (VW's with VW, ours with streamlearn), then -t or more training with -i
    and a readable model: VW's options line (the -i model's options as VW keeps them), the block
    (t counts the model's examples; -t writes the block too, with weight-only lines) and the weights."""
    monkeypatch.chdir(suite)
    data = ["-d", "train-sets/0002_25.dat"]
    vwsuite.vw_run(suite, [*data, *shlex.split(first), "-f", "vw.model", "--quiet"])
    cli("train", *data, *shlex.split(first), "-f", "sl.model", "--quiet")
    vwsuite.vw_run(suite, [*data, *shlex.split(then), "-i", "vw.model", "--readable_model", "vw.txt", "--quiet"])
    cli("train", *data, *shlex.split(then), "-i", "sl.model", "--readable_model", "sl.txt", "--quiet")
    mine, vw = (_without_version((suite / name).read_text()) for name in ("sl.txt", "vw.txt"))
    assert len(mine.splitlines()) == len(vw.splitlines())
    for a, b in zip(mine.splitlines(), vw.splitlines()):
        vwsuite.same_tokens(a, b)
