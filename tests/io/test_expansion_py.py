"""Feature-expansion options (streamlearn.features.expansion) and the named Python pipeline (streamlearn.features.names)
against vw-spec-2.md §2a-§2d and the stored VW 9.11.9 outputs of shared/data/vw/cases2."""

import json
import re
import shlex
from collections import Counter
from pathlib import Path

import pytest

from streamlearn.errors import OptionError
from streamlearn.features.expansion import (
    FeatureSpec, expand_wildcards, must_be_left_sorted, normalize_terms, parse_namespace_bytes, term_text,
)
from streamlearn.features.names import expand_line

SHARED = Path(__file__).resolve().parents[3] / "shared"
CASES = SHARED / "data" / "vw" / "cases2"

LINE = b"1 'w1 |a x:2 y |b p |c q:3 |12 7 | d1"


def T(*strs):
    return [tuple(parse_namespace_bytes(s)) for s in strs]


def texts(terms):
    return [term_text(t) for t in terms]


def spec(**kw):
    return FeatureSpec.from_options(**kw)


def inter(line, bits=18, noconstant=True, **kw):
    ex = expand_line(line, spec(**kw), bits, noconstant)
    return [(e.name, e.index, e.value) for e in ex.entries if e.kind == "interaction"]


# --------------------------------------------------------------------------- expansion.py

def test_parse_namespace_bytes():
    assert parse_namespace_bytes("c\\x80") == b"c\x80"
    assert parse_namespace_bytes("\\xc3b") == b"\xc3b"
    assert parse_namespace_bytes("\\x3A\\x20") == b": "
    assert parse_namespace_bytes("ab") == b"ab"
    assert parse_namespace_bytes("é") == "é".encode()
    assert parse_namespace_bytes("a\\xzz") == b"a\\xzz"      # malformed escape kept, as VW does
    assert parse_namespace_bytes("\\x8") == b"\\x8"


def test_processing_order_sorted_by_length_then_bytes():
    s = spec(quadratic=["da", "ab"], cubic=["bcd"])
    assert texts(s.terms) == ["ab", "da", "bcd"]
    # unsigned bytes: 0x80 sorts after ASCII, ' ' before digits and letters
    assert texts(spec(quadratic=["a\\x80", "a ", "a1"]).terms) == ["a ", "a1", "a\\x80"]


def test_duplicates_removed_first_of_sorted_list_kept():
    s = spec(quadratic=["ab", "ba"])
    assert texts(s.terms) == ["ab"] and s.removed_duplicates == 1
    s = spec(quadratic=["ui", "iu", "ci"])
    assert texts(s.terms) == ["ci", "iu"] and s.removed_duplicates == 1
    s = spec(cubic=["aba"], interactions=["aab"])
    assert s.removed_duplicates == 1 and texts(s.terms) == ["aab"]
    s = spec(quadratic=["ab", "ba"], leave_duplicate_interactions=True)
    assert texts(s.terms) == ["ab", "ba"] and s.removed_duplicates == 0


def test_reordering_of_repeated_letters():
    assert must_be_left_sorted(tuple(b"aab")) and must_be_left_sorted(tuple(b"abb"))
    assert must_be_left_sorted(tuple(b"aabb"))
    assert not must_be_left_sorted(tuple(b"aa")) and not must_be_left_sorted(tuple(b"aaa"))
    assert not must_be_left_sorted(tuple(b"abc"))
    assert texts(spec(quadratic=["ba"]).terms) == ["ba"]
    s = spec(cubic=["uiu"])
    assert texts(s.terms) == ["iuu"] and s.reordered == 1
    s = spec(cubic=["cba"])
    assert texts(s.terms) == ["cba"] and s.reordered == 0
    s = spec(interactions=["aab"])                      # counted although sorting changes nothing
    assert texts(s.terms) == ["aab"] and s.reordered == 1
    s = spec(cubic=["::u"])
    assert texts(s.terms) == ["::u"] and s.reordered == 1
    # not re-sorted after the replacement
    terms, removed, reordered = normalize_terms(T("uiu", "iva"))
    assert texts(terms) == ["iva", "iuu"] and (removed, reordered) == (0, 1)


