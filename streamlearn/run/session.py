"""A training or prediction session: the Run (one run's arrays and block kernel, with its parts:
``Outputs``, ``Faults``, ``Progress``, ``Audit``; and the processing of a parsed block), and the train
and predict flows: passes over text or the cache, holdout and early termination, objective reporting,
summary. Model files are read and written by ``streamlearn.run.model_io``; the blocks come from
``streamlearn.run.stream``.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, field, replace

import numpy as np

from streamlearn import learners
from streamlearn._cache import compile_count, compile_seconds, kernels
from streamlearn.run import classweight, counters, feature_mask, objective
from streamlearn.learners import allocate_table
from streamlearn.run.history import ProgressHistory, nonzero_in_force
from streamlearn.config import PredictConfig, TrainConfig, progress_schedule, train_config
from streamlearn.errors import InputError, OptionError
from streamlearn.io.blocks import ParsedBlock, window as examples_window
from streamlearn.io.cache import (CacheCorrupt, CacheWriter, cache_status, check_cache_path, read_cache,
                                  verify_cache)
from streamlearn.io.atomic import check_target
from streamlearn.io.reader import check_readable
from streamlearn.io.shuffle import ShuffledExamples
from streamlearn.io.writers import PredictionWriter, class_probabilities, format_class_values, format_predictions
from streamlearn.core import multiclass
from streamlearn.core.losses import vw_label_warning
from streamlearn.core.rules import gd_settings
from streamlearn.core.state import I_COL_G, I_LOSS, I_NN_FLAGS, I_NN_UNITS, P_TAU
from streamlearn.run.model_io import model_options, save_outputs
from streamlearn.run.runstate import RunState
from streamlearn.features.hashing import CONSTANT_RAW_INDEX
from streamlearn.run.report import Reporter, best_constant, first_dump, next_dump, print_lines
from streamlearn.run.stream import Hashing, hashing_of, pipelined, text_blocks
from streamlearn.run.views import CounterView


@dataclass
class Outputs:
    """What a run writes of its predictions and how they read: --binary or the link function, the -p
    writer, and a multiclass run's classes (K; their probabilities the softmax of the scores or VW's
    normalized logistics), the form of its -p lines, its -r writer and its --probabilities log loss."""

    link: str = "identity"
    binary: bool = False
    writer: PredictionWriter | None = None
    classes: int = 0         # K of a multiclass run (--oaa K)
    softmax: bool = False    # the classes' probabilities are the softmax of their scores
    output: str = "class"    # multiclass -p lines: "class", "scores" or "probabilities"
    raw_writer: PredictionWriter | None = None    # -r: every class's raw score
    costs: bool = False      # cost-sensitive labels (--csoaa K)
    names: tuple = ()        # --named_labels: the classes' names, class 1 first
    multilabel: bool = False  # label sets (--multilabel_oaa K)
    logloss: list = field(default_factory=lambda: [0.0, 0.0])   # --probabilities: sum -log p w, sum w
    ldf: str | None = None   # multi-line examples (--csoaa_ldf, --wap_ldf): "m", "mc" or "wap"

    @classmethod
    def of(cls, cfg, learner, writer: PredictionWriter | None = None) -> "Outputs":
        """The outputs of a run of ``cfg`` (``learner``: the configured one, whose classes may be
        joint) writing -p lines to ``writer``; a multiclass run opens its -r writer here."""
        if getattr(cfg, "ldf", None) is not None:
            output = "rank" if cfg.csoaa_rank else "probabilities" if cfg.probabilities else "class"
            raw = getattr(cfg, "raw_predictions", None)
            return cls(writer=writer, output=output, ldf=cfg.ldf, raw_writer=PredictionWriter(raw) if raw else None)
        if not cfg.classes:
            return cls(cfg.link, cfg.binary, writer)
        output = "probabilities" if cfg.probabilities else "scores" if cfg.scores else "class"
        raw = getattr(cfg, "raw_predictions", None)
        return cls(cfg.link, cfg.binary, writer, cfg.classes, learner.joint, output,
                   PredictionWriter(raw) if raw else None, costs=bool(cfg.csoaa),
                   names=tuple(cfg.named_labels.split(",")) if cfg.named_labels else (),
                   multilabel=bool(cfg.multilabel_oaa))

    def shown(self, p: np.ndarray) -> np.ndarray:
        """Predictions as written and shown: after --binary or the link function."""
        if self.binary:
            return np.where(p > 0.0, 1.0, -1.0)
        if self.link == "logistic":
            return 1.0 / (1.0 + np.exp(-p))
        if self.link == "poisson":
            return np.exp(p)
        return p

    def write(self, block: ParsedBlock, preds: np.ndarray) -> None:
        """A binary or regression block's -p lines."""
        if self.writer is not None:
            self.writer.write(self.shown(preds), block)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        return class_probabilities(scores, self.softmax)

    def class_columns(self, label: float, row: np.ndarray, first: int) -> tuple[str, str]:
        """The progress row's label and prediction columns of a multiclass example: integers, and
        with --probabilities the class with its probability, 'k(NN%)' (``first``: the label of class 0)."""
        label_text = "unknown" if label != label else (str(int(label)) if label == int(label) else f"{label:g}")
        if self.costs:      # VW's cost-sensitive rows say whether the example has costs
            label_text = "unknown" if label != label else "known"
            if self.names:
                return label_text, self.name(row[0])
        elif self.names:    # VW's named rows: the names, "unknown" for none
            return (self.name(label) or "unknown") if label == label else "unknown", self.name(row[0]) or "unknown"
        pred = int(row[0])
        if self.output == "probabilities":
            p = self.probabilities(row[None, 1:self.classes + 1])[0]
            return label_text, f"{pred}({100.0 * p[pred - first]:2.0f}%)"
        return label_text, str(pred)

    def name(self, cls: float) -> str:
        """The name of class label ``cls`` (1..K), "" for any other (VW's ``named_labels::get``)."""
        k = int(cls) if cls == cls else 0
        return self.names[k - 1] if 1 <= k <= len(self.names) else ""

    def write_classes(self, block: ParsedBlock, preds: np.ndarray, first: int) -> None:
        """A multiclass block's -p and -r lines and its share of the log loss (``preds``: rows of
        label, K scores, status; ``first``: the label of class 0). The examples before the one whose
        label 0 made the labels 0-indexed still name the classes from 1, as VW's do."""
        K = self.classes
        scores = preds[:, 1:K + 1]
        now0 = np.flatnonzero(preds[:, K + 1] == multiclass.ST_NOW_0) if first == 0 else ()
        # VW's plain class output (-r) names the deciding example's classes from 1 too (predicted before it learns)
        split = int(now0[0]) + (self.output == "class") if len(now0) else 0
        firsts = np.where(np.arange(preds.shape[0]) < split, 1, first)

        def named(values, lead=""):
            return (format_class_values(values[:split], 1, lead=lead)
                    + format_class_values(values[split:], first, lead=lead))
        probs = None
        if self.output == "probabilities":
            probs = self.probabilities(scores)
            labels = block.labels
            ok = (labels == labels) & (block.weights > 0)
            if ok.any():
                cls = labels[ok] - firsts[ok]
                valid = (cls >= 0) & (cls < K) & (cls == np.floor(cls))
                p = np.where(valid, probs[ok][np.arange(cls.shape[0]), np.clip(cls, 0, K - 1).astype(np.int64)], 0.0)
                w = block.weights[ok]
                with np.errstate(divide="ignore"):
                    losses = np.where(p > 0, -np.log(np.where(p > 0, p, 1.0)), 999.0)
                self.logloss[0] += float((losses * w).sum())
                self.logloss[1] += float(w.sum())
        if self.writer is not None:
            if self.output == "class" and self.names:
                self.writer.write_lines([self.name(p) for p in preds[:, 0].tolist()], block)
            elif self.output == "class":
                self.writer.write(preds[:, 0], block)
            elif self.output == "scores":
                self.writer.write_lines(named(scores), block)
            else:
                self.writer.write_lines(named(probs), block)
        if self.raw_writer is not None:
            self.raw_writer.write_lines(named(scores, lead=" "), block)

    def predicted_set(self, row: np.ndarray) -> list[int]:
        """--multilabel_oaa: the classes of positive score (none with --probabilities, as VW)."""
        if self.output == "probabilities":
            return []
        return [c for c in range(self.classes) if row[1 + c] > 0.0]

    def set_columns(self, block: ParsedBlock, e: int, row: np.ndarray) -> tuple[str, str]:
        """The progress row's label and prediction columns of a --multilabel_oaa example: the sets."""
        ptr, cls, _ = block.costs
        given = cls[int(ptr[e]):int(ptr[e + 1])].tolist()
        return (",".join(map(str, given)) if given else "unknown"), ",".join(map(str, self.predicted_set(row)))

    def write_sets(self, block: ParsedBlock, preds: np.ndarray) -> None:
        """A --multilabel_oaa block's -p lines: the predicted set (VW's '0,3'), or with --probabilities
        each class's probability (``0:p0 1:p1 ...``, the logistic of its score) and a line " ", as VW's."""
        if self.writer is None:
            return
        K = self.classes
        if self.output == "probabilities":
            probs = 1.0 / (1.0 + np.exp(-preds[:, 1:K + 1]))
            self.writer.write_lines(format_class_values(probs, 0), block, after="\n ")    # VW's line " " after each
        else:
            self.writer.write_lines([",".join(map(str, self.predicted_set(row))) for row in preds], block)

    def write_costs(self, block: ParsedBlock, preds: np.ndarray, mode: float) -> None:
        """A --csoaa block's -p lines (the class) and -r lines (VW's: ``class:score`` of each of the
        example's costs, in the label's order; empty for an example without costs)."""
        if self.writer is not None and self.names:
            self.writer.write_lines([self.name(p) for p in preds[:, 0].tolist()], block)
        elif self.writer is not None:
            self.writer.write(preds[:, 0], block)
        if self.raw_writer is not None:
            first = 0 if mode == 0.0 else 1
            ptr = block.costs[0]
            lines = []
            for e in range(block.n):
                offsets = cost_offsets(block, e, self.classes, mode) if ptr[e + 1] > ptr[e] else []
                lines.append(" ".join(f"{c + first}:{preds[e, 1 + c]:g}" for c in offsets))
            self.raw_writer.write_lines(lines, block)

    def ldf_logloss(self, block: ParsedBlock, preds: np.ndarray) -> None:
        """--probabilities: each labeled multi-line example's -log of its least-cost action's probability
        (999 for 0), VW's multiclass log loss, into ``logloss``."""
        ptr, _, cost = block.costs
        for g0, g1 in ldf_groups(block):
            if not (block.labels[g0:g1] == block.labels[g0:g1]).all() or (np.diff(ptr[g0:g1 + 1]) != 1).any():
                continue
            k = int(np.argmin(cost[ptr[g0:g1] - ptr[0]]))
            p = float(ldf_probabilities(preds[g0:g1, 1])[k])
            self.logloss[0] += -math.log(p) if p > 0 else 999.0
            self.logloss[1] += 1.0

    def ldf_raw(self, block: ParsedBlock, preds: np.ndarray) -> list[str]:
        """A multi-line block's -r lines as VW writes them: a line ``0:0`` for an example's shared line, then
        per action ``class:score`` of each of its costs (the first cost's score the action's raw score, the
        others' 0), each line with its own tag; no empty lines."""
        ptr, cls, _ = block.costs
        tags = block.tag_list()
        has_shared = block.head_tags[3]

        def tagged(text, tag):
            return text + (" " + tag.decode("utf-8", "replace") if tag else "")
        lines = []
        for g0, g1 in ldf_groups(block):
            if has_shared[g0]:
                lines.append(tagged("0:0", block.head_tag(g0)))
            for r in range(g0, g1):
                scores = [float(np.float32(preds[r, 1]))] + [0.0] * (int(ptr[r + 1] - ptr[r]) - 1)
                lines.append(tagged(" ".join(f"{int(c)}:{x:g}" for c, x in zip(cls[ptr[r]:ptr[r + 1]], scores)),
                                    tags[r]))
        return lines

    def ldf_predictions(self, block: ParsedBlock, preds: np.ndarray) -> list[str]:
        """A multi-line block's -p lines as VW writes them, an empty line after each example: per action
        its class when it is the predicted one, else 0 (each with its tag); with --probabilities each
        action's probability (``ldf_probabilities``); with --csoaa_rank one line of the actions
        ``class:score`` by increasing score (ties: the lower class); these two with the group head's tag."""
        ptr, cls, _ = block.costs
        if self.output == "class":      # the common case, whole arrays at once
            n = block.n
            best = preds[:n, 0].astype(np.int64)
            row_of = np.repeat(np.arange(n), np.diff(ptr))
            hit = np.bincount(row_of, weights=cls[:ptr[n] - ptr[0]] == best[row_of], minlength=n) > 0
            texts = np.where(hit, best.astype(str), "0").astype(object)
            if block.has_tags():
                tags = np.array([b" " + t if t else b"" for t in block.tag_list()], object)
                texts = texts + np.array([t.decode("utf-8", "replace") for t in tags], object)
            ends = [g1 for _, g1 in ldf_groups(block)]
            return np.insert(texts, ends, "").tolist()
        lines = []
        for g0, g1 in ldf_groups(block):
            if self.output == "rank":
                ranked = sorted((float(np.float32(preds[r, 1])), int(cls[ptr[r]])) for r in range(g0, g1)
                                if ptr[r + 1] > ptr[r])
                tag = block.head_tag(g0)
                lines.append(",".join(f"{c}:{s:g}" for s, c in ranked) + (" " + tag.decode("utf-8", "replace")
                                                                              if tag else ""))
            else:
                tag = block.head_tag(g0)
                lines += [p + (" " + tag.decode("utf-8", "replace") if tag else "")
                          for p in format_predictions(ldf_probabilities(preds[g0:g1, 1]))]
            lines.append("")
        return lines

    def close(self) -> None:
        for out in (self.writer, self.raw_writer):
            if out is not None:
                out.close()


