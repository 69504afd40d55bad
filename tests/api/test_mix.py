"""streamlearn.mix.merge (issue 16's merge of models trained in parallel) against a slow NumPy
transcription of its rules on hand-built models, the identity on identical models, the simplex and
the ball, the counters, the refusals, and models trained by the CLI merged, written, predicted with
and continued."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from support.helpers import RESUME_TOL32, cli, table_dtype, vw_dataset
from streamlearn import learners
from streamlearn.config import train_config
from streamlearn.io.model_file import load_model, model_bytes, parse_model
from streamlearn.mix import STATE_RULES, merge

BITS = 8
K = 3


def model_header(names, state=None, **options):
    """A model file's header of the CLI options given (as ``parse_model`` returns it)."""
    cfg = train_config({"bits": BITS, "quiet": True, **options})
    prm, _ = learners.make_settings(cfg, train=True)
    header = cfg.model_options()
    header["state"] = learners.saved_state(cfg, learners.make_state(cfg, prm))
    header["state"].update(state or {})
    header["column_names"] = list(names)
    return json.loads(json.dumps(header))


def random_models(rng, names, make, options, k=K, rows=40):
    """k models over overlapping random row sets; ``make(rng, n)`` gives an (n, columns) array."""
    out = []
    for j in range(k):
        idx = np.sort(rng.choice(1 << BITS, size=rows, replace=False)).astype(np.uint32)
        state = {"t": 10.0 + 7 * j, "n_learned": 5.0 + 3 * j, "min_label": -1.0 - j, "max_label": 2.0 + j,
                 "norm_sum": 4.0 + j, "total_weight": 9.0 + 2 * j, "pending": 0.25 * j,
                 "gravity_vw": 0.01 * (j + 1)}
        out.append((model_header(names, state, **options), idx, make(rng, rows)))
    return out


# ----------------------------------------------------------------------------- the reference

def reference(models, rule, group=1):
    """The rules, row by row over the union (streamlearn.mix's docstring), in plain loops: {slot:
    {column: value}} before the weights in force of z/P, theta and ftrl are derived."""
    names = models[0][0]["column_names"]
    k = len(models)
    tables = [{int(i): dict(zip(names, r)) for i, r in zip(m[1], m[2])} for m in models]
    union = sorted(set().union(*tables))
    adaptive = "g" if "g" in names else "ftrl_n" if "ftrl_n" in names else None
    out = {}
    for i in union:
        row = [t.get(i, dict.fromkeys(names, 0.0)) for t in tables]
        base = i - i % group
        if rule == "weighted" and adaptive:
            G = [t.get(base, {}).get(adaptive, 0.0) for t in tables]
            a = [g / sum(G) for g in G] if sum(G) > 0 else [1.0 / k] * k
        else:
            a = [1.0 / k] * k
        merged = {}
        for c in names:
            v = [r[c] for r in row]
            if c == "g":
                merged[c] = sum(x * x for x in v) / sum(v) if sum(v) > 0 else 0.0
            elif c == "n":
                merged[c] = max(v)
            else:
                merged[c] = sum(ak * x for ak, x in zip(a, v))
        out[i] = merged
    return out


def as_dict(merged):
    header, index, rows = merged
    return {int(i): dict(zip(header["column_names"], r)) for i, r in zip(index, rows)}


def close(a, b, tol=1e-12):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def check_against(merged, ref, skip=()):
    got = as_dict(merged)
    assert set(got) == {i for i, r in ref.items() if any(v != 0.0 for v in r.values())}
    for i, row in got.items():
        for c, v in row.items():
            if c not in skip:
                assert close(v, ref[i][c]), (i, c, v, ref[i][c])
    return got


def shrink(z, p):
    return math.copysign(max(abs(z) - p, 0.0), z)


# ----------------------------------------------------------------------------- hand-built models

