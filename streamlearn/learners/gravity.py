"""gravity: VW's own --l1 and --l2 in gd (gd.cc's "gravity" and "contraction"), with VW's update
rules (vw-spec.md): one global gravity g accrued over all examples and one global contraction c.
The table holds raw weights z; the weight in force is c * trunc(z, g), VW's trunc_weight:
z - sign(z) g where |z| > g (sign(z) = -1 for z <= 0), else 0; for g >= 0 that is
sign(z) max(|z| - g, 0). After the step u of a learned example (without the normalizer m), with
eta_bar = -u / loss'(p, y) when |u| > 1e-8 and |loss'| > 1e-8: c <- c (1 - l2 eta_bar), the step on
z is u / c, and g <- g + l1 eta_bar. When c < 1e-9 or g > 1e3 every weight takes its value in force
and g = 0, c = 1 (VW's sync_weights).
eta_bar is negative when u and loss' have the same sign, which a logistic label strictly inside
(-1, 1) gives under the invariant rule (u mixes the two classes' closed-form steps, loss' their
derivatives): g may then go below 0, as VW's does, and every weight, 0 included, moves by -sign(z) g."""

import numpy as np
from numba import njit

from streamlearn.core.loop import base_start, example_loop
from streamlearn.core.losses import loss_dloss
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.rules import apply_step, gd_settings, gradient_step, rule_layout, rule_saved, step_scale
from streamlearn.core.spec import LearnerSpec
from streamlearn.core.state import P_L2, S_MULT, S_NLEARN, S_T, own_slots
from streamlearn.core.table import W


#: the learner's own state slots (``streamlearn.core.state.own_slots``): VW's gravity and contraction
SLOTS = own_slots("gravity_vw", "contraction_vw")
S_GRAVITY_VW = SLOTS["gravity_vw"]
S_CONTRACTION_VW = SLOTS["contraction_vw"]
SYNC_CONTRACTION = 1e-9     # VW makes every weight its value in force when c falls below this
SYNC_GRAVITY = 1e3          # or g grows beyond this


# ----------------------------------------------------------------------------- gravity (VW's --l1)

@njit(cache=True, nogil=True, inline="always")
def gravity_view(cfg, st):
    return st[S_GRAVITY_VW]


@njit(cache=True, nogil=True, inline="always")
def trunc(w, gravity):
    """VW's trunc_weight (vw-spec.md §1c, "How --l1 is implemented"): w - sign(w) g where |w| > g, with
    sign(w) = -1 for w <= 0, else 0. For g >= 0 it is sign(w) max(|w| - g, 0); for a negative g
    (module docstring) every weight is pushed away from 0 by -g, and a weight 0 becomes g."""
    if gravity < abs(w):
        return w - gravity if w > 0.0 else w + gravity
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def gravity_weight(table, i, cfg, gravity):
    """The stored (raw) weight truncated by the global gravity (``trunc``)."""
    return trunc(table[i, W], gravity)


@njit(cache=True, nogil=True, inline="always")
def contracted(acc, base, table, cfg, st):
    """``dot_end``: the truncated score (the base included, as VW's trunc_predict starts from it)
    times the contraction c."""
    return acc * st[S_CONTRACTION_VW]


@njit(cache=True, nogil=True)
def sync_weights(table, st):
    """VW's sync_weights: every raw weight becomes its value in force, c trunc(z, g); then g = 0, c = 1."""
    g = st[S_GRAVITY_VW]
    c = st[S_CONTRACTION_VW]
    for i in range(table.shape[0]):
        v = trunc(table[i, W], g)
        table[i, W] = v * c if v != 0.0 else 0.0     # 0 stays +0, whatever the sign of c
    st[S_GRAVITY_VW] = 0.0
    st[S_CONTRACTION_VW] = 1.0


@njit(cache=True, nogil=True, inline="always")
def gravity_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The update rule's step u, then VW's regularizer (module docstring): eta_bar = -u / loss'(p, y)
    with u without the normalizer m and the per-feature rates; c shrinks by 1 - l2 eta_bar, the raw
    weights move by u / c, g grows by l1 eta_bar; then VW's sync when c or g go too far."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, l1, theta, period, cr = cfg
    t, scale = step_scale(st, h, power_t, adaptive)
    u = gradient_step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized,
                      invariant, sqrt_rate, power_t, cg, cn, cpen, g0, cr)
    u_bare = u / st[S_MULT] if normalized else u        # without the normalizer m
    if abs(u_bare) > 1e-8:
        d = loss_dloss(code, p, y, tau)
        eta_bar = -u_bare / d if abs(d) > 1e-8 else 0.0
        if abs(d) > 1e-8:
            st[S_CONTRACTION_VW] *= 1.0 - prm[P_L2] * eta_bar
        u /= st[S_CONTRACTION_VW]
        st[S_GRAVITY_VW] += l1 * eta_bar
    apply_step(idx, val, s, f, table, cfg, u)
    st[S_T] = t
    st[S_NLEARN] += 1.0
    if st[S_CONTRACTION_VW] < SYNC_CONTRACTION or st[S_GRAVITY_VW] > SYNC_GRAVITY:
        sync_weights(table, st)


