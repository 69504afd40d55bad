"""VW's binary models in a run (issue 27): a VW model given to ``-i`` becomes the (header, index, rows)
of a streamlearn model, so that everything after it (the option merge, ``restore_model``, ``predict``)
is unchanged; ``--vw-model-out PATH`` writes a run's model in VW's format
(``streamlearn.io.vw_model``: the bytes).

What VW keeps in a model and what it takes from the command line:
* the "keep" options in the header (``--oaa``, ``-q``, ``--cubic``, ``--interactions``, ``--noconstant``,
  ``--hash``, ``--link``, ``--ftrl``, ``--learning_rate``, ...) and ``-b``, ``--ngram``, ``--skips``:
  the model's options, as a streamlearn model's; an option streamlearn does not implement refuses the
  model, naming it;
* the update rule (``--sgd``, ``--adaptive``, ``--normalized``, ``--invariant``) and the loss are
  not stored: they come from the command line (VW's default rule, squared loss, when not given),
  and the rule gives the width of the weight records (w, then G and/or N);
* the save_resume state: ``t``, the prediction bounds, the normalizer's sums (class 0's with
  ``--oaa``: VW saves one, the other classes start afresh), the per-weight G and N, ftrl's z and n;
  VW's counters, which restart on -i unless --preserve_performance_counters (``run/counters.py``).
"""

from __future__ import annotations

import math
import shlex

import numpy as np

from streamlearn import learners
from streamlearn.config import OPTIONS, RULE_FLAGS, train_config
from streamlearn.core import state as S
from streamlearn.errors import ModelError, OptionError
from streamlearn.io import vw_model
from streamlearn.io.model_file import check_rows, parse_model, read_model_bytes

#: VW's spelling of each option: flag -> Option (VW's flags are among every option's flags)
_FLAGS = {flag: o for o in OPTIONS for flag in o.flags if flag.startswith("-") and "/" not in flag}
#: VW keep options that change nothing streamlearn computes (the model's id; VW's random state)
_IGNORED = {"--id": 1, "--random_seed": 1}
#: the learners whose models VW reads and writes, and their records' columns beside the weight
VW_LEARNERS = ("sgd", "ftrl")


def model_explicit(text: str, path) -> dict:
    """The options of a VW model's "keep" string as streamlearn's explicit options; the options
    streamlearn does not implement refuse the model, all named."""
    try:
        args = shlex.split(text)
    except ValueError:
        raise ModelError(f"VW model {path} is corrupt (its options {text[:60]!r} do not parse)") from None
    out, unknown, j = {}, [], 0
    while j < len(args):
        flag = args[j]
        j += 1
        if flag in _IGNORED:
            j += _IGNORED[flag]
            continue
        option = _FLAGS.get(flag) if flag.startswith("-") else None
        if option is None or not option.config and option.selects is None and option.name != "sgd":
            values = []
            while j < len(args) and not args[j].startswith("--"):
                values.append(args[j])
                j += 1
            unknown.append(" ".join([flag] + values))
            continue
        if option.kind in ("flag", "switch"):
            out[option.name] = True
            continue
        if j >= len(args):
            raise ModelError(f"VW model {path} is corrupt (its option {flag} has no value)")
        value = args[j]
        j += 1
        try:
            value = int(value) if option.kind == "int" else float(value) if option.kind == "float" else value
        except ValueError:
            raise ModelError(f"VW model {path} is corrupt (its option {flag} is {value!r})") from None
        if option.kind == "multi":
            out[option.name] = out.get(option.name, ()) + (value,)
        else:
            out[option.name] = value
    if unknown:
        raise ModelError(f"VW model {path} holds options streamlearn does not implement: {' '.join(unknown)}")
    return out


def load_initial(path: str, explicit: dict, predicting: bool) -> tuple[dict, np.ndarray, np.ndarray]:
    """The (header, index, rows) of a -i model file: streamlearn's own, or VW's (``load_vw``)."""
    data = read_model_bytes(path)
    if vw_model.looks_like(bytes(data[:8])):
        return load_vw(data, path, explicit, predicting)
    return parse_model(data, path)


def _widths(cfg, exact: bool) -> tuple:
    """The record widths to read a save_resume model with: the rule's (VW's reader takes its command
    line's), then, unless ``exact`` (training: VW's numbers need the rule the model was trained
    with), the others, for predicting with the weights alone."""
    if cfg.algo == "ftrl":
        return (3,)
    mine = 1 + int(cfg.adaptive) + int(cfg.normalized)
    return (mine,) if exact else (mine,) + tuple(w for w in (3, 2, 1) if w != mine)