def test_wildcard_expansion():
    seen = set(b" 1abc") | {128, 0xC3}
    # -q a: -> (a, x) for x in S, in byte order; constant and non-ASCII never
    assert texts(expand_wildcards(T("a:"), seen)) == ["a ", "a1", "aa", "ab", "ac"]
    # w = 2: pairs x <= y; (y, x) too with leave_duplicates
    assert texts(expand_wildcards(T("::"), set(b"ab"))) == ["aa", "ab", "bb"]
    assert texts(expand_wildcards(T("::"), set(b"ab"), True)) == ["aa", "ab", "ba", "bb"]
    # --cubic ::u -> (x, y, u) for x <= y, then normalised: (u, u, x) patterns sorted
    assert texts(expand_wildcards(T("::u"), set(b"aux"))) == ["aau", "auu", "axu", "uuu", "uux", "uxx"]
    # w = 3 combinations are emitted non-increasing, (c, b, a); then sorted and normalised (not re-sorted)
    assert texts(expand_wildcards(T(":::"), set(b"abc"))) == [
        "aaa", "aab", "abb", "bbb", "aac", "cba", "bbc", "acc", "bcc", "ccc"]
    assert len(expand_wildcards(T(":::"), set(b"abc"))) == 10
    assert len(expand_wildcards(T(":::"), set(b"abc"), True)) == 27          # permutations
    # fixed letters re-inserted; terms without wildcard kept and deduplicated against expansions
    assert texts(expand_wildcards(T(":a", "ba"), set(b"ab"))) == ["aa", "ba"]
    # nothing eligible seen -> no interaction at all
    assert expand_wildcards(T("a:", "ab"), {128}) == []


def test_option_errors():
    cases = [
        (dict(quadratic="a"), "-q/--quadratic a"),
        (dict(quadratic="abc"), "-q/--quadratic abc"),
        (dict(cubic="ab"), "--cubic ab"),
        (dict(interactions="a"), "--interactions a"),
        (dict(ngram="x"), "--ngram x"),
        (dict(ngram="t0"), "--ngram t0"),
        (dict(ngram="0"), "--ngram 0"),
        (dict(ngram="2x"), "--ngram 2x"),
        (dict(ngram="2", skips="tx"), "--skips tx"),
        (dict(redefine="ab"), "--redefine ab"),
    ]
    for kw, start in cases:
        with pytest.raises(OptionError) as ei:
            spec(**kw)
        msg = str(ei.value)
        assert msg.startswith(start + ":") and "\n" not in msg, msg
    with pytest.raises(OptionError, match="skip cannot be used unless ngram is > 1"):
        spec(skips="1")
    assert "got 1 byte" in _err(dict(quadratic="a"))
    assert spec(quadratic="a\\x80").terms == ((97, 128),)      # an escape counts as one byte


def _err(kw):
    try:
        spec(**kw)
    except OptionError as e:
        return str(e)
    raise AssertionError("no error")


def test_ngram_tables():
    s = spec(ngram=["t3", "h2"], skips=["t1"])
    assert s.ngram_for(ord("t")) == 3 and s.ngram_for(ord("h")) == 2 and s.ngram_for(ord("a")) == 0
    assert s.skips_for(ord("t")) == 1 and s.skips_for(ord("h")) == 0
    # a per-index value overrides the default whatever the order; the last of each kind wins
    s = spec(ngram=["t4", "2", "3"], skips=["1"])
    assert s.ngram_for(ord("t")) == 4 and s.ngram_for(ord(" ")) == 3 and s.skips_for(ord("t")) == 1
    assert s.ngram_default == 3 and s.ngram_by_ns == ((ord("t"), 4),)
    assert spec(ngram=["2", "t1"]).ngram_for(ord("t")) == 1
    assert spec(ngram="13").ngram_default == 13          # leading digit = all namespaces
    assert s.ngram_header() == ("3 ngram:t4 2 3 ", "1 skip:1 ")
    assert spec().ngram_header() == ("0 ngram:", "0 skip:")


