"""VW's low-rank quadratic features (issue 27): ``--lrq`` and ``--lrqfa`` over the sgd learner
(``streamlearn/features/lowrank.py``, ``streamlearn/core/lowrank.py``, the gathering in
``streamlearn/io/expand.py``).

The compiled loop is checked against a slow transcription of VW's lrq.cc and lrqfa.cc over the plain
``--sgd`` rule (dicts, one example at a time); the runs against VW 9.11.9 on generated data (squared and
logistic, several ranks, namespaces in either order, passes, the default rule); models keep the options
(-f, then -t -i and -i, and ``streamlearn predict``); bad values are one-line errors. The suite's tests 78
and 149 run in tests/conformance/test_vw_suite.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from support import vwsuite
from support.helpers import cli, read_predictions, vw_dataset, write_lines
from support.reference import dloss, loss_value

from streamlearn.features.hashing import constant_index, feature_index
from streamlearn.features.lowrank import parse_lrq, parse_lrqfa

F32 = np.float32


# ----------------------------------------------------------------------------- the slow reference

def _cheesyrand(x: int) -> float:
    """VW's cheesyrand: merand48 seeded with x, one draw (float32 in [0, 1)), as written in VW."""
    state = (0xEECE66D5DEECE66D * x + 2147483647) % (1 << 64)
    bits = ((state >> 25) & 0x7FFFFF) | (127 << 23)
    return float(np.array([bits], np.uint32).view(np.float32)[0] - F32(1.0))


def _parse(line: str, bits: int):
    """(label, importance, {namespace: [(index, value)]}, [(index, value)] in the example's order)."""
    head, *spaces = line.rstrip("\n").split("|")
    tokens = head.split()
    y, h = float(tokens[0]), float(tokens[1]) if len(tokens) > 1 else 1.0
    groups, own = {}, []
    for sp in spaces:
        ns, *feats = sp.split()
        for feat in feats:
            name, _, v = feat.partition(":")
            f = (feature_index(ns, name, bits), float(F32(v)) if v else 1.0)
            groups.setdefault(ns, []).append(f)
            own.append(f)
    own.append((constant_index(bits), 1.0))
    return y, h, groups, own


def reference(lines, bits: int, loss: str, lrq=(), lrqfa: str | None = None, eta: float = 0.5,
              dropout: bool = False, seed: int = 0):
    """-p predictions of ``--sgd`` (plain steps eta h t^-1/2 dloss x, t = 1 + the importance weights so far,
    none when the loss is 0) with VW's
    low-rank features, written from VW's lrq.cc / lrqfa.cc: per learned example two rounds (the left
    namespace of a pair by the example counter's parity, then the other), the latent weights of a left
    feature drawn by merand48 of their index when still 0, the second round predicting again; with
    --lrqfa, the second round's features of a namespace take the first round's indices (VW truncates
    values but not indices). With ``dropout`` (--lrqdropout) each (left feature, n) of a round takes part
    when merand48, seeded with seed | 8675309 and run on, draws more than 1/2."""
    if lrqfa is None:
        pairs = sorted(set(lrq))
        k_max = max(int(p[2:]) for p in pairs)
        width = 1 << math.ceil(math.log2(1 + k_max))
    else:
        fields, k = lrqfa.rstrip("0123456789"), int(lrqfa[len(lrqfa.rstrip("0123456789")):])
        fid = {c: i for i, c in enumerate(fields)}
        width = 1 << math.ceil(math.log2(1 + len(fields) * k))
    mask = (1 << bits) - 1
    w: dict[int, float] = {}
    lo, hi = (-50.0, 50.0) if loss == "logistic" else (0.0, 0.0)
    t = 1.0             # --sgd's initial_t (VW's); eta * initial_t^power_t = eta
    state = seed | 8675309
    preds = []
    for counter, line in enumerate(lines):
        y, h, groups, own = _parse(line, bits)
        if loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        base = [((i * width) & mask, v) for i, v in own]
        t += h
        first = []
        for it in range(2):
            which = counter + it
            gen = []        # (slot, value, namespace it goes to)
            if lrqfa is None:
                rounds = [(p[which % 2], p[(which + 1) % 2], int(p[2:]), 0, 0) for p in pairs]
            else:
                rounds = []
                for a in range(len(fields)):
                    for b in range(a + 1, len(fields)):
                        left, right = (fields[a], fields[b]) if which % 2 else (fields[b], fields[a])
                        rounds.append((left, right, k, fid[right] * k, fid[left] * k))
            for left, right, kk, wb, fb in rounds:
                for li, lx in groups.get(left, []):
                    for n in range(1, kk + 1):
                        if dropout:
                            state = (0xEECE66D5DEECE66D * state + 2147483647) % (1 << 64)
                            bits32 = ((state >> 25) & 0x7FFFFF) | (127 << 23)
                            if not np.array([bits32], np.uint32).view(np.float32)[0] - F32(1.0) > 0.5:
                                continue
                        slot = (li * width + wb + n) & mask
                        if w.get(slot, 0.0) == 0.0:
                            r = _cheesyrand(li * width + wb + n)
                            w[slot] = float(F32(F32(r * F32(0.5)) / F32(math.sqrt(kk)))) if lrqfa else r
                        lw = F32(w[slot])
                        for ri, rx in groups.get(right, []):
                            gen.append(((ri * width + fb + n) & mask, float(F32(F32(lw * F32(lx)) * F32(rx))),
                                        right))
            if lrqfa is not None and it == 1:
                for ns in {g[2] for g in gen}:
                    old = [g[0] for g in first if g[2] == ns]
                    mine = [j for j, g in enumerate(gen) if g[2] == ns]
                    new = [gen[j][0] for j in mine]
                    for r, j in enumerate(mine):
                        gen[j] = (old[r] if r < len(old) else new[r - len(old)],) + gen[j][1:]
            if it == 0:
                first = gen
            feats = base + [(s, v) for s, v, _ in gen]
            p = min(max(sum(w.get(s, 0.0) * v for s, v in feats), lo), hi)
            if it == 0:
                preds.append(p)
            if loss_value(loss, p, y, 0.5, lo, hi) > 0:
                g = dloss(loss, p, y, 0.5) * eta * h * t ** -0.5
                for s, v in feats:
                    w[s] = w.get(s, 0.0) - g * v
    return np.array(preds)


