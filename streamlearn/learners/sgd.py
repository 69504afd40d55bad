"""sgd: gradient descent with VW's update rules and no regularization (``core/rules.py``: the
rule and its kernel, which also predicts for every saved model)."""

import math

from streamlearn.core.rules import learn_sgd_block, oaa_sgd_block, rule_layout, rule_saved
from streamlearn.core.spec import LearnerSpec
from streamlearn.features.hashing import constant_index
from streamlearn.options import Option

#: sgd's own option
OPTIONS = (
    Option("initial_weight", ("--initial-weight", "--initial_weight"), "float", 0.0, stored="if_used",
           estimator=None, section="sgd", check=lambda v: None if math.isfinite(v) else "a finite number",
           help="VW's --initial_weight: every weight of a new model (each class's, with --oaa) starts at W "
                "instead of 0."),
    Option("initial_constant", ("--constant",), "float", 0.0, estimator=None, section="sgd",
           check=lambda v: None if math.isfinite(v) else "a finite number",
           help="VW's --constant: the constant (bias) weight of a new model (class 1's, with --oaa) "
                "starts at C (after --initial-weight)."),
)


def _start(cfg, table, prm, iprm, st) -> None:
    """VW's --initial_weight (gd.cc): the weight of every slot starts at W; the rule's G and N at 0."""
    if cfg.initial_weight:
        table[:, 0] = cfg.initial_weight
    if cfg.initial_constant:        # VW's --constant (gd.cc): the constant's weight, class 0's slot
        mask = table.shape[0] - 1
        table[(constant_index(cfg.bits) * cfg.class_width) & mask, 0] = cfg.initial_constant


LEARNER = LearnerSpec(
    name="sgd", order=0, summary="no regularization", paper="VW 9.11.9 (vw-spec §1c)",
    declares=OPTIONS, options=("initial_weight", "initial_constant"), start=_start,
    kernel=learn_sgd_block, oaa_kernel=oaa_sgd_block,
    describe=lambda c: f"sgd (gradient descent, {c.rule()})",
    layout=lambda c: rule_layout(c, rate=True),
    saved=lambda c: rule_saved(c, rule_layout(c)),
    weights_in_column=lambda c: True,
)
