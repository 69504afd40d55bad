"""VW's neural network reduction (issue 27): ``--nn K`` over the sgd learner (``streamlearn/core/nn.py``).

The compiled network is checked against a slow transcription of VW's nn.cc over the plain ``--sgd`` rule
(dicts, one example at a time), VW's fast tanh against a plain float32 transcription; the runs against VW
9.11.9 on generated data (squared, logistic and hinge losses, 1-4 hidden units, the default rule,
--invariant, -q, --passes, --lrq and --lrqfa under the network), models with -f then -t -i, -i and
``streamlearn predict``; bad values are one-line errors. The suite's tests 19, 38, 285 (--audit), 410 and
595 run in tests/conformance/test_vw_suite.py."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from support import vwsuite
from support.helpers import cli, read_predictions, vw_dataset, write_lines
from support.reference import dloss, loss_value

from streamlearn.core.nn import fasttanh
from streamlearn.features.hashing import constant_index, feature_index

F32 = np.float32
NN_CONSTANT = 533357803
CONSTANT = 11650396


# ----------------------------------------------------------------------------- the slow reference

def _tanh(p: float) -> float:
    """VW's fasttanh, transcribed: float32 steps, the float of fastpow2 from its bits."""
    x = F32(F32(1.442695040) * F32(F32(-2.0) * F32(p)))
    offset = F32(1.0) if x < 0 else F32(0.0)
    clipp = F32(-126.0) if x < -126 else x
    z = F32(F32(clipp - F32(int(clipp))) + offset)
    t = F32(F32(clipp + F32(121.2740575)) + F32(F32(27.7280233) / F32(F32(4.84252568) - z)))
    t = F32(t - F32(F32(1.49012907) * z))
    e = struct.unpack("<f", struct.pack("<I", int(F32(F32(8388608.0) * t))))[0]
    return float(F32(F32(-1.0) + F32(F32(2.0) / F32(F32(1.0) + F32(e)))))


def test_fasttanh_is_vws():
    bits = np.zeros(1, np.uint32)
    for p in np.concatenate([np.linspace(-3, 3, 601), [0.0, 1e-8, -1e-8, 2.9999]]):
        assert float(fasttanh(F32(p), bits)) == _tanh(float(p))
        assert abs(_tanh(float(p)) - math.tanh(p)) < 1e-3


class _Rand:
    """VW's random state: merand48 from --random-seed, draw - 0.5 as a float."""

    def __init__(self, seed: int):
        self.state = seed

    def half(self) -> float:
        self.state = (0xEECE66D5DEECE66D * self.state + 2147483647) % (1 << 64)
        bits = ((self.state >> 25) & 0x7FFFFF) | (127 << 23)
        draw = np.array([bits], np.uint32).view(np.float32)[0] - F32(1.0)
        return float(F32(float(draw) - 0.5))


