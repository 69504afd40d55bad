"""The learners, found rather than listed: every module of this package is one learner, its kernel
and its spec (``streamlearn.core.spec.LearnerSpec``) ending in ``LEARNER = LearnerSpec(...)``, with
its own options declared beside it. This package discovers them (``SPECS``, sorted by
``LearnerSpec.order``) and derives what a run needs from a configuration through them: the table
layout, the settings arrays, the state and counter arrays, the saved state.

The session, model I/O, objective and config only talk to this interface, so adding a learner is one
module in this package: its command-line options, estimator parameters, warm-up run and contract
tests follow from its spec.
"""

from __future__ import annotations

import importlib
import math
import mmap
import pkgutil

import numpy as np

from streamlearn.errors import OptionError
from streamlearn.core import multiclass
from streamlearn.core import state as S
from streamlearn.core.losses import LOGISTIC, LOGISTIC_BOUND, LOSSES, POISSON
from streamlearn.core.sparse import machine_memory
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.table import fill_rates


def _discover() -> tuple:
    """Every learner module of this package (a module whose name starts with _ is a helper), sorted
    by ``order``."""
    specs = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        spec = getattr(module, "LEARNER", None)
        if spec is None:
            raise ValueError(f"learner module {module.__name__} defines no LEARNER")
        specs.append(spec)
    return tuple(sorted(specs, key=lambda spec: (spec.order, spec.name)))


SPECS = _discover()
LEARNERS = {spec.name: spec for spec in SPECS}


def _check_registry(specs) -> None:
    """Each learner's name is its own, it takes the options it declares, its own state slots
    follow the shared ones, and a learner with variants has no kernels beside theirs."""
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"learners share a name: {', '.join(twice)}")
    for spec in specs:
        if sorted(spec.slots.values()) != list(range(S.N_SHARED, S.N_SHARED + len(spec.slots))):
            raise ValueError(f"learner {spec.name}'s state slots are not its own (streamlearn.core.state.own_slots)")
        if not set(spec.slot_start) <= set(spec.slots):
            raise ValueError(f"learner {spec.name} starts state slots it does not have")
        for option in spec.declares:
            if option.config and option.name not in spec.options:
                raise ValueError(f"learner {spec.name} declares --{option.name} but does not list it in its options")
        own = (spec.kernel, spec.oaa_kernel, spec.finalize, spec.after_load)
        if spec.variant is not None and (not spec.variants or any(f is not None for f in own)):
            raise ValueError(f"learner {spec.name} has variants: its compiled functions are theirs")


_check_registry(SPECS)
Learner = LearnerSpec


def get(name: str) -> LearnerSpec:
    return LEARNERS[name]


def predictor() -> LearnerSpec:
    """The learner whose kernel predicts with a saved model (its weights are in force, so the plain
    linear kernel in prediction-only mode)."""
    return LEARNERS["sgd"]


def predict_kernel(cfg):
    """The block kernel that predicts with a saved model of this configuration: the predictor's,
    one-against-all's with --oaa K, or the joint loop's for a learner with a multiclass loss."""
    if cfg.classes and get(cfg.algo).joint:
        return multiclass.predict_joint_block
    return block_kernel(cfg, predictor())


def layout(cfg) -> Layout:
    """The learner's weight-table columns, by name."""
    return get(cfg.algo).layout(cfg)


def column(cfg, table, col: int) -> np.ndarray:
    """Column ``col`` of a table of cfg's learner as an array of its values, a view
    (``Layout.column``: a float64 column of a float32 table read whole)."""
    return layout(cfg).column(table, col)


def state_columns(cfg) -> list[tuple[str, int]]:
    """Table columns a model saves beside the weights in force ("w") so that -i resumes exactly:
    (name, column)."""
    return list(get(cfg.algo).saved(cfg))


def weight_column(cfg) -> int | None:
    """Table column a saved weight "w" is restored into (None: the learner cannot resume from its
    weights alone)."""
    return 0 if get(cfg.algo).resumes_from_weights else None


def weights_in_force(cfg, table, st, rows):
    """The weights the model predicts with, for the given rows (after ``finalize``), float64 (a
    float32 table's too)."""
    return np.asarray(get(cfg.algo).in_force(cfg, table, st, rows), np.float64)


