"""Conformance of streamlearn's compiled VW-format parser with Vowpal Wabbit 9.11.9's ``--audit`` output.

Every case below is a small piece of VW text (one line, or a few lines). All cases are written into
one data file per VW option set, each case preceded by a sentinel line ``'zzsep<N>`` (a feature-less
example whose tag marks the start of case N). VW runs once per option set with
``-t --audit``; its stdout holds, per example, a prediction line ``<prediction>[ <tag>]`` and a
TAB-separated line of ``name:index:value:weight`` entries. streamlearn's ``parse_block`` reads the
same bytes. Both example streams are cut at the sentinels and compared case by case: the number of
examples, and per example the tag, the multiset of (index, value) pairs (VW orders audit entries by
|w*x|, so both sides are sorted) and, where the label part is well formed, the base (initial
prediction): with ``-t`` and no model every weight is 0, so VW's prediction is the base, and
``--min_prediction/--max_prediction`` keep it from being clamped.

A second test writes ~200 random well-formed lines (fixed seed) into one file, without sentinels and
without a final newline, and compares every example in order.

A known disagreement with VW would be kept as an ``xfail(strict=True)`` case (run with the default
options only), so that it stays documented and the test notices when it gets fixed; there are none.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

pytest.importorskip("vowpalwabbit")

from support.helpers import text_buffer  # noqa: E402
from streamlearn.io.blocks import FMT_VW, parse_block  # noqa: E402

VW = [sys.executable, "-m", "vowpalwabbit"]
VW_COMMON = ["-t", "--quiet", "--audit", "--min_prediction", "-1e6", "--max_prediction", "1e6"]
VW_TIMEOUT = 120


@dataclass(frozen=True)
class Options:
    vw_args: tuple
    bits: int
    noconstant: bool
    hash_seed: int
    hash_mode: int          # 0 = --hash strings (VW's default), 1 = --hash all


OPTION_SETS = {
    "b18": Options(("-b", "18"), 18, False, 0, 0),
    "b24-noconstant": Options(("-b", "24", "--noconstant"), 24, True, 0, 0),
    "b7": Options(("-b", "7"), 7, False, 0, 0),
    "hash-all": Options(("-b", "18", "--hash", "all"), 18, False, 0, 1),
    "seed5": Options(("-b", "18", "--hash_seed", "5"), 18, False, 5, 0),
    "hash-all-seed5-b24": Options(("-b", "24", "--hash", "all", "--hash_seed", "5"), 24, False, 5, 1),
}


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes
    check_base: bool = True     # False for lines whose label part is malformed (only features compared)
    xfail: str | None = None    # reason, for a known disagreement with VW


def C(id, data, check_base=True, xfail=None):
    return Case(id, data.encode("utf-8") if isinstance(data, str) else data, check_base, xfail)


CASES = [
    # --- namespaces
    C("default-ns", b"1 | x y z"),
    C("default-ns-unlabeled", b"| x y"),
    C("named-ns", b"1 |a x y"),
    C("several-ns", b"1 |a x |b y |ns z w"),
    C("repeated-ns", b"1 |a x |b x |a x y |a y"),
    C("double-bar", b"1 |a x || y"),
    C("double-bar-then-name", b"1 |a x ||b y"),
    C("bars-only", b"1 |||"),
    C("bar-without-space", b"1 |a x|b y|c z"),
    C("trailing-bar", b"1 |a x |"),
    C("ns-without-features", b"1 |a |b |c x"),
    C("ns-value", b"1 |a:2 x y:3"),
    C("ns-value-signs-exponents", b"1 |a:-0.5 x y:4 |b:1e1 z |c:+2 w |d:.5 v"),
    C("ns-value-zero-drops-ns", b"1 |a:0 x y:3 |b z"),
    C("ns-value-after-space", b"1 |a: 2 x y:3"),
    C("ns-value-string-feature", b"1 |a:3 x:abc y"),
    C("numeric-ns", b"1 |123 x 5 |007 y |0 z"),
    C("special-ns-names", b'1 |^ x |# y |= z |" w |\' v'),
    C("utf8-ns", "1 |é x |日本 y |café z"),
    # --- feature names
    C("numeric-names", b"1 |a 123 0 4294967297 18446744073709551617"),
    C("numeric-names-default-ns", b"1 | 007 7 00 0 123"),
    C("number-like-names", b"1 |a -5 1.5 1e3 +7 12a a12 0x1"),
    C("anonymous", b"1 |a :3 :4"),
    C("anonymous-default-ns-mixed", b"1 | :1 :2 x :3"),
    C("anonymous-counter-per-ns", b"1 |a :3 |a :5 :6 |b :7"),
    C("anonymous-zero-still-counts", b"1 |a :0 :2"),
    C("anonymous-ns-value", b"1 |a:2 :3 x"),
    C("duplicates", b"1 |a x x x:2 |a x | x x"),
    C("utf8-names", "1 |a café naïve 日本語 Ω"),
    C("special-chars-in-names", b'1 |a x^y a=b #c "q" \'p w\' ^ = \'\''),
    C("feature-named-Constant", b"1 | Constant |a Constant"),
    C("many-features", b"1 |a " + b" ".join(b"f%d:%d" % (i, i + 1) for i in range(60))),
    # --- feature values
    C("string-values", "1 |a x:abc y:a1 z:_ w:café"),
    C("string-value-default-ns", b"1 | x:abc"),
    C("string-value-plus", b"1 |a 5:abc x:+ z:+e"),
    C("string-value-numeric-after-tab", b"1 |a x:\t2 y"),
    C("string-value-holds-colon", b"1 |a x: y:2 z"),
    C("string-value-holds-bar", b"1 |a x:|b y"),
    C("string-value-after-spaces-holds-bar", b"1 |a x:  |b y"),
    C("value-after-space", b"1 |a x: 2 y:  3 z"),
    C("string-value-after-space", b"1 |a x: y w"),
    C("empty-value-at-end-of-line", b"1 |a y x:"),
    C("value-then-bar", b"1 |a x:5|b y"),
    C("numbers", b"1 |a x:1e2 y:-.5 z:+3"),
    C("numbers-forms", b"1 |a x:1E-2 y:.25 z:2. w:+.5 v:.5e1 u:1e t:3e+1 s:-2e-1 r:1e-37"),
    C("zero-values-dropped", b"1 |a x:0 y:-0 z:0.0 w:0e5 v:.0 u:2"),
    C("values-precision", b"1 |a x:3.14159265358979 y:123456789 z:1e-30 w:1e38 v:0.1 u:-7.25e-5"),
    C("integer-values", b"1 |a x:007 y:-12 z:4294967297"),
    # --- label part and tags
    C("tag-quote", b"1 'tag |a x"),
    C("tag-touching-bar", b"1 2 tag|a x"),
    C("tag-only", b"'tag |a x"),
    C("tag-touching-bar-unlabeled", b"tag|a x"),
    C("label-touching-bar-is-tag", b"1|a x"),
    C("tag-full-label", b"1 2 0.5 'tg |a x"),
    C("tag-empty", b"1 ' |a x"),
    C("tag-quote-inside", b"'t'q |a x"),
    C("tag-quote-touching-bar", b"1 'tg|a x"),
    C("tag-utf8", "1 'été |a x"),
    C("no-bar-tag", b"1"),
    C("no-bar-label-and-tag", b"1 2"),
    C("no-bar-quoted-tag", b"1 'abc"),
    C("label-extra-spaces", b"  1   2  't   |a x"),
    C("base", b"1 2.5 -3 't |a x"),
    C("base-exponents", b"1 1e1 1.5e-1 |a x"),
    C("importance-zero", b"-1 0 |a x"),
    # --- separators and line endings
    C("tabs-between-features", b"1 |a\tx\ty:2\t\tz"),
    C("tabs-between-namespaces", b"1 |a x\t|b\ty"),
    C("tab-after-bar", b"1 |\tx y"),
    C("tab-in-label-part", b"junk here\t1 't |a x"),
    C("tab-in-label-part-2", b"1\t2 3 |a x"),
    C("tab-in-label-part-tag-touching", b"x\t1 tg|a x"),
    C("trailing-spaces", b"1 |a x   "),
    C("trailing-tab-and-spaces", b"1 |a x \t "),
    C("crlf", b"1 |a x y:2\r\n"),
    C("crlf-tag-touching-bar", b"1 tg|a x\r\n"),
    C("crlf-no-bar", b"1 'abc\r\n"),
    C("crlf-value-and-string-at-end", b"1 |a x:2\r\n1 |a x:abc\r\n1 |a\r\n"),
    C("crlf-multi-with-blank", b"1 |a x\r\n2 |b y:3\r\n\r\n3 't |c z\r\n"),
    C("empty-lines", b"\n\n1 |a x\n\n\n"),
    C("spaces-only-line", b"   "),
    C("utf8-bom", b"\xef\xbb\xbf1 |a x"),
    # --- malformed feature parts where streamlearn is documented to behave like VW
    C("malformed-comma-value", b"1 |a x:1,5 y |b z"),
    C("malformed-bar-colon", b"1 |a x |:x y |b z"),
    C("malformed-trailing-junk", b"1 |a w x:1e5abc y"),
    # --- malformed label parts: the features are still read (the label is lost in both)
    C("label-fault-tag-read-as-weight", b"1 tag |a x", check_base=False),
    C("label-fault-too-many-tokens", b"1 2 3 4 |a x", check_base=False),
    C("label-fault-not-a-number", b"abc 't |a x", check_base=False),
    C("label-fault-negative-weight", b"1 -2 |a x", check_base=False),
    C("hash-is-not-a-comment", b"# comment |a x", check_base=False),
    # --- VW's number reader: digit-less "numbers" are 0, tiny exponents underflow, strtof fallback
    C("digitless-value-minus", b"1 |a x:- y"),
    C("digitless-value-dot", b"1 |a x:. y"),
    C("digitless-value-exponent", b"1 |a x:e5 y"),
    C("digitless-value-at-end", b"1 |a y x:-"),
    C("empty-value-trailing-space", b"1 |a y x: "),
    C("value-spaces-then-tab", b"1 |a x:  \t2 y"),
    C("tiny-value-subnormal", b"1 |a x:1e-40 y"),
    C("tiny-value-normal-float", b"1 |a x:5e-38 y z:1e-37"),
    C("hex-value", b"1 |a x:0x10 y |b z:0x1p3 w:0X.8"),
    C("digitless-namespace-value", b"1 |a:- x |b y"),
]

assert len({c.id for c in CASES}) == len(CASES)

SENTINEL = re.compile(rb"^zzsep(\d+)$")


# --------------------------------------------------------------------------- running both sides

@dataclass
class Example:
    tag: bytes
    pred: float                 # VW: the printed prediction; streamlearn: the base
    feats: list                 # sorted [(index, value)]
    names: list | None = None   # VW only: audit entries, for messages

    def show(self) -> str:
        entries = self.names if self.names is not None else [f"{i}:{v:g}" for i, v in self.feats]
        return f"tag={self.tag!r} pred/base={self.pred:g} [{', '.join(entries)}]"


def _vw_available() -> bool:
    try:
        r = subprocess.run(VW + ["--version"], capture_output=True, timeout=VW_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def run_vw(path, opts: Options) -> list[Example]:
    cmd = VW + ["-d", str(path)] + VW_COMMON + list(opts.vw_args)
    r = subprocess.run(cmd, capture_output=True, timeout=VW_TIMEOUT)
    assert r.returncode == 0, f"{cmd} failed:\n{r.stderr.decode(errors='replace')}"
    lines = r.stdout.split(b"\n")
    assert lines[-1] == b"", "VW output does not end with a newline"
    lines = lines[:-1]
    assert len(lines) % 2 == 0, f"odd number of VW audit lines:\n{r.stdout[-2000:]!r}"
    out = []
    for k in range(0, len(lines), 2):
        pred_line, feat_line = lines[k], lines[k + 1]
        pred, _, tag = pred_line.partition(b" ")
        feats, names = [], []
        if feat_line:
            assert feat_line.startswith(b"\t"), f"unexpected audit line {feat_line!r}"
            for entry in feat_line[1:].split(b"\t"):
                name, index, value, _weight = entry.rsplit(b":", 3)
                feats.append((int(index), float(value)))
                names.append(f"{name.decode('utf-8', 'backslashreplace')}:{int(index)}:{value.decode()}")
        out.append(Example(tag, float(pred), sorted(feats), names))
    return out


def run_streamlearn(data: bytes, opts: Options) -> list[Example]:
    b = parse_block("conformance", text_buffer(data), 1, FMT_VW, (1 << opts.bits) - 1, opts.noconstant,
                    opts.hash_seed, opts.hash_mode)
    tags = b.tag_list()
    out = []
    for e in range(b.n):
        s, t = int(b.indptr[e]), int(b.indptr[e + 1])
        feats = sorted(zip(b.idx[s:t].tolist(), b.val[s:t].astype(float).tolist()))
        out.append(Example(tags[e], float(b.bases[e]), feats))
    return out


def split_at_sentinels(examples: list[Example]) -> dict[int, list[Example]]:
    groups: dict[int, list[Example]] = {}
    current = None
    for ex in examples:
        m = SENTINEL.match(ex.tag)
        if m:
            current = int(m.group(1))
            assert current not in groups, f"sentinel {current} seen twice"
            groups[current] = []
        else:
            assert current is not None, f"example before the first sentinel: {ex.show()}"
            groups[current].append(ex)
    return groups


def compare(vw: list[Example], sl: list[Example], check_base: bool) -> list[str]:
    """Differences between VW's and streamlearn's examples (empty if they agree)."""
    problems = []
    if len(vw) != len(sl):
        return [f"number of examples: VW {len(vw)}, streamlearn {len(sl)}"]
    for k, (a, b) in enumerate(zip(vw, sl)):
        if a.tag != b.tag:
            problems.append(f"example {k}: tag VW {a.tag!r} != streamlearn {b.tag!r}")
        if [i for i, _ in a.feats] != [i for i, _ in b.feats] or not all(
                math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-37) for (_, x), (_, y) in zip(a.feats, b.feats)):
            problems.append(f"example {k}: features differ")
        if check_base and not math.isclose(a.pred, b.pred, rel_tol=1e-5, abs_tol=1e-5):
            problems.append(f"example {k}: VW prediction {a.pred:g} != streamlearn base {b.pred:g}")
    return problems


def report(title: str, text: bytes, vw: list[Example], sl: list[Example], problems: list[str]) -> str:
    lines = [title, f"input: {text!r}", *problems, "VW:"]
    lines += [f"  {ex.show()}" for ex in vw]
    lines.append("streamlearn:")
    lines += [f"  {ex.show()}" for ex in sl]
    return "\n".join(lines)


# --------------------------------------------------------------------------- grammar cases

def build_case_file(cases) -> bytes:
    parts = []
    for n, case in enumerate(cases):
        parts.append(b"'zzsep%d\n" % n)
        parts.append(case.data if case.data.endswith(b"\n") else case.data + b"\n")
    return b"".join(parts)


@pytest.fixture(scope="module")
def vw_ok():
    if not _vw_available():
        pytest.skip("`python -m vowpalwabbit` is not runnable")


@pytest.fixture(scope="module")
def case_results(vw_ok, tmp_path_factory):
    """option-set name -> (VW examples per case, streamlearn examples per case), computed lazily."""
    cache = {}
    data = build_case_file(CASES)
    path = tmp_path_factory.mktemp("vw_audit") / "cases.vw"
    path.write_bytes(data)

    def get(opt_name):
        if opt_name not in cache:
            opts = OPTION_SETS[opt_name]
            vw = split_at_sentinels(run_vw(path, opts))
            sl = split_at_sentinels(run_streamlearn(data, opts))
            assert sorted(vw) == list(range(len(CASES))), "VW lost a sentinel"
            assert sorted(sl) == list(range(len(CASES))), "streamlearn lost a sentinel"
            cache[opt_name] = (vw, sl)
        return cache[opt_name]

    return get


def _params():
    params = []
    for opt_name in OPTION_SETS:
        for n, case in enumerate(CASES):
            if case.xfail:
                if opt_name != "b18":
                    continue
                marks = [pytest.mark.xfail(strict=True, reason=case.xfail)]
            else:
                marks = []
            params.append(pytest.param(opt_name, n, id=f"{opt_name}-{case.id}", marks=marks))
    return params


@pytest.mark.parametrize("opt_name, n", _params())
def test_case_matches_vw_audit(case_results, opt_name, n):
    case = CASES[n]
    vw_groups, sl_groups = case_results(opt_name)
    vw, sl = vw_groups[n], sl_groups[n]
    problems = compare(vw, sl, case.check_base)
    assert not problems, report(f"case {case.id!r}, VW options {' '.join(OPTION_SETS[opt_name].vw_args)}",
                                case.data, vw, sl, problems)


def test_cases_yield_examples(case_results):
    """Guard against a vacuous comparison: most cases must give examples with features."""
    vw, _ = case_results("b24-noconstant")
    with_features = sum(1 for n in vw if any(ex.feats for ex in vw[n]))
    assert with_features >= len(CASES) - 10


# --------------------------------------------------------------------------- randomized lines

NAMESPACES = ["", "a", "b", "ns", "12", "007", "é", "Q^"]
NAMES = ["x", "y", "foo", "123", "007", "0", "9", "café", "a^b", "=", "#h", '"q"', "'p", "Constant", "Ω"]
NUM_VALUES = ["1", "2", "-3", "0.5", "-.25", "+4", "1e2", "2.5E-3", "0", "-0", "3.", "007", "1e-5", "12345.678"]
STR_VALUES = ["abc", "zz", "ß", "Q9", "x_y", "abc:d", "|b", "5"]
NS_VALUES = ["2", "-0.5", "1e1", "0", "+3", ".5"]


def random_line(rng: random.Random) -> str:
    """One well-formed VW line: optional label/importance/base, optional tag, 0-4 namespaces."""
    tokens = []
    nlab = rng.choice([0, 0, 1, 1, 1, 2, 3])
    if nlab >= 1:
        tokens.append(rng.choice(["1", "-1", "0", "0.5", "3e1", "-2.25"]))
    if nlab >= 2:
        tokens.append(rng.choice(["1", "2", "0", "0.25", "1e1"]))
    if nlab >= 3:
        tokens.append(rng.choice(["0", "-3", "2.5", "1e-1"]))
    tag = "t%d" % rng.randrange(1000)
    tag_kind = rng.choice(["none", "none", "quote", "touch"])
    if tag_kind == "quote":
        tokens.append("'" + tag)
    label_part = " ".join(tokens)
    if rng.random() < 0.1:
        label_part = "junk\t" + label_part
    nns = rng.choice([0, 1, 1, 2, 2, 3, 4])
    if tag_kind == "touch":                      # the tag ends where the label part ends
        label_part += (" " if tokens else "") + tag
    elif label_part and nns:
        label_part += rng.choice([" ", "  "])
    line = label_part
    for k in range(nns):
        if k > 0:
            line += rng.choice([" ", " ", "\t", ""])
        ns = rng.choice(NAMESPACES)
        line += "|" + ns
        if ns and rng.random() < 0.2:
            line += ":" + rng.choice(NS_VALUES)
        for _ in range(rng.randrange(0, 6)):
            line += rng.choice([" ", " ", " ", "\t", "  "])
            r = rng.random()
            name = rng.choice(NAMES)
            if r < 0.1:
                line += ":" + rng.choice(NUM_VALUES)          # anonymous
            elif r < 0.45:
                line += name
            elif r < 0.85:
                line += name + ":" + rng.choice(NUM_VALUES)
            else:
                line += name + ":" + rng.choice(STR_VALUES)
        if rng.random() < 0.1:
            line += " "
    return line


def random_file(seed: int, n: int) -> tuple[bytes, list[bytes]]:
    """(file bytes, the non-empty lines in order). Some empty lines and CRLF endings; no final newline."""
    rng = random.Random(seed)
    raw_lines = []
    for _ in range(n):
        line = random_line(rng).encode("utf-8")
        raw_lines.append(line)
        if rng.random() < 0.05:
            raw_lines.append(b"")
    chunks = []
    for line in raw_lines:
        chunks.append(line + (b"\r\n" if rng.random() < 0.1 else b"\n"))
    data = b"".join(chunks).rstrip(b"\n")
    if data.endswith(b"\r"):
        data = data[:-1]
    return data, [line for line in raw_lines if line]


RANDOM_SEED = 20240611
RANDOM_LINES = 200


@pytest.fixture(scope="module")
def random_data(vw_ok, tmp_path_factory):
    data, lines = random_file(RANDOM_SEED, RANDOM_LINES)
    path = tmp_path_factory.mktemp("vw_audit_random") / "random.vw"
    path.write_bytes(data)
    return path, data, lines


@pytest.mark.parametrize("opt_name", ["b18", "b24-noconstant", "hash-all-seed5-b24"])
def test_random_lines_match_vw_audit(random_data, opt_name):
    path, data, lines = random_data
    opts = OPTION_SETS[opt_name]
    vw = run_vw(path, opts)
    sl = run_streamlearn(data, opts)
    assert len(vw) == len(sl) == len(lines), \
        f"examples: VW {len(vw)}, streamlearn {len(sl)}, non-empty lines {len(lines)}"
    failures = []
    for k, (a, b) in enumerate(zip(vw, sl)):
        problems = compare([a], [b], check_base=True)
        if problems:
            failures.append(report(f"random line {k + 1}", lines[k], [a], [b], problems))
    assert not failures, f"{len(failures)} of {len(lines)} random lines differ " \
                         f"(VW options {' '.join(opts.vw_args)}):\n\n" + "\n\n".join(failures[:5])
    assert sum(len(ex.feats) for ex in vw) > 3 * len(lines)