def reference(lines, bits: int, loss: str, K: int, eta: float, seed: int = 0, dropout: bool = False,
              inpass: bool = False):
    """-p predictions of ``--sgd --nn K`` (plain steps: w -= eta h t^-1/2 dloss x with t = 1 + the
    importance weights so far, none when the loss is 0), written from VW's nn.cc: hidden biases at VW's
    constant index and output weights at NN_CONSTANT + K + i, each drawn by one squared-loss step towards
    a random target while 0; the hidden scores clamped to [-3, 3], VW's fast tanh, the output layer
    learned with the run's loss, then each unit's input weights one squared-loss step towards its score
    less g nu (1 - sigma^2) / 2. With ``dropout`` each unit of a learned example is left out when a draw of
    its own generator is below 1/2 (the others' sigma doubled), and the output layer and the units kept
    learn, then the same with the units left out; with ``inpass`` the output layer takes the example's
    features at offset K and no constant."""
    width = 1 << math.ceil(math.log2(K + 1))
    mask = (1 << bits) - 1
    w: dict[int, float] = {}
    rnd = _Rand(seed)
    drop = _Rand(seed)
    lo, hi = (-50.0, 50.0) if loss == "logistic" else (0.0, 0.0)
    t0 = 1.0
    preds = []

    def step(feats, p, y, h, t, lossname, blo, bhi):
        if loss_value(lossname, p, y, 0.5, blo, bhi) > 0:
            g = dloss(lossname, p, y, 0.5) * eta * h * t ** -0.5
            for s, v in feats:
                w[s] = w.get(s, 0.0) - g * v

    def clamp(x, a, b):
        return min(max(x, a), b)

    for line in lines:
        head, *spaces = line.rstrip("\n").split("|")
        y = float(head.split()[0])
        h = 1.0
        feats = []
        for sp in spaces:
            ns, *items = sp.split()
            for item in items:
                name, _, v = item.partition(":")
                feats.append(((feature_index(ns, name, bits) * width) & mask, float(F32(v)) if v else 1.0))
        feats.append(((constant_index(bits) * width) & mask, 1.0))
        if loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        for i in range(K):
            r = (CONSTANT + i) & mask
            if clamp(w.get(r, 0.0), -3, 3) == 0.0:
                step([(r, 1.0)], 0.0, rnd.half(), 1.0, t0 + 1.0, "squared", -3, 3)
        hidden = [clamp(sum(w.get((s + i) & mask, 0.0) * v for s, v in feats), -3, 3) for i in range(K)]
        if dropout:
            dropped = [drop.half() + 0.5 < 0.5 for _ in range(K)]
        else:
            dropped = [False] * K
        scale = 2.0 if dropout else 1.0
        for rnd_no in range(2 if dropout else 1):
            sig = []
            for i in range(K):
                sig.append(0.0 if dropped[i] else float(F32(F32(scale) * F32(_tanh(hidden[i])))))
                r = (NN_CONSTANT + K + i) & mask
                if clamp(w.get(r, 0.0), -1, 1) == 0.0:
                    step([(r, 1.0)], 0.0, float(F32(F32(rnd.half()) / F32(math.sqrt(K)))), 1.0, t0 + 1.0, "squared",
                         -1, 1)
            out = [((s_ + K) & mask, v) for s_, v in feats] if inpass else []
            out += [((NN_CONSTANT + K + i) & mask, sig[i]) for i in range(K)]
            out += [] if inpass else [((NN_CONSTANT + 2 * K) & mask, 1.0)]
            p = clamp(sum(w.get(s_, 0.0) * v for s_, v in out), lo, hi)
            if rnd_no == 0:
                preds.append(p)
            step(out, p, y, h, t0 + h, loss, lo, hi)
            g = dloss(loss, p, y, 0.5)
            if g != 0.0:
                for i in range(K):
                    if dropped[i]:
                        continue
                    sh = F32(F32(sig[i]) / F32(scale))
                    nu = F32(clamp(w[(NN_CONSTANT + K + i) & mask], -3, 3))
                    prime = F32(F32(scale) * F32(F32(1.0) - F32(sh * sh)))
                    gradhw = F32(F32(F32(F32(0.5) * nu) * F32(g)) * prime)
                    target = clamp(float(F32(F32(hidden[i]) - gradhw)), -3, 3)
                    if target != float(F32(hidden[i])):
                        step([((s_ + i) & mask, v) for s_, v in feats], hidden[i], target, h, t0 + h, "squared", -3, 3)
            dropped = [not d for d in dropped]
        t0 += h
    return np.array(preds)


def _data(tmp_path, n=120, seed=4, real=False):
    lines = vw_dataset(n, seed=seed, namespaces="abc", vocab=12, weighted=False)
    if real:
        rng = np.random.default_rng(seed)
        lines = [f"{rng.uniform(0, 3):.2f}" + line[line.index(" "):] for line in lines]
    return write_lines(tmp_path / "d.vw", lines), lines


@pytest.mark.parametrize("loss, K, seed, flags", [("squared", 1, 0, ()), ("squared", 3, 7, ()),
                                                  ("logistic", 2, 0, ()), ("logistic", 4, 3, ()),
                                                  ("logistic", 3, 5, ("--dropout",)), ("squared", 2, 1, ("--inpass",)),
                                                  ("squared", 2, 2, ("--inpass", "--dropout"))])
def test_kernel_matches_reference(tmp_path, loss, K, seed, flags):
    path, lines = _data(tmp_path, real=loss == "squared")
    cli("train", "-d", path, "--sgd", "-l", 0.05, "--loss", loss, "-b", 16, "--nn", K, "--random_seed", seed, *flags,
        "-p", tmp_path / "p", "--quiet")
    want = reference(lines, 16, loss, K, 0.05, seed, dropout="--dropout" in flags, inpass="--inpass" in flags)
    assert np.abs(want).max() > 0.05
    np.testing.assert_allclose(read_predictions(tmp_path / "p"), want, rtol=0, atol=1e-6)   # -p: 6 decimals


# ----------------------------------------------------------------------------- the options

@pytest.mark.parametrize("opts, message", [
    (("--nn", "0"), "Error: --nn needs at least 1 hidden unit (got 0)"),
    (("--nn", "2", "--algo", "ftrl"), "Error: --nn does not apply to --algo ftrl; the network runs over --algo sgd "
                                      "(VW's gd)"),
    (("--nn", "2", "--oaa", "3"), "Error: --nn does not apply to --oaa, --csoaa or --multilabel_oaa"),
    (("--nn", "2", "--invert_hash", "x"), "Error: --invert-hash does not apply to --nn"),
    (("--dropout",), "Error: --dropout needs --nn K"),
    (("--inpass",), "Error: --inpass needs --nn K"),
])
def test_bad_values_are_one_line_errors(tmp_path, opts, message):
    path, _ = _data(tmp_path, n=5)
    res = cli("train", "-d", path, *opts, "--quiet", expect_ok=False)
    assert res.exit_code != 0
    assert res.output.strip() == message


