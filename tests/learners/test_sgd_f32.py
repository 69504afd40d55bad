"""sgd under --sgd keeps VW's 4 bytes a weight (a float32 table) from -b ``sgd.F32_MIN_BITS`` on (issue 30:
the memory check at -b 24), and the float64 weight below."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from streamlearn import learners
from streamlearn.cli import main
from streamlearn.config import train_config
from streamlearn.learners import sgd

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "samples" / "sparse.train.vw"


def test_sgd_table_is_float32_from_b22():
    assert sgd.F32_MIN_BITS == 22
    for bits, dtype in ((18, "float64"), (21, "float64"), (22, "float32"), (24, "float32")):
        lay = learners.layout(train_config(dict(sgd=True, bits=bits, sources=("-",))))
        assert lay.names == ("w",) and lay.dtype == dtype, bits
    lay = learners.layout(train_config(dict(sgd=True, bits=24, csoaa=3, sources=("-",))))
    assert lay.dtype == "float64"          # the cost-sensitive kernels keep float64


def _predictions(tmp_path, name, *args):
    out = tmp_path / name
    r = CliRunner().invoke(main, ["train", "-d", str(SAMPLE), "--sgd", "--loss", "logistic", "-b", "12",
                                  "--quiet", "-p", str(out), *args])
    assert r.exit_code == 0, r.output
    return np.loadtxt(out)


def test_float32_sgd_follows_the_float64_run(tmp_path, monkeypatch):
    """The same run on a float32 and a float64 table: predictions within float32 rounding, on a
    stable run (logistic loss), with one and with two passes (the saved model read back as it was)."""
    for args in ((), ("--passes", "2", "--cache-file", str(tmp_path / "sample.cache"), "--holdout_off")):
        monkeypatch.setattr(sgd, "F32_MIN_BITS", 99)
        wide = _predictions(tmp_path, "p64", *args)
        monkeypatch.setattr(sgd, "F32_MIN_BITS", 0)
        narrow = _predictions(tmp_path, "p32", *args)
        assert wide.shape == narrow.shape and len(wide) > 100
        np.testing.assert_allclose(narrow, wide, rtol=1e-4, atol=1e-5)
        assert not np.array_equal(narrow, wide)         # the tables did differ
