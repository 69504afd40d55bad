"""``--extra_metrics FILE`` (issue 27): VW's JSON file of a run's metrics (VW's reductions/metrics.cc
and the learners' ``persist_metrics``), written atomically at the end of the run.

VW 9.11.9 writes, for the linear learners and ``--oaa``::

    {"total_log_calls": N, "extra_metrics": {"total_learn_calls": L, "total_predict_calls": P}}

and, for ``--ftrl``, ``--coin`` and ``--pistol`` (ftrl.cc's ``persist_metrics``), one more object named
``ftrl-`` and the algorithm: ``{"ftrl_size": S, "ftrl_alpha": a, "ftrl_beta": b,
"ftrl_normalized_sum_norm_x": x, "ftrl_total_weight": w, "ftrl_algorithm": NAME}`` (the numbers as
float32, the sums those of the normalizer, class 0's with ``--oaa``).

* ``total_learn_calls``: the examples VW's learner learns: labeled, not held out, the run training
  (``-t``: none; ``--noop``/``--print`` count them, as VW's noop learner is called to learn).
* ``total_predict_calls``: VW's driver calls predict for the examples it does not learn (unlabeled,
  held out, ``-t``); a learner whose learn does not return its prediction (``--oaa``, ``--ftrl``,
  ``--coin``, ``--noop``, ``--print``: VW's ``learn_returns_prediction`` false) is asked to predict every
  example. streamlearn's own learners count as VW's gd.
* ``total_log_calls``: the messages VW's logger writes that streamlearn writes too: the label-index
  notes of ``--oaa``/``--csoaa`` ("label 3 found -- labels are now considered 1-indexed.") and the
  loss's label warning (hinge: a label other than -1 and 1; logistic: one outside [-1, 1]), which VW
  prints once but logs each time its loss meets such a label: twice for an example learned (the
  update and the reported loss), once for one only predicted. streamlearn's other warnings are its
  own, not counted.
"""

from __future__ import annotations

import json
import math

import numpy as np

from streamlearn.core import state as S

#: VW's ftrl-family learners: streamlearn's name -> (VW's algorithm name, its weight record size)
FTRL_FAMILY = {"ftrl": ("Proximal-FTRL", 3), "coin": ("Coin Betting", 6), "pistol": ("PiSTOL", 4)}
#: the learners whose learn does not return a prediction in VW (predict is called for every example)
PREDICTS_FIRST = ("ftrl", "coin")


def held_out_mask(first: float, n: int, period: int) -> np.ndarray:
    """Which of the examples ``first + 1 .. first + n`` of a pass are held out: every ``period``-th
    one, or with a negative period -N every one after the N-th (``streamlearn.core.loop.held_out``)."""
    k = np.arange(1, n + 1, dtype=np.int64) + int(first)
    if period > 0:
        return k % period == 0
    if period < 0:
        return k > -period
    return np.zeros(n, dtype=bool)


class ExtraMetrics:
    """A run's learn and predict calls as VW's counts them (module docstring)."""

    def __init__(self, cfg, label_loss: str | None = None):
        self.cfg = cfg
        self.label_loss = label_loss        # the loss whose label warning VW logs (``session._warned_loss``)
        self.learn = self.predict = self.label_logs = 0
        self.learning = not cfg.testonly
        noop = cfg.noop or cfg.print_examples
        self.predict_every = noop or cfg.algo in PREDICTS_FIRST or (bool(cfg.oaa) and cfg.algo != "softmax")

    def count(self, block, pass_ex: float, holdout: int, training: bool) -> None:
        """The examples of ``block`` (the first is example ``pass_ex + 1`` of its pass)."""
        n = block.n
        y = block.labels[:n]
        learned = y == y
        if self.learning and training and holdout:
            learned &= ~held_out_mask(pass_ex, n, holdout)
        elif not self.learning:
            learned[:] = False
        count = int(np.count_nonzero(learned))
        self.learn += count
        self.predict += n if self.predict_every else n - count
        if self.label_loss is not None:
            bad = ((y == y) & (y != 1.0) & (y != -1.0)) if self.label_loss == "hinge" else (y < -1.0) | (y > 1.0)
            self.label_logs += int(np.count_nonzero(bad)) + int(np.count_nonzero(bad & learned))

    def document(self, log_calls: int, st) -> dict:
        """The JSON object VW writes."""
        out = {"total_log_calls": int(log_calls) + self.label_logs,
               "extra_metrics": {"total_learn_calls": self.learn, "total_predict_calls": self.predict}}
        cfg = self.cfg
        if cfg.algo in FTRL_FAMILY:
            name, size = FTRL_FAMILY[cfg.algo]
            norm, total = float(st[S.S_NORM_SUM]), float(st[S.S_TOTAL_W])
            if cfg.classes and st.shape[0] > S.N_ST + 1:       # class 0's sums
                norm, total = float(st[S.N_ST]), float(st[S.N_ST + 1])
            if cfg.algo != "coin":          # VW's ftrl and pistol keep no normalizer
                norm = total = 0.0
            out["ftrl-" + name] = {"ftrl_size": size, "ftrl_alpha": _f32(cfg.ftrl_alpha),
                                   "ftrl_beta": _f32(cfg.ftrl_beta), "ftrl_normalized_sum_norm_x": _f32(norm),
                                   "ftrl_total_weight": _f32(total), "ftrl_algorithm": name}
        return out


def _f32(x) -> float:
    """A number as VW's float metric: float32, written as the double it is."""
    v = float(np.float32(x))
    return v if math.isfinite(v) else 0.0


def write(path: str, document: dict) -> None:
    """The metrics file, written atomically (a temporary file renamed into place)."""
    from streamlearn.io.atomic import write_atomic
    write_atomic(path, [json.dumps(document, separators=(",", ":")).encode("utf-8")], "metrics file")
