"""VW's ``--classweight L:W,...`` (classweight.cc): the importance weight of an example learned is
multiplied by its class's weight, W for label L (1 for a class not listed). The class of a label is its
value truncated to an integer (VW casts the float label to an integer class; with --oaa the label is the
class). VW multiplies before learning only, so examples predicted only (``-t``, held out, unlabeled) keep
their weight; the weighted sums and the average loss then count the multiplied weight, as VW's do.

The weights are applied to a copy of each block's importance weights before the block kernel runs (a
parse cache replayed over several passes keeps its own); nothing compiled changes."""

from __future__ import annotations

import math

import numpy as np

from streamlearn.errors import OptionError


def parse(values) -> dict[int, float]:
    """The class weights of the --classweight values ("L:W,L:W", repeatable; a later class's weight
    replaces an earlier one's, as in VW)."""
    weights: dict[int, float] = {}
    for value in values:
        for item in value.split(","):
            parts = item.split(":")
            if len(parts) < 2 or not parts[0] or not parts[1]:
                raise OptionError(f"--classweight needs L:W pairs separated by commas (got {item!r})")
            try:
                klass = int(parts[0])
                weight = float(parts[1])
            except ValueError:
                raise OptionError(f"--classweight needs an integer class and a number (got {item!r})") from None
            if not math.isfinite(weight) or weight < 0:
                raise OptionError(f"--classweight weights must be finite numbers >= 0 (got {item!r})")
            weights[klass] = weight
    return weights


class ClassWeights:
    """The parsed class weights of a run, applied block by block (``weighted``)."""

    def __init__(self, weights: dict[int, float]):
        self.classes = np.array(sorted(weights), dtype=np.float64)
        self.factors = np.array([weights[k] for k in sorted(weights)], dtype=np.float64)

    def factor(self, labels: np.ndarray) -> np.ndarray:
        """Each label's class weight (1 for unlisted classes and unlabeled examples)."""
        out = np.ones(labels.shape[0])
        if self.classes.size == 0:
            return out
        known = labels == labels
        klass = np.trunc(np.where(known, labels, 0.0))
        pos = np.searchsorted(self.classes, klass)
        pos = np.minimum(pos, self.classes.size - 1)
        hit = known & (self.classes[pos] == klass)
        out[hit] = self.factors[pos[hit]]
        return out

    def weighted(self, labels: np.ndarray, weights: np.ndarray, seen: int, holdout_period: int) -> np.ndarray:
        """The importance weights of a block's examples as learned: multiplied by their class weight
        except the held-out ones (the example counted ``seen + 1 + e`` in the pass is held out when that
        count is a multiple of ``holdout_period`` > 0, as the example loop decides)."""
        f = self.factor(labels)
        if holdout_period > 0:
            count = seen + 1 + np.arange(labels.shape[0])
            f[count % holdout_period == 0] = 1.0
        return weights * f


def of(cfg) -> ClassWeights | None:
    """The run's class weights, or None without --classweight."""
    if not cfg.classweight:
        return None
    return ClassWeights(parse(cfg.classweight))
