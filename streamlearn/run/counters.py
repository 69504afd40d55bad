"""The performance counters a model keeps (issue 27: VW's ``--preserve_performance_counters``).

A model file's optional header key ``counters`` holds VW's save_resume counters of the runs that
trained it (``streamlearn.io.model_file.COUNTER_KEYS``: the examples, the weighted labeled and
unlabeled examples, the weighted label sum, the sum of losses, the features, the progress table's
schedule and the passes). As in VW (gd.cc ``save_load_online_state``):

* ``-i MODEL --preserve_performance_counters`` in a training run starts the run's counters (``ctr``)
  from the model's: the progress table, the summary (average loss, passes) and the saved counters go
  on from them; without the option (and with ``-t``) the run counts from 0.
* A model written by a run that learned from at least one example holds the run's counters at its
  end (so, without the option, this run's only, as VW's).
* A run that learned nothing (``-t``, ``--noop``, no example read) writes the ``-i`` model's counters
  as they were (VW writes the reset ones): re-saving a model with ``-i`` on no data, or with ``-t``,
  gives the same file. ``--predict-only-model`` and the batch learners write none.

With ``--quiet`` the schedule is saved as VW's quiet run leaves it (no progress row: the interval where
it started, the loss since the last row the whole sum), so a quiet CLI run and the Python API write the
same bytes. VW's models read with ``-i`` carry their counters the same way (``run/vw_models.py``).
"""

from __future__ import annotations

import math

from streamlearn import learners
from streamlearn.core import state as S

#: counter -> its slot in ``ctr`` (``current_pass`` is the run's, not a slot)
SLOTS = {"example_number": S.C_EXAMPLES, "weighted_labeled_examples": S.C_W_LABELED,
         "weighted_unlabeled_examples": S.C_W_UNLABELED, "weighted_labels": S.C_W_LABELS,
         "sum_loss": S.C_SUM_LOSS, "total_features": S.C_FEATURES,
         "sum_loss_since_last_dump": S.C_SUM_LOSS_SINCE, "old_weighted_labeled_examples": S.C_OLD_W_LABELED,
         "dump_interval": S.C_DUMP}


def resume(cfg, run, model) -> None:
    """A run continuing ``model`` (a parsed model, or None): keep its counters for a run that learns
    nothing, and with --preserve_performance_counters (training) start ``run.ctr`` and the pass count
    from them. Called after the first progress row's schedule is set (the model's replaces it)."""
    base = model[0].get("counters") if model is not None else None
    run.counters_base = base
    if base is None or not cfg.preserve_performance_counters or cfg.testonly or cfg.noop or cfg.print_examples:
        return
    for name, slot in SLOTS.items():
        run.arrays.ctr[slot] = float(base[name])
    run.counters_loaded = base
    run.passes_before = int(base["current_pass"])


def for_model(cfg, run, passes: int) -> dict | None:
    """The counters a model written now holds (module docstring); ``passes``: this run's passes."""
    if cfg.predict_only_model:
        return None
    if (run.progress.examples == 0 or cfg.testonly or cfg.noop or cfg.print_examples
            or learners.get(cfg.algo).batch):
        return run.counters_base
    ctr = run.arrays.ctr
    out = {name: float(ctr[slot]) for name, slot in SLOTS.items()}
    for name in ("example_number", "total_features"):
        out[name] = int(ctr[SLOTS[name]])
    out["current_pass"] = int(run.passes_before + passes)
    if cfg.quiet or not math.isfinite(ctr[S.C_DUMP]):
        (out["sum_loss_since_last_dump"], out["old_weighted_labeled_examples"],
         out["dump_interval"]) = quiet_schedule(out["sum_loss"], run.counters_loaded)
    return out


def quiet_schedule(sum_loss: float, loaded: dict | None) -> tuple[float, float, float]:
    """(the loss since the last progress row, the weighted labeled examples at it, the next row) as
    VW's quiet run leaves them: no row, so the interval stays where it started (1, or the counters the
    run ``loaded``) and nothing resets the loss since the last row (computed from the sums, not read
    from ``ctr``: rows kept quietly, the Python API's, reset it)."""
    if loaded is None:
        return sum_loss, 0.0, 1.0
    return (loaded["sum_loss_since_last_dump"] + (sum_loss - loaded["sum_loss"]),
            float(loaded["old_weighted_labeled_examples"]), float(loaded["dump_interval"]))


def state(run) -> tuple:
    """What a pickled Python model keeps of a run's counters (``restore_state`` puts it back), so that
    an unpickled model continues exactly as the original."""
    return (run.arrays.ctr.tolist(), run.counters_base, run.counters_loaded, run.passes_before,
            run.progress.examples)


def restore_state(run, saved) -> None:
    ctr, run.counters_base, run.counters_loaded, run.passes_before, run.progress.examples = saved
    run.arrays.ctr[:len(ctr)] = ctr