def test_ignore_keep_redefine():
    s = spec(ignore=["c", "1"])
    assert [i for i in range(256) if s.ignore_mask[i]] == [ord("1"), ord("c")]
    s = spec(ignore=["c"], keep=["ui"])                 # keep overrides ignore
    assert [i for i in range(256) if not s.ignore_mask[i]] == [ord("i"), ord("u")]
    assert s.ignore_mask[32] and s.ignore_mask[128]
    s = spec(ignore_linear=["u", "\\x80"])
    assert [i for i in range(256) if s.ignore_linear_mask[i]] == [ord("u"), 128]
    r = spec(redefine=["U:=ux"]).redefine_map
    assert r[ord("u")] == ord("U") and r[ord("x")] == ord("U") and r[ord("a")] == ord("a")
    r = spec(redefine=[":=c"]).redefine_map
    assert r[ord("c")] == 32
    r = spec(redefine=["z:=:", "a:=b"]).redefine_map          # applied in order
    assert r[ord("q")] == ord("z") and r[ord("b")] == ord("a")
    r = spec(redefine=["z:="]).redefine_map                   # VW quirk: a no-op
    assert r == tuple(range(256))
    s = spec(redefine=["AB:=c"])
    assert s.redefine_map[ord("c")] == ord("A") and "Only first one ('A')" in s.redefine_warnings[0]


def test_messages_and_header():
    s = spec(quadratic=["ui", "iu", "ci"])
    assert s.messages() == [
        ("stderr", "creating quadratic features for pairs: ui iu ci"),
        ("stdout", "[warning] Duplicate namespace interactions were found. Removed: 1.\n"
                   "You can use --leave_duplicate_interactions to disable this behaviour.")]
    assert s.messages(quiet=True) == []
    s = spec(cubic=["::u"])
    assert [m for _, m in s.messages()][1].startswith("[info] Any duplicate namespace interactions will be removed")
    assert spec(cubic=["::u"], leave_duplicate_interactions=True).messages()[1][1].startswith("[warning] Some")
    s = spec(ngram=["t3", "h2"], skips=["t1"], ignore=["c", "1"], ignore_linear="u", keep="iu")
    assert s.messages() == [
        ("stdout", "[info] Generating 3-grams for t namespaces."),
        ("stdout", "[info] Generating 2-grams for h namespaces."),
        ("stdout", "[info] Generating 1-skips for t namespaces."),
        ("stderr", "ignoring namespaces beginning with: 1 c"),
        ("stderr", "ignoring linear terms for namespaces beginning with: u"),
        ("stderr", "using namespaces beginning with: i u")]
    s = spec(quadratic=["ui", "c\\x80"], ignore=["c", "1c"], ignore_linear=["u"], redefine=["U:=ux"])
    assert s.header_options() == ["--quadratic", "ui", "--quadratic", "c\\x80", "--ignore", "1c",
                                  "--ignore_linear", "u", "--redefine", "U:=ux"]


def test_dict_roundtrip_and_identity():
    s = spec(quadratic=["ui", " u"], cubic="::u", ngram=["t3"], skips=["t1"], ignore=["c"], keep=[],
             redefine=["U:=ux"], permutations=True)
    d = json.loads(json.dumps(s.to_dict()))
    assert FeatureSpec.from_dict(d) == s
    assert FeatureSpec.from_options().is_identity
    assert spec(permutations=True).is_identity and spec(ngram="1").is_identity
    for kw in (dict(quadratic="ab"), dict(ngram="2"), dict(ignore="a"), dict(keep="a"),
               dict(ignore_linear="a"), dict(redefine="b:=a")):
        assert not spec(**kw).is_identity, kw
    with pytest.raises(OptionError):
        FeatureSpec.from_dict({"bogus": 1})


