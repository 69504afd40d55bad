"""Merging models trained in parallel: one round of iterative parameter mixing (issue 16; the design
is ``../shared/docs/scale-out.md``, "Design" items 2, 4 and 5).

Each of k workers continues the same base model on its own shard through the ``-i`` resume path and
returns its model file; ``merge`` combines the k parsed models ``(header, index, rows)`` into one,
which ``streamlearn.io.model_file.model_bytes`` writes and ``streamlearn predict -i`` / ``train -i``
read. Averaging after every pass and restarting from the average is iterative parameter mixing
(McDonald, Hall & Mann, NAACL 2010, as scale-out.md cites it; the paper is not in ../shared/papers);
VW averages its workers the same way at every pass end (``accumulate_weighted_avg`` /
``accumulate_avg``). No Dask is involved here.

The models are finalized already (saving catches every lazy weight up), so a stored row holds the
weight in force "w" and the per-feature state the learner resumes from. Rows are merged by index over
the union of the models' rows; a model without a row holds it at its untouched state (0 for every
column; eg's log-weights 0, i.e. the entry z/(2d) of an untouched w+ and w-).

**Mixing weights** a_k of a row (sum 1): with ``rule="weighted"`` and an adaptive model (one that
saves G, or ftrl's n), a_k = G_k / sum_j G_j, so a worker that never touched a feature (G_k = 0) does
not dilute it (a row whose G is 0 in every model falls back to 1/k); otherwise (or ``rule="uniform"``)
a_k = 1/k. softmax keeps one G per feature row, in the row's base slot: every class slot of the row
takes the weights of its base slot's G.

**Per learner** (by the columns the models save):

* default (w, with G and N of the update rule): the weights in force averaged; G becomes
  sum G_k^2 / sum G_k (the G-weighted average of G, VW's rule, whatever the mixing rule: the zeros of
  the workers that did not touch a feature would otherwise raise its rate); N the largest N_k.
  l1ball's average stays in the ball, pegasos's in its L2 ball, by convexity.
* a raw weight z with a penalty (tg's cumulative penalty, Langford, Li & Zhang 2009 §4 kept per
  feature: z and P per row; gravity: z per row and VW's global gravity): z and the penalty averaged
  alike (the global gravity uniformly), then w = shrink(z_bar, P_bar) by the learner's own ``merge``
  (``learners.tg.merge``, ``learners.gravity.merge``). A feature only some workers kept is 0
  unless it outgrows its averaged penalty.
* eg (log-weights phi+ and phi- of w+ and w-; Duchi et al. 2008, Section 7, eq. 13): w+ and w-
  averaged entry by entry, which stays on the simplex sum(w+ + w-) = z; stored back as log-weights,
  computed in log space (``eg.merge``).
* smidas (the dual theta; Shalev-Shwartz & Tewari 2009, Algorithm 3, Eq. 12): theta averaged, then
  w = f^-1(theta_bar) by smidas's own ``merge`` (its norm rebuilt as after loading).
* ftrl (z and n; McMahan et al. 2013, Algorithm 1): z and n averaged with the same mixing weights
  (under ``weighted`` n-weighted, n being FTRL's AdaGrad sum: n becomes sum n_k^2 / sum n_k as G
  does), rounded to the float32 values the learner computes in, then w recomputed from them
  (``ftrl.merge``). Why: (z, n) is the learner's whole per-coordinate state and w a function of
  it, as (z, P) is tg's, so the merged w passes FTRL's own L1 test |z_bar| <= lambda1 (sparse) and
  a resumed run continues from a consistent state; averaging w apart from z would give a w that z
  contradicts at the next update. Under ``uniform`` a feature only one of k workers saw has z/k and
  is kept only if it is strong there; n-weighting keeps it as that worker had it.
* one-against-all and softmax: the same rules slot by slot (a class weight is a row of its own).

**Performance counters** (``header["counters"]``, ``merge_counters``): the sums of the workers'.

**Counters** (``header["state"]``, ``learners.SAVED_STATE``), each treated on its own
(``STATE_RULES``): the clock t, n_learned, norm_sum, total_weight and the per-class normalizer sums
are additive, base + the sum of the k increments (exact: each worker counts its own examples); the
prediction bounds are the extremes; tg's pending gravity and VW's gravity are penalties, averaged
like P; the normalizer multiplier is recomputed from the merged sums as the update rule computes it;
eta (the schedule, equal on every worker of a round) and index_mode (the label indexing detected,
which must agree) are taken as they are.

Averages are computed as x_0 + sum_k a_k (x_k - x_0): equal to sum_k a_k x_k, and exactly x_0 when
the models agree, so k identical models (and k = 1) merge into that model bit for bit.
"""

from __future__ import annotations

import json
import math

import numpy as np

MIX_RULES = ("weighted", "uniform")

#: what ``merge`` does with each saved state counter (``learners.saved_state``)
STATE_RULES = {
    "t": "additive", "n_learned": "additive", "norm_sum": "additive", "total_weight": "additive",
    "class_norm": "additive", "min_label": "min", "max_label": "max", "pending": "mean",
    "gravity_vw": "mean", "contraction_vw": "mean", "multiplier": "normalizer", "eta": "first", "index_mode": "detected",
    "nn_seed_lo": "first", "nn_seed_hi": "first",      # --nn's generator: the first model's
}