def default_rows(rng, n):
    rows = np.column_stack([rng.normal(size=n), rng.uniform(0.1, 5.0, n), rng.uniform(0.5, 2.0, n)])
    rows[:3, 1] = 0.0           # a worker that holds a row it did not touch this round
    return rows


def penalty_rows(rng, n):
    z = rng.normal(size=n)
    p = rng.uniform(0.0, 0.8, n)
    rows = np.column_stack([np.zeros(n), z, rng.uniform(0.1, 5.0, n), rng.uniform(0.5, 2.0, n), p])
    rows[:, 0] = [shrink(a, b) for a, b in zip(z, p)]
    return rows


@pytest.mark.parametrize("rule", ["weighted", "uniform"])
def test_default_and_penalty_rules_match_the_reference(rule):
    rng = np.random.default_rng(1)
    models = random_models(rng, ["w", "g", "n"], default_rows, {"adaptive": True, "normalized": True})
    check_against(merge(None, models, rule), reference(models, rule))
    # tg's cumulative penalty: z and P averaged alike, then w = shrink(z_bar, P_bar)
    opts = {"algo": "tg", "l1": 1e-3}
    models = random_models(rng, ["w", "z", "g", "n", "p"], penalty_rows, opts)
    assert train_config({"quiet": True, **opts}).cumulative_penalty
    got = check_against(merge(None, models, rule), reference(models, rule), skip=("w",))
    for row in got.values():
        assert row["w"] == shrink(row["z"], row["p"])
    assert sum(row["w"] == 0.0 for row in got.values()) > 0        # sparse where the penalty wins
    # VW's gravity: z per row, the global gravity averaged
    models = random_models(rng, ["w", "z", "g", "n"], lambda r, n: penalty_rows(r, n)[:, :4],
                           {"algo": "gravity", "l1": 1e-3})
    merged = merge(None, models, rule)
    gravity = np.mean([m[0]["state"]["gravity_vw"] for m in models])
    assert close(merged[0]["state"]["gravity_vw"], gravity)
    got = check_against(merged, reference(models, rule), skip=("w",))
    for row in got.values():
        assert row["w"] == shrink(row["z"], merged[0]["state"]["gravity_vw"])


