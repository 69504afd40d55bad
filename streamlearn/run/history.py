"""Progress history: the numbers of the progress table, kept as arrays (for ``train --plot``,
``streamlearn.plot.progress`` and the estimators' ``progress_``).

A row is recorded where the progress table prints one (the weighted example count doubles, VW's
schedule), with the number of non-zero weights in force at that moment and the data accesses so
far (feature entries x_ij read by the learner).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.run.views import CounterView

#: the keys of ``ProgressHistory.as_dict`` and their dtypes
FIELDS = (("examples", np.int64), ("weighted", np.float64), ("average_loss", np.float64),
          ("since_last", np.float64), ("nonzero", np.int64), ("accesses", np.int64), ("holdout", bool))


class ProgressHistory:
    """Progress rows read from the counters array (``streamlearn.run.views.CounterView``)."""

    def __init__(self):
        self.rows: list[tuple] = []

    def __len__(self) -> int:
        return len(self.rows)

    def record(self, ctr, holding_out: bool, nonzero: int, accesses: int) -> None:
        """Append the row the progress table shows now (call before ``report.next_dump`` and
        ``Reporter.row`` reset the since-last sums). Unknown averages are NaN."""
        c = CounterView(ctr)
        if holding_out:
            w, l = c.ho_w, c.ho_loss
            avg = l / w if w > 0 else math.nan
            ws, ls = c.ho_w_since, c.ho_loss_since
            since = ls / ws if ws > 0 else math.nan
        else:
            wl = c.w_labeled
            avg = c.sum_loss / wl if wl > 0 else math.nan
            dw = wl - c.old_w_labeled
            since = c.sum_loss_since / dw if dw > 0 else math.nan
        weighted = c.w_labeled + c.w_unlabeled
        self.rows.append((int(c.examples), float(weighted), float(avg), float(since), int(nonzero),
                          int(accesses), bool(holding_out)))

    def last_examples(self) -> int | None:
        """The example count of the last row (None before the first)."""
        return self.rows[-1][0] if self.rows else None

    def as_dict(self) -> dict:
        """One 1-D array per column: examples, weighted, average_loss, since_last (NaN where
        unknown), nonzero, accesses, holdout."""
        columns = list(zip(*self.rows)) if self.rows else [()] * len(FIELDS)
        return {name: np.asarray(col, dtype=dtype) for (name, dtype), col in zip(FIELDS, columns)}


def nonzero_in_force(cfg, table, prm, iprm, st) -> int:
    """The number of non-zero weights in force now, exactly, without changing the run: the learner's
    ``finalize`` (catch-up, open mini-batch) runs on copies of the table and state."""
    from streamlearn.run.objective import in_force

    rows, _ = in_force(cfg, table.copy(), prm, iprm, st.copy())
    return int(rows.shape[0])