def readable_columns(cfg) -> tuple:
    """Table columns a readable model prints after the weight (VW's save_resume lines): the
    learner's own, else the update rule's G and N."""
    spec = get(cfg.algo)
    if spec.readable is not None:
        return tuple(spec.readable(cfg))
    lay = spec.layout(cfg)
    return tuple(c for c in (lay.g, lay.n) if c >= 0)


def weights_in_column(cfg) -> bool:
    """After finalize the weight column holds the weights in force (no transformation to apply)."""
    return get(cfg.algo).weights_in_column(cfg)


def finalize(cfg, table, prm, iprm, st) -> None:
    """Catch every weight up (and apply an open mini-batch) before the weights are read."""
    compiled = get(cfg.algo).kernels(cfg)
    if compiled.finalize is not None:
        compiled.finalize(table, prm, iprm, st)


def start(cfg, table, prm, iprm, st) -> None:
    """What a new model holds before its first example, beyond zeros: the learner's own start
    (``LearnerSpec.start``; VW's --initial_weight)."""
    spec = get(cfg.algo)
    if spec.start is not None:
        spec.start(cfg, table, prm, iprm, st)


def after_load(cfg, table, prm, iprm, st) -> None:
    """Rebuild what a learner derives from the loaded weights: the per-feature rates of a rate
    column (``streamlearn.core.table.fill_rates``), and the learner's own (the l1ball heap, fobos
    l2's norm and linf's list, eg's normalizer, smidas's norm)."""
    spec = get(cfg.algo)
    lay = spec.layout(cfg)
    if lay.rate >= 0:
        fill_rates(table, lay.saved, lay.g, lay.n, lay.rate, prm[S.P_G0], prm[S.P_POWER_T] == 0.5,
                   prm[S.P_POWER_T])
    compiled = spec.kernels(cfg)
    if compiled.after_load is not None:
        compiled.after_load(table, prm, iprm, st)


def rate_scale(cfg) -> float:
    """eta0 of the schedule eta0 * t^(-power_t). Without per-feature rates VW multiplies eta by
    initial_t^power_t (gd.cc), so ``-l`` is the rate at t = initial_t. With initial_t = 0 (where VW
    would never learn) it is eta."""
    if cfg.initial_t > 0 and not cfg.per_feature:
        return cfg.learning_rate * math.pow(cfg.initial_t, cfg.power_t)
    return cfg.learning_rate