def test_softmax_rows_take_their_base_slots_weights():
    rng = np.random.default_rng(2)
    opts = {"loss": "softmax", "oaa": 3, "algo": "softmax", "reg": "l1l2", "lam": 1e-3}
    width = train_config({"quiet": True, **opts}).class_width
    models = []
    for j in range(K):
        feats = rng.choice((1 << BITS) // width, size=15, replace=False)
        idx = np.sort(np.concatenate([feats * width + c for c in range(3)])).astype(np.uint32)
        rows = np.zeros((idx.shape[0], 3))
        rows[:, 0] = rng.normal(size=idx.shape[0])
        base = idx % width == 0
        rows[base, 1] = rng.uniform(0.1, 5.0, base.sum())       # G and N of a row live in its base slot
        rows[base, 2] = rng.uniform(0.5, 2.0, base.sum())
        models.append((model_header(["w", "g", "n"], **opts), idx, rows))
    for rule in ("weighted", "uniform"):
        check_against(merge(None, models, rule), reference(models, rule, group=width))


def test_eg_average_stays_on_the_simplex():
    rng = np.random.default_rng(3)
    z, d = 5.0, 1 << BITS

    def make(rng, n):
        phi = rng.normal(scale=2.0, size=(n, 2))
        return np.column_stack([np.zeros(n), phi])

    models = random_models(rng, ["w", "ep", "en"], make, {"algo": "eg", "radius": z})

    def entries(model):
        """w+ and w- of all 2^b rows (an untouched row: log-weights 0)."""
        phi = np.zeros((d, 2))
        phi[model[1].astype(np.int64)] = model[2][:, 1:]
        return z * np.exp(phi) / np.exp(phi).sum()

    for m in models:        # the hand-built models' weights in force
        e = entries(m)
        m[2][:, 0] = (e[:, 0] - e[:, 1])[m[1].astype(np.int64)]
    merged = merge(None, models, "weighted")
    mean = np.mean([entries(m) for m in models], axis=0)
    got = entries(merged)
    np.testing.assert_allclose(got, mean, rtol=1e-12, atol=0)
    assert got.min() >= 0.0 and abs(got.sum() - z) <= 1e-12 * z          # on the simplex
    np.testing.assert_allclose(merged[2][:, 0], (mean[:, 0] - mean[:, 1])[merged[1].astype(np.int64)],
                               rtol=1e-12, atol=1e-15)


def test_l1ball_average_stays_in_the_ball():
    rng = np.random.default_rng(4)
    radius = 2.0

    def make(rng, n):
        w = rng.normal(size=n) * (rng.random(n) < 0.7)
        return (w * radius / np.abs(w).sum())[:, None]      # on the sphere ||w||_1 = z

    models = random_models(rng, ["w"], make, {"algo": "l1ball", "radius": radius})
    merged = merge(None, models, "weighted")
    check_against(merged, reference(models, "uniform"))
    assert np.abs(merged[2][:, 0]).sum() <= radius * (1 + 1e-12)


def test_smidas_averages_theta_then_maps_it():
    rng = np.random.default_rng(5)
    opts = {"algo": "smidas", "l1": 1e-4}
    p = learners.smidas.smidas_p(train_config({"bits": BITS, "quiet": True, **opts}))
    models = random_models(rng, ["w", "theta"], lambda r, n: np.column_stack([np.zeros(n), r.normal(size=n)]),
                           opts)
    merged = merge(None, models, "weighted")
    got = check_against(merged, reference(models, "uniform"), skip=("w",))
    theta = np.array([r["theta"] for r in got.values()])
    norm = (np.abs(theta) ** p).sum() ** (1 / p)
    w = np.sign(theta) * np.abs(theta) ** (p - 1) / norm ** (p - 2)           # f^-1 (Eq. 12)
    np.testing.assert_allclose([r["w"] for r in got.values()], w, rtol=1e-12, atol=0)


@pytest.mark.parametrize("rule", ["weighted", "uniform"])
def test_ftrl_averages_z_and_n_then_recomputes_w(rule):
    rng = np.random.default_rng(6)
    opts = {"algo": "ftrl", "l1": 0.5, "l2": 0.1, "ftrl_alpha": 0.3, "ftrl_beta": 1.0}

    def make(rng, n):
        zn = np.column_stack([rng.normal(scale=2.0, size=n), rng.uniform(0.1, 9.0, n)])
        return np.column_stack([np.zeros(n), zn.astype(np.float32).astype(np.float64)])

    models = random_models(rng, ["w", "ftrl_z", "ftrl_n"], make, opts)
    got = check_against(merge(None, models, rule), reference(models, rule), skip=("w", "ftrl_z", "ftrl_n"))
    ref = reference(models, rule)
    f32 = np.float32
    alpha, beta, l1, l2 = (f32(opts[k]) for k in ("ftrl_alpha", "ftrl_beta", "l1", "l2"))
    for i, row in got.items():
        z, n = f32(ref[i]["ftrl_z"]), f32(ref[i]["ftrl_n"])
        assert row["ftrl_z"] == float(z) and row["ftrl_n"] == float(n)     # the float32 values
        step = f32(1.0) / (l2 + (beta + np.sqrt(n)) / alpha)
        w = f32(0.0) if abs(z) <= l1 else step * np.sign(z) * (l1 - abs(z))
        assert row["w"] == float(w)


# ----------------------------------------------------------------------------- identity, counters, errors

KINDS = {
    "default": (["w", "g", "n"], default_rows, {"adaptive": True, "normalized": True}),
    "tg": (["w", "z", "g", "n", "p"], penalty_rows, {"algo": "tg", "l1": 1e-3}),
    "eg": (["w", "ep", "en"], lambda r, n: np.column_stack([np.zeros(n), r.normal(size=(n, 2))]),
           {"algo": "eg", "radius": 3.0}),
    "smidas": (["w", "theta"], lambda r, n: np.column_stack([np.zeros(n), r.normal(size=n)]),
               {"algo": "smidas", "l1": 1e-4}),
    "ftrl": (["w", "ftrl_z", "ftrl_n"],
             lambda r, n: np.column_stack([np.zeros(n), r.normal(size=n), r.uniform(0, 3, n)])
             .astype(np.float32).astype(np.float64), {"algo": "ftrl", "l1": 0.5}),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_identical_models_merge_into_that_model(kind):
    names, make, opts = KINDS[kind]
    hand = random_models(np.random.default_rng(7), names, make, opts, k=1)
    model = merge(None, hand, "weighted")       # its weights in force computed by the learner's code
    base = (hand[0][0], model[1][:5], model[2][:5])
    for rule in ("weighted", "uniform"):
        for k, start in ((1, None), (4, base)):
            header, index, rows = merge(start, [model] * k, rule)
            assert np.array_equal(index, model[1]) and np.array_equal(rows, model[2])   # bit for bit
            assert header["mix"] == {"workers": k, "syncs": 1, "rule": rule}


def test_counters_are_merged_exactly():
    rng = np.random.default_rng(8)
    opts = {"adaptive": True, "normalized": True, "oaa": 2, "loss": "logistic"}
    base_state = {"t": 100.0, "n_learned": 50.0, "norm_sum": 30.0, "total_weight": 40.0, "pending": 0.5,
                  "class_norm": [1.0, 2.0, 3.0, 4.0], "min_label": -1.0, "max_label": 1.0}
    base = (dict(model_header(["w", "g", "n"], base_state, **opts), mix={"workers": 2, "syncs": 3}),
            np.zeros(0, np.uint32), np.zeros((0, 3)))
    models = []
    for j in range(K):
        state = {"t": 100.0 + 10 * (j + 1), "n_learned": 50.0 + j + 1, "norm_sum": 30.0 + 2 * j,
                 "total_weight": 40.0 + 3 * j, "pending": 0.5 + j,
                 "class_norm": [1.0 + j, 2.0, 3.0 + 2 * j, 4.0], "min_label": -1.0 - j,
                 "max_label": 1.0 + 2 * j, "eta": 0.25, "index_mode": 0.0 if j == 1 else 2.0}
        _, idx, rows = random_models(rng, ["w", "g", "n"], default_rows, opts, k=1)[0]
        models.append((model_header(["w", "g", "n"], state, **opts), idx, rows))
    header, _, _ = merge(base, models, "weighted")
    s = header["state"]
    assert set(STATE_RULES) == set(learners.SAVED_STATE) | set(learners.OWN_STATE) | {"class_norm"}  # each decided
    assert set(s) == set(learners.SAVED_STATE) | {"class_norm"}         # a learner's own only in its models
    assert s["t"] == 100.0 + 10 + 20 + 30 and s["n_learned"] == 50.0 + 6
    assert s["norm_sum"] == 30.0 + 0 + 2 + 4 and s["total_weight"] == 40.0 + 0 + 3 + 6
    assert s["class_norm"] == [1.0 + 3, 2.0, 3.0 + 6, 4.0]
    assert s["min_label"] == -3.0 and s["max_label"] == 5.0
    assert s["pending"] == 1.5 and s["eta"] == 0.25 and s["index_mode"] == 0.0
    assert s["multiplier"] == math.sqrt(s["total_weight"] / s["norm_sum"])     # VW's m of the merged sums
    assert header["mix"] == {"workers": K, "syncs": 4, "rule": "weighted"}


def test_mismatched_models_are_refused_in_one_line():
    rng = np.random.default_rng(9)
    a = random_models(rng, ["w"], lambda r, n: r.normal(size=(n, 1)), {"sgd": True}, k=1)[0]
    cases = [(model_header(["w"], bits=BITS + 1, sgd=True), "bits"),
             (model_header(["w"], algo="tg", l1=1e-3, sgd=True), "algo"),
             (model_header(["w"], sgd=True, loss="logistic"), "loss"),
             (model_header(["w", "g"], adaptive=True), "adaptive")]
    for header, option in cases:
        with pytest.raises(ValueError, match=f"different options: model 1 has {option} = ") as exc:
            merge(None, [a, (header, a[1], a[2])])
        assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="base model has bits = 9"):
        merge((model_header(["w"], bits=BITS + 1, sgd=True), a[1], a[2]), [a])
    with pytest.raises(ValueError, match="different columns"):
        merge(None, [a, (model_header(["w", "g"], sgd=True), a[1], np.zeros((a[1].shape[0], 2)))])
    with pytest.raises(ValueError, match="unknown mix rule"):
        merge(None, [a], rule="sum")


# ----------------------------------------------------------------------------- through the CLI

@pytest.mark.parametrize("opts", [["--algo", "tg", "--l1", "1e-3"], ["--algo", "eg", "--radius", "5"],
                                  ["--algo", "smidas", "--l1", "1e-4"], ["--algo", "ftrl", "--l1", "0.5"]])
def test_trained_models_merge_write_predict_and_continue(tmp_path, opts):
    lines = vw_dataset(300, seed=11)
    shards = []
    for j in range(3):
        path = tmp_path / f"s{j}.vw"
        path.write_text("\n".join(lines[100 * j:100 * (j + 1)]) + "\n")
        shards.append(path)
    (tmp_path / "empty.vw").write_text("")
    cli("train", "-d", shards[0], "-f", tmp_path / "base.m", "--loss", "logistic", "-b", 10, "--quiet", *opts)
    for j in (1, 2):
        cli("train", "-d", shards[j], "-i", tmp_path / "base.m", "-f", tmp_path / f"m{j}.m", "--quiet")
    base, m1, m2 = (load_model(tmp_path / f) for f in ("base.m", "m1.m", "m2.m"))
    same = merge(base, [m1, m1])                # k identical shards, one round: the single machine
    assert np.array_equal(same[1], m1[1]) and np.array_equal(same[2], m1[2])
    merged = merge(base, [m1, m2])
    data = model_bytes(*merged)
    header, index, rows = parse_model(data)
    assert header["mix"] == {"workers": 2, "syncs": 1, "rule": "weighted"}
    assert np.array_equal(index, merged[1]) and np.array_equal(rows, merged[2])
    assert header["state"]["n_learned"] == (m1[0]["state"]["n_learned"] + m2[0]["state"]["n_learned"]
                                            - base[0]["state"]["n_learned"])
    (tmp_path / "mix.m").write_bytes(data)
    cli("predict", "-i", tmp_path / "mix.m", "-d", shards[2], "-p", tmp_path / "p.txt", "--quiet")
    preds = np.loadtxt(tmp_path / "p.txt")
    assert preds.shape == (100,) and np.isfinite(preds).all()
    # the learner, restarted from the merged state on no data, saves the same weights in force
    cli("train", "-i", tmp_path / "mix.m", "-d", tmp_path / "empty.vw", "-f", tmp_path / "again.m", "--quiet")
    again = load_model(tmp_path / "again.m")
    assert np.array_equal(again[1], index)
    # tg's float32 table (issue 30) stores the merged raw weights, G and N rounded to float32
    tol = (RESUME_TOL32, RESUME_TOL32) if table_dtype(tmp_path / "again.m") == "float32" else (1e-12, 1e-15)
    np.testing.assert_allclose(again[2], rows, rtol=tol[0], atol=tol[1])
    cli("train", "-i", tmp_path / "mix.m", "-d", shards[0], "-f", tmp_path / "next.m", "--quiet")