@dataclass
class Faults:
    """What went wrong in a run's input and numbers: malformed lines and sources not read to their end
    (errors with --strict, else warnings, counted), labels that name no class, and the first example
    whose prediction or update was not finite."""

    reporter: Reporter
    strict: bool = False
    malformed: int = 0
    read_errors: int = 0
    diverged: str | None = None      # "<file> line <n>": the first example whose prediction or update
                                     # was not finite (streamlearn.core.loop), once seen
    diverge_warned: bool = False     # the "training diverged" warning was printed
    #: the loss whose labels VW warns about (hinge: any label but -1 and 1; logistic: one outside
    #: [-1, 1]), until the first such label: VW's warning once
    label_loss: str | None = None
    #: the messages VW's logger writes too (--oaa's label index notes): --extra_metrics
    vw_log_calls: int = 0

    def unexpected_labels(self, block: ParsedBlock) -> None:
        """VW's warning for the first label the loss does not expect (it learns from it as it is)."""
        y = block.labels[:block.n]
        if self.label_loss == "hinge":
            bad = (y == y) & (y != 1.0) & (y != -1.0)
        else:
            bad = (y < -1.0) | (y > 1.0)
        if bad.any():
            self.reporter.warn(vw_label_warning(self.label_loss, float(y[np.argmax(bad)])))
            self.label_loss = None

    def read_error(self, message: str) -> None:
        """A source could not be read to its end: an error with --strict, else a warning."""
        if self.strict:
            raise InputError(message)
        self.reporter.warn(message + "; the lines before are used, the last partial line is not")
        self.read_errors += 1

    def report(self, block: ParsedBlock) -> None:
        """The block's malformed lines: an error with --strict, else a warning each."""
        if block.faults.shape[0] == 0:
            return
        for line, reason, consequence in block.fault_lines():
            if self.strict:
                raise InputError(f"{block.source} line {line}: {reason}")
            self.reporter.warn(f"{block.source} line {line}: {reason}; {consequence}")
        self.malformed += block.faults.shape[0]

    def check_divergence(self, block: ParsedBlock, counters: CounterView, first: int, stop: int,
                         training) -> None:
        """After a kernel call over examples ``first``..``stop``-1: where the run first stopped being
        finite, once; --strict stops training there."""
        if self.diverged is None and (counters.diverged or counters.nonfinite):
            self.diverged = divergence_place(block, counters, first, stop)
            if self.strict and training:
                # --strict stops at once, as at a malformed line (train writes no model then)
                raise InputError(f"training diverged: a prediction or update became infinite or NaN at "
                                 f"{self.diverged}; try a smaller learning rate (-l)")

    def label_notes(self, block: ParsedBlock, status: np.ndarray, classes: int, first: int, training) -> None:
        """Warn about labels that name no class (one-line errors with --strict) and tell when auto
        indexing decided how the labels count (``status``: the kernel's per-example label codes;
        ``first``: the label of class 0)."""
        K = classes
        for e in np.flatnonzero(status).tolist():
            code = status[e]
            y = block.labels[e]
            where = f"{block.source} line {int(block.lines[e])}"
            if code == multiclass.ST_NOW_0:
                self.reporter.line("label 0 found -- labels are now considered 0-indexed.")
                self.vw_log_calls += 1
                continue
            if code == multiclass.ST_NOW_1:
                self.reporter.line(f"label {K} found -- labels are now considered 1-indexed.")
                self.vw_log_calls += 1
                continue
            if block.costs is not None:     # --csoaa: a cost's class outside the classes (VW's mapping)
                reason = f"a cost's class is not in {first}..{first + K - 1}"
                consequence = f"it is class {first + K - 1 if first else 0}'s, as VW takes it"
            elif code == multiclass.ST_NOT_INTEGER:
                reason = f"label {y:g} is not a class (--oaa labels are integers {first}..{first + K - 1})"
                consequence = "the example is not learned"
            else:
                reason = f"label {y:g} is not in {first}..{first + K - 1}"
                consequence = ("learned as a negative for every class, as VW does" if training
                               else "counted as an error")
            if self.strict:
                raise InputError(f"{where}: {reason}")
            self.reporter.warn(f"{where}: {reason}; {consequence}")