def _data(tmp_path, n=120, seed=3, real=False):
    lines = vw_dataset(n, seed=seed, namespaces="abc", vocab=12, weighted=False)
    if real:        # real labels in [0, 3] for squared loss
        rng = np.random.default_rng(seed)
        lines = [f"{rng.uniform(0, 3):.2f}" + line[line.index(" "):] for line in lines]
    return write_lines(tmp_path / "d.vw", lines), lines


@pytest.mark.parametrize("loss, opts", [
    ("squared", ("--lrq", "ab2")),
    ("logistic", ("--lrq", "ab2", "--lrq", "ca1", "--lrqdropout", "--random_seed", "5")),
    ("logistic", ("--lrq", "ba3", "--lrq", "cc1")),
    ("squared", ("--lrqfa", "ab2")),
    ("logistic", ("--lrqfa", "abc2")),
])
def test_kernel_matches_reference(tmp_path, loss, opts):
    path, lines = _data(tmp_path, real=loss == "squared")
    cli("train", "-d", path, "--sgd", "-l", 0.05, "--loss", loss, "-b", 16, *opts, "-p", tmp_path / "p", "--quiet")
    lrq = [opts[i + 1] for i in range(len(opts) - 1) if opts[i] == "--lrq"]
    lrqfa = opts[1] if opts[0] == "--lrqfa" else None
    seed = int(opts[opts.index("--random_seed") + 1]) if "--random_seed" in opts else 0
    want = reference(lines, 16, loss, lrq=lrq, lrqfa=lrqfa, eta=0.05, dropout="--lrqdropout" in opts, seed=seed)
    got = read_predictions(tmp_path / "p")
    assert np.abs(want).max() > 0.05
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)      # -p prints 6 decimals


# ----------------------------------------------------------------------------- the options

def test_parsed_pairs():
    low = parse_lrq(["ba2", "ab3", "ab3"])            # VW's set: sorted, repeats dropped
    assert low.namespaces == b"ab" and low.width == 4 and not low.field_aware
    assert low.table[:, :3].tolist() == [[0, 1, 3], [1, 0, 2]]
    fa = parse_lrqfa("abc2")                           # pairs ab, ac, bc; W = 8 >= 1 + 3 * 2
    assert fa.width == 8 and fa.field_aware and len(fa.table) == 3
    assert fa.table[0].tolist() == [0, 1, 2, 2, 0, 0, 2, 1, 1]
    assert parse_lrqfa("aa3").width == 8 and parse_lrq([r"\x41b1"]).namespaces == b"Ab"


