"""The one example loop every online learner runs (progressive validation: each example is predicted,
scored, counted, then learned), and the bookkeeping it does for every learner.

``example_loop`` walks examples start..end-1 of a parsed block. For each example it decides holdout
(every ``holdout``-th example of a pass, when training), maps and observes the label, computes the
prediction as the dot product of the example's features with the learner's weights in force (the one
place an example's features are read for prediction), clamps it to the prediction bounds, counts the
loss and the progress/summary counters (``ctr``; the number of features counted is ``nfeat[e]``, which
the session takes from the parsed block), and hands a learned example to the learner's step.

The learner-specific parts are compiled functions passed to the loop:

* ``view(cfg, st)`` -- what the weight reads of the learner's state, taken once per example (the
  cumulative of a lazy learner, ...; or ``st`` itself, ``state_view``);
* ``weight(table, i, cfg, v)`` -- the weight in force of row i, v the example's view (a lazy learner
  catches the weight up here);
* ``dot_start(base)`` and ``dot_end(acc, base, table, cfg, st)`` -- the raw score from the summed
  ``weight * x`` (most learners start the sum at the example's base and take it as it is);
* ``learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h)`` -- the update of one learned
  example (features s..f-1), including the learning-rate clock;
* ``cfg`` -- a tuple of the learner's settings, unpacked once per call from ``prm`` / ``iprm``.

Each learner module defines its block kernel as a three-line ``@njit(cache=True)`` function calling
``example_loop`` with its own functions: numba compiles one specialised loop per learner (the
learner's choice is made once, at set-up, by picking its kernel), and the cache key of the kernel is
its own array signature, so it is loaded from the on-disk cache like any other kernel. The loop is
inlined (numba IR) into each learner's kernel and not cached on its own: called as a separate
function, the learner's functions would be passed as run-time values, which numba cannot cache.
"""

import numpy as np
from numba import njit

from streamlearn.core.losses import loss_value
from streamlearn.core.prefetch import prefetch_example
from streamlearn.core.state import (
    C_DIVERGED, C_DIVERGED_EX, C_DUMP, C_EXAMPLES, C_FEATURES, C_HAVE_LABEL1, C_HAVE_LABEL2, C_HO_LOSS,
    C_HO_LOSS_PASS, C_HO_LOSS_SINCE, C_HO_W, C_HO_W_PASS, C_HO_W_SINCE, C_LABEL1, C_LABEL2, C_MANY_LABELS,
    C_NONFINITE, C_PASS_EX, C_SUM_LOSS, C_SUM_LOSS_SINCE, C_W_LABELED, C_W_LABELS, C_W_UNLABELED, I_BINARY,
    I_FIXED_BOUNDS, I_HOLDOUT, I_LOSS, I_TRAIN, P_TAU, S_MAX_LABEL, S_MIN_LABEL,
)


@njit(cache=True, nogil=True)
def observe_label(ctr, st, y, update_bounds):
    """Label bookkeeping shared by all learners: distinct labels (for the best constant) and the
    prediction bounds, which grow to cover every label seen before the prediction (VW's set_minmax)."""
    if ctr[C_HAVE_LABEL1] == 0.0:
        ctr[C_HAVE_LABEL1] = 1.0
        ctr[C_LABEL1] = y
    elif y != ctr[C_LABEL1]:
        if ctr[C_HAVE_LABEL2] == 0.0:
            ctr[C_HAVE_LABEL2] = 1.0
            ctr[C_LABEL2] = y
        elif y != ctr[C_LABEL2]:
            ctr[C_MANY_LABELS] = 1.0
    if update_bounds:
        if y < st[S_MIN_LABEL]:
            st[S_MIN_LABEL] = y
        if y > st[S_MAX_LABEL]:
            st[S_MAX_LABEL] = y


@njit(cache=True, nogil=True)
def clamp_prediction(ctr, st, raw):
    """Clamp a raw score to the prediction bounds; NaN becomes 0 and is flagged."""
    if raw != raw:
        ctr[C_NONFINITE] = 1.0
        return 0.0
    if raw < st[S_MIN_LABEL]:
        return st[S_MIN_LABEL]
    if raw > st[S_MAX_LABEL]:
        return st[S_MAX_LABEL]
    return raw


@njit(cache=True, nogil=True, inline="always")
def diverged_at(ctr, e):
    """Record example e (its index in the block) as the first at which a prediction or an update
    was not finite, unless one is recorded already; the session names its file and line."""
    if ctr[C_DIVERGED] == 0.0:
        ctr[C_DIVERGED] = 1.0
        ctr[C_DIVERGED_EX] = e