@dataclass
class Progress:
    """The progress table's and summary's bookkeeping: the reporter, the progress rows kept as arrays
    (train --plot, the Python API), whether this pass holds out, the examples and feature entries read,
    when the run started, and a multiclass model's rows in use once saved."""

    reporter: Reporter
    history: ProgressHistory | None = None
    holding_out: bool = False
    examples: int = 0
    entries: int = 0         # feature entries x_ij read by the learner (the data accesses)
    started: float = field(default_factory=time.perf_counter)
    compiling0: float = field(default_factory=compile_seconds)   # kernel compile seconds before the run
    compiled0: int = field(default_factory=compile_count)        # kernels compiled before the run
    rows_in_use: int | None = None   # a multiclass model's non-zero rows (features in use), once saved
    additive: bool = False          # -P/--progress: rows every ``interval`` weighted examples (additive)
    interval: float = 2.0           # or each time they grow ``interval``-fold (VW's default x2)

    def read(self, block: ParsedBlock) -> int:
        """Count the block's examples and feature entries; returns the entries read before it, less
        where its entries start (a piece of a block starts past 0), so that adding an example's
        ``indptr`` gives the entries read up to it."""
        self.examples += block.n
        before = self.entries - int(block.indptr[0])
        self.entries += int(block.indptr[block.n] - block.indptr[0])
        return before

    @staticmethod
    def due(counters: CounterView) -> bool:
        """A progress row is due (the weighted example count reached the next row's)."""
        return counters.w_labeled + counters.w_unlabeled >= counters.dump

    def record(self, arrays: RunState, accesses: int | None = None) -> None:
        """A progress row into the history, with the non-zero weights in force now and the data
        accesses so far (default: every entry of the blocks processed)."""
        self.history.record(arrays.ctr, self.holding_out,
                            nonzero_in_force(arrays.cfg, arrays.used_table, arrays.prm, arrays.iprm, arrays.st),
                            self.entries if accesses is None else accesses)

    def row(self, ctr: np.ndarray, label: float, pred: float, nfeat: int, label_text: str | None = None,
            pred_text: str | None = None) -> None:
        """The progress row of the example just processed, then the next row's schedule."""
        self.reporter.row(ctr, self.holding_out, label, pred, nfeat, label_text, pred_text)
        next_dump(ctr, self.additive, self.interval)


