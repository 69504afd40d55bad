"""--preserve_performance_counters (VW's save_resume, issue 27): a model saved with its state keeps the
run's performance counters, -i with the flag continues them, and a model's counters are checked before
use."""

import re

import numpy as np
import pytest

from streamlearn.io.model_file import load_model, model_bytes
from support.helpers import cli, vw_dataset, write_lines


def _summary(stderr: str) -> dict:
    out = {}
    for key in ("weighted example sum", "weighted label sum", "average loss", "total feature number"):
        m = re.search(rf"^{key} = (\S+)", stderr, re.M)
        out[key] = float(m.group(1))
    return out


def test_counters_go_on(tmp_path):
    a = write_lines(tmp_path / "a.vw", vw_dataset(60, seed=1))
    b = write_lines(tmp_path / "b.vw", vw_dataset(40, seed=2))
    first = _summary(cli("train", "-d", a, "-f", tmp_path / "m", "--loss", "logistic").stderr)
    header = load_model(str(tmp_path / "m"))[0]
    assert header["counters"]["w_labeled"] == first["weighted example sum"]
    plain = _summary(cli("train", "-d", b, "-i", tmp_path / "m").stderr)
    kept = _summary(cli("train", "-d", b, "-i", tmp_path / "m", "--preserve_performance_counters").stderr)
    for key in ("weighted example sum", "weighted label sum", "total feature number"):
        assert kept[key] == pytest.approx(first[key] + plain[key])
    total = first["average loss"] * first["weighted example sum"] + plain["average loss"] * plain["weighted example sum"]
    assert kept["average loss"] == pytest.approx(total / kept["weighted example sum"], abs=2e-6)


def test_predict_only_models_keep_no_counters(tmp_path):
    a = write_lines(tmp_path / "a.vw", vw_dataset(20, seed=1))
    cli("train", "-d", a, "-f", tmp_path / "m", "--predict-only-model")
    assert "counters" not in load_model(str(tmp_path / "m"))[0]


@pytest.mark.parametrize("counters, why", [
    ([1.0], "counters is [1.0], not an object"),
    ({"bogus": 1.0}, 'unknown counter "bogus"'),
    ({"sum_loss": -1.0}, "counter sum_loss is -1.0, not >= 0"),
    ({"examples": "x"}, 'counter examples is "x", not a finite number'),
])
def test_bad_counters_are_refused_in_one_line(tmp_path, counters, why):
    a = write_lines(tmp_path / "a.vw", vw_dataset(20, seed=1))
    cli("train", "-d", a, "-f", tmp_path / "m")
    header, index, rows = load_model(str(tmp_path / "m"))
    header["counters"] = counters
    (tmp_path / "bad").write_bytes(model_bytes(header, np.asarray(index), np.asarray(rows)))
    res = cli("train", "-d", a, "-i", tmp_path / "bad", "--preserve_performance_counters", expect_ok=False)
    assert res.exit_code == 1
    message = res.output.strip().splitlines()[-1]
    assert message.startswith("Error: corrupt model ") and why in message, message