@njit(cache=True, nogil=True, inline="always")
def written_finite(table, idx, s, f):
    """Whether the first column (the stored weight) of the rows of features s..f-1 is finite, just
    after the example's update wrote them: the rows are in cache, and each test (``w - w`` is 0 for a
    finite w, NaN otherwise) is independent of the others, a branch never taken."""
    for k in range(np.uint64(s), np.uint64(f)):
        w = table[idx[k], 0]
        if w - w != 0.0:
            return False
    return True


@njit(cache=True, nogil=True)
def first_nonfinite_row(table, ncol):
    """The first row of ``table`` with a non-finite value in one of its first ``ncol`` columns, or -1
    (the end-of-training check: one compiled pass over the table, like counting its non-zeros)."""
    for i in range(table.shape[0]):
        z = 0.0
        for j in range(ncol):
            z += table[i, j] * 0.0
        if z != 0.0:
            return i
    return -1


@njit(cache=True, nogil=True)
def zero_nonfinite(table, ncol):
    """Set every infinite or NaN value in the first ``ncol`` columns to 0; returns how many there were
    (a diverged run's model is saved with them as 0, after the warning, so that it can be read)."""
    n = 0
    for i in range(table.shape[0]):
        for j in range(ncol):
            x = table[i, j]
            if x - x != 0.0:
                table[i, j] = 0.0
                n += 1
    return n


@njit(cache=True, nogil=True)
def account(ctr, labeled, holdout, h, y, lval, nfeat):
    """Progress and summary counters for one example (VW's shared_data::update)."""
    if holdout:
        if labeled:
            ctr[C_HO_W] += h
            ctr[C_HO_LOSS] += lval
            ctr[C_HO_W_SINCE] += h
            ctr[C_HO_LOSS_SINCE] += lval
            ctr[C_HO_W_PASS] += h
            ctr[C_HO_LOSS_PASS] += lval
    else:
        if labeled:
            ctr[C_W_LABELED] += h
            ctr[C_W_LABELS] += y * h
            ctr[C_SUM_LOSS] += lval
            ctr[C_SUM_LOSS_SINCE] += lval
        else:
            ctr[C_W_UNLABELED] += h
        ctr[C_EXAMPLES] += 1.0
        ctr[C_FEATURES] += nfeat


@njit(cache=True, nogil=True)
def example_loss(code, p, y, tau, lo, hi, h, binary):
    """Importance-weighted loss reported for one labeled example (0/1 loss of the sign with --binary)."""
    if binary:
        ps = 1.0 if p > 0.0 else -1.0
        ys = 1.0 if y > 0.0 else -1.0
        return h if ps != ys else 0.0
    return loss_value(code, p, y, tau, lo, hi) * h


@njit(cache=True, nogil=True)
def held_out(pass_ex, holdout_period):
    """The example ``pass_ex`` of its pass (from 1) is held out: every ``holdout_period``-th one, or
    with -N (VW's --holdout_after N) every one after the N-th; 0: none (VW's is_test_only)."""
    if holdout_period > 0:
        return int(pass_ex) % holdout_period == 0
    return holdout_period < 0 and int(pass_ex) > -holdout_period


@njit(cache=True, nogil=True)
def begin_example(ctr, st, code, y, train, holdout_period, bounds_follow):
    """Bookkeeping before predicting an example: count it in the pass, decide whether it is held out,
    and observe its label (taken as it is by every loss, as VW does). Returns (label, labeled, holdout)."""
    labeled = y == y
    ctr[C_PASS_EX] += 1.0
    holdout = train and held_out(ctr[C_PASS_EX], holdout_period)
    if labeled:
        if not holdout:
            observe_label(ctr, st, y, train and bounds_follow)
    return y, labeled, holdout


@njit(nogil=True, inline="always")
def finish_prediction(ctr, st, raw, code, y, tau, h, labeled, holdout, binary, nfeat, loss):
    """Clamp the raw score and count its loss (``loss(code, p, y, tau, lo, hi, h, binary)``, the
    importance-weighted loss, ``example_loss`` for every learner but coin). Returns the prediction."""
    p = clamp_prediction(ctr, st, raw)
    lval = 0.0
    if labeled and h > 0.0:
        lval = loss(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL], h, binary)
    account(ctr, labeled, holdout, h, y, lval, nfeat)
    return p


@njit(cache=True, nogil=True, inline="always")
def squared_norm(val, s, f):
    """sum_i x_i^2 over the features s..f-1 of an example (the invariant update's norm without
    per-feature rates)."""
    ppu = 0.0
    for k in range(s, f):
        x = np.float64(val[k])
        ppu += x * x
    return ppu