@dataclass
class Audit:
    """The feature names a run keeps (``streamlearn.features.audit.FeatureNames``: --invert_hash,
    --audit) and --audit's lines: each example's features with their weights before it is learned,
    then its prediction. Imported by the runs that use it."""

    names: object = None
    g_column: int | None = None     # --audit: None = off, else the table column of G printed (-1: none)

    @classmethod
    def of(cls, cfg: TrainConfig, hashing: Hashing) -> "Audit":
        """The names --invert_hash and --audit need; with --audit, G shown while learning with
        adaptive rates, as VW does."""
        if not (cfg.invert_hash or cfg.audit):
            return cls()
        from streamlearn.features.audit import FeatureNames
        names = FeatureNames(hashing.features, cfg.bits, cfg.noconstant, cfg.hash_seed, cfg.hash, cfg.classes)
        g_column = None
        if cfg.audit:
            g_column = learners.layout(cfg).g if cfg.adaptive and not cfg.testonly else -1
        return cls(names, g_column)

    def entries(self, block: ParsedBlock):
        """Each example's named entries (the names kept as they come), or None: no names kept. A
        block without its text (read from the cache) has --audit's entries without names, from its
        expanded features in VW's order (VW's audit of a cached pass: only the constant is named)."""
        if self.names is None:
            return None
        if block.text_lines is None:
            if self.g_column is None:
                return None
            from streamlearn.features.audit import unnamed_entries
            return unnamed_entries(block, self.names.bits, self.names.noconstant)
        return self.names.entries(block)

    def features(self, entries, table: np.ndarray, classes: int, width) -> list:
        """The feature lines of an example before it is learned: one block, or one per class of a
        multiclass run, the entries moved to class k's slots (names unchanged, as VW's oaa;
        ``width``: W, class k of feature h is slot h*W + k)."""
        from streamlearn.features.audit import audit_features
        if not classes:
            return [audit_features(entries, table, self.g_column)]
        mask = table.shape[0] - 1
        return [audit_features([replace(e, index=((e.index * width) & mask) + k) for e in entries], table,
                               self.g_column) for k in range(classes)]

    @staticmethod
    def score(entries, table: np.ndarray) -> float:
        """The example's raw score from the weights now (without its base)."""
        from streamlearn.features.audit import audit_score
        return audit_score(entries, table)

    @staticmethod
    def write(predictions, tag, features: list) -> None:
        """An example's audit: each prediction followed by its block of features."""
        from streamlearn.features.audit import audit_prediction, write as write_audit
        lines = []
        for pred, block_lines in zip(predictions, features):
            lines += [audit_prediction(pred, tag), block_lines]
        write_audit(lines)