#: header keys that may differ between the models merged (everything else is an option or layout)
_PER_MODEL = ("state", "count", "columns", "streamlearn", "mix", "counters")


def merge(base, models, rule: str = "weighted") -> tuple[dict, np.ndarray, np.ndarray]:
    """Merge k models trained from ``base`` (a parsed model, or None for the first round) into one:
    (header, index, rows) as ``streamlearn.io.model_file.parse_model`` returns them (module
    docstring). ``rule``: "weighted" (G-weighted under adaptive rules) or "uniform". Models trained
    with different options are refused with a one-line ValueError naming the option."""
    if rule not in MIX_RULES:
        raise ValueError(f"unknown mix rule {rule!r}: choose weighted or uniform")
    models = list(models)
    if not models:
        raise ValueError("merge needs at least one model")
    names = _check_same(base, models)
    header0 = models[0][0]
    cfg = _config(header0)
    k = len(models)
    index = np.unique(np.concatenate([np.asarray(m[1], np.int64) for m in models]))
    n = index.shape[0]
    col = {name: j for j, name in enumerate(names)}
    X = np.zeros((len(names), k, n))            # X[column, model, row]: 0 where a model lacks the row
    for j, (_, idx, rows) in enumerate(models):
        pos = np.searchsorted(index, np.asarray(idx, np.int64))
        X[:, j, pos] = np.asarray(rows, np.float64).T
    a = _mix_weights(cfg, X, col, index, rule)
    out = np.zeros((n, len(names)))
    for name, j in col.items():
        if name == "g":
            out[:, j] = _adaptive_average(X[j])
        elif name == "n":
            out[:, j] = X[j].max(axis=0)
        elif name in ("w", "z", "p", "theta", "ftrl_z", "ftrl_n"):
            out[:, j] = _average(X[j], a)
        elif name not in ("ep", "en"):
            raise ValueError(f"cannot merge models that save a column {name!r}")
    state = merge_state(cfg, None if base is None else base[0].get("state", {}),
                        [m[0].get("state", {}) for m in models])
    _learner_merge(cfg, models, X, col, out, state)
    keep = np.any(out != 0.0, axis=1)
    header = dict(base[0] if base is not None else header0)
    header["state"] = state
    header["column_names"] = names
    syncs = int(base[0].get("mix", {}).get("syncs", 0)) if base is not None else 0
    header["mix"] = {"workers": k, "syncs": syncs + 1, "rule": rule}
    header.pop("counters", None)
    counters = [m[0]["counters"] for m in models if "counters" in m[0]]
    if counters:
        header["counters"] = merge_counters(counters)
    return header, index[keep].astype(np.uint32 if cfg.bits <= 32 else np.uint64), out[keep]


def merge_counters(counters: list) -> dict:
    """The performance counters (``streamlearn.run.counters``) of the k models' runs together: the
    sums of their examples, weights, labels, losses and features (each worker counts its own), the
    largest progress interval and pass; one model's as they are."""
    out = dict(counters[0])
    for more in counters[1:]:
        for key, value in more.items():
            out[key] = max(out[key], value) if key in ("dump_interval", "current_pass") else out[key] + value
    return out


# ----------------------------------------------------------------------------- checks

def _options_json(header: dict) -> dict:
    # the options as stored, to name the one that differs (``_config`` checks them, once the models
    # agree on their options and columns)
    from streamlearn.run.model_io import stored_options
    return {k: json.dumps(v, sort_keys=True) for k, v in stored_options(header, "model").items()}


def _check_same(base, models) -> list:
    """The column names all the models save; a one-line ValueError when two of them (or the base)
    were trained with different options or save different columns."""
    from streamlearn.errors import ModelError
    try:
        ref = _options_json(models[0][0])
        others = [(f"model {j}", m[0]) for j, m in enumerate(models)]
        if base is not None:
            others.append(("the base model", base[0]))
        for who, header in others:
            opts = _options_json(header)
            for name, value in ref.items():
                if opts[name] != value:
                    raise ValueError(f"cannot merge models trained with different options: {who} has "
                                     f"{name} = {json.loads(opts[name])!r}, model 0 has "
                                     f"{json.loads(value)!r}")
    except ModelError as exc:
        raise ValueError(str(exc)) from None
    names = list(models[0][0].get("column_names", ["w"]))
    for j, (header, idx, rows) in enumerate(models):
        mine = list(header.get("column_names", ["w"]))
        if mine != names:
            raise ValueError(f"cannot merge models that save different columns: model {j} saves "
                             f"{', '.join(mine)}, model 0 saves {', '.join(names)}")
        if np.ndim(rows) != 2 or np.shape(rows)[1] != len(names) or np.shape(rows)[0] != np.shape(idx)[0]:
            raise ValueError(f"model {j}'s rows do not match its index and column names")
    return names


