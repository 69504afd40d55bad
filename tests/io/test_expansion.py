"""The compiled feature expansion (streamlearn.io.expand, in the parsing thread) equals the slow,
plain-Python transcription of vw-spec-2.md (streamlearn.features.names) on random streams and option sets:
the same features in the same order, the same float32 values and the same per-example counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamlearn.features.expansion import FeatureSpec
from streamlearn.features.hashing import HASH_MODES
from streamlearn.io.blocks import FMT_LIBSVM, FMT_VW, parse_block
from streamlearn.io.expand import ExpandedOutputs, ExpansionError, make_expander
from streamlearn.features.names import expand_line
from support.helpers import text_buffer

NAMESPACES = ["a", "ab", "b", "c", "12", "", "u2", "\u00e9t\u00e9"]
WORDS = ["x", "y", "the", "quick", "7", "42", "country=jp", "color:red", ":0.84", "z:-1", "w:2", "q:0.5"]

line_st = st.lists(
    st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(["", ":2", ":0.5"]),
              st.lists(st.sampled_from(WORDS), max_size=5)),
    max_size=4,
).map(lambda chunks: "1 " + " ".join(
    "|" + (ns + (nv if ns else "")) + " " + " ".join(words) for ns, nv, words in chunks))

TERM_BYTES = ["a", "b", "c", "1", " ", "u", ":", "\\x80"]
term_st = st.lists(st.sampled_from(TERM_BYTES), min_size=2, max_size=3).map("".join)
options_st = st.fixed_dictionaries({
    "interactions": st.lists(term_st, max_size=3),
    "permutations": st.booleans(),
    "leave_duplicate_interactions": st.booleans(),
    "ngram": st.sampled_from([(), ("2",), ("a3",), ("3", "b2")]),
    "ignore": st.sampled_from([(), ("c",), ("1b",)]),
    "ignore_linear": st.sampled_from([(), ("a",), (" u",)]),
    "keep": st.sampled_from([(), ("ab ",)]),
    "redefine": st.sampled_from([(), ("z:=ab",), ("b:=u",)]),
})


def compiled(lines: list[str], spec: FeatureSpec, bits: int, noconstant: bool, seed: int, fmt=FMT_VW):
    data = text_buffer("\n".join(lines) + "\n")
    mask = (1 << bits) - 1
    block = parse_block("t", data, 1, fmt, mask, noconstant, seed, HASH_MODES["strings"],
                        redefine=np.array(spec.redefine_map, np.uint8))
    out = make_expander(spec, mask).expand(block, ExpandedOutputs())
    rows = []
    for e in range(out.n):
        s, f = out.indptr[e], out.indptr[e + 1]
        rows.append((out.idx[s:f].tolist(), out.val[s:f].tolist(), int(out.counts[e])))
    return rows


def reference(lines: list[str], spec: FeatureSpec, bits: int, noconstant: bool, seed: int):
    seen: set[int] = set()
    rows = []
    for line in lines:
        ex = expand_line(line.encode(), spec, bits, noconstant, seed, "strings", seen)
        used = [en for en in ex.entries if en.kind != "ignored_linear"]
        rows.append(([en.index for en in used], [float(np.float32(en.value)) for en in used], ex.count))
    return rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(line_st, min_size=1, max_size=12), options=options_st,
       bits=st.sampled_from([10, 18, 24]), noconstant=st.booleans(), seed=st.sampled_from([0, 7]),
       split=st.integers(0, 12))
# a namespace that a wildcard may stand for arrives only in the block's second example: the first one
# still has no interaction at all, not even the fixed constant x constant term (found by hypothesis)
@example(lines=["1 ", "1 |a x"], options={"interactions": ["a:", "\\x80\\x80"], "permutations": False,
                                           "leave_duplicate_interactions": False, "ngram": (), "ignore": (),
                                           "ignore_linear": (), "keep": (), "redefine": ()},
         bits=10, noconstant=False, seed=0, split=0)
def test_compiled_expansion_equals_plain_python(lines, options, bits, noconstant, seed, split):
    options = dict(options)
    options["interactions"] = tuple(options["interactions"])
    spec = FeatureSpec.from_options(**options)
    # the compiled expander keeps the wildcard namespaces of the stream across blocks
    split = min(split, len(lines))
    data = [lines[:split], lines[split:]]
    mask = (1 << bits) - 1
    expander = make_expander(spec, mask)
    got = []
    for part in data:
        if not part:
            continue
        block = parse_block("t", text_buffer("\n".join(part) + "\n"), 1, FMT_VW, mask, noconstant, seed, 0,
                            redefine=np.array(spec.redefine_map, np.uint8))
        out = expander.expand(block, ExpandedOutputs())
        for e in range(out.n):
            s, f = out.indptr[e], out.indptr[e + 1]
            got.append((out.idx[s:f].tolist(), out.val[s:f].tolist(), int(out.counts[e])))
    assert got == reference(lines, spec, bits, noconstant, seed)


def test_growing_outputs_and_scratch():
    """Examples far larger than the initial arrays (n-grams and a 3-way self-interaction) expand
    the same as the reference: the kernel resumes after the arrays grow."""
    words = " ".join(f"w{i}" for i in range(60))
    lines = [f"1 |a {words} |b p q", "2 |a x y", f"3 |b {words}"]
    spec = FeatureSpec.from_options(cubic=("aab",), ngram=("b3",), skips=("b1",))
    assert compiled(lines, spec, 18, False, 0) == reference(lines, spec, 18, False, 0)


def test_libsvm_features_are_the_default_namespace():
    spec = FeatureSpec.from_options(quadratic=("  ",))
    rows = compiled(["1 3:1 5:2", "0 7:0.5"], spec, 18, False, 0, fmt=FMT_LIBSVM)
    ref = reference(["1 | 3:1 5:2", "0 | 7:0.5"], spec, 18, False, 0)
    assert rows == ref


def test_too_many_features_for_one_example_is_a_clear_error():
    words = " ".join(f"w{i}" for i in range(120))
    spec = FeatureSpec.from_options(interactions=("aaa",))     # 120*121*122/6 = 295,240 per example
    data = text_buffer(f"1 |a {words}\n")
    block = parse_block("big.vw", data, 1, FMT_VW, (1 << 18) - 1, False, 0, 0,
                        redefine=np.array(spec.redefine_map, np.uint8))
    expander = make_expander(spec, (1 << 18) - 1, limit=100_000)    # --max-example-features 100000
    with pytest.raises(ExpansionError) as err:
        expander.expand(block, ExpandedOutputs())
    assert str(err.value) == ("big.vw line 1: the feature interactions would produce more than 100,000 "
                              "features for this example (--max-example-features 100000); raise "
                              "--max-example-features or use fewer or narrower -q/--cubic/--interactions "
                              "terms")
    assert make_expander(spec, (1 << 18) - 1, limit=300_000).expand(block, ExpandedOutputs()).n == 1


def test_quadratic_limit_is_exact_and_outputs_grow():
    """-q's pairs are counted per term (n0 * n1, or n (n + 1) / 2 for a namespace with itself): an example
    of exactly --max-example-features features expands, one more is the error; a -q example far larger
    than the initial output arrays expands the same as the reference (the kernel resumes after growing)."""
    words = " ".join(f"w{i}" for i in range(10))
    data = text_buffer(f"1 |a {words}\n")
    for term, pairs in (("aa", 55), ("a ", 0)):
        spec = FeatureSpec.from_options(quadratic=(term,))
        block = parse_block("q.vw", data, 1, FMT_VW, (1 << 18) - 1, False, 0, 0,
                            redefine=np.array(spec.redefine_map, np.uint8))
        exact = 11 + pairs      # the 10 words, the constant, the pairs
        out = make_expander(spec, (1 << 18) - 1, limit=exact).expand(block, ExpandedOutputs())
        assert int(out.counts[0]) == exact
        if pairs:
            with pytest.raises(ExpansionError):
                make_expander(spec, (1 << 18) - 1, limit=exact - 1).expand(block, ExpandedOutputs())
    many = " ".join(f"v{i}" for i in range(70))
    lines = [f"1 |a {many} |b {many}", "2 |a x |b y", f"3 |b {many} |a p q"]
    for terms in (("ab",), ("aa", "ba")):
        spec = FeatureSpec.from_options(quadratic=terms)
        assert compiled(lines, spec, 18, False, 0) == reference(lines, spec, 18, False, 0)
