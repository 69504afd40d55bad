"""Running a learner's compiled block kernel directly (the tests of the kernels against their
references): the settings, state and counter arrays of a run, and one call of the kernel."""

from __future__ import annotations

import math

import numpy as np

from streamlearn import learners
from streamlearn.config import train_config
from streamlearn.core import state as S
from support.reference import to_csr


def kernel_arrays(cfg, saved=None, train=True):
    """(prm, iprm, st, ctr) of a run of cfg's learner, with no progress rows (the kernel never stops
    early)."""
    prm, iprm = learners.make_settings(cfg, train=train)
    st = learners.make_state(cfg, prm, saved)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = math.inf
    return prm, iprm, st, ctr


def run_block(kernel, indptr, idx, val, labels, weights, bases, start, end, table, prm, iprm, st, ctr,
              preds):
    """One call of a block kernel (``learners.block_kernel(cfg)``) over examples start..end-1 (each
    example counts its CSR row length of features); returns the next example."""
    nfeat = np.diff(indptr).astype(np.int64)
    return kernel((indptr, idx, val, labels, weights, bases, nfeat, preds), (table, prm, iprm, st, ctr), start, end)


def run_kernel(examples, bits, splits=(), full=False, state=False, after=None, dtype=None, **opts):
    """Run the compiled learner over ``examples`` (optionally in several calls), finalize, return
    (predictions, weights in force), or with ``full`` (predictions, weights, G, N) (zeros where
    absent), or with ``state`` (predictions, weights, state array). With ``after``, one call per
    example, each followed by ``after(table, st)`` (an eager reference acting on the kernel's table).
    The table is the learner's (``Layout.dtype``: float32 for sgd and tg), or of ``dtype`` (float64:
    the same kernels, layout and arithmetic without the float32 rounding of the stored values)."""
    cfg = train_config(dict(opts, bits=bits, sources=("-",)))
    kernel = learners.block_kernel(cfg)
    prm, iprm, stt, ctr = kernel_arrays(cfg)
    lay = learners.layout(cfg)
    assert dtype in (None, "float64", lay.dtype), "a float32 table needs a float32 layout"
    table = np.zeros((1 << bits, lay.columns), dtype or lay.dtype)
    indptr, idx, val, labels, weights, bases = to_csr(examples)
    n = len(examples)
    preds = np.zeros(n)
    bounds = range(n + 1) if after is not None else sorted({0, n, *[s for s in splits if 0 < s < n]})
    for a, b in zip(bounds, bounds[1:]):
        assert run_block(kernel, indptr, idx, val, labels, weights, bases, a, b, table, prm, iprm, stt, ctr, preds) == b
        if after is not None:
            after(table, stt)
    learners.finalize(cfg, table, prm, iprm, stt)
    weights = learners.weights_in_force(cfg, table, stt, np.arange(1 << bits))
    if state:
        return preds, weights, stt
    if full:
        zeros = np.zeros(1 << bits)
        return (preds, weights, table[:, lay.g].copy() if lay.g >= 0 else zeros,
                table[:, lay.n].copy() if lay.n >= 0 else zeros)
    return preds, weights


def table_dtype(**opts) -> str:
    """The type of the table a run of these options keeps (``Layout.dtype``)."""
    return learners.layout(train_config(dict(opts, bits=4, sources=("-",)))).dtype
