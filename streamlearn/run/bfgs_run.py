"""Training with VW's L-BFGS (``--bfgs``, ``--algo bfgs``; ``streamlearn.learners._lbfgs``): the
passes over the data as VW's driver runs them, the first over the text (writing the cache), the
others over the cache, each a gradient or a curvature pass, with the optimizer's step after each.

As VW: the counters and the average loss count every pass's examples (a curvature pass counts the
loss of the predictions the gradient pass before it made); held-out examples (VW's holdout, on unless
--holdout_off) are predicted, not learned, and the summary's average loss is then the best pass's
holdout loss; the run ends at --passes, at convergence (--termination), when the curvature is not
positive, or after --early_terminate passes without a better holdout loss. -p writes every pass's
predictions. The per-pass table is on stderr, VW's [info] messages on stdout."""

from __future__ import annotations

import sys

import numpy as np

from streamlearn import learners
from streamlearn.errors import OptionError
from streamlearn.core.state import I_BINARY, I_FIXED_BOUNDS, I_HOLDOUT, I_LOSS, P_TAU
from streamlearn.features.hashing import CONSTANT_RAW_INDEX
from streamlearn.learners import _lbfgs
from streamlearn.run.model_io import save_outputs
from streamlearn.run.report import Reporter
from streamlearn.run.runstate import RunState
from streamlearn.run.session import EarlyStop, SourcePlan, _check_paths, _open_run, _summary_lines, preamble
from streamlearn.run.stream import hashing_of, pipelined


def info(text: str) -> None:
    """VW's [info] message on stdout (its later lines as they are)."""
    print(f"[info] {text}", flush=True)


