"""A training or prediction session: the Run (the table, settings, state and reports one run works
on, and the processing of a parsed block), and the train and predict flows: passes over text or the
cache, holdout and early termination, objective reporting, summary. Model files are read and written by
``streamlearn.run.model_io``; the blocks come from ``streamlearn.run.stream``.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, field, replace

import numpy as np

from streamlearn import learners
from streamlearn.run import objective
from streamlearn.learners import allocate_table
from streamlearn.run.history import ProgressHistory, nonzero_in_force
from streamlearn.config import PredictConfig, TrainConfig, train_config
from streamlearn.errors import InputError, OptionError
from streamlearn.io.blocks import ParsedBlock, window as examples_window
from streamlearn.io.cache import (CacheCorrupt, CacheWriter, cache_status, check_cache_path, read_cache,
                                  verify_cache)
from streamlearn.io.model_file import load_model
from streamlearn.io.atomic import check_target
from streamlearn.io.reader import check_readable
from streamlearn.io.shuffle import ShuffledExamples
from streamlearn.io.writers import PredictionWriter, class_probabilities, format_class_values
from streamlearn.kernels import multiclass
from streamlearn.run.model_io import model_options, save_outputs
from streamlearn.run.runstate import RunState
from streamlearn.run.report import Reporter, best_constant, next_dump
from streamlearn.run.stream import Hashing, hashing_of, pipelined, text_blocks
from streamlearn.run.views import CounterView, IntSettingsView, StateView


@dataclass
class Run:
    """Everything one train or predict run works on."""

    learner: learners.Learner
    table: np.ndarray
    prm: np.ndarray
    st: np.ndarray
    reporter: Reporter
    link: str
    binary: bool
    writer: PredictionWriter | None = None
    strict: bool = False
    holding_out: bool = False
    names: object = None     # streamlearn.features.audit.FeatureNames when --invert_hash or --audit
    audit_g: int | None = None   # --audit: None = off, else the table column of G printed (-1: none)
    malformed: int = 0
    read_errors: int = 0
    examples: int = 0
    entries: int = 0         # feature entries x_ij read by the learner (the data accesses)
    started: float = field(default_factory=time.perf_counter)
    iprm: np.ndarray | None = None     # integer settings (streamlearn.kernels.state)
    ctr: np.ndarray = field(default_factory=learners.make_counters)   # progress and summary counters
    kernel: object = None    # the block kernel (default: the learner's)
    classes: int = 0         # K of a multiclass run (--oaa K)
    softmax: bool = False    # the classes' probabilities are the softmax of their scores
    output: str = "class"    # multiclass -p lines: "class", "scores" or "probabilities"
    raw_writer: PredictionWriter | None = None    # -r: every class's raw score
    logloss: list = field(default_factory=lambda: [0.0, 0.0])   # --probabilities: sum -log p w, sum w
    rows_in_use: int | None = None   # a multiclass model's non-zero rows (features in use), once saved
    history: ProgressHistory | None = None   # progress rows kept as arrays (train --plot, the Python API)
    cfg: TrainConfig | None = None   # the training run's config (the history's non-zero count needs it)
    diverged: str | None = None      # "<file> line <n>": the first example whose prediction or update
                                     # was not finite (streamlearn.kernels.loop), once seen
    diverge_warned: bool = False     # the "training diverged" warning was printed

    def __post_init__(self):
        if self.kernel is None:
            self.kernel = self.learner.kernel

    def shown(self, p: np.ndarray) -> np.ndarray:
        """Predictions as written and shown: after --binary or the link function."""
        if self.binary:
            return np.where(p > 0.0, 1.0, -1.0)
        if self.link == "logistic":
            return 1.0 / (1.0 + np.exp(-p))
        return p

    def read_error(self, message: str) -> None:
        """A source could not be read to its end: an error with --strict, else a warning."""
        if self.strict:
            raise InputError(message)
        self.reporter.warn(message + "; the lines before are used, the last partial line is not")
        self.read_errors += 1

    def report_faults(self, block: ParsedBlock) -> None:
        if block.faults.shape[0] == 0:
            return
        for line, reason, consequence in block.fault_lines():
            if self.strict:
                raise InputError(f"{block.source} line {line}: {reason}")
            self.reporter.warn(f"{block.source} line {line}: {reason}; {consequence}")
        self.malformed += block.faults.shape[0]

    def process(self, block: ParsedBlock) -> None:
        self.report_faults(block)
        n = block.n
        self.examples += n
        before = self.entries - int(block.indptr[0])     # indptr may start past 0 (a piece of a block)
        self.entries += int(block.indptr[n] - block.indptr[0])
        K = self.classes
        preds = np.empty((n, K + 2)) if K else np.empty(n)
        ctr = self.ctr
        counters, training = CounterView(ctr), IntSettingsView(self.iprm).train
        pos = 0
        kernel = self.kernel
        counts = block.feature_counts()
        entries = None
        if self.names is not None and block.text_lines is not None:
            entries = self.names.entries(block)
        audit = self.audit_g is not None and entries is not None
        tags = block.tag_list() if audit else None
        if audit:       # --audit's formatting (and the names' expansion): imported by the runs that use it
            from streamlearn.features.audit import audit_features, audit_prediction, audit_score, write as write_audit
        while pos < n:
            end = pos + 1 if audit else n       # --audit: one example at a time, weights before learning
            twice = audit and self.learner.predicts_twice and training
            if audit and K:     # one block per class, with the class's slots (VW's oaa)
                features = [audit_features(self.class_entries(entries[pos], k), self.table, self.audit_g)
                            for k in range(K)]
            elif audit:
                features = audit_features(entries[pos], self.table, self.audit_g)
            if twice:       # the score before learning, for the second block
                raw = audit_score(entries[pos], self.table) + block.bases[pos]
            first = pos
            pos = kernel(block.indptr, block.idx, block.val, block.labels, block.weights, block.bases,
                         counts, pos, end, self.table, self.prm, self.iprm, self.st, ctr, preds)
            if self.diverged is None and (counters.diverged or counters.nonfinite):
                self.diverged = divergence_place(block, ctr, first, pos)
                if self.strict and training:
                    # --strict stops at once, as at a malformed line (train writes no model then)
                    raise InputError(f"training diverged: a prediction or update became infinite or NaN at "
                                     f"{self.diverged}; try a smaller learning rate (-l)")
            if audit and K:
                lines = []
                for k in range(K):
                    lines += [audit_prediction(preds[first, 1 + k], tags[first]), features[k]]
                write_audit(lines)
            elif audit:
                lines = [audit_prediction(preds[first], tags[first]), features]
                if twice:
                    # VW's learn predicts again, with the bounds the label widened (vw-spec-2 §2f)
                    bounds = StateView(self.st)
                    again = min(max(raw, bounds.min_label), bounds.max_label)
                    lines += [audit_prediction(again, tags[first]), features]
                write_audit(lines)
            if counters.w_labeled + counters.w_unlabeled >= counters.dump:
                e = pos - 1
                if self.history is not None:    # before the row resets the since-last sums
                    self.record_progress(before + int(block.indptr[pos]))
                if K:
                    self.reporter.row(ctr, self.holding_out, block.labels[e], preds[e, 0], int(counts[e]),
                                      *self.class_columns(block.labels[e], preds[e]))
                else:
                    shown = self.shown(preds[e:e + 1])[0]
                    self.reporter.row(ctr, self.holding_out, block.labels[e], shown, int(counts[e]))
                next_dump(ctr)
        if K:
            self.class_outputs(block, preds)
        elif self.writer is not None:
            self.writer.write(self.shown(preds), block)
        return preds

    def record_progress(self, accesses: int | None = None) -> None:
        """A progress row into the history, with the non-zero weights in force now and the data
        accesses so far (default: every entry of the blocks processed)."""
        self.history.record(self.ctr, self.holding_out,
                            nonzero_in_force(self.cfg, self.table, self.prm, self.iprm, self.st),
                            self.entries if accesses is None else accesses)

    # ------------------------------------------------------------------------- multiclass
    def class_entries(self, entries, k: int) -> list:
        """An example's named entries moved to class k's slots (names unchanged, as VW's --audit)."""
        W = IntSettingsView(self.iprm).class_w
        mask = self.table.shape[0] - 1
        return [replace(e, index=((e.index * W) & mask) + k) for e in entries]

    def first_class(self) -> int:
        """The label of class 0: 0 once the labels are 0-indexed, else 1."""
        return 0 if StateView(self.st).index_mode == 0.0 else 1

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        return class_probabilities(scores, self.softmax)

    def class_columns(self, label: float, row: np.ndarray) -> tuple[str, str]:
        """The progress row's label and prediction columns of a multiclass example: integers, and
        with --probabilities the class with its probability, 'k(NN%)'."""
        label_text = "unknown" if label != label else (str(int(label)) if label == int(label) else f"{label:g}")
        pred = int(row[0])
        if self.output == "probabilities":
            p = self.probabilities(row[None, 1:self.classes + 1])[0]
            return label_text, f"{pred}({100.0 * p[pred - self.first_class()]:2.0f}%)"
        return label_text, str(pred)

    def class_outputs(self, block: ParsedBlock, preds: np.ndarray) -> None:
        """Warnings about the block's labels, then its -p and -r lines and the multiclass log loss."""
        K = self.classes
        status = preds[:, K + 1]
        if status.any():
            self.label_notes(block, status)
        scores = preds[:, 1:K + 1]
        first = self.first_class()
        probs = None
        if self.output == "probabilities":
            probs = self.probabilities(scores)
            labels = block.labels
            ok = (labels == labels) & (block.weights > 0)
            if ok.any():
                cls = labels[ok] - first
                valid = (cls >= 0) & (cls < K) & (cls == np.floor(cls))
                p = np.where(valid, probs[ok][np.arange(cls.shape[0]), np.clip(cls, 0, K - 1).astype(np.int64)], 0.0)
                w = block.weights[ok]
                with np.errstate(divide="ignore"):
                    losses = np.where(p > 0, -np.log(np.where(p > 0, p, 1.0)), 999.0)
                self.logloss[0] += float((losses * w).sum())
                self.logloss[1] += float(w.sum())
        if self.writer is not None:
            if self.output == "class":
                self.writer.write(preds[:, 0], block)
            elif self.output == "scores":
                self.writer.write_lines(format_class_values(scores, first), block)
            else:
                self.writer.write_lines(format_class_values(probs, first), block)
        if self.raw_writer is not None:
            self.raw_writer.write_lines(format_class_values(scores, first, lead=" "), block)

    def label_notes(self, block: ParsedBlock, status: np.ndarray) -> None:
        """Warn about labels that name no class (one-line errors with --strict) and tell when auto
        indexing decided how the labels count."""
        K = self.classes
        for e in np.flatnonzero(status).tolist():
            code = status[e]
            y = block.labels[e]
            where = f"{block.source} line {int(block.lines[e])}"
            if code == multiclass.ST_NOW_0:
                self.reporter.line("label 0 found -- labels are now considered 0-indexed.")
                continue
            if code == multiclass.ST_NOW_1:
                self.reporter.line(f"label {K} found -- labels are now considered 1-indexed.")
                continue
            first = self.first_class()
            if code == multiclass.ST_NOT_INTEGER:
                reason = f"label {y:g} is not a class (--oaa labels are integers {first}..{first + K - 1})"
                consequence = "the example is not learned"
            else:
                reason = f"label {y:g} is not in {first}..{first + K - 1}"
                consequence = ("learned as a negative for every class, as VW does" if IntSettingsView(self.iprm).train
                               else "counted as an error")
            if self.strict:
                raise InputError(f"{where}: {reason}")
            self.reporter.warn(f"{where}: {reason}; {consequence}")


def divergence_place(block: ParsedBlock, ctr: np.ndarray, first: int, stop: int) -> str:
    """Where a run's predictions or updates first stopped being finite: "<file> line <n>" of the example
    the example loop recorded (``C_DIVERGED_EX``), or, from a loop that records none (one-against-all
    flags a NaN score only), the lines of the examples that kernel call processed."""
    counters = CounterView(ctr)
    if counters.diverged:
        e = int(counters.diverged_ex)
        if 0 <= e < block.n:
            return f"{block.source} line {int(block.lines[e])}"
    a, b = int(block.lines[first]), int(block.lines[max(stop - 1, first)])
    return f"{block.source} line {a}" if a == b else f"{block.source} lines {a}-{b}"


def _class_outputs(cfg, learner, raw: str | None = None) -> dict:
    """The Run fields of a multiclass run: K, how its -p lines read, the -r writer."""
    if not cfg.classes:
        return {}
    output = "probabilities" if cfg.probabilities else "scores" if cfg.scores else "class"
    raw = raw if raw is not None else getattr(cfg, "raw_predictions", None)
    return dict(classes=cfg.classes, softmax=learner.joint, output=output,
                raw_writer=PredictionWriter(raw) if raw else None)


def prepare_train(explicit: dict) -> tuple[TrainConfig, tuple | None]:
    """Config from the options given, merged with the -i model's options; returns (config, model)."""
    model = None
    opts = None
    path = explicit.get("initial_model")
    if path:
        model = load_model(path)
        opts = model_options(model[0], path)
    return train_config(explicit, opts), model


def preamble(cfg: TrainConfig, rep: Reporter, learner, cache_note: str | None) -> None:
    if cfg.expands:             # VW's start-up lines for the feature options ([info]/[warning] on stdout)
        for stream, text in cfg.feature_spec().messages(cfg.quiet):
            if stream == "stderr":
                rep.line(text)
            else:
                print(text, flush=True)
    if cfg.testonly:
        rep.line("only testing")
    if cfg.final_model:
        rep.line(f"final_regressor = {cfg.final_model}")
    if cfg.predictions:
        rep.line(f"predictions = {cfg.predictions}")
    if cache_note:
        rep.line(cache_note)
    for path in cfg.sources:
        rep.line(f"Reading datafile = {'stdin' if path == '-' else path}")
    rep.line(f"num sources = {len(cfg.sources)}")
    rep.line(f"Num weight bits = {cfg.bits}")
    if not learner.batch and learner.rate_schedule:   # a batch method has exact coordinate steps
        rep.line(f"learning rate = {learners.rate_scale(cfg):g}")
        rep.line(f"initial_t = {cfg.initial_t:g}")
        rep.line(f"power_t = {cfg.power_t:g}")
        if cfg.passes > 1:
            rep.line(f"decay_learning_rate = {cfg.decay_learning_rate:g}")
    rep.line(f"learner = {learner.describe(cfg)}")
    rep.line(f"loss function = {cfg.loss}" + (f" (tau = {cfg.quantile_tau:g})" if cfg.loss == "quantile" else ""))


def _summary_lines(run: Run, loss: str, tau: float, passes: int, holdout: int, best_holdout,
                   nonzero: int | None, bits: int) -> list[str]:
    ctr, c = run.ctr, CounterView(run.ctr)
    lines = []
    n = int(c.examples)
    if passes <= 1:
        lines.append(f"number of examples = {n}")
    else:
        lines.append(f"number of examples per pass = {n // passes}")
        lines.append(f"passes used = {passes}")
    lines.append(f"weighted example sum = {c.w_labeled + c.w_unlabeled:f}")
    lines.append(f"weighted label sum = {c.w_labels:f}")
    if holdout:
        if best_holdout is None:
            lines.append("average loss = undefined (no holdout)")
        else:
            lines.append(f"average loss = {best_holdout:f} h")
    elif c.w_labeled > 0:
        lines.append(f"average loss = {c.sum_loss / c.w_labeled:f}")
    else:
        lines.append("average loss = n.a.")
    bc = best_constant(ctr, run.st, loss, tau) if not run.classes else None
    if bc is not None:
        lines.append(f"best constant = {bc[0]:f}")
        if bc[1] is not None:
            lines.append(f"best constant's loss = {bc[1]:f}")
    if run.output == "probabilities" and run.logloss[1] > 0:
        lines.append(f"average multiclass log loss = {run.logloss[0] / run.logloss[1]:f}")
    lines.append(f"total feature number = {int(c.features)}")
    if nonzero is not None:
        lines.append(f"non-zero weights = {nonzero} ({100.0 * nonzero / (1 << bits):.4g}% of 2^{bits})")
        if run.rows_in_use is not None:
            lines.append(f"non-zero rows = {run.rows_in_use} (features in use by any of the {run.classes} classes)")
    wall = time.perf_counter() - run.started
    lines.append(f"examples per second = {run.examples / wall if wall > 0 else 0.0:.0f}")
    lines.append(f"wall time = {wall:.3f} s")
    lines.append(f"malformed lines = {run.malformed}")
    if run.read_errors:
        lines.append(f"inputs not read to the end = {run.read_errors}")
    return lines


def _reuse_cache(cfg: TrainConfig, path: str, options: dict, window: tuple, rep: Reporter) -> bool:
    """Whether the first pass reads the existing ``--cache-file`` (True) or builds it from the text.

    The path must be a regular file or nothing (a device, FIFO, socket or directory is refused). A
    cache of this version built with these options is checked whole (every checksum and block, the
    window's blocks for a Dask period) before training starts; a corrupt one is rebuilt from the input
    files, saying so, or refused when the input is stdin. A file that is not a cache at all is not
    overwritten without --kill-cache; another version's cache or one built with other options is
    rebuilt (as is any cache with --kill-cache)."""
    if not check_cache_path(path) or cfg.kill_cache:
        return False
    try:
        if cache_status(path, options) != "match":
            return False
        verify_cache(path, cfg.bits, *window)
        return True
    except CacheCorrupt as exc:
        if "-" in cfg.sources:
            raise InputError(f"cache file {path} is corrupt ({exc.detail}) and cannot be rebuilt from stdin "
                             f"here; give the data with -d FILE, or --kill-cache to rebuild it from stdin") from None
        rep.warn(f"cache file {path} is corrupt ({exc.detail}); rebuilding it from the input")
        return False


class SourcePlan:
    """Where each pass reads its blocks from: the first pass the input text (writing the cache when
    later passes, ``--cache-file`` or the objective of the training examples need one: a temporary
    file unless ``--cache-file`` names one), or an existing ``--cache-file`` that matches; later
    passes the cache, in order or shuffled (``--shuffle``). A Dask task's window of examples reads
    only those."""

    def __init__(self, cfg: TrainConfig, hashing: Hashing, rep: Reporter):
        self.cfg, self.hashing = cfg, hashing
        self.use_cache = (cfg.passes > 1 or cfg.cache_file is not None
                          or (cfg.objective and cfg.objective_data is None))
        self.path = cfg.cache_file
        self.temporary = self.reuse = False
        self.note = None            # the preamble's line about the cache
        self.options = dict(hashing.as_dict(), format=cfg.format, sources=list(cfg.sources))
        if cfg.shard_range is not None:
            self.options["range"] = list(cfg.shard_range)
        self.window = cfg.shard_window or (0, None)
        self.source_name = cfg.sources[0] if len(cfg.sources) == 1 else "cache"
        self.shuffled = None
        if self.use_cache:
            if self.path is None:
                fd, self.path = tempfile.mkstemp(prefix="streamlearn-", suffix=".cache")
                os.close(fd)
                self.temporary = True
                self.note = "using a temporary cache"
            elif _reuse_cache(cfg, self.path, self.options, self.window, rep):
                self.reuse = True
                self.note = f"using cache_file = {self.path}\nignoring text input in favor of cache input"
            else:
                self.note = f"creating cache_file = {self.path}"

    def blocks(self, p: int, run: "Run", holdout: int):
        """(the blocks of pass ``p``, the cache writer the pass fills or None)."""
        cfg = self.cfg
        if p == 0 and not self.reuse:
            writer = CacheWriter(self.path, self.options) if self.use_cache else None
            blocks = text_blocks(cfg.sources, cfg.format, self.hashing, cfg.block_size, writer, run.read_error,
                                 with_text=run.names is not None, byte_range=cfg.shard_range)
            if cfg.shard_window is not None:    # a cache is written whole: the window reads on to the end
                blocks = examples_window(blocks, *self.window, drain=writer is not None)
            return blocks, writer
        if cfg.shuffle:
            if self.shuffled is None:
                self.shuffled = ShuffledExamples(read_cache(self.path, self.source_name, bits=cfg.bits),
                                                 self.source_name)
            rng = np.random.default_rng([cfg.random_seed, p])
            return self.shuffled.blocks(self.shuffled.order(rng, holdout)), None
        return read_cache(self.path, self.source_name, *self.window, bits=cfg.bits), None

    def remove_temporary(self) -> None:
        if self.temporary:
            try:
                os.unlink(self.path)
            except OSError:
                pass


class EarlyStop:
    """The holdout loss after each pass (``--holdout-period``): like VW, the model files hold the
    best pass (a snapshot is saved when a pass improves on the best, the last pass aside), and
    training stops after ``--early-terminate`` passes without improvement."""

    def __init__(self, cfg: TrainConfig, holdout: int):
        self.cfg, self.holdout = cfg, holdout
        self.best = None
        self.no_win = 0
        self.stopped = False
        self.nonzero = None         # the snapshot's non-zero weights

    def after_pass(self, p: int, run: "Run") -> bool:
        """True when training stops after pass ``p``."""
        counters = CounterView(run.ctr)
        w = counters.ho_w_pass
        if not self.holdout or w <= 0:
            return False
        loss = counters.ho_loss_pass / w
        if self.best is None or loss < self.best:
            self.best = loss
            self.no_win = 0
            if p < self.cfg.passes - 1 and (self.cfg.final_model or self.cfg.readable_model):
                self.nonzero = save_outputs(self.cfg, run, snapshot=True)
            return False
        self.no_win += 1
        self.stopped = self.no_win >= self.cfg.early_terminate
        return self.stopped


def _check_paths(cfg: TrainConfig) -> None:
    """Inputs readable and outputs writable, before the training rather than after it."""
    check_readable(cfg.sources + tuple(p for p in (cfg.objective_data, cfg.trace_data) if p))
    for path, what in ((cfg.final_model, "model"), (cfg.readable_model, "readable model"),
                       (cfg.invert_hash, "readable model"), (cfg.trace, "trace"), (cfg.plot, "plot")):
        if path:
            check_target(path, what)


def _open_run(cfg: TrainConfig, state: RunState, hashing: Hashing, rep: Reporter, history) -> "Run":
    """The run of a training: its arrays, the -p writer, one-against-all's outputs, and the feature
    names --invert_hash and --audit need."""
    learner = learners.get(cfg.algo)
    writer = PredictionWriter(cfg.predictions) if cfg.predictions else None
    run = Run(learner, state.table, state.prm, state.st, rep, cfg.link, cfg.binary, writer, cfg.strict,
              iprm=state.iprm, ctr=state.ctr, kernel=learners.block_kernel(cfg), history=history, cfg=cfg,
              **_class_outputs(cfg, learner))
    if cfg.invert_hash or cfg.audit:
        from streamlearn.features.audit import FeatureNames
        run.names = FeatureNames(hashing.features, cfg.bits, cfg.noconstant, cfg.hash_seed, cfg.hash, cfg.classes)
        if cfg.audit:     # G is shown while learning with adaptive rates, as VW does
            run.audit_g = learners.layout(cfg).g if cfg.adaptive and not cfg.testonly else -1
    return run


def _feed(run: "Run", blocks, trace, writer) -> int:
    """Learn a pass's blocks (cut where a trace row falls, the same learning); the cache ``writer``
    the pass fills is committed at its end, and discarded if it fails. Returns the line of the last
    example read (0: none)."""
    last_line = 0
    try:
        for block in pipelined(blocks):
            if block.n:
                last_line = int(block.lines[block.n - 1])
            if trace is None:
                run.process(block)
            else:
                for piece in trace.split(block):
                    trace.account(piece, run.process(piece))
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    if writer is not None:
        writer.commit()
    return last_line


def train(cfg: TrainConfig, model=None, progress: bool = False) -> dict:
    """Train an online learner as configured. Returns a small dict of results (for tests and the
    Python API); with ``progress`` (or ``--plot``) also the progress rows as arrays, "progress"
    (``streamlearn.run.history.ProgressHistory.as_dict``)."""
    _check_paths(cfg)
    hashing = hashing_of(cfg)
    holdout = cfg.holdout
    state = RunState.start(cfg, model, train=not cfg.testonly, holdout=holdout)
    ctr = state.ctr
    rep = Reporter(cfg.quiet)
    history = ProgressHistory() if progress or cfg.plot else None
    if cfg.quiet and history is None:   # the history keeps the rows' schedule (quiet prints none)
        state.quiet()
    sources = SourcePlan(cfg, hashing, rep)
    preamble(cfg, rep, learners.get(cfg.algo), sources.note)
    run = _open_run(cfg, state, hashing, rep, history)
    trace = None
    if cfg.trace:
        from streamlearn.run.trace import Trace, load_test_blocks
        trace = Trace(cfg, run, load_test_blocks(cfg) if cfg.trace_data else None)
    stop = EarlyStop(cfg, holdout)
    passes_done, objectives, nonzero, last_line = 0, [], None, 0
    try:
        for p in range(cfg.passes):
            run.holding_out = holdout > 0 and p >= 1
            state.start_pass()
            blocks, cache_writer = sources.blocks(p, run, holdout)
            last_line = _feed(run, blocks, trace, cache_writer) or last_line
            passes_done += 1
            if run.names is not None:       # names come from the first pass (every pass with -t)
                run.names.collecting = cfg.testonly
            if cfg.objective:
                objectives.append(_objective(cfg, run, hashing, sources.path, passes_done))
            state.end_pass()
            if stop.after_pass(p, run):
                break
        if history is not None and history.last_examples() != int(state.counters.examples):
            run.record_progress()       # the end of training: short runs have a point too
        if trace is not None:
            trace.finish()
        nonzero = stop.nonzero if stop.stopped and stop.nonzero is not None else save_outputs(cfg, run)
    finally:
        for out in (run.writer, run.raw_writer):
            if out is not None:
                out.close()
        sources.remove_temporary()
    if state.counters.nonfinite and not run.diverge_warned:
        rep.warn("some predictions were not finite (the weights diverged); try a smaller -l/--learning-rate")
    rep.summary(_summary_lines(run, cfg.loss, cfg.quantile_tau, passes_done, holdout, stop.best, nonzero, cfg.bits))
    result = {"state": state.st, "counters": ctr, "table": state.table, "nonzero": nonzero,
              "malformed": run.malformed, "passes": passes_done, "best_holdout": stop.best,
              "early_stop": stop.stopped, "objectives": objectives, "last_line": last_line}
    if history is not None:
        result["progress"] = history.as_dict()
        if cfg.plot:
            from streamlearn import plot     # matplotlib: imported by the runs that plot
            plot.write(plot.progress(result["progress"]).figure, cfg.plot)
    return result


def _objective(cfg: TrainConfig, run: Run, hashing: Hashing, cache_path, passes: int) -> dict:
    """Evaluate and print the objective after a pass (printed even with --quiet: it was asked for)."""
    if cfg.objective_data:
        blocks = text_blocks([cfg.objective_data], cfg.format, hashing, cfg.block_size)
        where = cfg.objective_data
    else:
        name = cfg.sources[0] if len(cfg.sources) == 1 else "cache"
        blocks = read_cache(cache_path, name, bits=cfg.bits)
        where = "training examples"
    result = objective.evaluate(cfg, run, blocks, allocate_table)
    run.reporter.out.write(objective.describe(result, passes, where) + "\n")
    run.reporter.out.flush()
    return result


# ----------------------------------------------------------------------------- prediction

def predict(cfg: PredictConfig) -> dict:
    """Predict with a saved model: one output line per example; loss on stderr when labels exist."""
    check_readable(cfg.sources)
    header, index, rows = load_model(cfg.initial_model)
    opts = model_options(header, cfg.initial_model)
    mcfg = train_config({}, opts)
    if cfg.link is not None or cfg.binary is not None:
        mcfg = replace(mcfg, link=cfg.link or mcfg.link,
                       binary=mcfg.binary if cfg.binary is None else cfg.binary)
    if cfg.probabilities or cfg.scores:
        if not mcfg.classes:
            raise OptionError(f"{'--probabilities' if cfg.probabilities else '--scores'} needs a model "
                              f"trained with --oaa K")
        mcfg = replace(mcfg, probabilities=cfg.probabilities, scores=cfg.scores)
    # saved weights are final (lazy learners caught up before saving), so every model predicts
    # with the plain linear kernel in predict-only mode
    learner = learners.predictor()
    hashing = hashing_of(mcfg)
    state = RunState.predictor(mcfg, index, rows[:, 0], header.get("state", {}))
    if cfg.quiet:
        state.quiet()
    table, prm, iprm, st, ctr = state.table, state.prm, state.iprm, state.st, state.ctr
    rep = Reporter(cfg.quiet)
    rep.line(f"only testing\nmodel = {cfg.initial_model}")
    for path in cfg.sources:
        rep.line(f"Reading datafile = {'stdin' if path == '-' else path}")
    rep.line(f"Num weight bits = {mcfg.bits}")
    writer = PredictionWriter(cfg.predictions)
    run = Run(learner, table, prm, st, rep, mcfg.link, mcfg.binary, writer, cfg.strict, iprm=iprm, ctr=ctr,
              kernel=learners.predict_kernel(mcfg), **_class_outputs(mcfg, learners.get(mcfg.algo)))
    try:
        for block in pipelined(text_blocks(cfg.sources, cfg.format, hashing, cfg.block_size,
                                           on_error=run.read_error, threads=cfg.threads)):
            run.process(block)
    finally:
        writer.close()
    if state.counters.nonfinite:
        rep.warn("some predictions were not finite (the model holds non-finite weights)")
    rep.summary(_summary_lines(run, mcfg.loss, mcfg.quantile_tau, 1, 0, None, None, mcfg.bits))
    return {"state": st, "counters": ctr, "malformed": run.malformed}