# --------------------------------------------------------------------------- names.py: §2a worked examples

def test_linear_indices():
    ex = expand_line(LINE, spec(), 18, noconstant=True)
    assert [(e.name, e.index, e.value) for e in ex.entries] == [
        ("a^x", 55432, 2.0), ("a^y", 42847, 1.0), ("b^p", 154625, 1.0), ("c^q", 144850, 3.0),
        ("12^7", 19, 1.0), ("d1", 50755, 1.0)]
    assert ex.count == 6
    ex = expand_line(LINE, spec(), 18)
    assert ex.entries[-1].name == "Constant" and ex.entries[-1].index == 116060 and ex.count == 7
    assert expand_line(b"", spec(), 18) is None and expand_line(b"\r\n", spec(), 18) is None


@pytest.mark.parametrize("opts, expected", [
    (dict(quadratic="ab"), [("a^x*b^p", 164377, 2), ("a^y*b^p", 75404, 1)]),
    (dict(quadratic="ba"), [("b^p*a^x", 134427, 2), ("b^p*a^y", 160460, 1)]),
    (dict(quadratic="aa"), [("a^x*a^x", 1680, 4), ("a^x*a^y", 31047, 2), ("a^y*a^y", 253394, 1)]),
    (dict(quadratic="aa", permutations=True),
     [("a^x*a^x", 1680, 4), ("a^x*a^y", 31047, 2), ("a^y*a^x", 238085, 2), ("a^y*a^y", 253394, 1)]),
    (dict(cubic="abc"), [("a^x*b^p*c^q", 63625, 6), ("a^y*b^p*c^q", 105398, 3)]),
    (dict(cubic="cba"), [("c^q*b^p*a^x", 111677, 6), ("c^q*b^p*a^y", 117738, 3)]),
    (dict(interactions="abc1"), [("a^x*b^p*c^q*12^7", 212920, 6), ("a^y*b^p*c^q*12^7", 8081, 3)]),
    (dict(quadratic="1 "), [("12^7*d1", 56234, 1)]),
])
def test_worked_examples(opts, expected):
    assert inter(LINE, **opts) == [(n, i, float(v)) for n, i, v in expected]


def test_worked_examples_wildcard_constant_b24():
    got = inter(LINE, quadratic="a:")
    assert [n for n, _, _ in got] == ["a^x*d1", "a^y*d1", "a^x*12^7", "a^y*12^7", "a^x*a^x", "a^x*a^y",
                                     "a^y*a^y", "a^x*b^p", "a^y*b^p", "a^x*c^q", "a^y*c^q"]
    assert [i for _, i, _ in got][:5] == [6235, 244942, 56843, 227998, 1680] and got[-1][1] == 85855
    assert inter(LINE, noconstant=False, quadratic="a\\x80") == [("a^x*Constant", 72516, 2.0),
                                                                 ("a^y*Constant", 180177, 1.0)]
    assert inter(LINE, bits=24, quadratic="ab") == [("a^x*b^p", 11174425, 2.0), ("a^y*b^p", 4007564, 1.0)]


def test_anonymous_features():
    ex = expand_line(b"1 |a :3 :4 |b p", spec(quadratic="ab"), 18, noconstant=True)
    assert [(e.name, e.index, e.value) for e in ex.entries] == [
        ("a^", 92594, 3.0), ("a^", 92595, 4.0), ("b^p", 154625, 1.0), ("a^*b^p", 212791, 3.0), ("a^*b^p", 211144, 4.0)]
    ex = expand_line(b"1 | :3", spec(), 18, noconstant=True)
    assert ex.entries[0].name == ""


def test_self_interaction_counts():
    line = b"1 |a x:2 y z:-1 |b p"
    assert expand_line(line, spec(quadratic="aa"), 18, True).count == 10
    assert expand_line(line, spec(quadratic="aa", permutations=True), 18, True).count == 13
    ex = expand_line(b"1 |u id35 id35", spec(quadratic="uu"), 18, True)     # positions, not identities
    assert len(ex.interactions) == 3