def load_vw(data, path, explicit: dict, predicting: bool) -> tuple[dict, np.ndarray, np.ndarray]:
    """(header, index, rows) of the VW model in ``data``, in streamlearn's form: the header holds the
    model's options (with the command line's update rule, ``explicit``), its saved state and its
    columns. ``predicting`` (``predict``, ``-t``): the weights alone matter, a record width other
    than the rule's is taken, and VW's l1/l2 state is applied to the weights as VW's -t does."""
    held = {}

    def check(model):
        given = model_explicit(model.options, path)
        given["bits"] = model.bits
        for name, values in (("ngram", model.ngram), ("skips", model.skips)):
            if values:
                given[name] = tuple(values)
        given.update({k: explicit[k] for k in RULE_FLAGS + ("initial_t",) if k in explicit})
        try:
            cfg = train_config(given)
        except OptionError as exc:
            raise ModelError(f"VW model {path}: its options ({model.options or 'none'}) do not make a run: "
                             f"{exc}") from None
        if cfg.algo not in VW_LEARNERS:     # e.g. --coin: its records are laid out otherwise
            raise ModelError(f"VW model {path} is a model of --algo {cfg.algo} (its options: {model.options}); "
                             f"streamlearn reads VW's models of the default rule, --sgd and --ftrl")
        held["cfg"] = cfg
        return _widths(cfg, exact=not predicting)

    model = vw_model.parse(data, path, (3, 2, 1), check)
    cfg = held["cfg"]
    values = model.values.astype(np.float64)
    online = model.online
    gravity, contraction = online.get("l1_state", 0.0), online.get("l2_state", 1.0)
    if gravity != 0.0 or contraction != 1.0:
        if not predicting:
            raise ModelError(f"VW model {path} holds VW's --l1/--l2 state (l1_state {gravity:g}, l2_state "
                             f"{contraction:g}): streamlearn predicts with it (-t, predict) but does not "
                             f"continue training it")
        w = values[:, 0]
        # VW's trunc_weight: w - sign(w) g beyond |w| > g, sign(0) = -1 (g may be < 0: learners/gravity.py)
        values[:, 0] = np.where(np.abs(w) > gravity, w - np.where(w > 0.0, 1.0, -1.0) * gravity, 0.0 * w) * contraction
    names = ["w"] + [name for name, _ in learners.state_columns(cfg)]
    if not model.resume or values.shape[1] != len(names):
        names, values = ["w"], values[:, :1]
    if "g" in names and _g0(cfg):     # VW's G starts at initial_t (adaptive); streamlearn's at 0
        values[:, names.index("g")] -= _g0(cfg)
    keep = (values != 0.0).any(axis=1)
    model.index, values = model.index[keep], values[keep]
    check_rows(model.index, values, names, model.bits, path)
    header = cfg.model_options()
    header["column_names"] = names
    header["state"] = _state(cfg, model, path)
    if model.resume:        # the counters, for --preserve_performance_counters (``run/counters.py``)
        header["counters"] = _counters(model.online, path)
    return header, model.index, values


#: VW's online state's counters (``streamlearn.io.vw_model.ONLINE``) by a model header's names
_VW_COUNTERS = {"example_number": "example_number", "weighted_labeled_examples": "w_labeled",
                "weighted_unlabeled_examples": "w_unlabeled", "weighted_labels": "w_labels",
                "sum_loss": "sum_loss", "total_features": "total_features",
                "sum_loss_since_last_dump": "sum_loss_since", "old_weighted_labeled_examples": "old_w_labeled",
                "dump_interval": "dump_interval", "current_pass": "current_pass"}


def _counters(online: dict, path) -> dict:
    """A VW model's counters as a streamlearn model's header holds them, checked as its are."""
    from streamlearn.io.model_file import check_counters
    out = {name: online[vw] for name, vw in _VW_COUNTERS.items()}
    for name in ("example_number", "total_features", "current_pass"):
        out[name] = int(out[name])
    out = {k: v if isinstance(v, int) else float(v) for k, v in out.items()}
    try:
        check_counters(out, path)
    except ModelError as exc:
        detail = str(exc).removeprefix(f"corrupt model {path}: ")
        raise ModelError(f"VW model {path} is corrupt (its {detail})") from None
    return out


def _g0(cfg) -> float:
    """What VW's G of every weight starts at: initial_t with adaptive rates (gd.cc), which
    streamlearn adds where it reads G (``P_G0``)."""
    return cfg.initial_t if cfg.algo == "sgd" and cfg.adaptive and cfg.initial_t > 0 else 0.0


def _state(cfg, model, path) -> dict:
    """A streamlearn model's saved state from a VW model's header and online state."""
    online = model.online
    low, high = (online["min_label"], online["max_label"]) if model.resume else (model.min_label, model.max_label)
    if not low <= high:
        raise ModelError(f"VW model {path} is corrupt (its min label {low:g} is above its max label {high:g})")
    state = {"min_label": float(low), "max_label": float(high)}
    if not model.resume:
        return state
    for key, name in (("t", "t"), ("norm_sum", "norm_sum"), ("total_weight", "total_weight")):
        if online[name] < 0:
            raise ModelError(f"VW model {path} is corrupt (its {name} is {online[name]:g}, below 0)")
        state[key] = float(online[name])
    if cfg.norm_states:     # VW saves class 0's normalizer; the others start as a new model's
        fresh = cfg.initial_t if cfg.initial_t > 0 else 0.0
        state["class_norm"] = [state["norm_sum"], state["total_weight"]] + [fresh] * (2 * cfg.norm_states - 2)
    return state


