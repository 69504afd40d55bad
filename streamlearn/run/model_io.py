"""Model input and output of a training session: the options a model file holds, restoring a -i
model's weights and learner state into the table, and writing the final outputs (-f, --readable-model)
with the readable model's header."""

from __future__ import annotations

import math

import numpy as np

from streamlearn import learners
from streamlearn.config import (
    IF_USED_OPTIONS, LEGACY_MODEL_OPTIONS, MODEL_OPTIONS, OPTION, TrainConfig, train_config,
)
from streamlearn.errors import InputError, ModelError, OptionError
from streamlearn.io.model_file import load_model, parse_model, printable, save_model
from streamlearn.io.writers import write_readable_model
from streamlearn.core.state import N_ST
from streamlearn.core.table import count_nonzero, nonzero_rows
from streamlearn.io.vw_text import header_lines, header_pieces, resume_lines, vw_float_option
from streamlearn.run.counters import for_model as counters_for_model, quiet_schedule
from streamlearn.run.views import CounterView, StateView


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: (option, check, what it must be) of the learner options a model holds even when its learner does
#: not use them (train_config checks them for their learners only)
_ALWAYS_CHECKED = (
    ("radius", lambda v: v is None or (_finite(v) and v > 0), "null or a finite number > 0"),
    ("ftrl_alpha", lambda v: _finite(v) and v > 0, "a finite number > 0"),
    ("ftrl_beta", lambda v: _finite(v) and v >= 0, "a finite number >= 0"),
)


def stored_options(header: dict, path) -> dict:
    """The options a model file holds (older files: the legacy defaults), as they are (unchecked:
    ``model_options`` checks them)."""
    missing = [k for k in MODEL_OPTIONS if k not in header and k not in LEGACY_MODEL_OPTIONS]
    if missing:
        raise ModelError(f"corrupt model {path}: the header lacks option {missing[0]}")
    out = {k: header[k] if k in header else LEGACY_MODEL_OPTIONS[k] for k in MODEL_OPTIONS}
    for k in IF_USED_OPTIONS:       # stored only when taken (the learner's or the run's) and not the default
        out[k] = header[k] if k in header else OPTION[k].default_value()
    return out


def model_options(header: dict, path) -> dict:
    """The options a model file was trained with (older files: the legacy defaults), checked: they
    make a valid configuration (``train_config`` of the options alone, as ``predict`` builds it), the
    saved columns are the weight and this learner's state columns, and a multiclass state holds one
    normalizer pair per class. Any problem is a one-line ModelError "corrupt model PATH: what"."""
    opts = stored_options(header, path)
    for name, ok, what in _ALWAYS_CHECKED:     # options train_config checks only for their learner
        if not ok(opts[name]):
            raise ModelError(f"corrupt model {path}: option {name} is {printable(repr(opts[name]))[:40]}, "
                             f"not {what}")
    try:
        cfg = train_config({}, opts)
    except OptionError as exc:
        raise ModelError(f"corrupt model {path}: {printable(str(exc))}") from None
    except (TypeError, ValueError, KeyError, OverflowError, AttributeError) as exc:
        # a value of the right type the checks did not foresee: still the model's fault
        raise ModelError(f"corrupt model {path}: its options are not valid ({exc.__class__.__name__}: "
                         f"{printable(str(exc))})") from None
    names = header.get("column_names", ["w"])
    mine = ["w"] + [name for name, _ in learners.state_columns(cfg)]
    for name in names:
        if name not in mine:
            raise ModelError(f"corrupt model {path}: column {name} is not one --algo {cfg.algo} saves "
                             f"(it saves {', '.join(mine)})")
    if list(names) not in (["w"], mine):       # what model_content writes: the weight alone, or all
        raise ModelError(f"corrupt model {path}: columns {', '.join(map(str, names))} are neither the "
                         f"weight alone nor all that --algo {cfg.algo} saves ({', '.join(mine)})")
    state = header.get("state", {})
    if isinstance(state, dict) and "class_norm" in state and len(state["class_norm"]) != 2 * cfg.norm_states:
        raise ModelError(f"corrupt model {path}: state class_norm has {len(state['class_norm'])} values, "
                         f"not 2 per class ({2 * cfg.norm_states})")
    return opts


