"""Running a learner's compiled block kernel directly (the tests of the kernels against their
references): the settings, state and counter arrays of a run, and one call of the kernel."""

from __future__ import annotations

import math

import numpy as np

from streamlearn import learners
from streamlearn.kernels import state as S


def kernel_arrays(cfg, saved=None, train=True):
    """(prm, iprm, st, ctr) of a run of cfg's learner, with no progress rows (the kernel never stops
    early)."""
    prm, iprm = learners.make_settings(cfg, train=train)
    st = learners.make_state(cfg, prm, saved)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = math.inf
    return prm, iprm, st, ctr


def run_block(learner, indptr, idx, val, labels, weights, bases, start, end, table, prm, iprm, st, ctr,
              preds):
    """One call of the learner's kernel over examples start..end-1 (each example counts its CSR row
    length of features); returns the next example."""
    nfeat = np.diff(indptr).astype(np.int64)
    return learner.kernel(indptr, idx, val, labels, weights, bases, nfeat, start, end, table, prm, iprm, st,
                          ctr, preds)
