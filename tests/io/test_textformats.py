"""VW's CSV (--csv) and JSON (--json) input and --affix (streamlearn.io.textformats), and
--audit_regressor (streamlearn.run.audit_regressor): the indices and values each input line gives,
against VW's rules computed by hand (``feature_index``) and against VW 9.11.9's own --audit (skipped
when VW is not installed); the faults; the CLI."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.cli import main
from streamlearn.errors import InputError
from streamlearn.features.hashing import feature_index, hash_string, namespace_hash
from streamlearn.io.blocks import FMT_VW, parse_block
from streamlearn.io.parsing import parse_number
from streamlearn.io.textformats import (
    AffixConverter, CsvConverter, TextFormat, number_text, parse_affix,
)

BITS = 18
MASK = (1 << BITS) - 1


def convert(fmt: TextFormat, data: bytes, seed: int = 0, mode: str = "strings") -> bytes:
    buf = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(buf == 10)
    if data and not data.endswith(b"\n"):
        ends = np.append(ends, len(data))
    out, _ = fmt.converter("t.in", seed, mode).block(buf, ends, 1)
    return out.tobytes()


def examples(text: bytes, seed: int = 0, noconstant: bool = True):
    """(label, weight, tag, sorted [(index, value)]) of each example of VW text."""
    b = parse_block("t", np.frombuffer(text, np.uint8), 1, FMT_VW, MASK, noconstant, seed, 0)
    assert not b.fault_lines(), b.fault_lines()
    tags = b.tag_list()
    out = []
    for e in range(b.n):
        s, f = b.indptr[e], b.indptr[e + 1]
        lab = float(b.labels[e])
        out.append((None if math.isnan(lab) else lab, float(b.weights[e]), tags[e],
                    sorted(zip(b.idx[s:f].tolist(), [float(v) for v in b.val[s:f]]))))
    return out


def fi(ns, name, **kw):
    return feature_index(ns, name, BITS, **kw)


# ----------------------------------------------------------------------------------------------- CSV

def test_csv_features_by_vws_rules():
    data = (b'_label,_tag,a|x,a|y,b|z,w,c|,q\n'
            b'1 2,t1,0.5,hello,2,"0.25",3,"x ""y"" z"\n')
    (label, weight, tag, feats), = examples(convert(TextFormat("csv"), data))
    assert (label, weight, tag) == (1.0, 2.0, b"t1")
    want = sorted([
        (fi("a", "x"), 0.5),
        (fi("a", "y", string_value="hello"), 1.0),
        (fi("b", "z"), 2.0),
        (fi(" ", "w", string_value="0.25"), 1.0),         # a quoted number is a string
        (namespace_hash("c") & MASK, 3.0),                 # an empty name: ns + k
        (fi(" ", "q", string_value='x "y" z'), 1.0),       # "" inside quotes is one quote
    ])
    assert feats == want


def test_csv_header_line_is_not_an_example_and_lines_keep_their_numbers():
    text = convert(TextFormat("csv"), b"_label,a\n1,2\n-1,3\n")
    assert text.split(b"\n")[0] == b""
    assert [e[0] for e in examples(text)] == [1.0, -1.0]


def test_csv_without_label_column_is_unlabeled():
    (label, _, _, feats), = examples(convert(TextFormat("csv"), b"label,f\n1,0.5\n"))
    assert label is None
    assert feats == sorted([(fi(" ", "label"), 1.0), (fi(" ", "f"), 0.5)])


def test_csv_separator_ns_value_and_zero_and_empty_cells():
    fmt = TextFormat("csv", csv_separator=";", csv_ns_value="a:0.5,:3")
    (_, _, _, feats), = examples(convert(fmt, b"_label;a|x;y;a|s;z\n1;4;2;str;\n"))
    # floats scale, strings keep value 1, an empty cell is no feature
    assert feats == sorted([(fi("a", "x"), 2.0), (fi(" ", "y"), 6.0), (fi("a", "s", string_value="str"), 1.0)])
    assert examples(convert(fmt, b"_label;a|x\n1;0\n"))[0][3] == []


def test_csv_names_vw_text_cannot_hold_keep_their_index():
    (_, _, _, feats), = examples(convert(TextFormat("csv"), b'_label,my name,k:v,n s|f\n1,2,"a b",3\n'))
    assert feats == sorted([(fi(" ", "my name"), 2.0), (fi(" ", "k:v", string_value="a b"), 1.0),
                            (fi("n s", "f"), 3.0)])


def test_csv_header_option_and_no_file_header():
    fmt = TextFormat("csv", csv_header="_label,a", csv_no_file_header=True)
    assert [e[0] for e in examples(convert(fmt, b"1,2\n0,3\n"))] == [1.0, 0.0]
    fmt = TextFormat("csv", csv_header="_label,a")          # the file's own header is skipped
    assert [e[0] for e in examples(convert(fmt, b"x,y\n1,2\n"))] == [1.0]


def test_csv_split_quotes_as_vw():
    conv = CsvConverter(TextFormat("csv"), "t", 0, "strings")
    assert conv.split(b'a,"b,c",,"d""e"', 1) == [b"a", b'"b,c"', b"", b'"d"e"']
    assert conv.split(b"a,b,", 1) == [b"a", b"b", b""]
    assert conv.split(b'x"y,z', 1) == [b'x"y', b"z"]      # a quote inside an unquoted cell is a byte


@pytest.mark.parametrize("data, why", [
    (b"a,b\n1\n", "1 cells where the header has 2"),
    (b"a,b\n1,2\n\n3,4\n", "empty line"),
    (b'a,b\n1,"2\n', "unclosed quote"),
    (b'a,b\n1,"2"x"\n', "unescaped quote"),
    (b"a|b|c\n1\n", "malformed header"),
])
def test_csv_faults_name_file_and_line(data, why):
    with pytest.raises(InputError, match=rf"^t\.in line \d+: .*{why}"):
        convert(TextFormat("csv"), data)


# ---------------------------------------------------------------------------------------------- JSON

JSON_LINE = (b'{"_label":1,"_tag":"tg","a":1.5,"s":"hello world","b":true,"c":false,"n":null,'
             b'"ns1":{"x":2,"y":"v:w","inner":{"z":3}},"arr":[1,0,2.5,null],"_text":"foo bar|baz",'
             b'"_ignored":{"a":1},"123":4}\n')


@pytest.mark.parametrize("chain", [False, True])
def test_json_features_by_vws_rules(chain):
    (label, _, tag, feats), = examples(convert(TextFormat("json", chain_hash=chain), JSON_LINE))
    assert (label, tag) == (1.0, b"tg")
    top = hash_string(" ", 0)                              # the top level: hash(" ") = the seed

    def h(ns_hash, name):
        return hash_string(name, ns_hash) & MASK

    arr = hash_string("arr", 0)
    string = [(hash_string("hello_world", hash_string("s", top)) & MASK, 1.0)] if chain else \
        [(h(top, "shello_world"), 1.0)]
    ns1 = hash_string("ns1", 0)
    y = [(hash_string("v_w", hash_string("y", ns1)) & MASK, 1.0)] if chain else [(h(ns1, "yv_w"), 1.0)]
    want = sorted([(h(top, "a"), 1.5), *string, (h(top, "b"), 1.0), (h(ns1, "x"), 2.0), *y,
                   (h(hash_string("inner", 0), "z"), 3.0), (arr & MASK, 1.0), ((arr + 2) & MASK, 2.5),
                   (h(top, "foo"), 1.0), (h(top, "bar_baz"), 1.0), (h(top, "123"), 4.0)])
    assert feats == want


def test_json_label_forms():
    lines = (b'{"_label":{"Label":-1,"Weight":2,"Initial":0.5},"a":1}\n{"_label":"0.5 3","a":1}\n'
             b'{"a":1}\n')
    got = examples(convert(TextFormat("json"), lines))
    assert [(e[0], e[1]) for e in got] == [(-1.0, 2.0), (0.5, 3.0), (None, 1.0)]


@pytest.mark.parametrize("line, why", [
    (b'{"a":1', "not a JSON object"),
    (b"[1,2]", "not a JSON object"),
    (b'{"a":[[1]]}', "nested arrays"),
    (b'{"a":["x"]}', "holds a string"),
    (b'{"a":1e39}', "beyond float32"),
])
def test_json_faults_name_file_and_line(line, why):
    with pytest.raises(InputError, match=rf"^t\.in line 1: .*{why}"):
        convert(TextFormat("json"), line + b"\n")


def test_json_hash_seed():
    seed = 7
    (_, _, _, feats), = examples(convert(TextFormat("json"), b'{"a":2,"n":{"b":3}}\n', seed=seed), seed=seed)
    assert feats == sorted([(hash_string("a", seed) & MASK, 2.0),      # the top level's hash is the seed
                            (hash_string("b", hash_string("n", seed)) & MASK, 3.0)])


# ----------------------------------------------------------------------------------------- numbers

@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_number_text_reads_back_exactly(x):
    raw = number_text(np.float32(x))
    v, q, _, _ = parse_number(np.frombuffer(raw, np.uint8), 0, len(raw))
    assert q == len(raw) and np.float32(v) == np.float32(x)


# ------------------------------------------------------------------------------------------- --affix

def affix_features(line: bytes, affix: str, seed: int = 0):
    conv = AffixConverter(parse_affix(affix), "t", seed, "strings")
    return examples(conv.line(line) + b"\n", seed=seed)[0][3]


def test_affix_index_by_vws_formula():
    def idx(part, ns, code):
        return (hash_string(part, namespace_hash(ns)) * (13903957 + code * 27942141)) & MASK

    feats = affix_features(b"1 | happiness |a:2 ugly 7", "-2,+3a")
    base = [(fi(" ", "happiness"), 1.0), (fi("a", "ugly"), 2.0), (fi("a", "7"), 2.0)]
    want = base + [(idx("ss", " ", 2 << 1), 1.0), (idx("ugl", "a", (3 << 1) | 1), 2.0), (idx("7", "a", 7), 2.0)]
    assert feats == sorted(want)


def test_affix_order_and_parsing():
    assert parse_affix("+2,-3") == {32: [(False, 3, 6), (True, 2, 5)]}     # the last given comes first
    for bad in ("8", "+0", "2ab", "+2|", "x"):
        with pytest.raises(ValueError):
            parse_affix(bad)


# ------------------------------------------------------------------------------ against VW 9.11.9

def vw_audit(tmp_path, data: bytes, name: str, args):
    pytest.importorskip("vowpalwabbit")
    path = tmp_path / name
    path.write_bytes(data)
    res = subprocess.run([sys.executable, "-m", "vowpalwabbit", "--audit", "--quiet", "--noconstant", "-d",
                          str(path), *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-300:]
    out = []
    for line in res.stdout.splitlines():
        if line.startswith("\t"):
            out.append(sorted((int(t.rsplit(":", 3)[1]), float(t.rsplit(":", 3)[2].split("@")[0]))
                              for t in line[1:].split("\t") if t))
    return out


def same(vw, ours):
    assert len(vw) == len(ours)
    for a, b in zip(vw, ours):
        assert [i for i, _ in a] == [i for i, _ in b]
        assert all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6) for (_, x), (_, y) in zip(a, b))


CSV = (b'_label,_tag,a|x,a|y,b|z,w,|anon,|anon2,"q",sp ace\n'
       b'1,t1,0.5,hello,2,"0.25",3,0,"x ""y"" z",1\n'
       b'-1 2,\'t2,,world,-1.5e-3,abc,0,4,,\n'
       b'0,,1e2,"",7,"",,-2,plain,"a b"\n')


@pytest.mark.parametrize("args, kw", [([], {}), (["--csv_ns_value", "a:0.5,:3"], {"csv_ns_value": "a:0.5,:3"}),
                                      (["--hash_seed", "7"], {})])
def test_csv_against_vw(tmp_path, args, kw):
    seed = int(args[1]) if args[:1] == ["--hash_seed"] else 0
    vw = vw_audit(tmp_path, CSV, "t.csv", ["--csv", *args])
    same(vw, [e[3] for e in examples(convert(TextFormat("csv", **kw), CSV, seed=seed), seed=seed)])


JSON = JSON_LINE + (b'{"_label":{"Label":-1,"Weight":2},"features":{"13":0.039656971,"24":3.4781646e-02}}\n'
                    b'{"_label":"0.5 3","":{"e":1}," sp":{"f":1},"7x":{"g":"h"},"o":[{"k":1},2]}\n')


@pytest.mark.parametrize("args", [[], ["--chain_hash"], ["--hash_seed", "7"]])
def test_json_against_vw(tmp_path, args):
    seed = int(args[1]) if args[:1] == ["--hash_seed"] else 0
    vw = vw_audit(tmp_path, JSON, "t.json", ["--json", *args])
    fmt = TextFormat("json", chain_hash="--chain_hash" in args)
    same(vw, [e[3] for e in examples(convert(fmt, JSON, seed=seed), seed=seed)])


AFFIX = b"1 | happiness a:2 7\n-1 |bb:0.5 uglier x |c q\n0 |b s:str\n"


@pytest.mark.parametrize("affix", ["-2", "+1,-3b", "+7b,2c"])
def test_affix_against_vw(tmp_path, affix):
    vw = vw_audit(tmp_path, AFFIX, "t.vw", ["--affix", affix])
    conv = AffixConverter(parse_affix(affix), "t", 0, "strings")
    text = b"\n".join(conv.line(line) for line in AFFIX.split(b"\n")[:-1]) + b"\n"
    same(vw, [e[3] for e in examples(text)])


# ---------------------------------------------------------------------------------------------- CLI

def run(*args):
    return CliRunner().invoke(main, ["train", *map(str, args)])


def test_cli_csv_json_and_their_errors(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("_label,a,b\n1,0.5,x\n-1,0.25,y\n")
    res = run("--csv", "-d", csv, "-p", tmp_path / "p", "--quiet")
    assert res.exit_code == 0, res.output
    assert len((tmp_path / "p").read_text().splitlines()) == 2
    js = tmp_path / "d.json"
    js.write_text('{"_label":1,"a":0.5}\n{"_label":0,"a":"x"}\n')
    assert run("--json", "--chain_hash", "-d", js, "--quiet").exit_code == 0
    for args, why in ((["--csv", "--json"], "cannot be used together"),
                      (["--csv", "--csv_separator", "ab"], "one character"),
                      (["--csv", "--csv_separator", "|"], "reserved"),
                      (["--csv", "--csv_ns_value", "a"], "malformed"),
                      (["--csv", "--csv_no_file_header"], "needs --csv_header"),
                      (["--json", "--format", "vw"], "conflicts"),
                      (["--affix", "9"], "1..7")):
        res = run(*args, "-d", csv, "--quiet")
        assert res.exit_code != 0 and why in res.output and len(res.output.strip().splitlines()) == 1, res.output
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3\n")
    res = run("--csv", "-d", bad, "--quiet")
    assert res.exit_code != 0
    assert re.search(rf"{re.escape(str(bad))} line 3: 1 cells where the header has 2", res.output), res.output


def test_cli_affix_is_stored_in_the_model(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 | happiness\n-1 | sadness\n")
    assert run("--affix", "-2", "-d", data, "-f", tmp_path / "m", "--quiet").exit_code == 0
    res = CliRunner().invoke(main, ["predict", "-i", str(tmp_path / "m"), "-d", str(data), "-p",
                                    str(tmp_path / "p"), "--quiet"])
    trained = run("--affix", "-2", "-d", data, "-t", "-i", tmp_path / "m", "-p", tmp_path / "q", "--quiet")
    assert res.exit_code == 0 and trained.exit_code == 0
    assert (tmp_path / "p").read_text() == (tmp_path / "q").read_text()
    plain = run("-d", data, "-t", "-i", tmp_path / "m", "-p", tmp_path / "r", "--quiet")
    assert plain.exit_code == 0 and (tmp_path / "r").read_text() == (tmp_path / "p").read_text()


# -------------------------------------------------------------------------------- --audit_regressor

def test_audit_regressor_writes_each_weight_once(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x:1 y:2\n0 |a y:1 z:3\n1 |b w\n")
    model = tmp_path / "m"
    assert run("-d", data, "-f", model, "--readable-model", tmp_path / "r", "--quiet").exit_code == 0
    res = run("-d", data, "-i", model, "--audit_regressor", tmp_path / "a")
    assert res.exit_code == 0, res.output
    assert "Regressor contains 5 values" in res.stderr
    lines = (tmp_path / "a").read_text().splitlines()
    names = [line.split(":")[0] for line in lines]
    assert names == ["a^x", "a^y", "Constant", "a^z", "b^w"]       # the first example using each weight
    readable = {int(m.group(1)): float(m.group(2))
                for m in re.finditer(r"^(\d+):(\S+)", (tmp_path / "r").read_text(), re.M)}
    for line in lines:
        _, slot, w = line.split(":")
        assert math.isclose(float(w), readable[int(slot)], rel_tol=1e-5)
    assert fi("a", "x") == int(lines[0].split(":")[1])


@pytest.mark.parametrize("args, why", [(["--passes", "2", "-c"], "--passes > 1"), ([], "needs a model")])
def test_audit_regressor_refusals(tmp_path, args, why):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x:1\n")
    model_args = []
    if args:
        assert run("-d", data, "-f", tmp_path / "m", "--quiet").exit_code == 0
        model_args = ["-i", tmp_path / "m"]
    res = run("-d", data, *model_args, *args, "--audit_regressor", tmp_path / "a")
    assert res.exit_code != 0 and why in res.output, res.output


# ------------------------------------------------------------------------------------- --dictionary

def test_dictionary_features_by_vws_rules(tmp_path):
    from streamlearn.io.textformats import load_dictionaries
    (tmp_path / "d.dict").write_text("a myfeat:1\nb 5:2.1\na other\n\tc  x y:0\nlonely\n")
    tables = load_dictionaries(["w:d.dict", "d.dict"], [str(tmp_path)], BITS, 0, "strings")
    assert set(tables) == {ord("w"), 32}
    table = tables[ord("w")][0]
    assert table[b"a"] == [(fi(" ", "myfeat"), 1.0)]          # the first line of a word wins
    assert table[b"b"] == [(5, pytest.approx(2.1))]
    assert table[b"c"] == [(fi(" ", "x"), 1.0)] and b"lonely" not in table
    conv = AffixConverter({}, "t", 0, "strings", dictionaries=tables)
    feats = examples(conv.line(b"1 |w a b:0 zz | b") + b"\n")[0][3]
    assert feats == sorted([(fi("w", "a"), 1.0), (fi("w", "zz"), 1.0), (fi(" ", "b"), 1.0),
                            (fi(" ", "myfeat"), 1.0), (5, pytest.approx(2.1))])   # b:0 looks nothing up


def test_dictionary_read_twice_is_used_twice_and_missing_is_an_error(tmp_path):
    import gzip
    from streamlearn.io.textformats import load_dictionaries
    (tmp_path / "d.dict").write_text("a f\n")
    (tmp_path / "d.dict.gz").write_bytes(gzip.compress(b"a f\n"))
    tables = load_dictionaries(["d.dict", "d.dict.gz"], [str(tmp_path)], BITS, 0, "strings")
    assert len(tables[32]) == 2 and tables[32][0] is tables[32][1]     # VW's content hash: read once
    with pytest.raises(ValueError, match="cannot find dictionary 'nope'"):
        load_dictionaries(["nope"], [str(tmp_path)], BITS, 0, "strings")


def test_dictionary_against_vw(tmp_path):
    (tmp_path / "d.dict").write_text("a myfeat:1 q\nb 5:2.1\nhappy p:0.5\n")
    data = b"1 |w a b |x happy\n-1 |w c | a happy\n"
    args = ["--dictionary", "w:d.dict", "--dictionary", "d.dict", "--dictionary_path", str(tmp_path)]
    vw = vw_audit(tmp_path, data, "t.vw", args)
    from streamlearn.io.textformats import load_dictionaries
    conv = AffixConverter({}, "t", 0, "strings",
                          dictionaries=load_dictionaries(["w:d.dict", "d.dict"], [str(tmp_path)], BITS, 0, "strings"))
    same(vw, [e[3] for e in examples(b"".join(conv.line(line) + b"\n" for line in data.split(b"\n")[:-1]))])


def test_cli_dictionary_missing_file(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |w a\n")
    res = run("-d", data, "--dictionary", "w:nope.dict", "--quiet")
    assert res.exit_code != 0 and "cannot find dictionary 'nope.dict'" in res.output
