"""sgd: gradient descent with VW's update rules and no regularization (``core/rules.py``: the
rule and its kernel, which also predicts for every saved model)."""

import math

from streamlearn.core.rules import (csoaa_sgd_block, ldf_m_sgd_block, ldf_mc_sgd_block, ldf_wap_sgd_block,
                                    learn_sgd_block, multilabel_sgd_block, oaa_sgd_block, rule_layout, rule_saved)
from streamlearn.core.lowrank import SLOTS as LOWRANK_SLOTS, end_pass as lowrank_end_pass, lowrank_sgd_block
from streamlearn.core.nn import lowrank_nn_block, nn_sgd_block
from streamlearn.core.spec import LearnerSpec
from streamlearn.features.hashing import constant_index
from streamlearn.core.state import I_TRAIN
from streamlearn.errors import OptionError
from streamlearn.options import Option

#: sgd's own options
OPTIONS = (
    Option("initial_weight", ("--initial-weight", "--initial_weight"), "float", 0.0, stored="if_used",
           estimator=None, section="sgd", check=lambda v: None if math.isfinite(v) else "a finite number",
           help="VW's --initial_weight: every weight of a new model (each class's, with --oaa) starts at W "
                "instead of 0.", sparse=False),
    Option("initial_constant", ("--constant",), "float", 0.0, estimator=None, section="sgd",
           check=lambda v: None if math.isfinite(v) else "a finite number",
           help="VW's --constant: the constant (bias) weight of a new model (class 1's, with --oaa) "
                "starts at C (after --initial-weight).", sparse=False),
    Option("random_weights", ("--random-weights", "--random_weights"), "flag", False, section="sgd",
           help="VW's --random_weights: every weight of a new model starts at a uniform draw in [-0.5, 0.5) "
                "of VW's generator seeded with --random-seed (VW's numbers).", sparse=False),
    Option("normal_weights", ("--normal-weights", "--normal_weights"), "flag", False, section="sgd",
           help="VW's --normal_weights: every weight of a new model starts at VW's standard normal draw "
                "for its index (VW's numbers; --random-seed plays no part, as in VW).", sparse=False),
    Option("truncated_normal_weights", ("--truncated-normal-weights", "--truncated_normal_weights"), "flag",
           False, section="sgd",
           help="VW's --truncated_normal_weights: --normal-weights, each beyond twice their standard "
                "deviation replaced by its remainder by that bound (VW's numbers).", sparse=False),
)

FEATURE_MASK = Option(
    "feature_mask", ("--feature-mask", "--feature_mask"), "text", None, metavar="MODEL", section="sgd", dask=False,
    help="VW's --feature_mask: learn only the weights that are non-zero in MODEL (a streamlearn model with "
         "the same -b): a new model starts at MODEL's weights (with -i, the -i model's non-zero weights "
         "are the ones learned, as in VW).", sparse=False)
OPTIONS += (FEATURE_MASK,)

#: the random initial weights, in VW's order of precedence (after a non-zero --initial_weight)
RANDOM_STARTS = (("random_weights", "random"), ("normal_weights", "normal"),
                 ("truncated_normal_weights", "truncated_normal"))


def _random_start(cfg) -> str | None:
    """The random initial weights asked for ("random", "normal", "truncated_normal"), or None."""
    return next((kind for name, kind in RANDOM_STARTS if getattr(cfg, name)), None)


def _start(cfg, table, prm, iprm, st) -> None:
    """VW's initial weights (initialize_regressor): --initial_weight W, else the random starts
    (``core/initial.py``), for every slot; then --constant's weight of the constant (gd.cc); the
    rule's G and N start at 0."""
    if cfg.initial_weight:
        table[:, 0] = cfg.initial_weight
    else:
        kind = _random_start(cfg)
        if kind is not None:
            from streamlearn.core.initial import initial_weights, vw_stride_shift     # compiled: only when used
            shift = vw_stride_shift(cfg.adaptive, cfg.normalized, iprm[I_TRAIN] != 0)
            table[:, 0] = initial_weights(kind, table.shape[0], cfg.random_seed, shift)
    if cfg.initial_constant:        # VW's --constant (gd.cc): the constant's weight, class 0's slot
        mask = table.shape[0] - 1
        table[(constant_index(cfg.bits) * cfg.class_width) & mask, 0] = cfg.initial_constant


#: the smallest -b whose --sgd table is float32 (``_f32``): 2^22 rows of 8 B are 32 MiB
F32_MIN_BITS = 22


def _f32(cfg) -> bool:
    """sgd keeps a float32 table (issue 30: VW's 4 bytes a value) for a binary or one-against-all model
    under per-feature rates (the default rule: w G N rate, 16 B a slot as VW's), and under --sgd from
    -b ``F32_MIN_BITS`` on, where the table is most of the memory (the weight alone, 4 B a slot as
    VW's; below, 8 B: the float64 weight follows VW's own numbers more closely on unstable runs, e.g.
    tests/conformance's class-weight case, 3.1e-4 of VW's prediction in float64 and 3.7e-3 in
    float32). The cost-sensitive, multilabel, label-dependent, --lrq and --nn kernels keep float64."""
    return (cfg.per_feature or cfg.bits >= F32_MIN_BITS) and not (
        cfg.csoaa or cfg.multilabel_oaa or cfg.ldf is not None or getattr(cfg, "nn", 0)
        or getattr(cfg, "lowrank", None) is not None)


def _check(cfg, flag) -> None:
    """The random starts are VW's for a new binary model: not with --oaa or -i; the feature mask
    masks the weights of features (one per feature: not with --oaa)."""
    if cfg.feature_mask is not None and cfg.oaa:
        raise OptionError(f"{flag['feature_mask']} does not apply to --oaa")
    for name, _ in RANDOM_STARTS:
        if getattr(cfg, name) and cfg.oaa:
            raise OptionError(f"{flag[name]} does not apply to --oaa (VW's weight layout differs)")
        if getattr(cfg, name) and cfg.initial_model:
            raise OptionError(f"{flag[name]} starts a new model: it does not apply with -i")


LEARNER = LearnerSpec(
    name="sgd", order=0, summary="no regularization", paper="VW 9.11.9 (vw-spec §1c)",
    declares=OPTIONS,
    options=("initial_weight", "initial_constant", "feature_mask", "csoaa", "multilabel_oaa", "csoaa_ldf", "wap_ldf",
             "lrq", "lrqfa", "lrqdropout", "nn", "nn_dropout", "inpass", "multitask", "meanfield")
    + tuple(name for name, _ in RANDOM_STARTS),
    start=_start,
    check=_check,
    kernel=learn_sgd_block, oaa_kernel=oaa_sgd_block, csoaa_kernel=csoaa_sgd_block,
    multilabel_kernel=multilabel_sgd_block,
    ldf_kernels={"m": ldf_m_sgd_block, "mc": ldf_mc_sgd_block, "wap": ldf_wap_sgd_block},
    lowrank_kernel=lowrank_sgd_block, nn_kernel=nn_sgd_block, lowrank_nn_kernel=lowrank_nn_block,
    slots=LOWRANK_SLOTS, end_pass=lambda cfg, table, st: lowrank_end_pass(cfg, table, st) if cfg.lowrank is not None else None,
    describe=lambda c: f"sgd (gradient descent, {c.rule()})",
    layout=lambda c: rule_layout(c, rate=True, f32=_f32(c)),
    saved=lambda c: rule_saved(c, rule_layout(c, rate=True, f32=_f32(c))),
    weights_in_column=lambda c: True,
)
