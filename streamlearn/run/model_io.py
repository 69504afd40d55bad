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
from streamlearn.core.table import count_nonzero, nonzero_rows
from streamlearn.run.views import StateView


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
    if isinstance(state, dict) and "class_norm" in state and len(state["class_norm"]) != 2 * cfg.classes:
        raise ModelError(f"corrupt model {path}: state class_norm has {len(state['class_norm'])} values, "
                         f"not 2 per class ({2 * cfg.classes})")
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
        return f"{v:g}"
    return str(v)


def options_string(opts: dict) -> str:
    parts = []
    for name, v in opts.items():
        flag = {"bits": "-b", "lam": "--lambda"}.get(name, "--" + name.replace("_", "-"))
        if isinstance(v, bool):
            if v:
                parts.append(flag)
        else:
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
            table[index, col] = rows[:, j]
    saved = dict(header.get("state", {}))
    if {"learning_rate", "initial_t", "power_t"} & cfg.explicit:
        saved.pop("eta", None)
    return learners.make_state(cfg, prm, saved)


def _model_header(cfg: TrainConfig, st: np.ndarray, names: list[str]) -> dict:
    header = cfg.model_options()
    header["state"] = learners.saved_state(cfg, st)
    header["column_names"] = names
    return header


def _readable_header(cfg: TrainConfig, nonzero: int) -> list[str]:
    return ["streamlearn readable model (format 1)",
            f"bits: {cfg.bits}", f"loss: {cfg.loss}", f"algo: {cfg.algo}",
            f"options: {options_string(cfg.model_options())}",
            f"non-zero weights: {nonzero}"]


def rows_in_use(slots: np.ndarray, width: int) -> int:
    """The number of features a multiclass model uses: its rows (the aligned blocks of ``width``
    slots that hold a feature's class weights) with a weight that is not 0."""
    return int(np.unique(np.asarray(slots, np.int64) // width).shape[0])


def model_content(cfg: TrainConfig, table, st, touched, in_force) -> tuple[dict, np.ndarray, np.ndarray]:
    """(header, weight indices, rows) of the model file of a finalized table: the weights in force
    (``in_force``, of the ``touched`` rows), and the learner's state for -i unless
    --predict-only-model."""
    keep = in_force != 0.0
    extra = learners.state_columns(cfg)
    if cfg.predict_only_model or not extra:
        names, rows, values = ["w"], touched[keep], in_force[keep][:, None]
    else:
        names = ["w"] + [name for name, _ in extra]
        rows = touched
        values = np.column_stack([in_force] + [table[touched, col] for _, col in extra])
    return _model_header(cfg, st, names), rows, values


def readable_content(cfg: TrainConfig, table, st, touched, in_force) -> tuple[list, np.ndarray, np.ndarray]:
    """(header lines, weight indices, rows) of the readable model of a finalized table. VW's weight
    lines: with the per-feature state (save_resume) every row with a weight or a G/N that is not 0,
    as "slot:w G N"; weights only (--predict-only-model, -t) "slot:w", w != 0."""
    keep = in_force != 0.0
    if cfg.predict_only_model or cfg.testonly:
        rows, values = touched[keep], in_force[keep][:, None]
    else:
        rows = touched
        shown = table[touched, 0] if learners.get(cfg.algo).readable_raw else in_force
        values = np.column_stack([shown] + [table[touched, c] for c in learners.readable_columns(cfg)])
    header = _readable_header(cfg, int(keep.sum()))
    if learners.get(cfg.algo).readable_raw:
        header.append(f"l1_state {StateView(st, extra=learners.get(cfg.algo).slots).gravity_vw:g}")
    return header, rows, values


def check_finite(cfg: TrainConfig, run) -> None:
    """Before a model is saved (and at the end of training; ``save_outputs`` calls it first): a table
    holding an infinite or NaN value (one compiled pass over the columns a model saves), or predictions that were not finite, is one
    warning naming the first example where it showed -- an error with --strict, and then no model is
    written. Without --strict the model is written with those values as 0 (the warning says how
    many), so that it can be read back: a model never silently holds inf or NaN, nor holds them at all."""
    from streamlearn.core.loop import first_nonfinite_row, zero_nonfinite
    faults = run.faults
    cols = max(1, min(learners.layout(cfg).saved, run.table.shape[1]))
    weights = first_nonfinite_row(run.table, cols) >= 0
    if not weights and faults.diverged is None:
        return
    saves = bool(cfg.final_model or cfg.readable_model or cfg.invert_hash)
    what = "weights" if weights else "predictions"
    where = (f" at {faults.diverged} (the first example whose prediction or update was not finite)"
             if faults.diverged is not None else "")
    text = f"training diverged: {what} became infinite or NaN{where}; try a smaller learning rate (-l)"
    if faults.strict:
        raise InputError(text + "; no model was written" if saves else text)
    zeroed = zero_nonfinite(run.table, cols) if weights else 0
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


def save_outputs(cfg: TrainConfig, run, snapshot: bool = False) -> int:
    """Finalize the table and write -f / --readable-model. Returns the number of non-zero weights.

    A ``snapshot`` (the best pass so far, while training goes on) of a learner with mini-batches is
    taken from a copy, so that applying the open batch does not change the run. Non-finite values are
    checked first (``check_finite``)."""
    check_finite(cfg, run)
    table, st = run.table, run.st
    if snapshot and cfg.batch_size > 1:
        table, st = table.copy(), st.copy()
    learners.finalize(cfg, table, run.prm, run.iprm, st)
    lay = learners.layout(cfg)
    plain = learners.weights_in_column(cfg)      # the weight column is in force
    if plain and not (cfg.final_model or cfg.readable_model or cfg.invert_hash):
        if cfg.classes:
            run.progress.rows_in_use = rows_in_use(np.flatnonzero(table[:, 0]), cfg.class_width)
        return int(count_nonzero(table))
    touched = nonzero_rows(table, lay.saved)     # rows with a weight or saved state that is not 0
    in_force = _finite_in_force(cfg, run, learners.weights_in_force(cfg, table, st, touched))
    index = touched[in_force != 0.0]
    if cfg.classes:
        run.progress.rows_in_use = rows_in_use(index, cfg.class_width)
    if cfg.final_model:
        save_model(cfg.final_model, *model_content(cfg, table, st, touched, in_force))
    if cfg.readable_model or cfg.invert_hash:
        header, rows, values = readable_content(cfg, table, st, touched, in_force)
        if cfg.readable_model:
            write_readable_model(cfg.readable_model, header, rows, values)
        if cfg.invert_hash:
            names = run.audit.names.names if run.audit.names is not None else {}
            write_readable_model(cfg.invert_hash, header, rows, values, names,
                                 name_zero_weights=learners.get(cfg.algo).readable is not None)
    return int(index.shape[0])
