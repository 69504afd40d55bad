"""Numbers that do not fit (issue 24): values beyond float32, interaction products that overflow, and
training that diverges. Decisions pinned here (docs/features.md, "Malformed input"; docs/vw.md, "Deliberate
differences"):

* a label, importance weight, base or feature value that is not finite, or is finite but beyond
  float32's range once read (1e39; a feature value times its namespace value), is a fault of its
  line: a one-line error naming file and line under --strict, else one warning and the line's usual
  consequence (a label-part fault: predicted, not learned; a feature fault: the rest of the line is
  dropped);
* an interaction product (-q/--cubic/--interactions) beyond float32 makes its example a fault too:
  predicted (with the product left out), not learned;
* weights or predictions that become infinite or NaN while training: one warning naming the first
  example where it showed ("training diverged: ... at FILE line N ...; try a smaller learning rate
  (-l)"); under --strict an error at that example, and no model is written; without it the model is
  written with the infinite or NaN values as 0 (the warning says how many), so it can be read back. A
  saved model never holds inf or NaN.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support.helpers import cli, text_buffer
from streamlearn.io.blocks import FMT_LIBSVM, FMT_VW, parse_block
from streamlearn.io.model_file import load_model

RANGE = "is beyond float32's range (+-3.4e38)"
#: the property's examples scale with STREAMLEARN_FUZZ_SCALE (make fuzz's variable), 25 by default
SCALE = max(1, int(os.environ.get("STREAMLEARN_FUZZ_SCALE", "1")))


def faults(text: str, fmt: int = FMT_VW):
    block = parse_block("t", text_buffer(text), 1, fmt, (1 << 18) - 1, False, 0, 0)
    return block, [(line, reason) for line, reason, _ in block.fault_lines()]


@pytest.mark.parametrize("line, reason", [
    ("1 | a:1e39", f'feature value in "a:1e39" {RANGE}'),
    ("1 | a:-3.5e38 b", f'feature value in "a:-3.5e38" {RANGE}'),
    ("1 | a:0x1p200", f'feature value in "a:0x1p200" {RANGE}'),
    ("1 |n:1e30 a:1e30", f'feature value in "a:1e30" times its namespace value {RANGE}'),
    ("1 |n:1e39 a", f'feature value in "a" times its namespace value {RANGE}'),
    ("1e39 | a", f'label "1e39" {RANGE}'),
    ("1 -1e39 | a", f'importance weight "-1e39" {RANGE}'),
    ("1 1e39 | a", f'importance weight "1e39" {RANGE}'),
    ("1 1 1e39 | a", f'base "1e39" {RANGE}'),
    ("1 | a:inf", 'feature value in "a:inf" is not finite'),
    ("1 | a:1e400", 'feature value in "a:1e400" is not finite'),
    ("nan | a", 'label "nan" is not a number'),
])
def test_vw_values_beyond_float32_are_faults(line, reason):
    block, got = faults(line + "\n")
    assert got == [(1, reason)]
    assert np.all(np.isfinite(block.val)) and np.all(np.isfinite(block.weights)) and np.all(np.isfinite(block.bases))


def test_vw_largest_float32_values_are_kept():
    block, got = faults("3.4028234e38 | a:3.4028234e38 b:-3.4028234e38\n")
    assert got == []
    assert block.labels[0] == 3.4028234e38
    assert np.float32(3.4028234e38) in block.val and np.float32(-3.4028234e38) in block.val


@pytest.mark.parametrize("line, reason", [
    ("1 3:1e39", f'feature value in "3:1e39" {RANGE}'),
    ("1e39 3:1", f'label "1e39" {RANGE}'),
    ("1 3:inf", 'feature value in "3:inf" is not finite'),
])
def test_libsvm_values_beyond_float32_are_faults(line, reason):
    block, got = faults(line + "\n", FMT_LIBSVM)
    assert got == [(1, reason)]
    assert np.all(np.isfinite(block.val))


def train_output(tmp_path, lines, *args, expect_ok=True):
    data = tmp_path / "d.vw"
    data.write_text("".join(ln + "\n" for ln in lines))
    return data, cli("train", "-d", data, "--quiet", *args, expect_ok=expect_ok)


def model_values(path) -> np.ndarray:
    header, index, rows = load_model(str(path))
    return np.asarray(rows, np.float64)


def test_cli_value_beyond_float32(tmp_path):
    lines = ["1 | a b", "1 | a:1e39 b", "-1 | c"]
    data, res = train_output(tmp_path, lines, "-f", tmp_path / "m.slm")
    assert (f'streamlearn: warning: {data} line 2: feature value in "a:1e39" {RANGE}; the rest of the line '
            f'is ignored') in res.output
    assert np.all(np.isfinite(model_values(tmp_path / "m.slm")))
    _, res = train_output(tmp_path, lines, "--strict", "-f", tmp_path / "m2.slm", expect_ok=False)
    assert res.exit_code == 1
    assert res.output.strip() == f'Error: {data} line 2: feature value in "a:1e39" {RANGE}'
    assert not (tmp_path / "m2.slm").exists()


def test_cli_interaction_product_beyond_float32(tmp_path):
    lines = ["1 |a x:2 |b y:3", "1 |a x:1e20 |b y:1e20", "1 |a x:2 |b y:3"]
    product = ("an interaction feature's value (a product of feature values) is beyond float32's range "
               "(+-3.4e38)")
    data, res = train_output(tmp_path, lines, "-q", "ab", "--readable-model", tmp_path / "r.txt")
    assert f"streamlearn: warning: {data} line 2: {product}; the example is predicted, not learned" in res.output
    rows = [ln for ln in (tmp_path / "r.txt").read_text().splitlines() if ln[:1].isdigit() and ":" in ln]
    assert rows and all(math.isfinite(float(v)) for ln in rows for v in ln.split(":", 1)[1].split())
    _, res = train_output(tmp_path, lines, "-q", "ab", "--strict", expect_ok=False)
    assert res.output.strip() == f"Error: {data} line 2: {product}"


def test_expanded_block_with_an_overflowing_product():
    """The expanded block: the example's label is NaN (not learned), its infinite product is 0, and the
    fault sits in example order among the parser's faults."""
    from streamlearn.api import make_config, text_block
    cfg = make_config({"quadratic": ("ab",)})
    block = text_block(["1 |a x:1e20 |b y:1e20", "abc |a x", "1 |a x:1e30 |b y:1e30 z:1e39"], cfg)
    assert np.all(np.isfinite(block.val))
    assert np.isnan(block.labels[0]) and np.isnan(block.labels[1]) and np.isnan(block.labels[2])
    assert [(line, reason.split(" ")[0]) for line, reason, _ in block.fault_lines()] == [
        (1, "an"), (2, "label"), (3, "feature")]


