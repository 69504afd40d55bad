"""sgd: gradient descent with VW's update rules and no regularization (``core/rules.py``: the
rule and its kernel, which also predicts for every saved model)."""

import math

from streamlearn.core.rules import csoaa_sgd_block, learn_sgd_block, multilabel_sgd_block, oaa_sgd_block, rule_layout, rule_saved
from streamlearn.core.spec import LearnerSpec
from streamlearn.options import Option

#: sgd's own option
OPTIONS = (
    Option("initial_weight", ("--initial-weight", "--initial_weight"), "float", 0.0, stored="if_used",
           estimator=None, section="sgd", check=lambda v: None if math.isfinite(v) else "a finite number",
           help="VW's --initial_weight: every weight of a new model (each class's, with --oaa) starts at W "
                "instead of 0."),
)


def _start(cfg, table, prm, iprm, st) -> None:
    """VW's --initial_weight (gd.cc): the weight of every slot starts at W; the rule's G and N at 0."""
    if cfg.initial_weight:
        table[:, 0] = cfg.initial_weight


LEARNER = LearnerSpec(
    name="sgd", order=0, summary="no regularization", paper="VW 9.11.9 (vw-spec §1c)",
    declares=OPTIONS, options=("initial_weight", "csoaa", "multilabel_oaa"), start=_start,
    kernel=learn_sgd_block, oaa_kernel=oaa_sgd_block, csoaa_kernel=csoaa_sgd_block,
    multilabel_kernel=multilabel_sgd_block,
    describe=lambda c: f"sgd (gradient descent, {c.rule()})",
    layout=lambda c: rule_layout(c, rate=True),
    saved=lambda c: rule_saved(c, rule_layout(c)),
    weights_in_column=lambda c: True,
)
