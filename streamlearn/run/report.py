"""Console output on stderr, in Vowpal Wabbit's layout (vw-spec.md §1d): preamble, progress table,
summary -- plus what VW does not print: non-zero weights, examples per second, wall time and the
number of malformed lines.
"""

from __future__ import annotations

import math
import sys

from streamlearn.kernels import state as S
from streamlearn.kernels.losses import LOSSES, loss_value

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
        if self.quiet:
            if holding_out:
                ctr[S.C_HO_W_SINCE] = 0.0
                ctr[S.C_HO_LOSS_SINCE] = 0.0
            return
        if not self.header_done:
            self.out.write(HEADER)
            self.header_done = True
        if holding_out:
            w, l = ctr[S.C_HO_W], ctr[S.C_HO_LOSS]
            avg = "unknown" if w == 0 and l == 0 else f"{l / w:.6f}"
            ws, ls = ctr[S.C_HO_W_SINCE], ctr[S.C_HO_LOSS_SINCE]
            since = "unknown" if ws == 0 and ls == 0 else f"{ls / ws:.6f}"
            ctr[S.C_HO_W_SINCE] = 0.0
            ctr[S.C_HO_LOSS_SINCE] = 0.0
        else:
            wl = ctr[S.C_W_LABELED]
            avg = f"{ctr[S.C_SUM_LOSS] / wl:.6f}" if wl > 0 else "n.a."
            dw = wl - ctr[S.C_OLD_W_LABELED]
            since = "n.a." if dw == 0 else f"{ctr[S.C_SUM_LOSS_SINCE] / dw:.6f}"
        weighted = ctr[S.C_W_LABELED] + ctr[S.C_W_UNLABELED]
        text = format_row((avg, since, str(int(ctr[S.C_EXAMPLES])), f"{weighted:.1f}",
                           label_text or ("unknown" if label != label else f"{label:.4f}"),
                           pred_text or f"{pred:.4f}", str(nfeat)))
        self.out.write(text + (" h\n" if holding_out else "\n"))
        self.out.flush()

    def summary(self, lines) -> None:
        if self.quiet:
            return
        self.out.write("\nfinished run\n")
        for text in lines:
            self.out.write(text + "\n")
        self.out.flush()


def next_dump(ctr) -> None:
    """After a row: the next one comes when the weighted example count doubles (VW's default)."""
    ctr[S.C_SUM_LOSS_SINCE] = 0.0
    ctr[S.C_OLD_W_LABELED] = ctr[S.C_W_LABELED]
    ctr[S.C_DUMP] = 2.0 * (ctr[S.C_W_LABELED] + ctr[S.C_W_UNLABELED])


def best_constant(ctr, st, loss: str, tau: float):
    """(best constant, its loss or None) as VW computes them (best_constant.cc), or None."""
    if ctr[S.C_HAVE_LABEL1] == 0:
        return None
    l1 = ctr[S.C_LABEL1]
    l2 = ctr[S.C_LABEL2] if ctr[S.C_HAVE_LABEL2] else 0.0
    if l1 > l2:
        l1, l2 = l2, l1
    if l1 == l2:
        return None
    wl = ctr[S.C_W_LABELED]
    c1 = (ctr[S.C_W_LABELS] - l2 * wl) / (l1 - l2)
    c2 = wl - c1
    if c1 + c2 <= 0:
        return None
    many = ctr[S.C_MANY_LABELS] != 0
    if loss == "squared":
        best = ctr[S.C_W_LABELS] / wl
    elif many:
        return None
    elif loss == "hinge":
        best = -1.0 if c2 <= c1 else 1.0
    elif loss == "logistic":
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
    lo, hi = st[S.S_MIN_LABEL], st[S.S_MAX_LABEL]   # the learner's prediction bounds
    bl = 0.0
    if c1 > 0:
        bl += loss_value(code, best, l1, tau, lo, hi) * c1
    if c2 > 0:
        bl += loss_value(code, best, l2, tau, lo, hi) * c2
    return best, bl / (c1 + c2)
