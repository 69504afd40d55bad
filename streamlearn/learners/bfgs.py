"""VW's batch L-BFGS (``--bfgs``) and conjugate gradient (``--conjugate_gradient``), as VW 9.11.9's
bfgs.cc: a batch method over ``--passes`` passes of the data (at least 2), each a gradient pass or a
curvature pass, with the L2 regularizer ``--l2`` (``--no_bias_regularization``: not on the constant).
The optimizer is ``learners/_lbfgs.py``; the flow over the passes ``streamlearn.run.bfgs_run``.

The model holds the weights only (VW's bfgs model); -t predicts with the plain kernel."""

from __future__ import annotations

from streamlearn.core.rules import learn_sgd_block
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.errors import OptionError
from streamlearn.learners._vw32 import refuse_rates
from streamlearn.options import Option


def _nonnegative(v):
    return None if v >= 0 else "at least 0"


OPTIONS = (
    Option("bfgs", ("--bfgs",), "flag", False, config=False, selects="bfgs", section="bfgs",
           help="VW's L-BFGS, a batch method over the passes (--algo bfgs)."),
    Option("conjugate_gradient", ("--conjugate-gradient", "--conjugate_gradient"), "flag", False,
           stored="if_used", estimator=None, section="bfgs",
           help="bfgs: VW's conjugate gradient instead of L-BFGS (no stored pairs, curvature each step)."),
    Option("mem", ("--mem",), "int", 15, stored="if_used", estimator=None, section="bfgs", check=_nonnegative,
           help="bfgs: the number of (y, s) pairs L-BFGS keeps (VW's --mem)."),
    Option("termination", ("--termination",), "float", 0.001, stored="if_used", estimator=None, section="bfgs",
           help="bfgs: stop when the regularized loss decreases by less than this fraction in a step."),
    Option("hessian_on", ("--hessian-on", "--hessian_on"), "flag", False, stored="if_used", estimator=None,
           section="bfgs", help="bfgs: a curvature pass after every direction gives the step (not 1)."),
    Option("no_bias_regularization", ("--no-bias-regularization", "--no_bias_regularization"), "flag", False,
           stored="if_used", estimator=None, section="bfgs", help="bfgs: --l2 leaves the constant out."),
    Option("output_feature_regularizer_binary", ("--output-feature-regularizer-binary",
                                                 "--output_feature_regularizer_binary"), "text", None,
           metavar="PATH", estimator=None, dask=False, section="bfgs",
           help="bfgs: at convergence, write each feature's regularizer (strength l2 + its curvature, centre "
                "its weight) in VW's binary form, for --input-feature-regularizer."),
    Option("output_feature_regularizer_text", ("--output-feature-regularizer-text",
                                               "--output_feature_regularizer_text"), "text", None,
           metavar="PATH", estimator=None, dask=False, section="bfgs",
           help="bfgs: the same regularizer as text (VW's layout: index:value)."),
    Option("input_feature_regularizer", ("--input-feature-regularizer", "--input_feature_regularizer"), "text",
           None, metavar="PATH", estimator=None, dask=False, section="bfgs",
           help="bfgs: start from a VW binary feature regularizer's centres and regularize each feature "
                "towards its centre with its strength (instead of --l2)."),
)

#: the options VW's bfgs takes beside its own (the rest of streamlearn's learning options are errors)
TAKES = ("l2", "l1", "conjugate_gradient", "mem", "termination", "hessian_on", "no_bias_regularization",
         "output_feature_regularizer_binary", "output_feature_regularizer_text", "input_feature_regularizer")

#: what the flow of a bfgs run refuses, with why
REFUSES = {
    "oaa": "--bfgs learns one scalar predictor", "csoaa": "--bfgs learns one scalar predictor",
    "multilabel_oaa": "--bfgs learns one scalar predictor", "shuffle": "VW's --bfgs reads the passes in order",
    "objective": "--bfgs prints its own per-pass table", "audit": "not with --bfgs",
    "invert_hash": "not with --bfgs", "readable_model": "not with --bfgs",
    "feature_mask": "not with --bfgs", "save_resume": "VW's --bfgs models hold the weights only",
}


def _check(cfg, flag) -> None:
    if cfg.loss not in ("squared", "classic", "logistic", "hinge", "quantile", "poisson"):
        raise OptionError(f"--bfgs works with --loss squared, classic, logistic, hinge, quantile or poisson "
                          f"(got {cfg.loss})")
    if cfg.conjugate_gradient and "algo" in cfg.explicit:
        raise OptionError("--conjugate_gradient selects VW's conjugate gradient on its own; it cannot be used "
                          "together with --bfgs (as in VW)")
    refuse_rates(cfg, flag, "bfgs", "its steps come from the line search (VW ignores them)")
    for name, why in REFUSES.items():
        if getattr(cfg, name, None):
            raise OptionError(f"{flag.get(name, '--' + name)} does not combine with --bfgs ({why})")


LEARNER = LearnerSpec(
    name="bfgs", order=14, summary="VW's L-BFGS, batch", paper="Nocedal 1980; Liu & Nocedal 1989 (VW's --bfgs)",
    example=("--passes", "3", "--l2", "0.01"), declares=OPTIONS,
    kernel=learn_sgd_block, check=_check, float32=True,
    describe=lambda c: (f"bfgs ({'conjugate gradient' if c.conjugate_gradient or c.mem == 0 else f'L-BFGS, m = {c.mem}'}"
                        f", a batch method: l2 = {c.l2:g}, up to {c.passes} passes)"),
    layout=lambda c: Layout(("w",), 1),
    selected_by=("conjugate_gradient",),
    options=TAKES,
    plain_only=lambda c: "its steps come from the line search, with no step size",
    takes_invariant=False,
    rate_schedule=False,
    batch=True,
    flow="streamlearn.run.bfgs_run:train_bfgs",
)
