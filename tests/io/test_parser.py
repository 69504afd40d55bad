"""The compiled VW and LIBSVM parsers: grammar, VW's quirks, malformed lines, format detection."""

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.features.hashing import constant_index, feature_index, namespace_hash
from streamlearn.io.blocks import FMT_LIBSVM, FMT_VW, detect_format, parse_block, quote_bytes
from support.helpers import text_buffer

BITS = 18
MASK = (1 << BITS) - 1


def parse(text, fmt=FMT_VW, bits=BITS, noconstant=True, seed=0, mode=0):
    data = text.encode("utf-8") if isinstance(text, str) else text
    b = parse_block("t.vw", text_buffer(data), 1, fmt, (1 << bits) - 1, noconstant, seed, mode)
    out = []
    tags = b.tag_list()
    for e in range(b.n):
        s, f = b.indptr[e], b.indptr[e + 1]
        lab = b.labels[e]
        out.append(dict(label=None if math.isnan(lab) else float(lab), weight=float(b.weights[e]),
                        base=float(b.bases[e]), tag=tags[e].decode("utf-8"), line=int(b.lines[e]),
                        feats=list(zip(b.idx[s:f].tolist(), [float(v) for v in b.val[s:f]]))))
    return out, b.fault_lines()


def one(text, **kw):
    exs, faults = parse(text, **kw)
    assert len(exs) == 1
    return exs[0], faults


def fi(ns, name, **kw):
    return feature_index(ns, name, BITS, **kw)


# ----------------------------------------------------------------------------- well-formed lines

def test_label_namespace_features():
    ex, faults = one("1 |a x:1 y:2.5")
    assert faults == []
    assert ex["label"] == 1.0 and ex["weight"] == 1.0 and ex["base"] == 0.0 and ex["tag"] == ""
    assert ex["feats"] == [(fi("a", "x"), 1.0), (fi("a", "y"), 2.5)]


def test_importance_base_and_tags():
    ex, _ = one("0.5 2 0.25 'ex1 |f x")
    assert (ex["label"], ex["weight"], ex["base"], ex["tag"]) == (0.5, 2.0, 0.25, "ex1")
    ex, _ = one("1 2 tag|f x")            # a tag touching the bar
    assert (ex["label"], ex["weight"], ex["tag"]) == (1.0, 2.0, "tag")
    ex, _ = one("'only |f x")
    assert ex["label"] is None and ex["tag"] == "only"


def test_vw_quirk_label_touching_bar_is_a_tag():
    ex, faults = one("1|f x")
    assert ex["label"] is None and ex["tag"] == "1" and faults == []
    ex, _ = one("1 2 3")                   # no bar: the last token is the tag
    assert (ex["label"], ex["weight"], ex["tag"], ex["feats"]) == (1.0, 2.0, "3", [])


def test_vw_quirk_tag_without_quote_is_read_as_importance():
    ex, faults = one("1 tag |f x")
    assert ex["label"] is None and ex["tag"] == ""
    assert ex["feats"] == [(fi("f", "x"), 1.0)]
    assert faults == [(1, 'importance weight "tag" is not a number', "the example is predicted, not learned")]


def test_default_namespace_and_double_bar():
    ex, _ = one("1 | x y:2")
    assert ex["feats"] == [(fi("", "x"), 1.0), (fi("", "y"), 2.0)]
    ex, _ = one("1 |a x || y")
    assert ex["feats"] == [(fi("a", "x"), 1.0), (fi("", "y"), 1.0)]


def test_namespace_value_scales_features():
    ex, _ = one("1 |a:2 x y:3")
    assert [v for _, v in ex["feats"]] == [2.0, 6.0]
    ex, faults = one("1 |a:2")                # nothing after the namespace value: no warning
    assert ex["feats"] == [] and faults == []


def test_numeric_names():
    ex, _ = one("1 |a 123 | 007 0 |123 x")
    assert ex["feats"] == [((123 + namespace_hash("a")) & MASK, 1.0), (7, 1.0), (0, 1.0),
                           (fi("123", "x"), 1.0)]
    assert fi("123", "x") == feature_index(123 and "123", "x", BITS)


def test_anonymous_features_count_in_namespace():
    ex, _ = one("1 |a :3 :4")
    assert ex["feats"] == [(92594, 3.0), (92595, 4.0)]   # vw-spec §1a, verified with VW
    ex, _ = one("1 |a :0 :4")                             # the counter advances for a dropped zero
    assert ex["feats"] == [(92595, 4.0)]