def make_settings(cfg, train: bool, holdout: int = 0, algo: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The settings arrays (prm: real, iprm: integer; see streamlearn.core.state) of a run of the
    configured learner (or of ``algo``'s kernel, for prediction with the plain one)."""
    spec = get(algo or cfg.algo)
    prm = np.zeros(S.N_PRM)
    iprm = np.zeros(S.N_IPRM, np.int64)
    loss = LOSSES.get(cfg.loss, LOGISTIC)     # softmax: the learner's own loss (logistic's bounds)
    iprm[S.I_LOSS] = loss
    prm[S.P_TAU] = cfg.expectile_q if cfg.loss == "expectile" else cfg.quantile_tau     # the loss's parameter
    prm[S.P_ETA0] = rate_scale(cfg)
    prm[S.P_POWER_T] = cfg.power_t
    prm[S.P_L1] = cfg.l1
    prm[S.P_THRESHOLD] = cfg.threshold
    iprm[S.I_PERIOD] = cfg.period
    iprm[S.I_HOLDOUT] = holdout
    iprm[S.I_TRAIN] = 1 if train else 0
    iprm[S.I_FIXED_BOUNDS] = 1 if (loss == LOGISTIC or not train) else 0
    iprm[S.I_BINARY] = 1 if cfg.binary else 0
    iprm[S.I_ADAPTIVE] = 1 if cfg.adaptive else 0
    iprm[S.I_NORMALIZED] = 1 if cfg.normalized else 0
    iprm[S.I_INVARIANT] = 1 if cfg.invariant else 0
    # VW: "initial_t fake examples with squared gradient 1" for every weight (adaptive only)
    prm[S.P_G0] = cfg.initial_t if cfg.adaptive else 0.0
    lay = spec.layout(cfg)
    iprm[S.I_COL_G] = lay.g
    iprm[S.I_COL_N] = lay.n
    iprm[S.I_COL_LAST] = lay.last
    iprm[S.I_COL_PEN] = lay.pen
    iprm[S.I_COL_LAST2] = lay.last2
    iprm[S.I_COL_RATE] = lay.rate
    iprm[S.I_COL_ACC] = lay.acc
    iprm[S.I_BATCH] = cfg.batch_size
    iprm[S.I_SEED] = cfg.random_seed
    iprm[S.I_CLASSES] = cfg.classes
    iprm[S.I_CLASS_W] = cfg.class_width
    iprm[S.I_NN_UNITS] = cfg.nn
    iprm[S.I_NN_FLAGS] = (1 if cfg.nn_dropout and not cfg.meanfield else 0) | (2 if cfg.inpass else 0)
    if cfg.lowrank is not None or cfg.nn:
        from streamlearn.core.initial import vw_stride_shift
        iprm[S.I_LRQ_SHIFT] = vw_stride_shift(cfg.adaptive, cfg.normalized, True)
        iprm[S.I_LRQ_DROPOUT] = 1 if cfg.lrqdropout else 0
    iprm[S.I_NO_SET] = 1 if (cfg.multilabel_oaa and cfg.probabilities) else 0
    iprm[S.I_CLASS_FIRST] = 1 if (cfg.oaa and not (cfg.probabilities or cfg.scores)) else 0
    if spec.settings is not None:
        spec.settings(cfg, prm, iprm)
    return prm, iprm


def make_state(cfg, prm: np.ndarray, saved: dict | None = None) -> np.ndarray:
    """State array: fresh, or restored from a model's saved learner state."""
    spec = get(cfg.algo)
    norm_end = S.N_ST + 2 * cfg.norm_states     # the learner's extra slots (``LearnerSpec.state_extra``) follow
    st = np.zeros(norm_end + (spec.state_extra(cfg) if spec.state_extra is not None else 0))
    for name, value in spec.slot_start.items():
        st[spec.slots[name]] = value
    st[S.S_T] = cfg.initial_t
    st[S.S_ETA] = prm[S.P_ETA0]
    if cfg.initial_t > 0:      # VW: normalizer sums as if initial_t examples of norm 1 had been seen
        st[S.S_NORM_SUM] = st[S.S_TOTAL_W] = cfg.initial_t
        st[S.N_ST:norm_end] = cfg.initial_t
    st[S.S_MULT] = 1.0
    st[S.S_INDEX_MODE] = 2.0 if cfg.indexing is None else float(cfg.indexing)
    if LOSSES.get(cfg.loss) == POISSON:     # VW's bounds for poisson start at +-50 (and follow the labels)
        st[S.S_MIN_LABEL] = -LOGISTIC_BOUND
        st[S.S_MAX_LABEL] = LOGISTIC_BOUND
    for key, slot in _saved_slots(spec).items():
        if saved and key in saved and slot is not None:
            st[slot] = saved[key]
    if saved and "class_norm" in saved and len(saved["class_norm"]) == 2 * cfg.norm_states:
        st[S.N_ST:norm_end] = saved["class_norm"]
    if cfg.nn and not cfg.classes:
        # --nn: VW's gd keeps a normalizer state per unit but starts (and saves, and restores) the first
        # one only (initial_t, or a model's): the others start at 0, also after -i
        st[S.N_ST:norm_end] = 0.0
        st[S.N_ST] = st[S.S_NORM_SUM]
        st[S.N_ST + 1] = st[S.S_TOTAL_W]
        if saved and all(key in saved for key in NN_STATE):     # VW's -i: both generators from the saved one
            slots = spec.slots
            st[slots["nn_seeded"]] = st[slots["nn_dropout_seeded"]] = 1.0
            st[slots["nn_dropout_seed_lo"]] = st[slots["nn_seed_lo"]]
            st[slots["nn_dropout_seed_hi"]] = st[slots["nn_seed_hi"]]
    if cfg.indexing is not None:
        st[S.S_INDEX_MODE] = float(cfg.indexing)
    if LOSSES.get(cfg.loss, LOGISTIC) == LOGISTIC:      # fixed bounds, whatever the model was trained with
        st[S.S_MIN_LABEL] = -LOGISTIC_BOUND
        st[S.S_MAX_LABEL] = LOGISTIC_BOUND
    return st


def make_counters() -> np.ndarray:
    """The progress and summary counters of a run (all 0; the first progress row at weight 1)."""
    ctr = np.zeros(S.N_CTR)
    ctr[S.C_DUMP] = 1.0
    return ctr


#: learner state a model file keeps so that -i continues exactly where the run stopped, in the
#: file's order: a shared slot, or the name of a learner's own slot (tg's "pending", gravity's
#: "gravity_vw"), 0 in the models of learners without it
SAVED_STATE = {
    "t": S.S_T, "eta": S.S_ETA, "pending": "pending", "n_learned": S.S_NLEARN,
    "min_label": S.S_MIN_LABEL, "max_label": S.S_MAX_LABEL,
    "norm_sum": S.S_NORM_SUM, "total_weight": S.S_TOTAL_W, "multiplier": S.S_MULT,
    "index_mode": S.S_INDEX_MODE, "gravity_vw": "gravity_vw",
}


#: learners' own slots a model file keeps only when its learner has them (gravity's VW contraction),
#: so that no other model's bytes change; a model without one restores the slot's start value
OWN_STATE = ("contraction_vw", "nn_seed_lo", "nn_seed_hi")
#: the --nn generator's state (two 32-bit halves): saved only by --nn models (VW keeps it in its options
#: as --random_seed; -i seeds both of the network's generators with it)
NN_STATE = ("nn_seed_lo", "nn_seed_hi")


def _saved_slots(spec: LearnerSpec) -> dict:
    """SAVED_STATE's keys -> the learner's slots (None: the learner has no such slot), then the
    OWN_STATE keys of the slots it has."""
    out = {key: slot if isinstance(slot, int) else spec.slots.get(slot) for key, slot in SAVED_STATE.items()}
    out.update({key: spec.slots[key] for key in OWN_STATE if key in spec.slots})
    return out


def saved_state(cfg, st: np.ndarray) -> dict:
    out = {key: 0.0 if slot is None else float(st[slot]) for key, slot in _saved_slots(get(cfg.algo)).items()
           if key not in NN_STATE or getattr(cfg, "nn", 0)}
    if cfg.norm_states:
        out["class_norm"] = [float(v) for v in st[S.N_ST:S.N_ST + 2 * cfg.norm_states]]
    return out


def block_kernel(cfg, spec: LearnerSpec | None = None):
    """The block kernel a run of the configured learner calls (of its variant, for fobos's and
    softmax's regularizers: ``LearnerSpec.kernels``): its own, its one-against-all one with --oaa K, its
    cost-sensitive one with --csoaa K (a learner with a multiclass loss runs the joint loop in its own kernel)."""
    spec = spec or get(cfg.algo)
    if cfg.ldf is not None:
        return spec.ldf_kernels[cfg.ldf]
    if getattr(cfg, "nn", 0):
        return spec.lowrank_nn_kernel if getattr(cfg, "lowrank", None) is not None else spec.nn_kernel
    if getattr(cfg, "lowrank", None) is not None:
        return spec.lowrank_kernel
    if cfg.csoaa:
        return spec.csoaa_kernel
    if cfg.multilabel_oaa:
        return spec.multilabel_kernel
    compiled = spec.kernels(cfg)
    if cfg.classes and not spec.joint:
        return compiled.oaa_kernel
    return compiled.kernel


def allocate_table(bits: int, columns: int, dtype="float64") -> np.ndarray:
    """A zeroed (2^bits, columns) table of ``dtype`` (float64, or a layout's float32) in an anonymous
    memory map.

    The pages are zero until written and only written pages are resident. (numpy would advise huge
    pages for an array this large, and then the first write anywhere in a 2 MiB stretch makes all of
    it resident: a few examples at -b 24 would cost ~200 MiB.)"""
    need = (1 << bits) * columns * np.dtype(dtype).itemsize
    total = machine_memory()
    if total is not None and need > total:
        raise OptionError(f"-b {bits} needs {need / 2**30:.1f} GiB for the weight table, more than "
                          f"this machine's {total / 2**30:.1f} GiB; use a smaller -b")
    try:
        buf = mmap.mmap(-1, need, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, MemoryError, OverflowError):
        raise OptionError(f"-b {bits} needs {need / 2**30:.1f} GiB for the weight table, which could "
                          f"not be allocated; use a smaller -b") from None
    return np.frombuffer(buf, dtype=dtype).reshape(1 << bits, columns)