def test_string_values_and_namespace_values():
    ex = expand_line(b"1 |item color:red country=jp |ctx:0.5 h x:3", spec(), 18, True)
    assert [(e.name, e.value) for e in ex.entries] == [
        ("item^color^red", 1.0), ("item^country=jp", 1.0), ("ctx^h", 0.5), ("ctx^x", 1.5)]
    ex = expand_line(b"1 |a x:0 y", spec(), 18, True)                      # value 0 dropped
    assert [e.name for e in ex.entries] == ["a^y"]


def test_ngrams():
    ex = expand_line(b"1 |a the quick:2 brown fox", spec(ngram="3", skips="1"), 18, True)
    assert [e.name for e in ex.entries][4:] == [
        "a^the^quick", "a^quick^brown", "a^brown^fox", "a^the^brown", "a^quick^fox",
        "a^the^quick^brown", "a^quick^brown^fox", "a^the^quick^fox", "a^the^brown^fox"]
    assert ex.entries[4].index == 36322 and ex.entries[4].value == 1.0 and ex.count == 13
    # one group for all chunks of an index; a gram is named after its first component's namespace
    ex = expand_line(b"1 |t a b |x c |t d |tz e", spec(ngram="t2"), 18, True)
    names = [e.name for e in ex.entries]
    assert names == ["t^a", "t^b", "t^d", "tz^e", "t^a^b", "t^b^d", "t^d^e", "x^c"]
    from streamlearn.features.hashing import feature_index
    d, e = feature_index("t", "d"), feature_index("tz", "e")
    assert ex.entries[6].index == (d * 27942141 + e) % (1 << 18)


def test_ignore_keep_ignore_linear_redefine():
    line = b"1 |a x:2 y |b p |c q:3 |12 7 | d1"
    ex = expand_line(line, spec(ignore=["c", "1"]), 18)
    assert [e.name for e in ex.entries] == ["a^x", "a^y", "b^p", "d1", "Constant"]
    ex = expand_line(line, spec(keep="ab"), 18)
    assert [e.name for e in ex.entries] == ["a^x", "a^y", "b^p", "Constant"]
    ex = expand_line(line, spec(ignore_linear="a", quadratic="ab"), 18, True)
    assert [e.kind for e in ex.entries][:3] == ["ignored_linear", "ignored_linear", "linear"]
    assert ex.count == 8
    ex = expand_line(b"1 | d1 |b p |c q", spec(redefine=":=c"), 18, True)
    assert [e.name for e in ex.entries] == ["d1", "c^q", "b^p"]
    ex = expand_line(b"1 |a x", spec(redefine="z:=a", quadratic="zz"), 18, True)
    assert ex.entries[0].index == 55432 and len(ex.interactions) == 1
    ex = expand_line(b"1 | f |a x", spec(redefine="z:=:", quadratic=" z"), 18, True)
    assert [e.name for e in ex.interactions] == ["f*a^x"]                # default namespace never redefined


def test_wildcards_use_cumulative_seen():
    s = spec(quadratic="a:")
    seen = set()
    ex1 = expand_line(b"1 |a x |b p", s, 18, True, seen=seen)
    assert [e.name for e in ex1.interactions] == ["a^x*a^x", "a^x*b^p"]
    ex2 = expand_line(b"1 |c q", s, 18, True, seen=seen)
    assert ex2.interactions == [] and seen == set(b"abc")
    ex3 = expand_line(b"1 |a x |c q", s, 18, True, seen=seen)
    assert [e.name for e in ex3.interactions] == ["a^x*a^x", "a^x*c^q"]


# --------------------------------------------------------------------------- conformance with stored VW outputs

_MULTI = {"-q": "quadratic", "--quadratic": "quadratic", "--cubic": "cubic", "--interactions": "interactions",
          "--ngram": "ngram", "--skips": "skips", "--ignore": "ignore", "--ignore_linear": "ignore_linear",
          "--keep": "keep", "--redefine": "redefine"}