def test_string_values_and_colon_space_quirks():
    ex, _ = one("1 |a x:abc")
    assert ex["feats"] == [(fi("a", "x", string_value="abc"), 1.0)]
    ex, _ = one("1 |a x: 2")
    assert ex["feats"] == [(fi("a", "x"), 2.0)]
    ex, _ = one("1 |a x: y")
    assert ex["feats"] == [(fi("a", "x", string_value="y"), 1.0)]
    ex, _ = one("1 |a x:")
    assert ex["feats"] == [(fi("a", "x"), 1.0)]


def test_number_forms():
    ex, _ = one("1 |f a:1e2 b:-.5 c:+3 d:2.5E-1 e:7. f:1e")
    assert [v for _, v in ex["feats"]] == [100.0, -0.5, 3.0, 0.25, 7.0, 1.0]
    ex, _ = one("-3.5e-1 0.5 |f a")
    assert ex["label"] == -0.35 and ex["weight"] == 0.5


def test_zero_values_dropped_duplicates_kept():
    ex, _ = one("1 |f x:0 y y z:-0.0")
    assert ex["feats"] == [(fi("f", "y"), 1.0), (fi("f", "y"), 1.0)]


def test_utf8_and_special_bytes_in_names():
    ex, _ = one("1 |f café a^b x=1 #c \"q\"")
    assert [i for i, _ in ex["feats"]] == [fi("f", n) for n in ["café", "a^b", "x=1", "#c", '"q"']]


def test_tabs_and_label_part_tab():
    ex, _ = one("junk\t1 |f a\tb")
    assert ex["label"] == 1.0 and [i for i, _ in ex["feats"]] == [fi("f", "a"), fi("f", "b")]


def test_empty_lines_skipped_and_line_numbers_kept():
    exs, _ = parse("1 |f a\n\n\r\n2 |f b\n\n")
    assert [e["line"] for e in exs] == [1, 4] and [e["label"] for e in exs] == [1.0, 2.0]


def test_crlf_and_bom():
    a, _ = parse("1 |f a b:2\n-1 'x |g c\n")
    b, _ = parse("1 |f a b:2\r\n-1 'x |g c\r\n")
    c, _ = parse("\ufeff1 |f a b:2\n\ufeff-1 'x |g c\n")
    assert a == b == c


def test_whitespace_only_line_is_an_example_like_vw():
    ex, faults = one("   ", noconstant=False)
    assert ex["label"] is None and ex["feats"] == [(constant_index(BITS), 1.0)] and faults == []


def test_constant_feature():
    ex, _ = one("1 |f a", noconstant=False)
    assert ex["feats"][-1] == (116060, 1.0)
    ex, _ = one("1 |f a", noconstant=False, bits=24)
    assert ex["feats"][-1] == (11650396, 1.0)
    ex, _ = one("1", noconstant=False)                    # a feature-less example has the constant only
    assert ex["feats"] == [(116060, 1.0)]


def test_hash_all_and_seed():
    ex, _ = one("1 |a 123", mode=1)
    assert ex["feats"] == [(feature_index("a", "123", BITS, mode="all"), 1.0)]
    ex, _ = one("1 | x |a 5", seed=7)
    assert ex["feats"] == [(feature_index("", "x", BITS, hash_seed=7), 1.0),
                           (feature_index("a", "5", BITS, hash_seed=7), 1.0)]


def test_bits_mask_applies():
    for bits in (1, 7, 18, 24, 32):
        ex, _ = one("1 |f word :5", bits=bits)
        assert ex["feats"] == [(feature_index("f", "word", bits), 1.0),
                               (namespace_hash("f") & ((1 << bits) - 1), 5.0)]


# ----------------------------------------------------------------------------- malformed lines

LABEL_LOST = "the example is predicted, not learned"
REST_LOST = "the rest of the line is ignored"