@njit(cache=True, nogil=True)
def learn_gravity_block(block, state, start, end):
    """Examples start..end-1 with VW's --l1: one global gravity, raw weights truncated when read."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, gd_settings(prm, iprm), gravity_view, gravity_weight, base_start,
                        contracted, gravity_learn)


@njit(cache=True, nogil=True)
def oaa_gravity_block(block, state, start, end):
    """``learn_gravity_block`` one-against-all: the gravity grows once per class update (K times per
    example, as VW's does)."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, gd_settings(prm, iprm), gravity_view, gravity_weight, base_start,
                    contracted, gravity_learn)


@njit(cache=True, nogil=True)
def gravity_in_force(table, rows, gravity, contraction):
    """The weights in force of the rows: c trunc(z, g)."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        out[j] = gravity_weight(table, rows[j], None, gravity) * contraction
    return out




# ----------------------------------------------------------------------------- spec

def end_pass(cfg, table, st) -> None:
    """VW syncs the weights at the end of every pass unless it saves its state (``--predict_only_model``)."""
    if cfg.predict_only_model:
        sync_weights(table, st)


def _settings(cfg, prm, iprm) -> None:
    prm[P_L2] = cfg.l2


def _regularizer(cfg, w: np.ndarray) -> tuple[float, str]:
    """l1 ||w||_1 + l2/2 ||w||^2, the objective VW's gravity and contraction follow."""
    value = cfg.l1 * float(np.abs(w).sum()) + 0.5 * cfg.l2 * float(np.dot(w, w))
    text = " + ".join([f"{cfg.l1:g} ||w||_1"] * (cfg.l1 > 0) + [f"{cfg.l2:g}/2 ||w||^2"] * (cfg.l2 > 0))
    return value, text or "0"


def hint(cfg) -> str | None:
    """One line on stderr when --l1 chose this learner (no --algo)."""
    if "algo" in cfg.explicit or "l1" not in cfg.explicit:
        return None
    return ("hint: --l1 runs VW's own L1 (gravity, VW's numbers); --algo ftrl gives sparser, more accurate "
            "models (docs/learners.md)")


def merge(cfg, merged, inputs, models, state) -> None:
    """Merged models (``streamlearn.mix``): the raw weights z averaged and VW's global gravity and
    contraction averaged uniformly, then the weights in force from them (``gravity_in_force``)."""
    if "w" in merged and "z" in merged:
        table = np.ascontiguousarray(merged["z"][:, None])
        merged["w"][:] = gravity_in_force(table, np.arange(table.shape[0], dtype=np.int64),
                                          float(state.get("gravity_vw", 0.0)), float(state.get("contraction_vw", 1.0)))


LEARNER = LearnerSpec(
    name="gravity", order=11, summary="VW's own --l1 and --l2: one global gravity and contraction",
    paper="VW 9.11.9 (vw-spec §1c)",
    example=("--l1", "1e-4"),
    kernel=learn_gravity_block, oaa_kernel=oaa_gravity_block,
    describe=lambda c: (f"gravity (VW's --l1/--l2: one global gravity and contraction, {c.rule()}: l1 = {c.l1:g}"
                        + (f", l2 = {c.l2:g})" if c.l2 else ")")),
    layout=lambda c: rule_layout(c, rate=True),
    in_force=lambda c, table, st, rows: gravity_in_force(table, rows, st[S_GRAVITY_VW], st[S_CONTRACTION_VW]),
    saved=lambda c: [("z", 0)] + rule_saved(c, rule_layout(c)),
    readable_raw=True,
    regularizer=_regularizer,
    merge=merge,
    slots=SLOTS,
    slot_start={"contraction_vw": 1.0},
    settings=_settings,
    end_pass=end_pass,
    options=("l1", "l2"),
    # --l1 and/or --l2 as VW users run them, with any update rule and rate options (--sgd, -l,
    # --power_t, --adaptive, ...): VW's own regularizer, VW's numbers (ftrl, tg, fobos are one --algo
    # away, and an option of theirs, such as --threshold or --reg, selects them; the run prints ``hint``)
    default_for=("l1", "l2"),
    hint=hint,
)