@dataclass
class Run:
    """One train or predict run: the learner, its arrays (``RunState``: table, settings, state,
    counters) and block kernel, and the parts around them -- what it writes (``Outputs``), what went
    wrong (``Faults``), the progress table's bookkeeping (``Progress``) and the feature names and
    --audit lines (``Audit``). ``process`` runs a parsed block through the kernel and all of them."""

    learner: learners.Learner
    arrays: RunState
    kernel: object           # the block kernel
    outputs: Outputs
    faults: Faults
    progress: Progress
    audit: Audit = field(default_factory=Audit)
    #: --print: (block, first, stop) -> None, writes VW's lines of those examples
    printer: object = None
    #: --noop, --print: the examples' bases are not added (VW's noop predicts 0)
    no_bases: bool = False
    #: --confidence: 0 off, 1 the sensitivity before the example is learned, 2 after
    confidence: int = 0
    classweights: classweight.ClassWeights | None = None    # --classweight (``run/classweight.py``)
    masked: bool = False        # --feature_mask: learn only the non-zero weights (``run/feature_mask.py``)
    #: passes over the data finished (VW's current_pass in a readable model's save_resume block)
    passes_done: int = 0
    #: --extra_metrics: VW's learn and predict calls (``run/metrics.py``, imported when asked for)
    metrics: object = None
    #: the -i model's performance counters (``run/counters.py``): kept by a run that learns nothing;
    #: those the run started from (--preserve_performance_counters) and their passes
    counters_base: dict | None = None
    counters_loaded: dict | None = None
    passes_before: int = 0

    # the RunState's arrays (a run keeps them for its whole life; the kernel takes ``kernel_state``)
    table = property(lambda self: self.arrays.table)
    prm = property(lambda self: self.arrays.prm)
    iprm = property(lambda self: self.arrays.iprm)
    st = property(lambda self: self.arrays.st)
    ctr = property(lambda self: self.arrays.ctr)

    @classmethod
    def training(cls, arrays: RunState, reporter: Reporter, writer: PredictionWriter | None = None,
                 strict: bool = False, history: ProgressHistory | None = None) -> "Run":
        """A run of the configured learner (``arrays.cfg``): its block kernel, one-against-all's with
        --oaa K; -p lines to ``writer``, progress rows kept in ``history``."""
        cfg = arrays.cfg
        learner = learners.get(cfg.algo)
        return cls(learner, arrays, learners.block_kernel(cfg), Outputs.of(cfg, learner, writer),
                   Faults(reporter, strict, label_loss=_warned_loss(cfg)), Progress(reporter, history),
                   classweights=classweight.of(cfg), masked=getattr(cfg, "feature_mask", None) is not None)

    @classmethod
    def predicting(cls, arrays: RunState, reporter: Reporter, writer: PredictionWriter | None = None,
                   strict: bool = False) -> "Run":
        """Predictions with a model's weights in force (``arrays``: a predictor's, prediction only): the
        plain kernel, or the multiclass prediction kernel of a model trained with --oaa K."""
        cfg = arrays.cfg
        return cls(learners.predictor(), arrays, learners.predict_kernel(cfg),
                   Outputs.of(cfg, learners.get(cfg.algo), writer),
                   Faults(reporter, strict, label_loss=_warned_loss(cfg)), Progress(reporter))

    def audit_nn(self, arrays, state, block, pos: int, units: int, entries, tag) -> tuple[list, int]:
        """--audit of example ``pos`` through --nn K: its audit lines (``nn_audit_lines``) and the next
        example."""
        from streamlearn.core.nn import nn_audit_block
        from streamlearn.features.audit import nn_audit_lines
        n = len(entries)
        # biases twice, units, output weights twice and the output layer (twice with --dropout)
        events = 10 * units + 4
        size = 2 * units * (n + 5) + 2 * n + 4
        rec = (np.zeros((events, 3), np.int64), np.zeros(events), np.zeros(size, np.int64),
               *(np.zeros(size) for _ in range(3)), np.zeros(2, np.int64))
        nxt = nn_audit_block(arrays, rec, state, pos, pos + 1)
        inpass = bool(int(self.arrays.iprm[I_NN_FLAGS]) & 2)
        return nn_audit_lines(rec, entries, tag, units, int(self.arrays.iprm[I_COL_G]), inpass), nxt

    # ------------------------------------------------------------------------- a block
    def process(self, block: ParsedBlock) -> np.ndarray:
        """Predict (and learn, training) the block's examples with the kernel, then the progress rows
        due, --audit's lines, the faults and the outputs. Returns the kernel's predictions."""
        if self.outputs.ldf is not None:
            return self.process_ldf(block)
        self.faults.report(block)
        if self.faults.label_loss is not None:
            self.faults.unexpected_labels(block)
        n = block.n
        before = self.progress.read(block)
        K = self.outputs.classes
        preds = np.empty((n, K + 2)) if K else np.empty(n)
        ctr = self.ctr
        counters, training = self.arrays.counters, self.arrays.int_settings.train
        if self.metrics is not None:
            self.metrics.count(block, counters.pass_ex, int(self.arrays.int_settings.holdout), bool(training))
        pos = 0
        kernel = self.kernel
        counts = block.feature_counts()
        arrays, state = self.arrays.for_kernel(block.arrays(preds))    # sparse weights: the store's rows
        idx = arrays[1]
        if self.no_bases:
            arrays = arrays[:5] + (np.zeros_like(block.bases),) + arrays[6:]
        if self.classweights is not None and training:
            learned = self.classweights.weighted(block.labels, block.weights, int(counters.pass_ex),
                                                 int(self.arrays.int_settings.holdout))
            arrays = arrays[:4] + (learned,) + arrays[5:]
        if self.masked and training:
            arrays = feature_mask.masked(arrays, self.table)
        entries = self.audit.entries(block)
        audit = self.audit.g_column is not None and entries is not None
        tags = block.tag_list() if audit else None
        conf = None
        if self.confidence:     # --confidence (core/confidence.py, imported when a run asks for it)
            from streamlearn.core.confidence import confidence_of
            conf = np.empty(n)
        while pos < n:
            # --audit: one example at a time, weights before learning; --confidence likewise
            end = pos + 1 if audit or self.confidence else n
            if self.confidence == 1 and block.labels[pos] == block.labels[pos]:
                # before learning a labeled example, VW's confidence takes the sensitivity with the
                # example's prediction not made yet (0)
                sens = self.sensitivity(block, idx, pos, 0.0)
            twice = audit and self.learner.predicts_twice and training
            units = int(self.arrays.iprm[I_NN_UNITS]) if audit else 0
            if units:       # --nn: the network's predictions as its kernel records them
                first = pos
                lines, pos = self.audit_nn(arrays, state, block, pos, units, entries[pos], tags[pos])
                self.faults.check_divergence(block, counters, first, pos, training)
                from streamlearn.features.audit import write as write_audit
                write_audit(lines)
            elif audit:       # the features before learning (with --oaa one block per class, VW's oaa)
                features = self.audit.features(entries[pos], self.table, K, self.arrays.int_settings.class_w)
            if twice:       # the score before learning, for the second block
                raw = self.audit.score(entries[pos], self.table) + block.bases[pos]
            if not units:
                first = pos
                pos = kernel(arrays, state, pos, end)
                self.faults.check_divergence(block, counters, first, pos, training)
            if self.confidence:
                p = float(self.outputs.shown(preds[first:first + 1])[0])    # VW's ec.pred.scalar
                if self.confidence == 2 or block.labels[first] != block.labels[first]:
                    sens = self.sensitivity(block, idx, first, p)
                conf[first] = confidence_of(p, sens)
            if self.printer is not None:
                self.printer(block, first, pos)
            if audit and block.costs is not None:     # --csoaa: one block per cost, as its regressions ran
                offsets = cost_offsets(block, first, K, self.arrays.state.index_mode)
                bounds = self.arrays.state
                self.audit.write([min(max(preds[first, 1 + c], bounds.min_label), bounds.max_label)
                                  for c in offsets], tags[first], [features[c] for c in offsets])
            elif audit and K:
                self.audit.write([preds[first, 1 + k] for k in range(K)], tags[first], features)
            elif audit and twice:
                # VW's learn predicts again, with the bounds the label widened (vw-spec-2 §2f)
                bounds = self.arrays.state
                again = min(max(raw, bounds.min_label), bounds.max_label)
                self.audit.write([preds[first], again], tags[first], features * 2)
            elif audit and not units:
                self.audit.write([preds[first]], tags[first], features)
            if self.progress.due(counters):
                e = pos - 1
                if self.progress.history is not None:    # before the row resets the since-last sums
                    self.progress.record(self.arrays, before + int(block.indptr[pos]))
                if K and self.outputs.multilabel:
                    self.progress.row(ctr, block.labels[e], preds[e, 0], int(counts[e]),
                                      *self.outputs.set_columns(block, e, preds[e]))
                elif K:
                    self.progress.row(ctr, block.labels[e], preds[e, 0], int(counts[e]),
                                      *self.outputs.class_columns(block.labels[e], preds[e], self.first_class()))
                else:
                    self.progress.row(ctr, block.labels[e], self.outputs.shown(preds[e:e + 1])[0], int(counts[e]))
        if K:
            self.class_outputs(block, preds, training)
        elif conf is not None and self.outputs.writer is not None:
            shown = self.outputs.shown(preds)
            self.outputs.writer.write_lines([f"{p:.6f} {c:.6f}" for p, c in zip(shown.tolist(), conf.tolist())],
                                            block)
        else:
            self.outputs.write(block, preds)
        return preds

    def process_ldf(self, block: ParsedBlock) -> np.ndarray:
        """``process`` for a block of multi-line examples (``streamlearn.io.ldf``; the kernel is
        ``multiclass.ldf_loop``'s): with --audit one action at a time, VW's lines of each example's
        actions as predicted, then as learned (each with the weights before its own step)."""
        self.faults.report(block)
        self.ldf_label_notes(block)
        n = block.n
        self.progress.read(block)
        preds = np.zeros((n, 3))
        counters, training = self.arrays.counters, self.arrays.int_settings.train
        arrays, state = block.arrays(preds), self.arrays.kernel_state
        counts = block.feature_counts()
        entries = self.audit.entries(block)
        audit = self.audit.g_column is not None and entries is not None
        tags = block.tag_list() if audit else None
        if audit:       # VW's shared-line merge lends the head's tag to the first action while it runs
            for g0, _ in ldf_groups(block):
                tags[g0] = block.head_tag(g0)
        bounds = self.arrays.state
        shown, learned = [], []
        pos = 0
        while pos < n:
            g0 = int(block.groups[pos])
            if audit and pos == g0:
                g1 = next((r for r in range(g0 + 1, n) if block.groups[r] != g0), n)
                shown = [self.audit.features(entries[r], self.table, 0, 1) for r in range(g0, g1)]
                lo, hi = bounds.min_label, bounds.max_label
                learned = []
            if audit:
                before = self.audit.features(entries[pos], self.table, 0, 1)
            first = pos
            pos = self.kernel(arrays, state, pos, pos + 1 if audit else n)
            self.faults.check_divergence(block, counters, first, pos, training)
            if audit:
                if preds[first, 2] == preds[first, 2]:
                    learned.append((preds[first, 2], tags[first], before))
                if pos >= n or block.groups[pos] != g0:     # the example's last action: its lines
                    g1 = pos
                    preds_shown = [min(max(preds[r, 1], lo), hi) for r in range(g0, g1)]
                    from streamlearn.features.audit import audit_prediction, write as write_audit
                    items = [(p, tags[r], f[0]) for p, r, f in zip(preds_shown, range(g0, g1), shown)]
                    write_audit([text for p, tag, f in items + [(p, t, f[0]) for p, t, f in learned]
                                 for text in (audit_prediction(p, tag), f)])
            if self.progress.due(counters):
                e = pos - 1
                g = int(block.groups[e])
                known = bool((block.labels[g:pos] == block.labels[g:pos]).all())     # VW's cost-sensitive rows
                self.progress.row(self.ctr, 0.0, preds[e, 0], int(counts[g:pos].sum()),
                                  "known" if known else "unknown", str(int(preds[e, 0])))
        if self.outputs.output == "probabilities":
            self.outputs.ldf_logloss(block, preds)
        if self.outputs.writer is not None:
            self.outputs.writer.write_text(self.outputs.ldf_predictions(block, preds))
        if self.outputs.raw_writer is not None:
            self.outputs.raw_writer.write_text(self.outputs.ldf_raw(block, preds))
        return preds

    def ldf_label_notes(self, block: ParsedBlock) -> None:
        """VW's warnings about a multi-line example it predicts only though it has costs (one-line
        errors with --strict): an action without exactly one cost, or actions with and without."""
        if block.n == 0:
            return
        ptr, _, cost = block.costs
        count = np.diff(ptr)
        given = np.zeros(block.n, bool)
        one = count == 1
        given[one] = cost[ptr[:-1][one] - ptr[0]] != multiclass.NO_COST
        starts = np.flatnonzero(np.r_[True, block.groups[1:] != block.groups[:-1]])
        any_given = np.logical_or.reduceat(given, starts)
        odd = np.logical_or.reduceat(count != 1, starts) & any_given            # an action without one cost
        mixed = ~np.logical_and.reduceat(given, starts) & any_given & ~odd     # with and without a cost
        ends = np.r_[starts[1:], block.n]
        for j in np.flatnonzero(odd | mixed).tolist():
            g0, g1 = int(starts[j]), int(ends[j])
            if odd[j]:
                r = g0 + int(np.flatnonzero(count[g0:g1] != 1)[0])
                reason = f"an action has {int(count[r])} costs (a multi-line example's have one each)"
            else:
                r = g0 + int(np.flatnonzero(~given[g0:g1])[0])
                reason = "a multi-line example mixes actions with and without a cost"
            where = f"{block.source} line {int(block.lines[r])}"
            if self.faults.strict:
                raise InputError(f"{where}: {reason}")
            self.faults.reporter.warn(f"{where}: {reason}; the example is predicted, not learned")

    def sensitivity(self, block: ParsedBlock, idx: np.ndarray, e: int, p: float) -> float:
        """--confidence: example e's sensitivity at prediction p (gd.cc; ``core.confidence``), for its
        label, or the label opposite to p's sign when it has none (``idx``: the block's table rows)."""
        from streamlearn.core.confidence import FLT_MAX, sensitivity
        y = block.labels[e]
        code, tau = int(self.iprm[I_LOSS]), float(self.prm[P_TAU])
        if y != y:      # unlabeled: VW's opposite label, or after learning its "no label" FLT_MAX
            y = FLT_MAX if self.confidence == 2 else (-1.0 if p > 0 else 1.0)
        s, f = int(block.indptr[e]), int(block.indptr[e + 1])
        return sensitivity(idx, block.val, s, f, self.table, self.st, gd_settings(self.prm, self.iprm), code,
                           p, y, tau, float(block.weights[e]))

    # ------------------------------------------------------------------------- multiclass
    def first_class(self) -> int:
        """The label of class 0: 0 once the labels are 0-indexed, else 1."""
        return 0 if self.arrays.state.index_mode == 0.0 else 1

    def class_outputs(self, block: ParsedBlock, preds: np.ndarray, training) -> None:
        """Warnings about the block's labels, then its -p and -r lines and the multiclass log loss."""
        K = self.outputs.classes
        status = preds[:, K + 1]
        if self.outputs.multilabel:
            for e in np.flatnonzero(status).tolist():
                where = f"{block.source} line {int(block.lines[e])}"
                reason = f"a label of the set is not in 0..{K - 1} or comes out of order"
                if self.faults.strict:
                    raise InputError(f"{where}: {reason}")
                self.faults.reporter.warn(f"{where}: {reason}; it matches no class, as in VW")
        elif status.any():
            self.faults.label_notes(block, status, K, self.first_class(), training)
        if self.outputs.multilabel:
            self.outputs.write_sets(block, preds)
        elif block.costs is not None:
            self.outputs.write_costs(block, preds, self.arrays.state.index_mode)
        else:
            self.outputs.write_classes(block, preds, self.first_class())