DIVERGING = ["1 | a", "1e38 | a:1e38", "1 | b:1e38", "1 | c", "1 | c"]


def test_divergence_is_named(tmp_path):
    data, res = train_output(tmp_path, DIVERGING, "--sgd", "-l", "1e300", "-f", tmp_path / "m.slm")
    want = (f"streamlearn: warning: training diverged: weights became infinite or NaN at {data} line 2 (the "
            f"first example whose prediction or update was not finite); try a smaller learning rate (-l); the "
            f"model saves its 2 infinite or NaN values as 0\n")
    assert want in res.output
    assert res.output.count("training diverged") == 1
    # written after the warning, readable, and finite: predict -i reads it
    assert np.all(np.isfinite(model_values(tmp_path / "m.slm")))
    cli("predict", "-i", tmp_path / "m.slm", "-d", data, "--quiet", "-p", tmp_path / "p.txt")


def test_divergence_under_strict_writes_no_model(tmp_path):
    data, res = train_output(tmp_path, DIVERGING, "--sgd", "-l", "1e300", "--strict", "-f", tmp_path / "m.slm",
                             expect_ok=False)
    assert res.exit_code == 1
    assert res.output.strip().splitlines()[-1] == (
        f"Error: training diverged: a prediction or update became infinite or NaN at {data} line 2; try a "
        f"smaller learning rate (-l)")       # at once: the rest of the data is not read
    assert not (tmp_path / "m.slm").exists()


