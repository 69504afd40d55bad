"""VW's run options (issue 27, "Widen the scope"): -P/--progress, --holdout_after, --onethread,
--no_stdin, --sparse_weights, --noop, --print, --constant, --dont_output_best_constant,
--preserve_performance_counters -- each against an obvious reference and, where VW 9.11.9 is
installed, against VW's own numbers."""

import re

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn import config
from streamlearn.cli import main
from streamlearn.core.loop import held_out
from streamlearn.errors import OptionError
from streamlearn.io.model_file import load_model
from support.vwsuite import vw_run


def cli(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def ok(*args, input=None):
    r = cli(*args, input=input)
    assert r.exit_code == 0, r.output
    return r


def rows(stderr: str) -> list[list[str]]:
    """The progress table's rows (their columns)."""
    out, table = [], False
    for line in stderr.splitlines():
        if line.startswith("loss     last"):
            table = True
        elif table and not line.strip():
            break
        elif table:
            out.append(line.split())
    return out


def summary(stderr: str, key: str) -> str:
    return next(line for line in stderr.splitlines() if line.startswith(key)).split("=")[1].split()[0]


def data(path, n=300, seed=3, weights=False):
    """n examples of a small regression problem (importance weights 0.5..2 with ``weights``)."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for i in range(n):
            x = rng.random(4)
            y = 0.3 + x @ np.array([0.5, -0.2, 0.8, 0.1]) + 0.05 * rng.standard_normal()
            h = f" {rng.choice([0.5, 1.0, 2.0])}" if weights else ""
            f.write(f"{y:.4f}{h} |f " + " ".join(f"x{j}:{v:.4f}" for j, v in enumerate(x)) + "\n")
    return path


def schedule(weights, additive, interval):
    """The weighted example counts at which VW prints a row (shared_data.cc, in float32): the slow
    reference of -P."""
    f32 = np.float32
    dump = f32(interval) if additive else f32(1.0)
    seen, out = 0.0, []
    for h in weights:
        seen += h
        if seen >= dump:
            out.append(seen)
            dump = f32(seen) + f32(interval) if additive else f32(seen) * f32(interval)
    return out


# ----------------------------------------------------------------------------- -P/--progress

@pytest.mark.parametrize("arg, additive, interval", [
    ("25", True, 25.0), ("1", True, 1.0), ("1.5", False, 1.5), ("1.33333", False, 1.33333), (None, False, 2.0)])
def test_progress_rows_come_where_vws_schedule_puts_them(tmp_path, arg, additive, interval):
    d = data(tmp_path / "d.vw", weights=True)
    weights = [float(line.split()[1]) for line in open(d)]
    r = ok("train", "-d", d, *(["-P", arg] if arg else []))
    got = [float(row[3]) for row in rows(r.stderr)]
    assert got == schedule(weights, additive, interval)


def test_progress_is_parsed_as_vw_parses_it():
    assert config.progress_schedule("10") == (True, 10.0, None)
    assert config.progress_schedule("0")[:2] == (True, 1.0)        # additive below 1: forced to 1
    assert config.progress_schedule("0.5")[:2] == (False, 1.5)     # multiplicative <= 1: plus 1
    assert config.progress_schedule("2.0") == (False, 2.0, None)
    assert "integer" in config.progress_schedule("10.0")[2]
    with pytest.raises(OptionError, match="must be a number"):
        config.progress_schedule("often")
    r = cli("train", "-P", "often", input="1 |f a\n")
    assert r.exit_code != 0 and "Error: -P/--progress must be a number (got often)" in r.output
    r = ok("train", "-P", "0.5", input="1 |f a\n")
    assert "Multiplicative --progress <float> '0.5' is <= 1.0: adding 1.0" in r.stderr


def test_progress_rows_equal_vws(tmp_path):
    d = data(tmp_path / "d.vw", weights=True)
    for arg in ("7", "1.7"):
        vw = vw_run(tmp_path, ["-d", d, "-P", arg])
        mine = ok("train", "-d", d, "-P", arg)
        assert [row[2:4] for row in rows(mine.stderr)] == [row[2:4] for row in rows(vw.stderr)]


# ----------------------------------------------------------------------------- --holdout_after

def test_holdout_kernel_rule_against_the_obvious_one():
    for period in (0, 1, 3, 10, -1, -5, -250):
        for k in range(1, 40):
            want = (k % period == 0) if period > 0 else (period < 0 and k > -period)
            assert held_out(float(k), period) == want, (period, k)


def test_holdout_after_holds_out_the_rest_with_one_pass(tmp_path):
    d = data(tmp_path / "d.vw")
    r = ok("train", "-d", d, "--holdout_after", "200", "-P", "100", "-f", tmp_path / "a.model")
    assert summary(r.stderr, "number of examples") == "200"
    # the model learned from the first 200 examples only: the same as training on them alone
    head = tmp_path / "head.vw"
    head.write_text("".join(open(d).readlines()[:200]))
    ok("train", "-d", head, "-f", tmp_path / "b.model", "--quiet")
    # the holdout loss is the loss of the last 100 examples under that model
    p = tmp_path / "p.txt"
    tail = tmp_path / "tail.vw"
    tail.write_text("".join(open(d).readlines()[200:]))
    ok("predict", "-i", tmp_path / "b.model", "-d", tail, "-p", p, "--quiet")
    preds = np.loadtxt(p)
    labels = np.array([float(line.split()[0]) for line in open(tail)])
    assert summary(r.stderr, "average loss") == f"{np.mean((preds - labels) ** 2):f}"
    # the same model; the runs' performance counters differ (a's held 100 examples out and printed rows)
    (ha, ia, ra), (hb, ib, rb) = load_model(str(tmp_path / "a.model")), load_model(str(tmp_path / "b.model"))
    assert ha.pop("counters")["weighted_labeled_examples"] == hb.pop("counters")["weighted_labeled_examples"] == 200
    assert ha == hb and np.array_equal(ia, ib) and np.array_equal(ra, rb)


def test_holdout_after_equals_vw(tmp_path):
    d = data(tmp_path / "d.vw")
    for extra in ([], ["-c", "--passes", "3", "-k"]):
        vw = vw_run(tmp_path, ["-d", d, "--holdout_after", "150", "-P", "50", *extra])
        mine = ok("train", "-d", d, "--holdout_after", "150", "-P", "50", *extra)
        a, b = summary(mine.stderr, "average loss"), summary(vw.stderr, "average loss")
        assert abs(float(a) - float(b)) < 1e-4, (extra, a, b)
        assert [row[2] + (row[-1] if row[-1] == "h" else "") for row in rows(mine.stderr)] == \
               [row[2] + (row[-1] if row[-1] == "h" else "") for row in rows(vw.stderr)]
    r = cli("train", "-d", d, "--holdout_after", "-1")
    assert r.exit_code != 0 and "--holdout-after must be at least 0 (got -1)" in r.output


# ----------------------------------------------------------------------------- accepted, same numbers

def test_onethread_sparse_weights_preserve_counters_change_no_number(tmp_path):
    d = data(tmp_path / "d.vw")
    base = ok("train", "-d", d, "-p", tmp_path / "a.txt", "--quiet")
    for flag in ("--onethread", "--sparse_weights", "--preserve_performance_counters"):
        ok("train", "-d", d, "-p", tmp_path / "b.txt", "--quiet", flag)
        assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text(), flag
    assert base.exit_code == 0
    assert config.train_config({"sources": ("x",), "onethread": True}).threads == 1
    assert config.train_config({"sources": ("x",), "onethread": True, "threads": 3}).threads == 3


def test_no_stdin_reads_nothing_without_data(tmp_path):
    r = ok("train", "--no_stdin", "-f", tmp_path / "m", input="1 |f a\n2 |f b\n")
    assert summary(r.stderr, "number of examples") == "0"
    r = ok("train", "--no_stdin", "-d", data(tmp_path / "d.vw", n=20), input="1 |f a\n")
    assert summary(r.stderr, "number of examples") == "20"


def test_dont_output_best_constant(tmp_path):
    d = data(tmp_path / "d.vw", n=20)
    assert "best constant" in ok("train", "-d", d).stderr
    assert "best constant" not in ok("train", "-d", d, "--dont_output_best_constant").stderr


# ----------------------------------------------------------------------------- --noop, --print

def test_noop_predicts_zero_and_learns_nothing(tmp_path):
    d = data(tmp_path / "d.vw", n=50)
    ok("train", "-d", d, "-f", tmp_path / "m", "--quiet")
    r = ok("train", "--noop", "-d", d, "-i", tmp_path / "m", "-p", tmp_path / "p.txt")
    assert set(np.loadtxt(tmp_path / "p.txt")) == {0.0}
    labels = np.array([float(line.split()[0]) for line in open(d)])
    assert summary(r.stderr, "average loss") == f"{np.mean(labels ** 2):f}"
    assert summary(r.stderr, "number of examples") == "50"


def test_noop_and_print_losses_equal_vws(tmp_path):
    d = data(tmp_path / "d.vw", n=60)
    with open(d, "a") as f:
        f.write("1.5 1 0.7 |f x1:0.2\n")       # a base: VW's noop predicts 0 all the same
    for flag in ("--noop", "--print"):
        r = ok("train", flag, "-d", d, "-p", tmp_path / "p.txt")
        assert set(np.loadtxt(tmp_path / "p.txt")) == {0.0}
        a = summary(r.stderr, "average loss")
        b = summary(vw_run(tmp_path, [flag, "-d", d]).stderr, "average loss")
        assert a == b, flag


def test_print_writes_vws_lines(tmp_path):
    d = tmp_path / "p.txt"
    d.write_text("2 0.5 1.5 'tg| a:2 b\n|x c\n")
    r = ok("train", "--print", "-b", "4", "-d", d)
    lines = [line for line in r.stderr.splitlines() if "|" in line]
    # VW 9.11.9's output on this file (a labeled example is printed twice; the constant's raw index)
    assert lines == ["2 0.5 1.5 'tg| 2:2 3 11650396 ", "2 0.5 1.5 'tg| 2:2 3 11650396 ", "| 15 11650396 "]
    assert "|" not in ok("train", "--print", "-b", "4", "-d", d, "--quiet").stderr
    r = cli("train", "--print", "-d", d, "-q", "ab")
    assert r.exit_code != 0 and "--print shows the parsed features only" in r.output
    vw = vw_run(tmp_path, ["--print", "-b", "4", "-d", d])
    assert lines == [line for line in vw.stderr.splitlines() if "|" in line]


# ----------------------------------------------------------------------------- --constant

def test_constant_starts_the_constant_weight():
    from streamlearn import learners
    from streamlearn.features.hashing import constant_index
    for oaa, width in ((0, 1), (3, 4)):
        opts = {"sources": ("x",), "bits": 6, "initial_constant": 7.5}
        cfg = config.train_config(dict(opts, oaa=oaa) if oaa else opts)
        table = np.zeros((64, 3))
        learners.start(cfg, table, None, None, None)
        want = np.zeros((64, 3))
        want[(constant_index(6) * width) % 64, 0] = 7.5
        assert (table == want).all()


def test_constant_equals_vw(tmp_path):
    d = data(tmp_path / "d.vw", n=100)
    ok("train", "-d", d, "--constant", "7.5", "-p", tmp_path / "p.txt", "--quiet")
    ok("train", "-d", d, "-p", tmp_path / "q.txt", "--quiet")
    assert not np.allclose(np.loadtxt(tmp_path / "p.txt"), np.loadtxt(tmp_path / "q.txt"), atol=1e-3)
    vw_run(tmp_path, ["-d", d, "--constant", "7.5", "-p", tmp_path / "v.txt"])
    assert np.allclose(np.loadtxt(tmp_path / "p.txt"), np.loadtxt(tmp_path / "v.txt"), atol=1e-4)
    r = cli("train", "-d", d, "--constant", "1", "--algo", "ftrl")
    assert r.exit_code != 0 and re.search(r"--constant needs --algo sgd", r.output)


# ----------------------------------------------------------------------------- --interact

def interact_reference(feats, n1, n2, mask):
    """Slow --interact of one example: feats is [(index, value, namespace)] in stored order."""
    f1 = [f for f in feats if f[2] == n1]
    f2 = [f for f in feats if f[2] == n2]
    if not f1 or not f2 or f1[0][1] != 1 or f2[0][1] != 1:
        return list(feats)
    dest = [(f1[0][0], np.float32(f1[0][1]) * np.float32(f2[0][1]), n1)]
    prev1 = prev2 = 0
    i1 = i2 = 1
    while i1 < len(f1) and i2 < len(f2):
        c1 = (f1[i1][0] - f1[0][0]) % (mask + 1)
        c2 = (f2[i2][0] - f2[0][0]) % (mask + 1)
        if c1 < prev1 or c2 < prev2:
            break
        if c1 == c2:
            dest.append((f1[i1][0], np.float32(f1[i1][1]) * np.float32(f2[i2][1]), n1))
            i1, i2 = i1 + 1, i2 + 1
        elif c1 < c2:
            i1 += 1
        else:
            i2 += 1
        prev1, prev2 = c1, c2
    out, placed = [], False
    for f in feats:
        if f[2] == n2:
            continue
        if f[2] == n1:
            if not placed:
                out += dest
                placed = True
            continue
        out.append(f)
    return out


def test_interact_kernel_against_the_reference():
    from streamlearn.io.blocks import ParsedBlock
    from streamlearn.io.interact import interact
    rng = np.random.default_rng(5)
    mask = (1 << 6) - 1
    examples = []
    for _ in range(300):
        feats = []
        for ns in rng.permutation([97, 98, 99])[:rng.integers(1, 4)]:
            k = int(rng.integers(1, 7))
            anchor = int(rng.integers(0, mask + 1))
            offsets = np.sort(rng.choice(12, k, replace=False)) if rng.random() < 0.8 else rng.choice(12, k)
            offsets[0] = 0
            for j, o in enumerate(offsets):
                v = 1.0 if j == 0 and rng.random() < 0.9 else float(np.float32(rng.random()))
                feats.append(((anchor + int(o)) & mask, v, int(ns)))
        feats.append((int(rng.integers(0, mask + 1)), 1.0, 128))
        examples.append(feats)
    indptr = np.cumsum([0] + [len(f) for f in examples]).astype(np.int64)
    flat = [f for feats in examples for f in feats]
    n = len(examples)
    block = ParsedBlock("x", np.zeros(n), np.ones(n), np.zeros(n), np.arange(n), indptr,
                        np.array([f[0] for f in flat], np.uint32), np.array([f[1] for f in flat], np.float32),
                        np.zeros(0, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64),
                        np.zeros((0, 4), np.int64), [], ns=np.array([f[2] for f in flat], np.uint8))
    out, status = interact(block, b"ab", mask)
    assert (out.counts == np.diff(indptr)).all()
    changed = 0
    for e, feats in enumerate(examples):
        want = interact_reference(feats, 97, 98, mask)
        a, b = out.indptr[e], out.indptr[e + 1]
        got = list(zip(out.idx[a:b].tolist(), out.val[a:b].tolist(), out.ns[a:b].tolist()))
        assert got == [(i, float(np.float32(v)), s) for i, v, s in want], e
        changed += want != feats
    assert changed > 50 and (status == 4).any() and (status == 0).any()


def test_interact_equals_vw_and_the_model_keeps_it(tmp_path):
    rng = np.random.default_rng(8)
    d = tmp_path / "i.vw"
    with open(d, "w") as f:
        for _ in range(200):
            idx = np.sort(rng.choice(40, 6, replace=False)) + 1
            xa = " ".join(f"{i}:{rng.random():.4f}" for i in idx)
            xb = " ".join(f"{i}:{rng.random():.4f}" for i in np.sort(rng.choice(40, 6, replace=False)) + 1)
            y = int(rng.random() < 0.5)
            f.write(f"{y} |afeat 0:1 {xa} |bfeat 0:1 {xb} |c w{rng.integers(5)}\n")
    r = ok("train", "-d", d, "--interact", "ab", "-p", tmp_path / "p.txt", "-f", tmp_path / "m")
    assert r.stdout.startswith("[info] Interacting namespaces a and b")
    vw = vw_run(tmp_path, ["-d", d, "--interact", "ab", "-p", tmp_path / "v.txt"])
    assert np.allclose(np.loadtxt(tmp_path / "p.txt"), np.loadtxt(tmp_path / "v.txt"), atol=1e-3)
    assert abs(float(summary(r.stderr, "average loss")) - float(summary(vw.stderr, "average loss"))) < 1e-3
    plain = ok("train", "-d", d, "-p", tmp_path / "q.txt", "--quiet")
    assert plain.exit_code == 0 and not np.allclose(np.loadtxt(tmp_path / "p.txt"), np.loadtxt(tmp_path / "q.txt"))
    ok("train", "-t", "-i", tmp_path / "m", "-d", d, "-p", tmp_path / "t.txt", "--quiet")
    ok("predict", "-i", tmp_path / "m", "-d", d, "-p", tmp_path / "u.txt", "--quiet")
    assert (tmp_path / "t.txt").read_text() == (tmp_path / "u.txt").read_text()
    r = cli("train", "-t", "-i", tmp_path / "m", "-d", d, "--interact", "ba")
    assert "Error: --interact ba conflicts with the initial model's --interact ab" in r.output
    r = cli("train", "-d", d, "--interact", "aa")
    assert "Error: --interact needs two different namespace letters, as ab (got aa)" in r.output


# ----------------------------------------------------------------------------- --confidence

def sensitivity_reference(feats, table, cg, cn, g0, st, eta, power_t, adaptive, normalized, p, y, h):
    """Slow VW sensitivity of one example (gd.cc, stateless): feats [(index, x)], squared loss."""
    if not (adaptive or normalized):
        return eta * (st["t"] + 1.0) ** -power_t * sum(x * x for _, x in feats)
    gsq = h * (2.0 * (p - y)) ** 2
    ppu, norm_x = 0.0, 0.0
    for i, x in feats:
        G = table[i][cg] + gsq * x * x + g0 if adaptive else None
        N = max(table[i][cn], abs(x)) if normalized else None
        if normalized:
            norm_x += x * x / (N * N)
        rate = 1.0
        if adaptive:
            rate /= G ** power_t
        if normalized:
            rate *= (N * N) ** (power_t - 1.0) if adaptive else N ** -2.0
        ppu += x * x * rate
    if normalized:
        S, T = st["norm"] + h * norm_x, st["total"] + h
        ppu *= (T / S) ** (1.0 - power_t) if adaptive else T / S
    scale = eta if adaptive else eta * (st["t"] + 1.0) ** -power_t
    return scale * ppu


def test_sensitivity_kernel_against_the_reference():
    from streamlearn.core.confidence import sensitivity
    from streamlearn.core.rules import gd_settings
    from streamlearn.core.state import N_ST, S_ETA, S_NORM_SUM, S_T, S_TOTAL_W
    rng = np.random.default_rng(2)
    for adaptive, normalized in ((True, True), (True, False), (False, True), (False, False)):
        opts = {"sources": ("x",), "bits": 4}
        flags = [name for name, on in (("adaptive", adaptive), ("normalized", normalized)) if on]
        opts.update({name: True for name in flags} if flags else {"sgd": True})
        cfg = config.train_config(opts)
        from streamlearn import learners
        prm, iprm = learners.make_settings(cfg, train=True)
        settings = gd_settings(prm, iprm)
        cg, cn, g0, power_t = settings.col_g, settings.col_n, settings.g0, settings.power_t
        table = np.abs(rng.standard_normal((16, 4))) + 0.1
        st = np.zeros(N_ST)
        st[S_ETA], st[S_T], st[S_NORM_SUM], st[S_TOTAL_W] = 0.7, 12.5, 30.0, 9.0
        for _ in range(20):
            k = int(rng.integers(1, 6))
            idx = rng.choice(16, k, replace=False).astype(np.uint32)
            val = rng.standard_normal(k).astype(np.float32) * 3
            p, y, h = float(rng.standard_normal()), float(rng.standard_normal()), float(rng.choice([0.5, 1, 2]))
            got = sensitivity(idx, val, 0, k, table, st, settings, 0, p, y, 0.5, h)
            want = sensitivity_reference(list(zip(idx.tolist(), map(float, val))), table, cg, cn, g0,
                                         {"t": 12.5, "norm": 30.0, "total": 9.0}, 0.7, power_t, adaptive,
                                         normalized, p, y, h)
            assert got == pytest.approx(want, rel=1e-9), (adaptive, normalized)


@pytest.mark.parametrize("extra", [[], ["--confidence_after_training"], ["--initial_t", "0.1"],
                                   ["--normalized", "-l", "0.1"], ["--adaptive", "--confidence_after_training", "-l", "0.1"],
                                   ["--sgd", "-l", "0.05"]])
def test_confidence_equals_vw(tmp_path, extra):
    d = data(tmp_path / "d.vw", n=150)
    with open(d, "a") as f:
        f.write("|f x0:0.3 x2:0.9\n")       # unlabeled: the label opposite to the prediction's sign
    ok("train", "--confidence", *extra, "-d", d, "-p", tmp_path / "p.txt", "--quiet")
    vw_run(tmp_path, ["--confidence", *extra, "-d", d, "-p", tmp_path / "v.txt", "--quiet"])
    mine, theirs = np.loadtxt(tmp_path / "p.txt"), np.loadtxt(tmp_path / "v.txt")
    assert mine.shape == theirs.shape == (151, 2)
    assert np.allclose(mine, theirs, atol=1e-3, rtol=1e-3)


def test_confidence_refusals(tmp_path):
    d = data(tmp_path / "d.vw", n=10)
    for extra in (["--algo", "ftrl"], ["-t"], ["--noop"]):
        r = cli("train", "--confidence", "-d", d, *extra)
        assert r.exit_code != 0 and "--confidence needs --algo sgd" in r.output, extra
    r = ok("train", "--confidence_after_training", "-d", d, "-p", tmp_path / "p.txt", "--quiet")
    assert all(len(line.split()) == 1 for line in open(tmp_path / "p.txt"))     # alone: nothing, as VW