@pytest.mark.parametrize("line,reason,consequence,kept", [
    ("abc |f a", 'label "abc" is not a number', LABEL_LOST, ["a"]),
    ("1abc |f a", 'label "1abc" is not a number', LABEL_LOST, ["a"]),
    ("nan |f a", 'label "nan" is not a number', LABEL_LOST, ["a"]),
    ("1 x |f a", 'importance weight "x" is not a number', LABEL_LOST, ["a"]),
    ("1 -2 |f a", 'importance weight "-2" is negative', LABEL_LOST, ["a"]),
    ("1 1 q |f a", 'base "q" is not a number', LABEL_LOST, ["a"]),
    ("1 2 3 4 |f a", "too many label tokens in \"1 2 3 4\" (expected: label [importance [base]] ['tag])",
     LABEL_LOST, ["a"]),
    ("1 |f a |:x b", "namespace name expected after '|' in \"|:x\"", REST_LOST, ["a"]),
    ("1 |f a |g:xyz b", 'namespace value in "|g:xyz" is not a finite number', REST_LOST, ["a"]),
    ("1 |f a |g:inf b", 'namespace value in "|g:inf" is not a finite number', REST_LOST, ["a"]),
    ("1 |f a x:nan b", 'feature value in "x:nan" is not finite', REST_LOST, ["a"]),
    ("1 |f a x:-inf b", 'feature value in "x:-inf" is not finite', REST_LOST, ["a"]),
    ("1 |f a x:1e999 b", 'feature value in "x:1e999" is not finite', REST_LOST, ["a"]),
    ("1 |f a x:1,5 b", 'unexpected ",5" (a space, \'|\' or end of line was expected)', REST_LOST, ["a", "x"]),
    ("1 |f:2x a", 'unexpected "x" (a space, \'|\' or end of line was expected)', REST_LOST, []),
    ("1 |f a\rb c", "carriage return inside the line", REST_LOST, ["a"]),
])
def test_malformed_vw_lines(line, reason, consequence, kept):
    ex, faults = one(line)
    assert faults == [(1, reason, consequence)]
    assert [i for i, _ in ex["feats"]] == [fi("f", k) for k in kept]
    if consequence == LABEL_LOST:
        assert ex["label"] is None
    else:
        assert ex["label"] == 1.0


def test_one_fault_per_line_and_every_line_kept():
    exs, faults = parse("abc |f x:nan\n1 |f ok\n2 |f y:1,2 z\n")
    assert len(exs) == 3
    assert [f[0] for f in faults] == [1, 3]
    assert faults[0][1] == 'label "abc" is not a number'


def test_long_offending_text_is_shortened():
    assert quote_bytes(b"x" * 100) == '"' + "x" * 37 + '..."'
    assert quote_bytes(b"\xff\xfe") == '"\\xff\\xfe"'


# ----------------------------------------------------------------------------- LIBSVM

def test_libsvm_lines_map_like_vw_numeric_names():
    exs, faults = parse("1 5:0.5 77:2 qid:3 # comment\n-1 300:1\n\n# only a comment\n+1 2:1e-2\n",
                        fmt=FMT_LIBSVM)
    assert faults == []
    assert [e["label"] for e in exs] == [1.0, -1.0, 1.0]
    assert [e["line"] for e in exs] == [1, 2, 5]
    vw, _ = parse("1 | 5:0.5 77:2\n-1 | 300:1\n+1 | 2:1e-2\n")
    assert [e["feats"] for e in exs] == [e["feats"] for e in vw]
    ex, _ = one("1 300:1", fmt=FMT_LIBSVM, bits=8)
    assert ex["feats"] == [(300 & 255, 1.0)]


@pytest.mark.parametrize("line,reason,kept", [
    ("x 1:1", 'label "x" is not a number', [1]),
    ("1 2:x 3:1", 'value in "2:x" is not a number', []),
    ("1 1:1 a:1", 'index in "a:1" is not a non-negative integer', [1]),
    ("1 1:1 -3:1", 'index in "-3:1" is not a non-negative integer', [1]),
    ("1 5", '"5" is not index:value', []),
    ("1 1:nan", 'feature value in "1:nan" is not finite', []),
])
def test_malformed_libsvm_lines(line, reason, kept):
    ex, faults = one(line, fmt=FMT_LIBSVM)
    assert [f[1] for f in faults] == [reason]
    assert [i for i, _ in ex["feats"]] == kept


def test_detect_format():
    assert detect_format(b"\n\n1 |f a\n") == FMT_VW
    assert detect_format(b"1 1:0.5 3:2\n") == FMT_LIBSVM
    assert detect_format(b"-1 qid:2 4:1 # c\n") == FMT_LIBSVM
    assert detect_format(b"# comment\n1 |a b\n") == FMT_VW      # comment-only lines do not decide
    assert detect_format(b"# comment\n1 2:3\n") == FMT_LIBSVM
    assert detect_format(b"1 tag |a b\n") == FMT_VW
    assert detect_format(b"1\n") == FMT_LIBSVM
    assert detect_format(b"\n  \n") is None
    assert detect_format(np.frombuffer(b"1 |a b\n", np.uint8)) == FMT_VW