def test_divergence_one_against_all(tmp_path):
    """--oaa's loop names the first example with a non-finite class score (its weights are K rows)."""
    data, res = train_output(tmp_path, ["1 | a:1e38", "2 | a:1e38 b", "3 | b:1e38", "1 | c", "2 | c"], "--oaa", "3",
                             "--sgd", "-l", "1e300", "-f", tmp_path / "m.slm")
    assert (f"training diverged: weights became infinite or NaN at {data} line 2 (the first example whose "
            f"prediction or update was not finite)") in res.output
    assert np.all(np.isfinite(model_values(tmp_path / "m.slm")))


@pytest.mark.parametrize("strict", [False, True])
def test_weights_in_force_that_overflow_at_finalize_are_reported(tmp_path, monkeypatch, strict):
    """Weights in force computed at save time (eg's exponentials, say) are checked too: a warning and
    0 in the model, or under --strict an error and no model (forced here: a finite table whose
    weights in force come out infinite)."""
    from streamlearn import learners
    real = learners.weights_in_force

    def overflowing(*args):
        w = np.array(real(*args), dtype=np.float64)
        w[:2] = np.inf
        return w
    monkeypatch.setattr(learners, "weights_in_force", overflowing)
    lines = ["1 | a b:2", "-1 | c d:0.5", "1 | a c"] * 5
    args = ["--algo", "tg", "--l1", "1e-4", "-f", tmp_path / "m.slm"] + (["--strict"] if strict else [])
    _, res = train_output(tmp_path, lines, *args, expect_ok=not strict)
    text = "training diverged: 2 weights in force became infinite or NaN when the model was finalized"
    assert text in res.output
    if strict:
        assert res.exit_code == 1 and not (tmp_path / "m.slm").exists()
    else:
        assert np.all(np.isfinite(model_values(tmp_path / "m.slm")))


def test_no_divergence_message_on_ordinary_data(tmp_path):
    lines = ["1 | a b:2", "-1 | c d:0.5", "1 | a c"] * 5
    _, res = train_output(tmp_path, lines, "-f", tmp_path / "m.slm")
    assert "diverged" not in res.output and "warning" not in res.output


def test_loop_records_the_first_nonfinite_example():
    """The kernel-level record: ctr[C_DIVERGED_EX] is the first example (index in the block) whose
    update wrote a non-finite weight, and later examples do not move it."""
    from streamlearn.api import Engine, make_config, text_block
    from streamlearn.core import state as S
    eng = Engine(make_config({"sgd": True, "learning_rate": 1e300}))
    block = text_block(["1 | a", "1 | a", "1e38 | a:1e38", "1 | a:1e38", "1 | b"], eng.cfg)
    with pytest.warns(RuntimeWarning, match=r"training diverged: predictions or weights became infinite or "
                                            r"NaN at lines line 3 "):
        eng.learn(block)
    assert eng.run.ctr[S.C_DIVERGED] == 1.0 and eng.run.ctr[S.C_DIVERGED_EX] == 2.0


# --------------------------------------------------------------------------- property

_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([1e38, -3e38, 3.5e38, 1e39, 1e300, 1e-300, 0.0, 1.0, float("inf"), float("nan")]),
)


def _num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf"))


@settings(max_examples=25 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_VALUES, _VALUES, _VALUES), min_size=1, max_size=6),
       rate=st.sampled_from(["0.5", "10", "1e300"]), quad=st.booleans())
@example(rows=[(1e38, 1e38, 1.0), (1.0, 1e38, 1.0)], rate="1e300", quad=False)
@example(rows=[(1.0, 1e20, 1e20)], rate="0.5", quad=True)
def test_no_silent_nonfinite_model(tmp_path, rows, rate, quad):
    """Whatever the values (finite, huge, inf, nan), a saved model reads back and holds only finite
    numbers, and it differs from the data's plain reading only with a message: a value that did not
    fit is a fault warning, a non-finite weight the divergence warning."""
    lines = [f"{_num(y)} |a x:{_num(a)} |b y:{_num(b)}" for y, a, b in rows]
    model = tmp_path / "m.slm"
    model.unlink(missing_ok=True)
    _, res = train_output(tmp_path, lines, "--sgd", "-l", rate, "-f", model, *(["-q", "ab"] if quad else []))
    assert "internal error" not in res.output
    assert np.all(np.isfinite(model_values(model))), res.output
    beyond = any(not math.isfinite(v) or abs(v) > 3.41e38 for row in rows for v in row)
    if beyond:
        assert "warning: " in res.output and " line " in res.output, res.output