def train_bfgs(cfg, model=None) -> dict:
    if cfg.passes < 2:      # checked here: a bfgs model predicts (its options) with no passes
        raise OptionError("--bfgs needs at least 2 passes (--passes 2): it is a batch method, as VW's")
    _check_paths(cfg)
    hashing = hashing_of(cfg)
    holdout = cfg.holdout
    state = RunState.start(cfg, model, train=True, holdout=holdout).quiet()
    rep = Reporter(cfg.quiet)
    m = 0 if cfg.conjugate_gradient else cfg.mem
    hessian_on = cfg.hessian_on or m == 0
    if cfg.l2 > 0:
        rep.line(f"using l2 regularization = {cfg.l2:g}")
    rep.line(("enabling BFGS based optimization " if m > 0 else "enabling conjugate gradient optimization via BFGS ")
             + ("with curvature calculation" if hessian_on else "**without** curvature calculation"))
    sources = SourcePlan(cfg, hashing, rep)
    preamble(cfg, rep, learners.get(cfg.algo), sources.note)
    run = _open_run(cfg, state, hashing, rep, None)
    table = state.table
    rows = table.shape[0]

    def trace(text: str) -> None:
        if not cfg.quiet:
            rep.out.write(text)
            rep.out.flush()

    regs = None
    if cfg.input_feature_regularizer:
        from streamlearn.io import vw_regularizer
        regs, low, high = vw_regularizer.read(cfg.input_feature_regularizer, cfg.bits)
        state.state.min_label, state.state.max_label = low, high
    opt = _lbfgs.Lbfgs(rows, m, cfg.termination, hessian_on, cfg.l2, cfg.no_bias_regularization,
                       CONSTANT_RAW_INDEX & (rows - 1), regs, trace, (lambda text: None) if cfg.quiet else info)
    if model is not None and regs is None:
        opt.W[:, _lbfgs.XT] = table[:, 0]
    output_regularizer = bool(cfg.output_feature_regularizer_binary or cfg.output_feature_regularizer_text)
    dumps = RegularizerFiles(cfg, state, opt) if output_regularizer else None
    stride = opt.mem.shape[1]
    if not cfg.quiet:
        info(f"m = {m}, allocated {(rows * (4 * stride + 16)) >> 20}M for weights and mem")
    trace(opt.header())
    iprm, prm = state.iprm, state.prm
    settings = (int(iprm[I_LOSS]), float(prm[P_TAU]), int(iprm[I_HOLDOUT]), iprm[I_FIXED_BOUNDS] == 0,
                iprm[I_BINARY] != 0)
    stop = EarlyStop(cfg, holdout)
    final_pass = cfg.passes
    passes_done, nonzero = 0, None
    try:
        for p in range(cfg.passes):
            state.start_pass()
            opt.begin_pass()
            blocks, writer = sources.blocks(p, run, holdout)
            try:
                for block in pipelined(blocks):
                    run.faults.report(block)
                    run.progress.examples += block.n
                    preds = np.zeros(block.n, np.float64)
                    opt.block(block.arrays(preds), state.st, state.ctr, settings)
                    run.outputs.write(block, preds)
            except BaseException:
                if writer is not None:
                    writer.discard()
                raise
            if writer is not None:
                writer.commit()
            passes_done += 1
            run.passes_done = passes_done
            c = state.counters
            status = opt.end_pass(bool(holdout), float(c.ho_loss_pass), float(c.ho_w_pass))
            if final_pass == opt.current_pass:
                trace("Maximum number of passes reached. ")
                if not output_regularizer:
                    trace("To optimize further, increase the number of passes\n")
                else:
                    trace("\nRegular model file has been created. Output feature regularizer file is created "
                          "only when the convergence is reached. Try increasing the number of passes for "
                          "convergence\n")
                    output_regularizer = False
            if status != _lbfgs.LEARN_OK and final_pass > opt.current_pass:
                final_pass = opt.current_pass
            else:
                opt.W[:, _lbfgs.COND] = 0
            table[:, 0] = opt.W[:, _lbfgs.XT]
            best = stop.best
            stopping = stop.after_pass(p, run)
            if holdout and stop.best is not None and stop.best != best and dumps is not None:
                dumps.write(output_regularizer)     # VW writes its outputs at each better holdout loss
            if stopping:
                trace("Early termination reached w.r.t. holdout set error")
                break
            if final_pass == opt.current_pass:
                break
        nonzero = stop.nonzero if stop.stopped and stop.nonzero is not None else save_outputs(cfg, run)
        if dumps is not None:
            dumps.write(output_regularizer)
    finally:
        run.outputs.close()
        sources.remove_temporary()
    rep.summary(_summary_lines(run, cfg.loss, cfg.quantile_tau, passes_done, holdout, stop.best, nonzero, cfg.bits,
                               best=not cfg.dont_output_best_constant))
    sys.stdout.flush()
    return {"state": state.st, "counters": state.ctr, "table": table, "nonzero": nonzero,
            "malformed": run.faults.malformed, "passes": passes_done, "best_holdout": stop.best,
            "early_stop": stop.stopped, "objectives": [], "last_line": 0, "weights": opt.W[:, _lbfgs.XT].copy()}


class RegularizerFiles:
    """--output_feature_regularizer_binary / _text, as VW writes them (the binary first): at
    convergence the feature regularizer, else the weights. Each file written adds the features'
    curvature (1 / the preconditioner) to the strengths once more, as VW's writer does, so a text
    file written after a binary one (or after a better holdout loss in the converging pass) holds
    strengths l2 + 2 / c."""

    def __init__(self, cfg, state, opt):
        self.cfg, self.state, self.opt = cfg, state, opt
        self.regs = None

    def write(self, converged: bool) -> None:
        from streamlearn.io import vw_regularizer
        from streamlearn.io.atomic import write_atomic
        cfg, opt, s = self.cfg, self.opt, self.state.state
        head = (s.min_label, s.max_label, cfg.bits, tuple(cfg.ngram or ()), tuple(cfg.skips or ()),
                " --conjugate_gradient" if cfg.conjugate_gradient else " --bfgs")
        for path, form in ((cfg.output_feature_regularizer_binary, vw_regularizer.binary),
                           (cfg.output_feature_regularizer_text, vw_regularizer.text)):
            if not path:
                continue
            if converged:
                start = self.regs if self.regs is not None else opt.regs
                self.regs = _lbfgs.preconditioner_to_regularizer(opt.W, opt.l2, start)
                values = self.regs.reshape(-1)
            else:
                values = opt.W[:, _lbfgs.XT].copy()
            data = form(*head, values, converged)
            write_atomic(path, [data if isinstance(data, bytes) else data.encode()], "feature regularizer")
