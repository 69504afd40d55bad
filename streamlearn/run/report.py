"""Console output on stderr, in Vowpal Wabbit's layout (vw-spec.md §1d): preamble, progress table,
summary -- plus what VW does not print: non-zero weights, examples per second, wall time and the
number of malformed lines.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from streamlearn.core.losses import LOSSES, loss_value
from streamlearn.run.views import CounterView, StateView

HEADER = ("average  since         example        example        current        current  current\n"
          "loss     last          counter         weight          label        predict features\n")

# column widths and alignments of a progress row (VW's shared_data.cc)
_COLS = ((8, "<", False), (8, "<", False), (12, ">", False), (14, ">", False), (14, ">", True),
         (14, ">", True), (8, ">", False))


def _fit(text: str, width: int, align: str, ellipsis: bool) -> str:
    if len(text) > width:
        text = text[: width - 3] + "..." if ellipsis else text[:width]
    return f"{text:{align}{width}}"


def format_row(values) -> str:
    return " ".join(_fit(v, w, a, e) for v, (w, a, e) in zip(values, _COLS))


class Reporter:
    """Writes the preamble, progress rows and summary (nothing when quiet)."""

    def __init__(self, quiet: bool, out=None):
        self.quiet = quiet
        self.out = out if out is not None else sys.stderr
        self.header_done = False

    def line(self, text: str = "") -> None:
        if not self.quiet:
            self.out.write(text + "\n")

    def warn(self, text: str) -> None:
        """Warnings are printed even with --quiet: they report data that was not used."""
        self.out.write(f"streamlearn: warning: {text}\n")
        self.out.flush()

    def row(self, ctr, holding_out: bool, label: float, pred: float, nfeat: int, label_text: str | None = None,
            pred_text: str | None = None) -> None:
        """One progress row for the example just processed; resets the since-last sums (the label
        and prediction columns as given, else the numbers with 4 decimals). Quiet, it prints nothing
        but still resets the sums (rows are kept when a progress history is recorded)."""
        c = CounterView(ctr)
        if self.quiet:
            if holding_out:
                c.ho_w_since = 0.0
                c.ho_loss_since = 0.0
            return
        if not self.header_done:
            from streamlearn import _cache
            _cache.table_started()      # a kernel compiled from now on prints no notice inside the table
            self.out.write(HEADER)
            self.header_done = True
        if holding_out:
            w, l = c.ho_w, c.ho_loss
            avg = "unknown" if w == 0 and l == 0 else f"{l / w:.6f}"
            ws, ls = c.ho_w_since, c.ho_loss_since
            since = "unknown" if ws == 0 and ls == 0 else f"{ls / ws:.6f}"
            c.ho_w_since = 0.0
            c.ho_loss_since = 0.0
        else:
            wl = c.w_labeled
            avg = f"{c.sum_loss / wl:.6f}" if wl > 0 else "n.a."
            dw = wl - c.old_w_labeled
            since = "n.a." if dw == 0 else f"{c.sum_loss_since / dw:.6f}"
        weighted = c.w_labeled + c.w_unlabeled
        text = format_row((avg, since, str(int(c.examples)), f"{weighted:.1f}",
                           label_text or ("unknown" if label != label else f"{label:.4f}"),
                           pred_text if pred_text is not None else f"{pred:.4f}", str(nfeat)))
        self.out.write(text + (" h\n" if holding_out else "\n"))
        self.out.flush()

    def summary(self, lines) -> None:
        if self.quiet:
            return
        self.out.write("\nfinished run\n")
        for text in lines:
            self.out.write(text + "\n")
        self.out.flush()


def next_dump(ctr, additive: bool = False, interval: float = 2.0) -> None:
    """After a row: the next one comes when the weighted example count doubles (VW's default), or
    as -P/--progress asks (``config.progress_schedule``): ``interval`` weighted examples later
    (``additive``), or when it grows ``interval``-fold; computed in float32, as VW's
    ``shared_data::update_dump_interval``."""
    c = CounterView(ctr)
    c.sum_loss_since = 0.0
    c.old_w_labeled = c.w_labeled
    seen = np.float32(c.w_labeled + c.w_unlabeled)
    step = np.float32(interval)
    c.dump = float(seen + step if additive else seen * step)


def first_dump(additive: bool, interval: float) -> float:
    """The weighted example count of the first progress row: 1, or the interval when additive."""
    return float(np.float32(interval)) if additive else 1.0


def _number(x) -> str:
    """A float32 as C++'s ostream prints it (6 significant digits)."""
    return f"{float(np.float32(x)):g}"


def print_lines(block, first: int, stop: int, constant: int | None) -> str:
    """VW's --print (print.cc) of examples ``first..stop-1`` of a parsed block: ``label [weight
    [base]] ['tag]| index[:value] ...``; a labeled example twice, as VW 9.11.9 prints it.
    ``constant``: the raw index VW shows for the constant feature (each example's last; None with
    --noconstant)."""
    out = []
    tags = block.tag_list()
    for e in range(first, stop):
        head = ""
        y, h, base = block.labels[e], block.weights[e], block.bases[e]
        if y == y:
            head = _number(y) + " "
            if h != 1 or base != 0:
                head += _number(h) + " " + (_number(base) + " " if base != 0 else "")
        if tags[e]:
            head += "'" + tags[e].decode("utf-8", "replace")
        a, b = int(block.indptr[e]), int(block.indptr[e + 1])
        feats = []
        for j in range(a, b):
            index = constant if (constant is not None and j == b - 1) else int(block.idx[j])
            v = block.val[j]
            feats.append(f"{index}" if v == 1 else f"{index}:{_number(v)}")
        line = head + "| " + "".join(f + " " for f in feats) + "\n"
        out.append(line * (2 if y == y else 1))
    return "".join(out)


def best_constant(ctr, st, loss: str, tau: float):
    """(best constant, its loss or None) as VW computes them (best_constant.cc), or None."""
    counters = CounterView(ctr)
    if counters.have_label1 == 0:
        return None
    l1 = counters.label1
    l2 = counters.label2 if counters.have_label2 else 0.0
    if l1 > l2:
        l1, l2 = l2, l1
    if l1 == l2:
        return None
    wl = counters.w_labeled
    c1 = (counters.w_labels - l2 * wl) / (l1 - l2)
    c2 = wl - c1
    if c1 + c2 <= 0:
        return None
    many = counters.many_labels != 0
    if loss == "squared":
        best = counters.w_labels / wl
    elif loss == "expectile":       # VW has no formula for it (best_constant.cc)
        return None
    elif many:
        return None
    elif loss == "hinge":
        best = -1.0 if c2 <= c1 else 1.0
    elif loss == "logistic":
        l1, l2 = -1.0, 1.0      # VW evaluates the loss at the labels -1 and 1 (its counts stay the labels')
        if c1 <= 0:
            best = 1.0
        elif c2 <= 0:
            best = -1.0
        else:
            best = math.log(c2 / c1)
    else:
        best = l2 if tau * (c1 + c2) < c2 else l1
    if many:
        return best, None
    code = LOSSES[loss]
    bounds = StateView(st)
    lo, hi = bounds.min_label, bounds.max_label   # the learner's prediction bounds
    bl = 0.0
    if c1 > 0:
        bl += loss_value(code, best, l1, tau, lo, hi) * c1
    if c2 > 0:
        bl += loss_value(code, best, l2, tau, lo, hi) * c2
    return best, bl / (c1 + c2)
