"""Projected SGD onto the L1 ball (--algo l1ball) equals the dense eager reference, with each online
projection method; the CLI trains, predicts and continues with it."""


import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.reference import eager_l1ball, to_csr
from streamlearn import learners
from streamlearn.cli import main
from streamlearn.config import train_config
from streamlearn.io.model_file import load_model
from support.kernels import kernel_arrays, run_block
from support.streams import streams

TRAIN = "data/samples/sparse.train.vw"


def run_l1ball(examples, bits, splits=(), **opts):
    cfg = train_config(dict(opts, algo="l1ball", bits=bits, sources=("-",)))
    kernel = learners.block_kernel(cfg)
    prm, iprm, stt, ctr = kernel_arrays(cfg)
    table = np.zeros((1 << bits, learners.layout(cfg).columns))
    indptr, idx, val, labels, weights, bases = to_csr(examples)
    preds = np.zeros(len(examples))
    bounds = sorted({0, len(examples), *[s for s in splits if 0 < s < len(examples)]})
    norms = []
    for a, b in zip(bounds, bounds[1:]):
        for e in range(a, b):          # one example at a time, to check the norm after each
            assert run_block(kernel, indptr, idx, val, labels, weights, bases, e, e + 1, table, prm, iprm, stt, ctr,
                             preds) == e + 1
            w = learners.weights_in_force(cfg, table, stt, np.arange(1 << bits))
            norms.append(np.abs(w).sum())
    learners.finalize(cfg, table, prm, iprm, stt)          # applies an open mini-batch
    return preds, learners.weights_in_force(cfg, table, stt, np.arange(1 << bits)), norms


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(["squared", "logistic", "hinge", "quantile"]),
       z=st.sampled_from([0.05, 0.5, 2.0, 20.0]), eta=st.sampled_from([0.1, 1.0, 10.0]),
       projection=st.sampled_from(["tree", "linear", "sort"]), invariant=st.booleans(),
       batch=st.sampled_from([1, 1, 2, 5]))
def test_l1ball_equals_dense_projected_sgd(data, loss, z, eta, projection, invariant, batch):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    rule = {"invariant": True} if invariant else {}
    preds, w, norms = run_l1ball(examples, bits, loss=loss, radius=z, learning_rate=eta,
                                 projection=projection, batch_size=batch, **rule)
    ref_preds, ref_w = eager_l1ball(examples, 1 << bits, z, loss=loss, eta=eta, invariant=invariant,
                                    batch=batch)
    assert np.allclose(preds, ref_preds, rtol=1e-9, atol=1e-9), (preds, ref_preds)
    assert np.allclose(w, ref_w, rtol=1e-9, atol=1e-9), (w, ref_w)
    assert max(norms, default=0.0) <= z * (1 + 1e-9)


def ok(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


@pytest.mark.parametrize("projection,batch", [("tree", 1), ("linear", 1), ("sort", 1), ("tree", 10)])
def test_l1ball_cli_round_trip_and_resume(tmp_path, projection, batch):
    text = open(TRAIN).read().splitlines(keepends=True)
    a, b, both = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "both.vw"
    a.write_text("".join(text[:1100]))        # a multiple of the batch sizes: -i resumes at a batch edge
    b.write_text("".join(text[1100:]))
    both.write_text("".join(text))
    opts = ["--loss", "logistic", "--radius", "20", "-l", "0.5", "--projection", projection,
            "--batch-size", batch, "--quiet"]
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    ok("train", "-d", a, "-f", m1, *opts)
    ok("train", "-d", b, "-i", m1, "-f", m2, "--quiet")
    ok("train", "-d", both, "-f", m3, "-p", tmp_path / "p", *opts)
    (h2, i2, r2), (h3, i3, r3) = load_model(str(m2)), load_model(str(m3))
    assert h3["algo"] == "l1ball" and h3["column_names"] == ["w"]
    assert np.array_equal(i2, i3) and np.allclose(r2, r3, rtol=1e-9, atol=1e-12)
    assert np.abs(r3[:, 0]).sum() <= 20 * (1 + 1e-9)
    res = ok("predict", "-i", m3, "-d", TRAIN, "-p", tmp_path / "q", "--quiet")
    assert res.exit_code == 0
    # the same weights predict the same way as the plain linear model would
    q = np.array([float(l.split()[0]) for l in (tmp_path / "q").read_text().splitlines()])
    assert q.shape[0] == len(text)


@pytest.mark.parametrize("args,message", [
    (["--algo", "l1ball"], "--algo l1ball needs --radius Z (the L1 norm the weights may reach)"),
    (["--radius", "0"], "--radius must be a finite number > 0 (got 0)"),
    (["--radius", "1", "--adaptive"], "--adaptive does not apply to --algo l1ball: its projection is "
                                      "Euclidean, so it takes the plain schedule (--sgd, or no rule flag)"),
    (["--radius", "1", "--l1", "0.1"], "--l1 needs --algo tg or fobos; --algo l1ball regularizes with --radius"),
    (["--algo", "tg", "--radius", "1"], "--radius needs --algo l1ball or eg"),
    (["--batch-size", "4"], "--batch-size needs --algo l1ball, fobos or eg"),
    (["--radius", "1", "--batch-size", "0"], "--batch-size must be at least 1 (got 0)"),
])
def test_l1ball_option_errors(args, message):
    res = CliRunner().invoke(main, ["train"] + args, input="1 |a b\n")
    assert res.exit_code == 1
    assert res.stderr.splitlines()[-1] == f"Error: {message}"
