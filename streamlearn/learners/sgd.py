"""sgd: gradient descent with VW's update rules and no regularization (``kernels/rules.py``: the
rule and its kernel, which also predicts for every saved model)."""


from streamlearn.kernels.rules import learn_sgd_block, oaa_sgd_block, rule_layout, rule_saved
from streamlearn.kernels.spec import LearnerSpec
from streamlearn.kernels.state import A_SGD


LEARNER = LearnerSpec(
    name="sgd", order=0, summary="no regularization", paper="VW 9.11.9 (vw-spec §1c)",
    code=A_SGD, kernel=learn_sgd_block, oaa_kernel=oaa_sgd_block,
    describe=lambda c: f"sgd (gradient descent, {c.rule()})",
    layout=lambda c: rule_layout(c, rate=True),
    saved=lambda c: rule_saved(c, rule_layout(c)),
    weights_in_column=lambda c: True,
)
