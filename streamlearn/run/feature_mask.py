"""VW's ``--feature_mask MODEL`` (gd.cc's feature_mask_off, parse_mask_regressor_args) for the default
learner: only the weights that are non-zero are learned -- VW's update skips every feature whose weight
is 0, in the per-feature rate statistics (G, N, the normalizer's sum) and in the step alike. A new model
starts at MODEL's weights, so MODEL's non-zero weights are the ones learned; with ``-i`` VW zeroes the
mask's weights and loads the -i model, so that model's non-zero weights are. A zero weight is never
learned again, so the features a block's examples learn from are those whose weight is non-zero when the
block starts: ``masked`` drops the others from a copy of the block's features before the block kernel
runs (their weights are 0: the predictions and the feature counts the reports print do not change).
MODEL is a streamlearn model file (the weights it holds are its weights in force)."""

from __future__ import annotations

import numpy as np

from streamlearn.errors import OptionError
from streamlearn.run.model_io import load_checked


def load(cfg) -> tuple[np.ndarray, np.ndarray, dict]:
    """(slots, weights) of the non-zero weights of the --feature_mask model of ``cfg``, and the label
    bounds it saved (VW reads the mask's header too: its min and max label become the run's)."""
    (header, index, rows), opts = load_checked(cfg.feature_mask)
    if opts["bits"] != cfg.bits:
        raise OptionError(f"--feature_mask {cfg.feature_mask} has -b {opts['bits']}; this run has -b {cfg.bits}")
    weights = rows[:, 0]
    keep = weights != 0.0
    saved = header.get("state", {})
    bounds = {k: saved[k] for k in ("min_label", "max_label") if k in saved}
    return index.astype(np.int64)[keep], weights[keep], bounds


def masked(arrays: tuple, table: np.ndarray) -> tuple:
    """A block's kernel arrays (``ParsedBlock.arrays``) with only the features whose weight (column 0
    of ``table``) is non-zero: indptr, idx and val replaced, the rest (the feature counts included) as
    they are."""
    indptr, idx, val = arrays[:3]
    keep = table[idx, 0] != 0.0
    before = np.zeros(idx.shape[0] + 1, np.int64)
    np.cumsum(keep, out=before[1:])
    return (before[indptr], idx[keep], val[keep]) + tuple(arrays[3:])