def _args(args):
    toks = shlex.split(args)
    o = {"opts": {}, "bits": 18, "noconstant": False, "seed": 0, "mode": "strings", "classes": 1, "data": None,
         "ftrl": False}
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in _MULTI:
            o["opts"].setdefault(_MULTI[t], []).append(toks[i + 1])
        elif t in ("--leave_duplicate_interactions", "--permutations"):
            o["opts"][t[2:]] = True
        elif t == "-b":
            o["bits"] = int(toks[i + 1])
        elif t == "--noconstant":
            o["noconstant"] = True
        elif t == "--hash_seed":
            o["seed"] = int(toks[i + 1])
        elif t == "--hash":
            o["mode"] = toks[i + 1]
        elif t in ("--oaa", "--csoaa"):
            o["classes"] = int(toks[i + 1])
        elif t == "--ftrl":
            o["ftrl"] = True
        elif t == "-d":
            o["data"] = toks[i + 1]
        i += 2 if (t in _MULTI or t in ("-b", "--hash_seed", "--hash", "--oaa", "--csoaa", "-d")) else 1
    return o


def _all_cases():
    if not CASES.is_dir():
        return {}
    return {c["name"]: c for c in json.loads((CASES / "cases.json").read_text())}


_CASES = _all_cases()
_RUNS = {}


def _run(name):
    """(case, parsed args, spec, [Expanded]) for a case; options of a -i model come from its dependency."""
    if name not in _RUNS:
        c = _CASES[name]
        o = _args(c["args"])
        if c.get("depends_on"):
            dep = _args(_CASES[c["depends_on"][0]]["args"])
            for k, v in dep["opts"].items():
                o["opts"].setdefault(k, v)
            o["classes"] = max(o["classes"], dep["classes"])
        s = FeatureSpec.from_options(**o["opts"])
        seen = set()
        exs = []
        for line in (CASES / o["data"]).read_bytes().split(b"\n"):
            ex = expand_line(line, s, o["bits"], o["noconstant"], o["seed"], o["mode"], seen)
            if ex is not None:
                exs.append(ex)
        _RUNS[name] = (c, o, s, exs)
    return _RUNS[name]


def _needs_shared():
    if not CASES.is_dir():
        pytest.skip("../shared is not present")


def _width(k):
    w = 1
    while w < k:
        w *= 2
    return w


def _inv_weight_lines(path):
    lines = path.read_text().split("\n")
    i = lines.index(":1") if ":1" in lines else lines.index(":0")
    if lines[i] == ":1":
        i = next(j for j, line in enumerate(lines) if line.startswith("l2_state"))
    out = []
    for line in lines[i + 1:]:
        if line:
            m = re.match(r"^(?:(.*):)?(\d+):(\S+)(?: .*)?$", line)
            out.append((m.group(1), int(m.group(2)), float(m.group(3))))
    return out


_INV_CASES = sorted(n for n, c in _CASES.items() if any(k.endswith(".inv") for k in c["outputs"]))


@pytest.mark.parametrize("name", _INV_CASES or ["(no shared data)"])
def test_invert_hash_names(name):
    """Every ``name:slot`` of VW's .inv is the first name our pipeline gives that slot (linear, then
    interactions, per example in stream order; class k of --oaa/--csoaa at slot h*W+k with suffix [k]).
    A bare slot with a non-zero weight must be one our pipeline never produced."""
    _needs_shared()
    c, o, _, exs = _run(name)
    k_classes = o["classes"]
    w = _width(k_classes)
    mask = (1 << o["bits"]) - 1
    first = {}
    for ex in exs:
        for e in ex.entries:
            for k in range(k_classes):
                first.setdefault((e.index * w + k) & mask, e.name + (f"[{k}]" if k else ""))
    inv = next(v for k, v in c["outputs"].items() if k.endswith(".inv"))
    lines = _inv_weight_lines(CASES / inv)
    bad = [(nm, slot, first.get(slot)) for nm, slot, wt in lines
           if (nm is not None and first.get(slot) != nm) or (nm is None and wt != 0 and slot in first)]
    assert sum(nm is not None for nm, _, _ in lines) > 0
    assert not bad, bad[:5]