def ldf_groups(block: ParsedBlock) -> list[tuple[int, int]]:
    """(first row, one past the last) of each multi-line example of a block (``block.groups``)."""
    starts = np.flatnonzero(np.r_[True, block.groups[1:] != block.groups[:-1]]) if block.n else np.zeros(0, int)
    bounds = starts.tolist() + [block.n]
    return [(bounds[j], bounds[j + 1]) for j in range(len(starts))]


def ldf_probabilities(raw: np.ndarray) -> np.ndarray:
    """VW's --probabilities of a multi-line example's actions from their raw scores (a predicted cost:
    lower is better): 1 / (1 + exp(score)) each, normalized to sum 1 (float32, as VW)."""
    p = (np.float32(1.0) / (np.float32(1.0) + np.exp(raw.astype(np.float32)))).astype(np.float32)
    return (p / p.sum(dtype=np.float32)).astype(np.float64)


def cost_offsets(block: ParsedBlock, e: int, K: int, mode: float) -> list[int]:
    """The classes (0..K-1) example e's costs ran, in order, as ``multiclass.csoaa_loop`` maps them
    (``mode``: the indexing, 2 while undecided); all K for an example without costs."""
    ptr, cls, _ = block.costs
    labels = cls[int(ptr[e]):int(ptr[e + 1])].tolist()
    if not labels:
        return list(range(K))
    out = []
    for lbl in labels:
        if mode == 0.0:
            out.append(lbl if lbl < K else 0)
        elif 1 <= lbl <= K:
            out.append(lbl - 1)
        elif mode == 1.0:
            out.append(K - 1)
    return out