@pytest.mark.parametrize("opts, message", [
    (("--lrq", "a"), "Error: --lrq a: low-rank quadratic features must involve two namespaces and a rank "
                     "(--lrq ab3)"),
    (("--lrq", "abx"), "Error: --lrq abx: low-rank quadratic features must involve two namespaces and a rank "
                       "(--lrq ab3)"),
    (("--lrq", "ab0"), "Error: --lrq ab0: the rank must be at least 1"),
    (("--lrq", "a:2"), "Error: --lrq does not support wildcards ':'"),
    (("--lrqfa", "ab"), "Error: --lrqfa ab: field-aware low-rank features need two or more namespaces and a "
                        "rank of at least 1 (--lrqfa abc2)"),
    (("--lrq", "ab2", "--lrqfa", "ab2"), "Error: --lrq and --lrqfa cannot be used together"),
    (("--lrq", "ab2", "--algo", "ftrl"), "Error: --lrq does not apply to --algo ftrl; low-rank features run "
                                         "over --algo sgd (VW's gd)"),
    (("--lrq", "ab2", "--oaa", "3"), "Error: --lrq does not apply to --oaa, --csoaa or --multilabel_oaa"),
    (("--lrq", "ab2", "-q", "bc"), "Error: --lrq's namespaces cannot be in -q/--cubic/--interactions terms "
                                   "(VW would interact the low-rank features too)"),
    (("--lrqfa", "ab2", "--ngram", "a2"), "Error: --lrqfa's namespaces cannot take --ngram or --feature_limit"),
    (("--lrqdropout",), "Error: --lrqdropout needs --lrq"),
    (("--lrq", "ab2", "--audit"), "Error: -a/--audit does not apply to --lrq (it reads the examples' own "
                                  "features, not the low-rank ones)"),
    (("--lrqfa", "ab2", "--invert_hash", "x"), "Error: --invert-hash does not apply to --lrqfa (it reads the "
                                               "examples' own features, not the low-rank ones)"),
    (("--lrqfa", "ab2", "--lrqdropout"), "Error: --lrqdropout applies to --lrq, not --lrqfa"),
])
def test_bad_values_are_one_line_errors(tmp_path, opts, message):
    path, _ = _data(tmp_path, n=5)
    res = cli("train", "-d", path, *opts, "--quiet", expect_ok=False)
    assert res.exit_code != 0
    assert res.output.strip() == message


# ----------------------------------------------------------------------------- VW 9.11.9 itself

@pytest.mark.parametrize("opts", [
    ("--lrq", "ab2"),
    ("--lrq", "ba3", "--lrq", "ca2", "--loss_function", "logistic"),
    ("--lrq", "ab1", "-q", "cc"),
    ("--lrqfa", "ab2"),
    ("--lrqfa", "abc2", "--loss_function", "logistic"),
    ("--lrqfa", "cab1", "--loss_function", "logistic", "--link", "logistic"),
    ("--lrq", "ab2", "--passes", "3", "-c", "-k"),
    ("--lrq", "ab2", "--sgd", "-l", "0.05"),
    ("--lrq", "ab2", "--lrq", "ca1", "--lrqdropout", "--random_seed", "3"),
    ("--lrq", "ba2", "--lrqdropout", "--passes", "2", "-c", "-k", "--loss_function", "logistic"),
])
def test_against_vw(tmp_path, opts):
    path, _ = _data(tmp_path, n=200)
    vwsuite.vw_run(tmp_path, ["-d", path, *opts, "-p", "vw.p", "--quiet"])
    cli("train", "-d", path, *opts, "-p", tmp_path / "p", "--quiet")
    vwsuite.same_tokens((tmp_path / "p").read_text(), (tmp_path / "vw.p").read_text())