@njit(cache=True, nogil=True, inline="always")
def state_view(cfg, st):
    """``view`` of the learners whose weights read the state array as it is."""
    return st


@njit(cache=True, nogil=True, inline="always")
def base_start(base):
    """``dot_start`` of the learners whose score is base + sum_i w_i x_i, summed from the base."""
    return base


@njit(cache=True, nogil=True, inline="always")
def sum_end(acc, base, table, cfg, st):
    """``dot_end`` of the learners whose score is the sum as it is."""
    return acc


@njit(cache=True, nogil=True, inline="always")
def shown_as_scored(raw, p, lo, hi):
    """``shown`` of the learners whose -p prediction is the one they score and learn from."""
    return p


@njit(cache=True, nogil=True, inline="always")
def shown_before_label(raw, p, lo, hi):
    """``shown`` of the learners whose -p prediction is clamped to the bounds before the example's
    own label widened them (VW's learners whose learn does not return a prediction: the driver shows
    a first predict, vw-spec-2.md §2f)."""
    if raw != raw:
        return 0.0
    if raw < lo:
        return lo
    if raw > hi:
        return hi
    return raw


@njit(cache=True, nogil=True, inline="always")
def as_predicted(idx, val, s, f, table, cfg, st, h, raw):
    """``rescore`` of the learners that learn from the score they predict."""
    return raw


@njit(nogil=True, inline="always")
def example_loop(block, state, start, end, cfg, view, weight, dot_start, dot_end, learn):
    """``learner_loop`` with the -p prediction the one scored and learned from, and the float64 loss
    (every learner but ftrl and coin)."""
    return learner_loop(block, state, start, end, cfg, view, weight, dot_start, dot_end, learn, shown_as_scored,
                        as_predicted, example_loss)


@njit(nogil=True, inline="always")
def learner_loop(block, state, start, end, cfg, view, weight, dot_start, dot_end, learn, shown, rescore, loss):
    """Predict, score and (when training) learn examples start..end-1 of a block with the learner
    given by ``cfg``, ``view``, ``weight``, ``dot_start``, ``dot_end`` and ``learn`` (see the module
    docstring). Three more hooks let a learner whose prediction for learning is not its stored
    weights' score (VW's --ftrl and --coin) use the same loop:

    * ``shown(raw, p, lo, hi)``: the prediction written for -p, from the raw score, the scored
      prediction and the bounds before the example's label;
    * ``rescore(idx, val, s, f, table, cfg, st, h, raw)``: the raw score an example that is learned
      is scored and learned with (``as_predicted``: the stored weights' score ``raw``);
    * ``loss(code, p, y, tau, lo, hi, h, binary)``: the importance-weighted loss counted.

    Stops early, returning the next example index, once the weighted example count reaches the next
    progress row (``ctr[C_DUMP]``); returns ``end`` otherwise."""
    indptr, idx, val, labels, weights, bases, nfeat, preds = block
    table, prm, iprm, st, ctr = state
    code = iprm[I_LOSS]
    tau = prm[P_TAU]
    holdout_period = iprm[I_HOLDOUT]
    train = iprm[I_TRAIN] != 0
    bounds_follow = iprm[I_FIXED_BOUNDS] == 0
    binary = iprm[I_BINARY] != 0
    for e in range(start, end):
        h = weights[e]
        lo = st[S_MIN_LABEL]
        hi = st[S_MAX_LABEL]
        y, labeled, holdout = begin_example(ctr, st, code, labels[e], train, holdout_period, bounds_follow)
        s = indptr[e]
        f = indptr[e + 1]
        acc = dot_start(bases[e])
        v = view(cfg, st)
        for k in range(np.uint64(s), np.uint64(f)):     # unsigned: no negative-index wrap-around code
            acc += weight(table, idx[k], cfg, v) * val[k]
        raw = dot_end(acc, bases[e], table, cfg, st)
        learn_it = train and labeled and h > 0.0 and not holdout
        scored = raw
        if learn_it:
            scored = rescore(idx, val, s, f, table, cfg, st, h, raw)
        if scored - scored != 0.0:  # infinite or NaN (the features are finite: the weights diverged)
            diverged_at(ctr, e)
        p = finish_prediction(ctr, st, scored, code, y, tau, h, labeled, holdout, binary, nfeat[e], loss)
        preds[e] = shown(raw, p, lo, hi)
        if e + 1 < end:
            prefetch_example(table, idx, f, indptr[e + 2], 1, 1, 0)
        if learn_it:
            learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h)
            if not written_finite(table, idx, s, f):
                diverged_at(ctr, e)
        if ctr[C_W_LABELED] + ctr[C_W_UNLABELED] >= ctr[C_DUMP]:
            return e + 1
    return end