def validate_model(data, path="model") -> tuple[tuple, dict]:
    """Every check a model file's bytes get before anything uses them: ``parse_model`` (the file:
    sizes, checksum, header keys and types, state, column names, indices, finite rows) and
    ``model_options`` (the options as a configuration, the columns for the learner). Returns
    ((header, index, rows), options); any problem is a one-line ModelError."""
    model = parse_model(data, path)
    return model, model_options(model[0], path)


def load_checked(path: str) -> tuple[tuple, dict]:
    """``validate_model`` of a model file read with ``load_model`` (bounded, streams as stdin)."""
    model = load_model(path)
    return model, model_options(model[0], path)


def _fmt_opt(v) -> str:
    if isinstance(v, bool):
        return ""
    if isinstance(v, float):
        v += 0.0                # never -0
        short = f"{v:g}"
        return short if float(short) == v else repr(v)     # %g when it reads back as the same number
    return str(v)


def options_string(opts: dict) -> str:
    """Options as a command line that replays them (issue 29): a flag when true, nothing when false,
    nothing for an option whose value is None (its default: no value to give), each number exact."""
    parts = []
    for name, v in opts.items():
        flag = {"bits": "-b", "lam": "--lambda"}.get(name, "--" + name.replace("_", "-"))
        if isinstance(v, bool):
            if v:
                parts.append(flag)
        elif isinstance(v, (tuple, list)):
            parts += [f"{flag} {_fmt_opt(x)}" for x in v]
        elif v is not None:
            parts.append(f"{flag} {_fmt_opt(v)}")
    return " ".join(parts)


def restore_model(cfg: TrainConfig, table, model, prm) -> np.ndarray:
    """Load a -i model's weights and the per-feature state it holds, for the columns this run keeps
    (``learners.state_columns``): the weight "w" goes into the weight column unless the model also
    holds the raw weight "z" of a cumulative penalty, which is restored instead."""
    header, index, rows = model
    stored = header.get("column_names", ["w"])[:rows.shape[1]]
    mine = dict(learners.state_columns(cfg))
    index = index.astype(np.int64)
    if learners.weight_column(cfg) is None and not cfg.testonly and not set(mine) <= set(stored):
        raise ModelError(f"cannot continue --algo {cfg.algo} from {cfg.initial_model}: it holds no "
                         f"{cfg.algo} state (only a model trained with --algo {cfg.algo} and saved "
                         f"without --predict-only-model can be continued)")
    for j, name in enumerate(stored):
        if name == "w":
            if "z" in stored:
                continue
            col = mine.get("z", learners.weight_column(cfg))
            if col is None and cfg.testonly and learners.weights_in_column(cfg):
                col = 0          # -t predicts with the weights as they are
        else:
            col = mine.get(name)
        if col is not None:
            target = learners.column(cfg, table, col)
            _check_fits(cfg, target.dtype, name, index, rows[:, j])
            target[index] = rows[:, j]
    saved = dict(header.get("state", {}))
    if {"learning_rate", "initial_t", "power_t"} & cfg.explicit:
        saved.pop("eta", None)
    if mine and not cfg.testonly and not set(mine) <= set(stored):
        # a --predict-only-model model continued: as in VW, without its per-feature state the clock and
        # the normalizer's sums restart too (VW keeps them in the save_resume state it did not write)
        for key in ("t", "norm_sum", "total_weight"):
            saved.pop(key, None)
    return learners.make_state(cfg, prm, saved)


def _check_fits(cfg: TrainConfig, dtype, name: str, index: np.ndarray, values: np.ndarray) -> None:
    """A model's value must fit the column it is loaded into: a float32 table (issue 30) holds at most
    3.4e38, which a model saved from a float64 table, or an edited one, may exceed."""
    if dtype != np.float32 or not values.shape[0]:
        return
    big = np.flatnonzero(np.abs(values) > np.finfo(np.float32).max)
    if big.shape[0]:
        j = int(big[0])
        raise ModelError(f"cannot load {cfg.initial_model}: column {name} of weight index {int(index[j])} is "
                         f"{float(values[j])!r}, beyond this run's float32 table (at most 3.4e+38 in magnitude)")