def _warned_loss(cfg) -> str | None:
    """The loss whose unexpected labels a run warns about as VW does (a run without classes)."""
    loss = getattr(cfg, "loss", None)
    return loss if loss in ("hinge", "logistic") and not getattr(cfg, "classes", 0) else None


def divergence_place(block: ParsedBlock, counters: CounterView, first: int, stop: int) -> str:
    """Where a run's predictions or updates first stopped being finite: "<file> line <n>" of the example
    the example loop recorded (``C_DIVERGED_EX``), or, from a loop that records none (one-against-all
    flags a NaN score only), the lines of the examples that kernel call processed."""
    if counters.diverged:
        e = int(counters.diverged_ex)
        if 0 <= e < block.n:
            return f"{block.source} line {int(block.lines[e])}"
    a, b = int(block.lines[first]), int(block.lines[max(stop - 1, first)])
    return f"{block.source} line {a}" if a == b else f"{block.source} lines {a}-{b}"


def prepare_train(explicit: dict) -> tuple[TrainConfig, tuple | None]:
    """Config from the options given, merged with the -i model's options; returns (config, model)."""
    model = None
    opts = None
    path = explicit.get("initial_model")
    if path:
        from streamlearn.run.vw_models import load_initial     # streamlearn's model files or VW's
        model = load_initial(path, explicit, predicting=bool(explicit.get("testonly")))
        opts = model_options(model[0], path)
    return train_config(explicit, opts), model


def preamble(cfg: TrainConfig, rep: Reporter, learner, cache_note: str | None) -> None:
    if cfg.expands:             # VW's start-up lines for the feature options ([info]/[warning] on stdout)
        for stream, text in cfg.feature_spec().messages(cfg.quiet):
            if stream == "stderr":
                rep.line(text)
            else:
                print(text, flush=True)
    if cfg.interact is not None and not cfg.quiet:     # VW's [info] line, on stdout as VW's
        print(f"[info] Interacting namespaces {cfg.interact[0]} and {cfg.interact[1]}", flush=True)
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
    if cfg.noop or cfg.print_examples:
        rep.line(f"learner = {'print' if cfg.print_examples else 'noop'} (learns nothing, predicts 0)")
    else:
        rep.line(f"learner = {learner.describe(cfg)}")
    rep.line(f"loss function = {cfg.loss}" + (f" (tau = {cfg.quantile_tau:g})" if cfg.loss == "quantile" else "")
             + (f" (q = {cfg.expectile_q:g})" if cfg.loss == "expectile" else ""))


def _sparse_note(cfg, state: RunState, rep: Reporter) -> None:
    """The info line of a run that took the sparse weight store without --sparse_weights."""
    if state.store is not None and not getattr(cfg, "sparse_weights", False):
        rep.line(f"sparse weights: the dense table of -b {cfg.bits} would take more than half the memory, "
                 f"so the weights are a hash map of the features in use (--sparse_weights)")


def _summary_lines(run: Run, loss: str, tau: float, passes: int, holdout: int, best_holdout,
                   nonzero: int | None, bits: int, best: bool = True) -> list[str]:
    c = run.arrays.counters
    outputs, progress, faults = run.outputs, run.progress, run.faults
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
    bc = best_constant(run.ctr, run.st, loss, tau) if best and not outputs.classes else None
    if bc is not None:
        lines.append(f"best constant = {bc[0]:f}")
        if bc[1] is not None:
            lines.append(f"best constant's loss = {bc[1]:f}")
    if outputs.output == "probabilities" and outputs.logloss[1] > 0:
        lines.append(f"average multiclass log loss = {outputs.logloss[0] / outputs.logloss[1]:f}")
    lines.append(f"total feature number = {int(c.features)}")
    if nonzero is not None:
        lines.append(f"non-zero weights = {nonzero} ({100.0 * nonzero / (1 << bits):.4g}% of 2^{bits})")
        if progress.rows_in_use is not None:
            lines.append(f"non-zero rows = {progress.rows_in_use} (features in use by any of the "
                         f"{outputs.classes} classes)")
    wall = time.perf_counter() - progress.started
    compiling = max(0.0, compile_seconds() - progress.compiling0)
    learning = wall - compiling
    # a first run's compile time is left out of the throughput and said on the same line (the line that
    # varies from run to run)
    lines.append(f"examples per second = {progress.examples / learning if learning > 0 else 0.0:.0f}"
                 + (f" (excluding the compile time: {compiling:.3f} s, {kernels(compile_count() - progress.compiled0)} "
                    f"compiled on first use, cached for later runs)" if compiling > 0 else ""))
    lines.append(f"wall time = {wall:.3f} s")
    lines.append(f"malformed lines = {faults.malformed}")
    if faults.read_errors:
        lines.append(f"inputs not read to the end = {faults.read_errors}")
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
        #: cost-sensitive labels (--csoaa) are not in the cache's blocks: every pass reads the text
        self.reread = hashing.costs or hashing.multilabels or hashing.lowrank is not None
        self.use_cache = (cfg.passes > 1 or cfg.cache_file is not None
                          or (cfg.objective and cfg.objective_data is None)) and not self.reread
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
        if (p == 0 or self.reread) and not self.reuse:
            writer = CacheWriter(self.path, self.options) if self.use_cache else None
            # multi-line examples read again after the first pass have no names, as VW's from its cache
            names = run.audit.names is not None and not (p > 0 and self.hashing.ldf)
            blocks = text_blocks(cfg.sources, cfg.format, self.hashing, cfg.block_size, writer, run.faults.read_error,
                                 with_text=names, byte_range=cfg.shard_range)
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
        counters = run.arrays.counters
        w = counters.ho_w_pass
        if not self.holdout or w <= 0:
            return False
        loss = counters.ho_loss_pass / w
        if self.best is None or loss < self.best:
            self.best = loss
            self.no_win = 0
            if p < self.cfg.passes - 1 and (self.cfg.final_model or self.cfg.readable_model or self.cfg.vw_model_out):
                self.nonzero = save_outputs(self.cfg, run, snapshot=True)
            return False
        self.no_win += 1
        self.stopped = self.no_win >= self.cfg.early_terminate
        return self.stopped


def _check_paths(cfg: TrainConfig) -> None:
    """Inputs readable and outputs writable, before the training rather than after it."""
    check_readable(cfg.sources + tuple(p for p in (cfg.objective_data, cfg.trace_data) if p))
    for path, what in ((cfg.final_model, "model"), (cfg.vw_model_out, "VW model"), (cfg.extra_metrics, "metrics file"),
                       (cfg.readable_model, "readable model"),
                       (cfg.invert_hash, "readable model"), (cfg.trace, "trace"), (cfg.plot, "plot")):
        if path:
            check_target(path, what)


def _open_run(cfg: TrainConfig, state: RunState, hashing: Hashing, rep: Reporter, history) -> "Run":
    """The run of a training: its arrays, the -p writer, one-against-all's outputs, and the feature
    names --invert_hash and --audit need."""
    writer = PredictionWriter(cfg.predictions) if cfg.predictions else None
    run = Run.training(state, rep, writer, cfg.strict, history)
    run.audit = Audit.of(cfg, hashing)
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


