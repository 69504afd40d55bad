"""Trace reporting within a pass (``train --trace FILE --trace-every N [--trace-data FILE]``): a row
every N examples read (and one at the end of training) with what the papers plot against the examples
seen, written to FILE as tab-separated values (atomically, at the end of training).

Columns, each cumulative over the run (all passes) at the row:

* ``examples`` (examples read), ``weighted`` (their importance weights);
* ``average_loss`` (the progressive loss, as the progress table's first column) and ``errors`` /
  ``error_rate``: the progressive 0/1 errors of the labeled examples read (the sign of the score
  against the label's for binary losses, the class for --oaa; empty for regression losses);
* ``nonzero``: the weights in force that are not 0 (counted on a copy, as ``streamlearn.run.history``),
  and ``nonzero_rows`` with --oaa (features with a class weight that is not 0);
* ``features_seen``: distinct hashed weight indices among the examples' features so far;
* ``accesses``: feature entries read by the learner (the data accesses of --objective), ``seconds``
  since training started;
* with ``--trace-data FILE``: ``test_loss``, ``test_error`` (the weights in force on FILE's examples,
  nothing learned) and ``objective`` (``streamlearn.run.objective.evaluate`` on FILE: its loss plus the
  learner's regularizer).

Rows fall exactly every N examples: blocks are cut at those examples (``split``) and each piece goes
through the learner as its block would, so a traced run learns what an untraced one learns.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from streamlearn import learners
from streamlearn.io.blocks import ParsedBlock, sub_block
from streamlearn.run.views import CounterView

CLASSIFYING = ("logistic", "hinge", "softmax")


class Trace:
    """The trace of one training run (module docstring)."""

    def __init__(self, cfg, run, test_blocks=None):
        self.cfg = cfg
        self.run = run
        self.every = int(cfg.trace_every)
        self.test_blocks = test_blocks
        self.rows: list[dict] = []
        self.read = 0
        self.weighted = 0.0
        self.errors = 0
        self.labeled = 0
        self.seen = np.zeros(1 << cfg.bits, bool)
        self.started = time.perf_counter()
        self.classify = cfg.loss in CLASSIFYING or bool(cfg.classes)

    def split(self, block: ParsedBlock):
        """The block cut where the example count reaches a multiple of ``every`` (the pieces in order)."""
        n = block.n
        a = 0
        while a < n:
            room = self.every - self.read % self.every
            b = min(n, a + room)
            yield block if (a == 0 and b == n) else sub_block(block, a, b)
            a = b

    def account(self, block: ParsedBlock, preds: np.ndarray) -> None:
        """After the learner ran on a piece: its errors and features; a row when a multiple of
        ``every`` examples has been read."""
        n = block.n
        if n:
            self.seen[block.idx[block.indptr[0]:block.indptr[n]]] = True
        y = block.labels
        labeled = y == y
        self.weighted += float(block.weights.sum())
        if self.classify and n:
            if self.cfg.classes:
                wrong = preds[:, 0] != y
            else:
                wrong = (preds > 0.0) != (y > 0.0)
            self.errors += int(np.count_nonzero(wrong & labeled))
        self.labeled += int(np.count_nonzero(labeled))
        self.read += n
        if n and self.read % self.every == 0:
            self.row()

    def row(self) -> None:
        from streamlearn.run.model_io import rows_in_use
        run, cfg, counters = self.run, self.cfg, self.run.arrays.counters
        slots, w = self._weights()          # the weights in force, once per row
        wl = counters.w_labeled
        r = {"examples": self.read, "weighted": self.weighted,
             "average_loss": counters.sum_loss / wl if wl > 0 else math.nan,
             "errors": self.errors if self.classify else None,
             "error_rate": (self.errors / self.labeled if self.labeled else math.nan) if self.classify else None,
             "nonzero": int(slots.shape[0]),
             "features_seen": int(np.count_nonzero(self.seen)), "accesses": run.progress.entries,
             "seconds": time.perf_counter() - self.started}
        if cfg.classes:
            r["nonzero_rows"] = rows_in_use(slots, cfg.class_width)
        if self.test_blocks is not None:
            r.update(self._test(slots, w))
        self.rows.append(r)

    def _weights(self):
        from streamlearn.run.objective import in_force
        return in_force(self.cfg, self.run.table.copy(), self.run.prm, self.run.iprm, self.run.st.copy())

    def _test(self, rows, w) -> dict:
        """Loss, 0/1 error and objective of the weights in force (``rows``, ``w``) on the
        --trace-data examples."""
        from streamlearn.run import objective
        from streamlearn.learners import allocate_table
        cfg, run = self.cfg, self.run
        table = allocate_table(cfg.bits, 1)
        table[rows, 0] = w
        prm, iprm = learners.make_settings(cfg, train=False, algo=learners.predictor().name)
        kernel = learners.predict_kernel(cfg)
        errors = labeled = 0
        for b in self.test_blocks:
            ctr = learners.make_counters()
            CounterView(ctr).dump = math.inf      # no progress rows
            preds = np.empty((b.n, cfg.classes + 2)) if cfg.classes else np.empty(b.n)
            kernel(b.arrays(preds), (table, prm, iprm, run.st.copy(), ctr), 0, b.n)
            ok = b.labels == b.labels
            if cfg.classes:
                wrong = preds[:, 0] != b.labels
            else:
                wrong = (preds > 0.0) != (b.labels > 0.0)
            errors += int(np.count_nonzero(wrong & ok))
            labeled += int(np.count_nonzero(ok))
        snapshot = replace(run.arrays, table=run.table.copy(), st=run.st.copy())    # not finalized in place
        res = objective.evaluate(cfg, snapshot, self.test_blocks, allocate_table, run.progress.entries)
        return {"test_loss": res["loss"], "test_error": errors / labeled if (labeled and self.classify) else None,
                "objective": res["objective"]}

    def finish(self) -> None:
        """The last row (unless one was just written) and the file."""
        if not self.rows or self.rows[-1]["examples"] != self.read:
            self.row()
        from streamlearn.errors import StreamlearnError
        from streamlearn.io.atomic import write_atomic
        keys = [k for k in self.rows[0] if any(r.get(k) is not None for r in self.rows)]
        lines = ["\t".join(keys)]
        for r in self.rows:
            lines.append("\t".join("" if r.get(k) is None else (f"{r[k]:.10g}" if isinstance(r[k], float) else str(r[k]))
                                   for k in keys))
        write_atomic(self.cfg.trace, [("\n".join(lines) + "\n").encode()], "trace", StreamlearnError)


def observe(cfg, run) -> Trace:
    """The trace of a run, as ``streamlearn.run.session.train`` takes an observer: built from the
    run when it opens (``driver.train`` passes it for --trace)."""
    return Trace(cfg, run, load_test_blocks(cfg) if cfg.trace_data else None)


def load_test_blocks(cfg):
    """The --trace-data examples, parsed once with the run's hashing and kept (copied out of the
    parser's reusable buffers)."""
    from streamlearn.run.stream import hashing_of, text_blocks
    out = []
    for b in text_blocks([cfg.trace_data], cfg.format, hashing_of(cfg), cfg.block_size):
        out.append(ParsedBlock(b.source, b.labels.copy(), b.weights.copy(), b.bases.copy(), b.lines.copy(),
                               b.indptr.copy(), b.idx.copy(), b.val.copy(), b.tag_buf, b.tag_s.copy(), b.tag_e.copy(),
                               b.faults.copy(), list(b.fault_text),
                               counts=None if b.counts is None else b.counts.copy()))
    return out