@pytest.mark.parametrize("name", sorted(_CASES) or ["(no shared data)"])
def test_total_feature_number(name):
    _needs_shared()
    c, o, _, exs = _run(name)
    m = re.search(r"total feature number = (\d+)", (CASES / c["outputs"]["stderr"]).read_text())
    if m is None:
        pytest.skip("no summary")
    assert sum(ex.count for ex in exs) == int(m.group(1))


@pytest.mark.parametrize("name", ["audit_q", "ngram_audit", "test_q_invert_audit", "oaa5_audit", "ftrl_audit"])
def test_audit_entries(name):
    """The multiset of ``name:slot:value`` of each audit line equals ours (weights and order are the
    learner's). --oaa prints K lines per example (class k at slot h*W+k); --ftrl prints each twice."""
    _needs_shared()
    c, o, _, exs = _run(name)
    blocks = [line[1:] for line in (CASES / c["outputs"]["stdout"]).read_text().split("\n") if line.startswith("\t")]
    reps = o["classes"] if o["classes"] > 1 else (2 if o["ftrl"] else 1)
    assert len(blocks) == reps * len(exs)
    w = _width(o["classes"])
    mask = (1 << o["bits"]) - 1
    for n, ex in enumerate(exs):
        for r in range(reps):
            k = r if o["classes"] > 1 else 0
            theirs = Counter()
            for ent in blocks[n * reps + r].split("\t"):
                nm, slot, val, _ = ent.rsplit(":", 3)
                theirs[(nm, int(slot), val)] += 1
            ours = Counter((e.name, (e.index * w + k) & mask, "%g" % e.value) for e in ex.entries)
            assert theirs == ours, (n, r, theirs - ours, ours - theirs)


def _case_spec(name):
    o = _args(_CASES[name]["args"])
    return FeatureSpec.from_options(**o["opts"])


_FEATURE_LINE = re.compile(r"^(creating |ignoring |using namespaces|\[info\] Generating|\[info\] Any duplicate|"
                           r"\[warning\] Duplicate|\[warning\] Some interactions|\[warning\] Multiple namespaces)")


@pytest.mark.parametrize("name", sorted(_CASES) or ["(no shared data)"])
def test_startup_messages(name):
    """Our start-up lines are exactly VW's feature-option lines, in order, on the same stream."""
    _needs_shared()
    c = _CASES[name]
    if c.get("depends_on"):
        pytest.skip("options restored from a model")
    msgs = _case_spec(name).messages()
    for stream in ("stdout", "stderr"):
        text = (CASES / c["outputs"][stream]).read_text().split("\n")
        vw = [line for line in text if _FEATURE_LINE.match(line)]
        ours = [line for s, m in msgs if s == stream for line in m.split("\n") if _FEATURE_LINE.match(line)]
        assert ours == vw, (stream, ours, vw)
        # two-line messages: the second line follows the first
        for s, m in msgs:
            if s == stream and "\n" in m:
                first, second = m.split("\n")
                i = text.index(first)
                assert text[i + 1] == second


@pytest.mark.parametrize("name", _INV_CASES or ["(no shared data)"])
def test_model_header_lines(name):
    """``N ngram:``/``N skip:`` lines and the feature options of the ``options:`` line."""
    _needs_shared()
    c = _CASES[name]
    if c.get("depends_on"):
        pytest.skip("options restored from a model")
    s = _case_spec(name)
    lines = (CASES / next(v for k, v in c["outputs"].items() if k.endswith(".inv"))).read_text().split("\n")
    assert (lines[6], lines[7]) == s.ngram_header()
    opts = lines[8][len("options:"):]
    ours = " ".join(s.header_options())
    assert ours in opts