def train(cfg: TrainConfig, model=None, progress: bool = False, observer=None) -> dict:
    """Train an online learner as configured. Returns a small dict of results (for tests and the
    Python API); with ``progress`` (or ``--plot``) also the progress rows as arrays, "progress"
    (``streamlearn.run.history.ProgressHistory.as_dict``). ``observer(cfg, run)``, when given, makes
    an observer of the run (``streamlearn.run.trace.observe``): ``split(block)`` cuts each block into
    the pieces the run learns in turn, ``account(piece, predictions)`` sees each, ``finish()`` ends."""
    _check_paths(cfg)
    hashing = hashing_of(cfg)
    holdout = cfg.holdout
    noop = cfg.noop or cfg.print_examples      # VW's noop and print learners: no weights read or learned
    state = RunState.start(cfg, None if noop else model, train=not (cfg.testonly or noop), holdout=holdout)
    ctr = state.ctr
    rep = Reporter(cfg.quiet)
    history = ProgressHistory() if progress or cfg.plot else None
    additive, interval, warning = progress_schedule(cfg.progress)     # -P/--progress
    state.counters.dump = first_dump(additive, interval)
    if warning and not cfg.quiet:
        rep.warn(warning)
    if cfg.ldf is not None and cfg.probabilities:   # VW's two warnings (csoaa_ldf.cc)
        if cfg.loss != "logistic":
            rep.warn(f"--probabilities should be used only with --loss_function=logistic, currently using: {cfg.loss}")
        if cfg.ldf != "mc":
            rep.warn("--probabilities should be used with --csoaa_ldf=mc (or --oaa, --multilabel_oaa)")
    sources = SourcePlan(cfg, hashing, rep)
    preamble(cfg, rep, learners.get(cfg.algo), sources.note)
    _sparse_note(cfg, state, rep)
    hint = learners.get(cfg.algo).hint
    if hint is not None and hint(cfg) is not None:
        rep.line(hint(cfg))
    run = _open_run(cfg, state, hashing, rep, history)
    counters.resume(cfg, run, None if noop else model)     # --preserve_performance_counters
    if cfg.quiet and history is None:   # the history keeps the rows' schedule (quiet prints none)
        state.quiet()
    run.progress.additive, run.progress.interval = additive, interval
    run.no_bases = noop
    run.confidence = (2 if cfg.confidence_after_training else 1) if cfg.confidence else 0
    if cfg.extra_metrics:
        from streamlearn.run.metrics import ExtraMetrics    # imported by the runs that ask for it
        run.metrics = ExtraMetrics(cfg, _warned_loss(cfg))
    if cfg.print_examples and not cfg.quiet:
        constant = None if cfg.noconstant else CONSTANT_RAW_INDEX
        run.printer = lambda block, a, b: (rep.out.write(print_lines(block, a, b, constant)), rep.out.flush())
    trace = observer(cfg, run) if observer is not None else None
    stop = EarlyStop(cfg, holdout)
    passes_done, objectives, nonzero, last_line = 0, [], None, 0
    try:
        for p in range(cfg.passes):
            run.progress.holding_out = holdout != 0 and p >= 1
            state.start_pass()
            blocks, cache_writer = sources.blocks(p, run, holdout)
            last_line = _feed(run, blocks, trace, cache_writer) or last_line
            passes_done += 1
            run.passes_done = passes_done
            if run.audit.names is not None:     # names come from the first pass (every pass with -t)
                run.audit.names.collecting = cfg.testonly
            if cfg.objective:
                objectives.append(_objective(cfg, run, hashing, sources.path, passes_done))
            state.end_pass()
            if stop.after_pass(p, run):
                break
        if history is not None and history.last_examples() != int(state.counters.examples):
            run.progress.record(state)      # the end of training: short runs have a point too
        if trace is not None:
            trace.finish()
        nonzero = stop.nonzero if stop.stopped and stop.nonzero is not None else save_outputs(cfg, run)
    finally:
        run.outputs.close()
        sources.remove_temporary()
    if state.counters.nonfinite and not run.faults.diverge_warned:
        rep.warn("some predictions were not finite (the weights diverged); try a smaller -l/--learning-rate")
    if run.metrics is not None:
        from streamlearn.run.metrics import write
        write(cfg.extra_metrics, run.metrics.document(run.faults.vw_log_calls, state.st))
    if not rep.quiet:   # the summary's figures (the best constant's loss is a kernel) only when printed
        rep.summary(_summary_lines(run, cfg.loss, cfg.quantile_tau, run.passes_before + passes_done, holdout,
                                   stop.best, nonzero, cfg.bits, best=not cfg.dont_output_best_constant))
    result = {"state": state.st, "counters": ctr, "table": state.used_table, "nonzero": nonzero,
              "malformed": run.faults.malformed, "passes": passes_done, "best_holdout": stop.best,
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
    result = objective.evaluate(cfg, run.arrays, blocks, allocate_table, run.progress.entries)
    run.progress.reporter.out.write(objective.describe(result, passes, where) + "\n")
    run.progress.reporter.out.flush()
    return result


# ----------------------------------------------------------------------------- prediction

def predict(cfg: PredictConfig) -> dict:
    """Predict with a saved model: one output line per example; loss on stderr when labels exist."""
    check_readable(cfg.sources)
    from streamlearn.run.vw_models import load_initial
    header, index, rows = load_initial(cfg.initial_model, {}, predicting=True)
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
    hashing = hashing_of(mcfg)
    # saved weights are final (lazy learners caught up before saving), so every model predicts
    # with the plain linear kernel in predict-only mode
    state = RunState.predictor(mcfg, index, rows[:, 0], header.get("state", {}))
    if cfg.quiet:
        state.quiet()
    rep = Reporter(cfg.quiet)
    rep.line(f"only testing\nmodel = {cfg.initial_model}")
    for path in cfg.sources:
        rep.line(f"Reading datafile = {'stdin' if path == '-' else path}")
    rep.line(f"Num weight bits = {mcfg.bits}")
    _sparse_note(mcfg, state, rep)
    writer = PredictionWriter(cfg.predictions)
    run = Run.predicting(state, rep, writer, cfg.strict)
    try:
        for block in pipelined(text_blocks(cfg.sources, cfg.format, hashing, cfg.block_size,
                                           on_error=run.faults.read_error, threads=cfg.threads)):
            run.process(block)
    finally:
        writer.close()
    if state.counters.nonfinite:
        rep.warn("some predictions were not finite (the model holds non-finite weights)")
    if not rep.quiet:
        rep.summary(_summary_lines(run, mcfg.loss, mcfg.quantile_tau, 1, 0, None, None, mcfg.bits))
    return {"state": state.st, "counters": state.ctr, "malformed": run.faults.malformed}