def _model_header(cfg: TrainConfig, st: np.ndarray, names: list[str], counters: dict | None = None) -> dict:
    header = cfg.model_options()
    header["state"] = learners.saved_state(cfg, st)
    header["column_names"] = names
    if counters is not None:        # the performance counters (``run/counters.py``)
        header["counters"] = counters
    return header


#: VW's kept options that streamlearn takes, by VW's name: (streamlearn's option, kind); VW's options
#: line lists those given, sorted by name (parse_regressor.cc save_load_header), then the merged
#: --ignore, --ignore_linear and --keep namespaces
_VW_KEPT = {
    "adaptive": ("adaptive", "resume_flag"), "binary": ("binary", "flag"), "cubic": ("cubic", "multi"),
    "hash": ("hash", "value"), "hash_seed": ("hash_seed", "value"), "indexing": ("indexing", "value"),
    "interact": ("interact", "value"), "interactions": ("interactions", "multi"), "invariant": ("invariant", "resume_flag"),
    "learning_rate": ("learning_rate", "resume_float"), "link": ("link", "value"),
    "noconstant": ("noconstant", "flag"), "normalized": ("normalized", "resume_flag"),
    "oaa": ("oaa", "value"), "power_t": ("power_t", "resume_float"), "quadratic": ("quadratic", "multi"),
    "redefine": ("redefine", "multi"), "sgd": ("sgd", "resume_flag"),
    "lrq": ("lrq", "multi"), "lrqfa": ("lrqfa", "value"), "lrqdropout": ("lrqdropout", "flag"),
    "nn": ("nn", "value"),
}
#: the learners VW has (by streamlearn's name) and the flag of VW's own options line that selects them:
#: VW's gd (no flag) and each learner a VW flag of its own selects (its ``Option(..., selects=NAME)``)
_VW_LEARNERS = {"sgd": None, "gravity": None} | {
    o.selects: o.flags[0][2:] for spec in learners.SPECS for o in spec.declares
    if getattr(o, "selects", None) == spec.name and o.flags[0] == f"--{spec.name}"}


def _given(cfg: TrainConfig, name: str) -> bool:
    """The option was given (on the command line, or held by the -i model with another value than
    its default: VW takes a model's options as given)."""
    if name in cfg.explicit:
        return True
    if cfg.initial_model and name in OPTION and name != "sgd":
        default = OPTION[name].default_value()
        if name == "learning_rate" and not (cfg.adaptive and cfg.normalized):
            default = 10.0          # VW's rate without both per-feature rules
        return getattr(cfg, name, None) != default
    return False


def vw_options_line(cfg: TrainConfig) -> str:
    """VW's options line (without "options:"): the kept options given, sorted by VW's name, then the
    merged --ignore/--ignore_linear/--keep namespaces. A learner VW lacks adds ``--algo NAME`` and
    its own options that are not their defaults (streamlearn's; VW never sees them)."""
    resume = not cfg.predict_only_model
    items = []
    learner = _VW_LEARNERS.get(cfg.algo)
    if learner is not None:
        items.append((learner, ""))
    rule = ("sgd", "adaptive", "normalized", "invariant")
    derived = ()
    if cfg.initial_model and not set(rule) & cfg.explicit and cfg.algo in ("sgd", "gravity"):
        # a -i model's rule as VW's options line held it: --sgd, or the flags of the rule's parts
        on = tuple(name for name in rule[1:] if getattr(cfg, name))
        derived = () if len(on) == 3 else on or ("sgd",)
    for vw, (name, kind) in _VW_KEPT.items():
        if kind.startswith("resume") and not resume:
            continue
        if name in rule:
            if name in derived:
                items.append((vw, ""))
            if cfg.initial_model and name not in cfg.explicit:
                continue
        if not _given(cfg, name):
            continue
        value = getattr(cfg, name, None)
        if kind in ("flag", "resume_flag"):
            if value or name == "sgd":
                items.append((vw, ""))
        elif kind == "multi":
            items += [(vw, f" {v}") for v in value]
        elif kind == "resume_float":
            items.append((vw, " " + vw_float_option(value)))
        elif value is not None:
            items.append((vw, f" {value}"))
    text = "".join(f" --{vw}{v}" for vw, v in sorted(items, key=lambda kv: kv[0]))
    for name in ("ignore", "ignore_linear", "keep"):
        chars = sorted(set("".join(getattr(cfg, name) or ())), key=lambda c: c.encode("utf-8"))
        if chars:
            text += f" --{name} {''.join(chars)}"
    if cfg.algo not in _VW_LEARNERS:
        spec = learners.get(cfg.algo)
        stored = cfg.model_options()
        own = {k: v for k, v in stored.items() if k in spec.options and k in OPTION
               and k not in _VW_KEPT and v != spec.defaults.get(k, OPTION[k].default_value())}
        text += f" --algo {cfg.algo}" + (" " + options_string(own) if own else "")
    return text