# ----------------------------------------------------------------------------- writing

def _fmt(v) -> str:
    return repr(float(v)) if isinstance(v, float) else str(v)


def keep_options(cfg) -> str:
    """A configuration's options as VW's "keep" string (those VW stores, and those it reads from a
    model that streamlearn keeps in one: --permutations, --leave_duplicate_interactions)."""
    parts = []
    if cfg.algo == "ftrl":
        parts.append("--ftrl")
    if cfg.classes:
        parts.append(f"--oaa {cfg.classes}")
    if cfg.indexing is not None:
        parts.append(f"--indexing {cfg.indexing}")
    for name, flag in (("quadratic", "--quadratic"), ("cubic", "--cubic"), ("interactions", "--interactions"),
                       ("redefine", "--redefine"), ("ignore", "--ignore"), ("ignore_linear", "--ignore_linear"),
                       ("keep", "--keep")):
        parts += [f"{flag} {shlex.quote(v)}" for v in getattr(cfg, name)]
    parts += [f"--lrq {shlex.quote(v)}" for v in cfg.lrq]
    if cfg.lrqfa is not None:
        parts.append(f"--lrqfa {shlex.quote(cfg.lrqfa)}")
    if cfg.lrqdropout:
        parts.append("--lrqdropout")
    if cfg.nn:
        parts.append(f"--nn {cfg.nn}")
    for name, flag in (("noconstant", "--noconstant"), ("permutations", "--permutations"),
                       ("leave_duplicate_interactions", "--leave_duplicate_interactions")):
        if getattr(cfg, name):
            parts.append(flag)
    if cfg.hash != "strings":
        parts.append(f"--hash {cfg.hash}")
    if cfg.hash_seed:
        parts.append(f"--hash_seed {cfg.hash_seed}")
    if cfg.link != "identity":
        parts.append(f"--link {cfg.link}")
    for name, flag in (("learning_rate", "--learning_rate"), ("power_t", "--power_t")):
        if name in cfg.explicit:
            parts.append(f"{flag} {_fmt(getattr(cfg, name))}")
    return " ".join(parts)


def vw_model_bytes(cfg, table, st, ctr, touched, in_force, passes: int = 1) -> bytes:
    """The VW model of a finalized run: the header, the save_resume state (unless
    --predict-only-model; ``passes``: its current_pass) and a record for every slot with a value that
    is not 0."""
    low, high = float(st[S.S_MIN_LABEL]), float(st[S.S_MAX_LABEL])
    model = vw_model.VWModel((9, 11, 9), "", low, high, cfg.bits, list(cfg.ngram), list(cfg.skips),
                             keep_options(cfg), resume=not cfg.predict_only_model)
    touched = np.asarray(touched, np.int64)
    if cfg.predict_only_model:
        keep = in_force != 0.0
        model.index, model.values = touched[keep], in_force[keep][:, None]
        return vw_model.dump(model)
    cols = [col for _, col in learners.state_columns(cfg) if _ != "z"]
    values = np.column_stack([in_force] + [learners.column(cfg, table, c)[touched] for c in cols])
    if _g0(cfg) and cfg.adaptive:
        values[:, 1] += _g0(cfg)
    values = values.astype(np.float32)
    keep = (values != 0).any(axis=1)
    model.index, model.values = touched[keep], values[keep]
    norm, total = float(st[S.S_NORM_SUM]), float(st[S.S_TOTAL_W])
    if cfg.classes and st.shape[0] > S.N_ST + 1:
        norm, total = float(st[S.N_ST]), float(st[S.N_ST + 1])
    c = ctr
    model.online = {
        "initial_t": cfg.initial_t, "norm_sum": norm, "t": float(st[S.S_T]),
        "sum_loss": float(c[S.C_SUM_LOSS]), "sum_loss_since": float(c[S.C_SUM_LOSS_SINCE]),
        "dump_interval": float(c[S.C_DUMP]) if math.isfinite(c[S.C_DUMP]) else 1.0,
        "min_label": low, "max_label": high, "w_labeled": float(c[S.C_W_LABELED]),
        "w_labels": float(c[S.C_W_LABELS]), "w_unlabeled": float(c[S.C_W_UNLABELED]),
        "example_number": int(c[S.C_EXAMPLES]), "total_features": int(c[S.C_FEATURES]),
        "total_weight": total, "old_w_labeled": float(c[S.C_OLD_W_LABELED]), "current_pass": int(passes),
        "l1_state": 0.0, "l2_state": 1.0,
    }
    return vw_model.dump(model)
