"""Progress history: the numbers of the progress table, kept as arrays (for ``train --plot``,
``streamlearn.plot.progress`` and the estimators' ``progress_``).

A row is recorded where the progress table prints one (the weighted example count doubles, VW's
schedule), with the number of non-zero weights in force at that moment and the data accesses so
far (feature entries x_ij read by the learner).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.kernels import state as S

#: the keys of ``ProgressHistory.as_dict`` and their dtypes
FIELDS = (("examples", np.int64), ("weighted", np.float64), ("average_loss", np.float64),
          ("since_last", np.float64), ("nonzero", np.int64), ("accesses", np.int64), ("holdout", bool))


class ProgressHistory:
    """Progress rows read from the counters array (``streamlearn.kernels.state``)."""

    def __init__(self):
        self.rows: list[tuple] = []

    def __len__(self) -> int:
        return len(self.rows)

    def record(self, ctr, holding_out: bool, nonzero: int, accesses: int) -> None:
        """Append the row the progress table shows now (call before ``report.next_dump`` and
        ``Reporter.row`` reset the since-last sums). Unknown averages are NaN."""
        if holding_out:
            w, l = ctr[S.C_HO_W], ctr[S.C_HO_LOSS]
            avg = l / w if w > 0 else math.nan
            ws, ls = ctr[S.C_HO_W_SINCE], ctr[S.C_HO_LOSS_SINCE]
            since = ls / ws if ws > 0 else math.nan
        else:
            wl = ctr[S.C_W_LABELED]
            avg = ctr[S.C_SUM_LOSS] / wl if wl > 0 else math.nan
            dw = wl - ctr[S.C_OLD_W_LABELED]
            since = ctr[S.C_SUM_LOSS_SINCE] / dw if dw > 0 else math.nan
        weighted = ctr[S.C_W_LABELED] + ctr[S.C_W_UNLABELED]
        self.rows.append((int(ctr[S.C_EXAMPLES]), float(weighted), float(avg), float(since), int(nonzero),
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