def _vw_initial_t(cfg: TrainConfig) -> float:
    """VW's initial_t: as given; else 1 for the plain rule (VW's --sgd) and 0 for the per-feature
    rules and VW's ftrl and coin, which do not take it."""
    if "initial_t" in cfg.explicit or cfg.algo not in ("ftrl", "coin"):
        return float(cfg.initial_t)
    return 0.0


def _resume_values(cfg: TrainConfig, st: np.ndarray, ctr: np.ndarray, passes: int, loaded: dict | None) -> dict:
    """The save_resume block's values (VW's names) from the run's counters and state (``loaded``: the
    -i model's counters the run started from, --preserve_performance_counters)."""
    s, c = StateView(st, extra=learners.get(cfg.algo).slots), CounterView(ctr)
    t0 = _vw_initial_t(cfg)
    # --quiet (or no progress rows): VW's interval stays at its start and nothing resets the loss since
    quiet = cfg.quiet or not math.isfinite(c.dump)
    since, old, dump = quiet_schedule(c.sum_loss, loaded) if quiet else (c.sum_loss_since, c.old_w_labeled, c.dump)
    # the normalizer's sums: VW keeps them for --normalized (and coin), 0 otherwise
    normalizer = cfg.normalized or cfg.algo == "coin"
    norm_sum, total_w = s.norm_sum, s.total_w
    if cfg.classes and st.shape[0] > N_ST + 1:   # VW prints the first model's (class 1's) sums
        norm_sum, total_w = st[N_ST], st[N_ST + 1]
    # the weight learned: VW's learners' clock is streamlearn's initial_t plus it (a -i model's
    # included); other learners' clocks may count steps (mini-batches), so this run's labeled weight
    if cfg.algo in _VW_LEARNERS:
        learned = s.t - cfg.initial_t
    else:
        learned = 0.0 if cfg.testonly else c.w_labeled
    return {
        "initial_t": t0, "norm normalizer": norm_sum if normalizer else 0.0,
        # VW's t: initial_t plus the weight of every example (labeled, unlabeled, held out), those a
        # -i model learned included
        "t": t0 + learned + c.w_unlabeled + c.ho_w + (c.w_labeled if cfg.testonly else 0.0),
        "sum_loss": c.sum_loss, "sum_loss_since_last_dump": since,
        "dump_interval": dump, "min_label": s.min_label, "max_label": s.max_label,
        "weighted_labeled_examples": c.w_labeled, "weighted_labels": c.w_labels,
        "weighted_unlabeled_examples": c.w_unlabeled, "example_number": c.examples,
        "total_features": c.features, "total_weight": total_w if normalizer else 0.0,
        "sd::oec.weighted_labeled_examples": old, "current_pass": passes,
        "l1_state": s.gravity_vw if "gravity_vw" in learners.get(cfg.algo).slots else 0.0,
        "l2_state": s.contraction_vw if "contraction_vw" in learners.get(cfg.algo).slots else 1.0,
    }