# ----------------------------------------------------------------------------- VW 9.11.9 itself

@pytest.mark.parametrize("opts", [
    ("--nn", "1"),
    ("--nn", "3", "--loss_function", "logistic"),
    ("--nn", "2", "--loss_function", "hinge"),
    ("--nn", "2", "--random_seed", "9"),
    ("--nn", "4", "--loss_function", "logistic", "--passes", "2", "-c", "-k"),
    ("--nn", "2", "-q", "ab"),
    ("--nn", "3", "--lrq", "ab2", "--loss_function", "logistic"),
    ("--nn", "2", "--lrqfa", "abc2", "--loss_function", "logistic", "--link", "logistic"),
    ("--nn", "3", "--dropout", "--loss_function", "logistic"),
    ("--nn", "2", "--dropout", "--passes", "2", "-c", "-k", "--loss_function", "logistic"),
    ("--nn", "2", "--inpass", "--multitask"),
    ("--nn", "2", "--inpass", "--dropout", "--random_seed", "4"),
    ("--nn", "2", "--dropout", "--meanfield"),
])
def test_against_vw(tmp_path, opts):
    path, _ = _data(tmp_path, n=200)
    vwsuite.vw_run(tmp_path, ["-d", path, *opts, "-p", "vw.p", "--quiet"])
    cli("train", "-d", path, *opts, "-p", tmp_path / "p", "--quiet")
    vwsuite.same_tokens((tmp_path / "p").read_text(), (tmp_path / "vw.p").read_text())


@pytest.mark.parametrize("flags", [(), ("--dropout", "--inpass")])
def test_model_keeps_the_network(tmp_path, flags):
    """-f keeps --nn (and --dropout, --inpass): -t -i (a predicted example has all its units) and -i give
    VW's predictions, as does ``streamlearn predict``."""
    path, lines = _data(tmp_path, n=200)
    train, test = write_lines(tmp_path / "a.vw", lines[:140]), write_lines(tmp_path / "b.vw", lines[140:])
    vwsuite.vw_run(tmp_path, ["-d", train, "--nn", "3", *flags, "-f", "vw.m", "--quiet"])
    vwsuite.vw_run(tmp_path, ["-d", test, "-t", "-i", "vw.m", "-p", "vw.t", "--quiet"])
    vwsuite.vw_run(tmp_path, ["-d", test, "-i", "vw.m", "-p", "vw.r", "--quiet"])
    cli("train", "-d", train, "--nn", "3", *flags, "-f", tmp_path / "m", "--quiet")
    cli("train", "-d", test, "-t", "-i", tmp_path / "m", "-p", tmp_path / "t", "--quiet")
    cli("train", "-d", test, "-i", tmp_path / "m", "-p", tmp_path / "r", "--quiet")
    cli("predict", "-i", tmp_path / "m", "-d", test, "-p", tmp_path / "q")
    for mine, theirs in (("t", "vw.t"), ("r", "vw.r"), ("q", "vw.t")):
        vwsuite.same_tokens((tmp_path / mine).read_text(), (tmp_path / theirs).read_text())


def test_vw_model_files_keep_the_network(tmp_path):
    """A VW --nn model predicts VW's numbers with -i -t; --vw-model-out writes one VW 9.11.9 reads back
    (with --nn in its options) and predicts identically; the readable model keeps VW's first normalizer
    state."""
    path, lines = _data(tmp_path, n=160)
    train, test = write_lines(tmp_path / "a.vw", lines[:120]), write_lines(tmp_path / "b.vw", lines[120:])
    vwsuite.vw_run(tmp_path, ["-d", train, "--nn", "2", "-f", "vw.m", "--readable_model", "vw.rm", "--quiet"])
    vwsuite.vw_run(tmp_path, ["-d", test, "-t", "-i", "vw.m", "-p", "vw.t", "--quiet"])
    cli("train", "-d", test, "-t", "-i", tmp_path / "vw.m", "-p", tmp_path / "t", "--quiet")
    vwsuite.same_tokens((tmp_path / "t").read_text(), (tmp_path / "vw.t").read_text())
    cli("train", "-d", train, "--nn", "2", "--vw-model-out", tmp_path / "mine.vwm", "--readable-model", tmp_path / "rm",
        "--quiet")
    vwsuite.vw_run(tmp_path, ["-d", test, "-t", "-i", "mine.vwm", "-p", "vw.mine", "--quiet"])
    vwsuite.same_tokens((tmp_path / "vw.mine").read_text(), (tmp_path / "vw.t").read_text())

    def state(path):
        return [line for line in path.read_text().splitlines() if line.startswith(("norm normalizer", "total_weight"))]
    vwsuite.same_tokens("\n".join(state(tmp_path / "rm")), "\n".join(state(tmp_path / "vw.rm")))