def _config(header: dict):
    """The TrainConfig of a model's options (as ``streamlearn predict`` builds it)."""
    from streamlearn.config import train_config
    from streamlearn.errors import StreamlearnError
    from streamlearn.run.model_io import model_options
    try:
        return train_config({}, model_options(header, "model"))
    except StreamlearnError as exc:
        raise ValueError(str(exc)) from None


# ----------------------------------------------------------------------------- rows

def _mix_weights(cfg, X, col, index, rule) -> np.ndarray:
    """a[model, row] (module docstring): G_k / sum G (weighted, adaptive), else 1/k."""
    from streamlearn import learners
    k, n = X.shape[1], X.shape[2]
    name = "g" if "g" in col else "ftrl_n" if "ftrl_n" in col else None
    if rule != "weighted" or name is None:
        return np.full((k, n), 1.0 / k)
    G = X[col[name]]
    if cfg.classes and learners.get(cfg.algo).joint:  # a joint learner: one G per feature row, in its base slot
        width = cfg.class_width
        base = index - index % width
        pos = np.minimum(np.searchsorted(index, base), n - 1)
        G = np.where(index[pos] == base, G[:, pos], 0.0)
    total = G.sum(axis=0)
    safe = np.where(total > 0.0, total, 1.0)
    return np.where(total > 0.0, G / safe, 1.0 / k)


def _average(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """sum_k a_k x_k, as x_0 + sum_k a_k (x_k - x_0) (exactly x_0 when the models agree)."""
    return x[0] + (a * (x - x[0])).sum(axis=0)


def _adaptive_average(G: np.ndarray) -> np.ndarray:
    """sum_k G_k^2 / sum_k G_k (0 where every G_k is 0): the G-weighted average of G."""
    total = G.sum(axis=0)
    a = G / np.where(total > 0.0, total, 1.0)
    return np.where(total > 0.0, _average(G, a), 0.0)


def _learner_merge(cfg, models, X, col, out, state) -> None:
    """The learner's own part of the merge (``LearnerSpec.merge``): the weights in force of the
    merged state where the state determines them (a raw weight and its penalty, gravity, smidas's
    theta, ftrl's z and n), eg's log-weights."""
    from streamlearn import learners
    merge = learners.get(cfg.algo).merge
    if merge is not None:
        own = [(idx, {name: np.asarray(rows, np.float64)[:, j] for name, j in col.items()})
               for _, idx, rows in models]
        merge(cfg, {name: out[:, j] for name, j in col.items()}, {name: X[j] for name, j in col.items()},
              own, state)


# ----------------------------------------------------------------------------- counters

def fresh_state(cfg) -> dict:
    """The saved state of a run that has learned nothing (the baseline of the first round)."""
    from streamlearn import learners
    prm, _ = learners.make_settings(cfg, train=True)
    return learners.saved_state(cfg, learners.make_state(cfg, prm))


def merge_state(cfg, base: dict | None, states: list) -> dict:
    """The merged ``header["state"]`` of models continuing ``base`` (None: a fresh run), by
    ``STATE_RULES`` (module docstring). Every key must have a rule."""
    start = fresh_state(cfg)
    if base is not None:
        start.update(base)
    keys = set(start)
    for s in states:
        keys |= set(s)
    unknown = sorted(keys - set(STATE_RULES))
    if unknown:
        raise ValueError(f"cannot merge the state counter {unknown[0]!r}: it has no merge rule")
    out = {}
    k = len(states)
    for key in sorted(keys):
        vals = [s.get(key, start.get(key)) for s in states]
        how = STATE_RULES[key]
        if key not in start or any(v is None for v in vals):
            raise ValueError(f"cannot merge the state counter {key!r}: a model lacks it")
        if how == "additive":
            b = np.asarray(start[key], np.float64)
            v = np.asarray(vals, np.float64)
            total = b + (v - b).sum(axis=0)
            out[key] = total.tolist() if total.ndim else float(total)
        elif how == "min":
            out[key] = float(min(vals))
        elif how == "max":
            out[key] = float(max(vals))
        elif how == "mean":
            v = np.asarray(vals, np.float64)
            out[key] = float(v[0] + (v - v[0]).sum() / k)
        elif how == "detected":
            found = sorted({float(v) for v in vals + [start[key]] if float(v) != 2.0})
            if len(found) > 1:
                raise ValueError("cannot merge models that detected different label indexing "
                                 "(0..K-1 and 1..K)")
            out[key] = found[0] if found else 2.0
        else:                   # "first" and "normalizer" (set below, from the merged sums)
            out[key] = float(vals[0])
    if "multiplier" in out and cfg.normalized and out.get("norm_sum", 0.0) > 0.0:
        out["multiplier"] = normalizer(out["norm_sum"], out["total_weight"], cfg.adaptive, cfg.power_t)
    return out


def normalizer(norm_sum: float, total_weight: float, adaptive: bool, power_t: float) -> float:
    """VW's global normalizer m of the sums (``table.update_normalizer``): T/S, its square root when
    adaptive; (S/T)^(power_t - 1) unless power_t is 1/2."""
    if power_t == 0.5:
        m = total_weight / norm_sum
        return math.sqrt(m) if adaptive else m
    return (norm_sum / total_weight) ** (power_t - 1.0)