def _readable_header(cfg: TrainConfig, st: np.ndarray, ctr: np.ndarray | None, passes: int,
                     loaded: dict | None = None) -> list[str]:
    """VW's readable-model header (``streamlearn.io.vw_text``): Version .. Checksum, then ``:1`` and
    the save_resume block (with -t too, as VW writes it), or ``:0`` with --predict-only-model."""
    s = StateView(st)
    pieces = header_pieces(s.min_label, s.max_label, cfg.bits, tuple(cfg.ngram or ()), tuple(cfg.skips or ()),
                           vw_options_line(cfg))
    lines = header_lines(pieces)
    if cfg.predict_only_model or ctr is None:
        return lines + [":0"]
    return lines + resume_lines(_resume_values(cfg, st, ctr, passes, loaded))


def rows_in_use(slots: np.ndarray, width: int) -> int:
    """The number of features a multiclass model uses: its rows (the aligned blocks of ``width``
    slots that hold a feature's class weights) with a weight that is not 0."""
    return int(np.unique(np.asarray(slots, np.int64) // width).shape[0])


def model_content(cfg: TrainConfig, table, st, touched, in_force,
                  counters: dict | None = None, slots=None) -> tuple[dict, np.ndarray, np.ndarray]:
    """(header, weight indices, rows) of the model file of a finalized table: the weights in force
    (``in_force``, of the ``touched`` rows), and the learner's state for -i unless
    --predict-only-model; ``counters``: the performance counters it keeps (``run/counters.py``);
    ``slots``: the weight indices of the touched rows (a sparse store's; default the rows)."""
    keep = in_force != 0.0
    slots = touched if slots is None else slots
    extra = learners.state_columns(cfg)
    if cfg.predict_only_model or not extra:
        names, rows, values = ["w"], slots[keep], in_force[keep][:, None]
    else:
        names = ["w"] + [name for name, _ in extra]
        rows = slots
        values = np.column_stack([in_force] + [learners.column(cfg, table, col)[touched] for _, col in extra])
    return _model_header(cfg, st, names, counters), rows, values


def readable_content(cfg: TrainConfig, table, st, touched, in_force, ctr=None,
                     passes: int = 1, loaded: dict | None = None, slots=None) -> tuple[list, np.ndarray, np.ndarray]:
    """(header lines, weight indices, rows) of the readable model of a finalized table. VW's weight
    lines: with the per-feature state (save_resume) every row with a weight or a G/N that is not 0,
    as "slot:w G N"; weights only (--predict-only-model, -t) "slot:w", w != 0. ``loaded``: the -i
    model's counters the run went on from (--preserve_performance_counters); ``slots``: as
    ``model_content``'s."""
    keep = in_force != 0.0
    slots = touched if slots is None else slots
    if cfg.predict_only_model or cfg.testonly:
        rows, values = slots[keep], in_force[keep][:, None]
    else:
        rows = slots
        shown = table[touched, 0] if learners.get(cfg.algo).readable_raw else in_force
        values = np.column_stack([shown] + [learners.column(cfg, table, c)[touched]
                                            for c in learners.readable_columns(cfg)])
    return _readable_header(cfg, st, ctr, passes, loaded), rows, values


def check_finite(cfg: TrainConfig, run) -> None:
    """Before a model is saved (and at the end of training; ``save_outputs`` calls it first): a table
    holding an infinite or NaN value (one compiled pass over the columns a model saves), or predictions that were not finite, is one
    warning naming the first example where it showed -- an error with --strict, and then no model is
    written. Without --strict the model is written with those values as 0 (the warning says how
    many), so that it can be read back: a model never silently holds inf or NaN, nor holds them at all."""
    from streamlearn.core.loop import first_nonfinite_row, zero_nonfinite
    faults = run.faults
    table = run.arrays.used_table
    cols = max(1, min(learners.layout(cfg).saved, table.shape[1]))
    weights = first_nonfinite_row(table, cols) >= 0
    if not weights and faults.diverged is None:
        return
    saves = bool(cfg.final_model or cfg.readable_model or cfg.invert_hash)
    what = "weights" if weights else "predictions"
    where = (f" at {faults.diverged} (the first example whose prediction or update was not finite)"
             if faults.diverged is not None else "")
    text = f"training diverged: {what} became infinite or NaN{where}; try a smaller learning rate (-l)"
    if faults.strict:
        raise InputError(text + "; no model was written" if saves else text)
    zeroed = zero_nonfinite(table, cols) if weights else 0
    if not faults.diverge_warned:
        faults.reporter.warn(text + (f"; the model saves its {zeroed} infinite or NaN values as 0"
                                     if zeroed and saves else ""))
        faults.diverge_warned = True


def _finite_in_force(cfg: TrainConfig, run, in_force: np.ndarray) -> np.ndarray:
    """The weights in force, checked: a learner that computes them when the model is finalized (eg's
    exponentials, a projection) can overflow even when every stored column is finite. As for the table
    (``check_finite``): an error under --strict, else one warning and the values saved as 0."""
    bad = ~np.isfinite(in_force)
    if not bad.any():
        return in_force
    text = (f"training diverged: {int(bad.sum())} weights in force became infinite or NaN when the "
            f"model was finalized; try a smaller learning rate (-l)")
    if run.faults.strict:
        raise ModelError(text + "; no model was written")
    run.faults.reporter.warn(text + "; the model saves them as 0")
    return np.where(bad, 0.0, in_force)


def by_slot(arrays, touched: np.ndarray, in_force: np.ndarray) -> tuple:
    """(touched, in_force, slots): a sparse store's rows in the order of their weight slots, and the
    slots (a model file's index); a dense table's as they are, slots None (the rows)."""
    if arrays.store is None:
        return touched, in_force, None
    slots = arrays.slots(touched)
    order = np.argsort(slots, kind="stable")
    return touched[order], in_force[order], slots[order]


def save_outputs(cfg: TrainConfig, run, snapshot: bool = False) -> int:
    """Finalize the table and write -f / --readable-model. Returns the number of non-zero weights.

    A ``snapshot`` (the best pass so far, while training goes on) of a learner with mini-batches is
    taken from a copy, so that applying the open batch does not change the run. Non-finite values are
    checked first (``check_finite``)."""
    check_finite(cfg, run)
    table, st = run.arrays.used_table, run.st
    if snapshot and cfg.batch_size > 1:
        table, st = table.copy(), st.copy()
    learners.finalize(cfg, table, run.prm, run.iprm, st)
    lay = learners.layout(cfg)
    plain = learners.weights_in_column(cfg)      # the weight column is in force
    if plain and not (cfg.final_model or cfg.readable_model or cfg.invert_hash or cfg.vw_model_out):
        if cfg.classes:
            run.progress.rows_in_use = rows_in_use(np.flatnonzero(table[:, 0]), cfg.class_width)
        return int(count_nonzero(table))
    touched = nonzero_rows(table, lay.saved)     # rows with a weight or saved state that is not 0
    in_force = _finite_in_force(cfg, run, learners.weights_in_force(cfg, table, st, touched))
    touched, in_force, slots = by_slot(run.arrays, touched, in_force)
    index = (touched if slots is None else slots)[in_force != 0.0]
    if cfg.classes:
        run.progress.rows_in_use = rows_in_use(index, cfg.class_width)
    if cfg.final_model:
        save_model(cfg.final_model, *model_content(cfg, table, st, touched, in_force,
                                                   counters_for_model(cfg, run, run.passes_done), slots))
    if cfg.vw_model_out:
        from streamlearn.io.model_file import write_atomic
        from streamlearn.run.vw_models import vw_model_bytes
        write_atomic(cfg.vw_model_out, [vw_model_bytes(cfg, table, st, run.ctr, touched, in_force,
                                                               run.passes_before + max(1, run.passes_done))], "VW model")
    if cfg.readable_model or cfg.invert_hash:
        header, rows, values = readable_content(cfg, table, st, touched, in_force, run.ctr,
                                                run.passes_before + max(1, run.passes_done), run.counters_loaded,
                                                slots)
        if cfg.readable_model:
            write_readable_model(cfg.readable_model, header, rows, values)
        if cfg.invert_hash:
            names = run.audit.names.names if run.audit.names is not None else {}
            write_readable_model(cfg.invert_hash, header, rows, values, names,
                                 name_zero_weights=learners.get(cfg.algo).readable is not None)
    return int(index.shape[0])