# ----------------------------------------------------------------------------- the number reader

@pytest.mark.parametrize("text,value,consumed", [
    (b"2.5", 2.5, 3), (b"  7 x", 7.0, 3), (b"-.5", -0.5, 3), (b"1e2", 100.0, 3), (b"1E-2", 0.01, 4),
    (b"5.", 5.0, 2), (b"1e", 1.0, 2),                                       # VW's fast path
    (b"-", 0.0, 1), (b".", 0.0, 1), (b"e5", 0.0, 2), (b"  ", 0.0, 2),     # digit-less: 0, as in VW
    (b"5e-38", 0.0, 5), (b"1e-37", 1e-37, 5),                               # VW's power-of-ten table
    (b"+3", 3.0, 2), (b"1e+5", 1e5, 4), (b"0x10", 16.0, 4), (b"0x1p3", 8.0, 5), (b"0X.8", 0.5, 4),
    (b"1.5abc", 1.5, 3), (b"0xg", 0.0, 1),                                  # strtod fallback
    (b"123456789012345678901234", 1.2345678901234568e23, 24),
])
def test_number_reader(text, value, consumed):
    from streamlearn.io.parsing import NUM_FINITE, parse_number
    buf = np.frombuffer(text, np.uint8)
    v, q, kind, _ = parse_number(buf, 0, buf.size)
    assert kind == NUM_FINITE and q == consumed and v == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("text,kind", [(b"abc", 0), (b"\t2", 0), (b"", 0), (b"inf", 2), (b"-Infinity", 2),
                                       (b"nan", 2), (b"1e999", 2)])
def test_number_reader_non_numbers(text, kind):
    from streamlearn.io.parsing import parse_number
    buf = np.frombuffer(text, np.uint8) if text else np.zeros(0, np.uint8)
    _, _, k, _ = parse_number(buf, 0, buf.size)
    assert k == kind


@settings(max_examples=3000, deadline=None)
@given(st.sampled_from(["", "-", "+", " ", " -"]), st.text("0123456789", max_size=20),
       st.sampled_from(["", "."]), st.text("0123456789", max_size=20),
       st.sampled_from(["", "e", "E", "e+", "e-", "E-", "x"]), st.text("0123456789", max_size=6),
       st.sampled_from(["", " ", "\t", "\n", "x", ":", " 7", "+", "e"]))
def test_plain_decimal_is_parse_number_bit_for_bit(sign, whole, dot, frac, e, edigits, after):
    """The in-line reader of the common value shapes (issue 30) gives parse_number's value and end,
    bit for bit, whenever it takes the number, and takes exactly [-] digits [. digits] [(e|E) [+|-] digits]
    with 1-17 digits, 1-4 exponent digits and a power of ten within +-22, ended by a space, a TAB or the
    end (many digits, "1.", ".5", "-0", exponents with either sign, none or too many digits, others)."""
    from streamlearn.io.parsing import NUM_FINITE, parse_number, plain_decimal
    exp = e + edigits if e and e != "x" else e
    text = (sign + whole + dot + (frac if dot else "") + exp + after).encode()
    buf = np.frombuffer(text, np.uint8) if text else np.zeros(0, np.uint8)
    ok, v, q = plain_decimal(buf, 0, buf.size)
    digits = len(whole) + (len(frac) if dot else 0)
    power = -(len(frac) if dot else 0)
    exp_ok = exp == ""
    if e not in ("", "x") and 1 <= len(edigits) <= 4:
        power += -int(edigits) if e.endswith("-") else int(edigits)
        exp_ok = -22 <= power <= 22
    assert ok == (sign in ("", "-") and 1 <= digits <= 17 and exp_ok and after[:1] in ("", " ", "\t"))
    if ok:
        v2, q2, kind, _ = parse_number(buf, 0, buf.size)
        assert kind == NUM_FINITE and q == q2 and struct.pack("<d", v) == struct.pack("<d", v2)


@pytest.mark.parametrize("text", [b"1.048e-01", b"-2.5E+03", b"3e22", b"-0e-5", b"7.5e-21", b"1e+00"])
def test_plain_decimal_exponents(text):
    """Exponents read in line (issue 30), at the buffer's very end too (no byte after them)."""
    from streamlearn.io.parsing import plain_decimal
    buf = np.frombuffer(text, np.uint8).copy()
    ok, v, q = plain_decimal(buf, 0, buf.size)
    assert ok and q == buf.size and struct.pack("<d", v) == struct.pack("<d", float(text))