@pytest.mark.parametrize("drop", [(), ("--lrqdropout",)])
def test_model_keeps_the_pairs(tmp_path, drop):
    """-f keeps --lrq (and --lrqdropout: -t then halves the latent weights): -t -i and -i (its latent
    weights go on learning) give VW's predictions, as does ``streamlearn predict``; a -i run given other
    pairs is refused."""
    path, lines = _data(tmp_path, n=200)
    train, test = write_lines(tmp_path / "a.vw", lines[:140]), write_lines(tmp_path / "b.vw", lines[140:])
    vwsuite.vw_run(tmp_path, ["-d", train, "--lrq", "ab2", "--lrq", "cc1", *drop, "-f", "vw.m", "--quiet"])
    vwsuite.vw_run(tmp_path, ["-d", test, "-t", "-i", "vw.m", "-p", "vw.t", "--quiet"])
    vwsuite.vw_run(tmp_path, ["-d", test, "-i", "vw.m", "-p", "vw.r", "--quiet"])
    cli("train", "-d", train, "--lrq", "ab2", "--lrq", "cc1", *drop, "-f", tmp_path / "m", "--quiet")
    cli("train", "-d", test, "-t", "-i", tmp_path / "m", "-p", tmp_path / "t", "--quiet")
    cli("train", "-d", test, "-i", tmp_path / "m", "-p", tmp_path / "r", "--quiet")
    cli("predict", "-i", tmp_path / "m", "-d", test, "-p", tmp_path / "q")
    for mine, theirs in (("t", "vw.t"), ("r", "vw.r"), ("q", "vw.t")):
        vwsuite.same_tokens((tmp_path / mine).read_text(), (tmp_path / theirs).read_text())
    res = cli("train", "-d", test, "-i", tmp_path / "m", "--lrq", "ab3", "--quiet", expect_ok=False)
    assert res.output.strip() == "Error: --lrq ab3 conflicts with the initial model's --lrq ab2 cc1"


def test_gathered_groups_match_a_plain_grouping():
    """``lowrank_groups`` against a plain grouping: each example's features of each low-rank namespace,
    in stored order, those of an --ignore'd namespace left out."""
    from streamlearn.io.expand import lowrank_groups
    rng = np.random.default_rng(7)
    n = 40
    counts = rng.integers(0, 9, n)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    total = int(indptr[-1])
    ns = rng.choice(np.frombuffer(b"abcd\x80", np.uint8), total).astype(np.uint8)
    idx = rng.integers(0, 1 << 16, total).astype(np.uint32)
    val = rng.normal(size=total).astype(np.float32)
    spaces = b"dab"                         # groups 0, 1, 2; 'b' ignored
    group = np.full(256, -1, np.int64)
    for j, b in enumerate(spaces):
        group[b] = j
    keep = np.ones(256, np.uint8)
    keep[ord("b")] = 0
    m = len(spaces)
    ptr = np.empty(n * m + 1, np.int64)
    out_i = np.empty(total, np.uint32)
    out_v = np.empty(total, np.float32)
    used = lowrank_groups(indptr, ns, idx, val, n, group, keep, m, ptr, out_i, out_v)
    assert used == int(ptr[-1])
    for e in range(n):
        for j, b in enumerate(spaces):
            want = [(int(idx[q]), float(val[q])) for q in range(indptr[e], indptr[e + 1])
                    if ns[q] == b and b != ord("b")]
            got = list(zip(out_i[ptr[e * m + j]:ptr[e * m + j + 1]].tolist(),
                           out_v[ptr[e * m + j]:ptr[e * m + j + 1]].tolist()))
            assert got == [(i, float(np.float32(v))) for i, v in want]


def test_vw_model_files_keep_the_pairs(tmp_path):
    """A VW model of an --lrq run predicts VW's numbers with -i, and --vw-model-out writes one that VW
    9.11.9 reads back with the pairs (its options) and predicts identically; readable models name them."""
    path, lines = _data(tmp_path, n=160)
    train, test = write_lines(tmp_path / "a.vw", lines[:120]), write_lines(tmp_path / "b.vw", lines[120:])
    opts = ("--lrq", "ab2", "--lrq", "cc1", "--lrqdropout")
    vwsuite.vw_run(tmp_path, ["-d", train, *opts, "-f", "vw.m", "--readable_model", "vw.rm", "--quiet"])
    vwsuite.vw_run(tmp_path, ["-d", test, "-t", "-i", "vw.m", "-p", "vw.t", "--quiet"])
    cli("train", "-d", test, "-t", "-i", tmp_path / "vw.m", "-p", tmp_path / "t", "--quiet")
    vwsuite.same_tokens((tmp_path / "t").read_text(), (tmp_path / "vw.t").read_text())
    cli("train", "-d", train, *opts, "--vw-model-out", tmp_path / "mine.vwm", "--readable-model", tmp_path / "rm",
        "--quiet")
    vwsuite.vw_run(tmp_path, ["-d", test, "-t", "-i", "mine.vwm", "-p", "vw.mine", "--quiet"])
    vwsuite.same_tokens((tmp_path / "vw.mine").read_text(), (tmp_path / "vw.t").read_text())
    options = [line for line in (tmp_path / "rm").read_text().splitlines() if line.startswith("options:")]
    assert options == [line for line in (tmp_path / "vw.rm").read_text().splitlines() if line.startswith("options:")]
