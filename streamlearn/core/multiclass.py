"""The multiclass example loops: one-against-all over any binary learner (VW's ``--oaa K``,
vw-spec-2.md §2e), and the joint loop of learners with a true multiclass loss (softmax).

Both share the per-example bookkeeping of ``streamlearn.core.loop`` (holdout, counters) and add
what multiclass needs:

* **addressing**: the weight of feature h (its masked index) for class k (0-based) is slot
  ``(h*W + k) & (2^b - 1)``, W the smallest power of two >= K (VW's stride arithmetic). The K
  weights of one feature are an aligned block of W slots -- the feature's *row*;
* **labels**: the class of label y is y-1 (1-indexed) or y (0-indexed). VW's auto mode predicts as
  1-indexed until, while learning, a label 0 (-> 0-indexed) or K (-> 1-indexed) appears;
* **prediction**: the K scores summed over the example's features, four classes a pass (each read
  through the learner's ``weight``), each clamped to the prediction bounds (oaa) or raw (joint), and the class
  of the largest, ties to the lowest;
* **loss**: the 0/1 loss of the predicted class against the label, times the importance weight.

``preds`` is a 2-D array (examples, K + 2): column 0 the predicted label as shown, columns 1..K the
class scores, column K+1 the label's status (``ST_*``), from which the session writes -r, --scores
and --probabilities and warns about labels.

One-against-all (``oaa_loop``) learns class k = 0..K-1 in turn with the binary learner's own
``learn``, label +1 for the true class and -1 for the others, the stored clamped score of class k as
the prediction (no re-prediction between classes), the features moved to class k's slots, and the
prediction bounds widened by each class's label first (VW's set_minmax per class update). The
learning-rate clock advances once per example; each class keeps its own normalizer sums (VW's
per-offset normalized_sum_norm_x and total_weight). A label outside the classes is learned as a
negative for every class and counts as an error (VW's behaviour; the session warns).

The joint loop (``joint_loop``) hands the example and all K raw scores to the learner's
``learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask)``, which updates the rows
of every touched feature at once.
"""

import numpy as np
from numba import njit

from streamlearn.core.loop import account, base_start, diverged_at, held_out, state_view, sum_end
from streamlearn.core.prefetch import prefetch_example
from streamlearn.core.state import (
    C_DUMP, C_NONFINITE, C_PASS_EX, C_W_LABELED, C_W_UNLABELED, I_CLASS_FIRST, I_CLASS_W, I_CLASSES,
    I_FIXED_BOUNDS, I_HOLDOUT, I_LOSS, I_NO_SET, I_TRAIN, N_ST, P_TAU, S_INDEX_MODE, S_MAX_LABEL, S_MIN_LABEL,
    S_NORM_SUM, S_T, S_TOTAL_W,
)

ST_OK = 0.0            # a label of one of the classes (or none)
ST_OUT_OF_RANGE = 1.0  # an integer label outside the classes: learned as a negative for every class
ST_NOT_INTEGER = 2.0   # a label that is not an integer: predicted, not learned
ST_NOW_0 = 3.0         # a label 0 made the labels 0-indexed (auto indexing)
ST_NOW_1 = 4.0         # a label K made the labels 1-indexed (auto indexing)

MAX_LABEL = 2.0 ** 31  # labels beyond this are not integers VW would read (strtol into an int)


def class_width(k: int) -> int:
    """W: the smallest power of two >= K (VW's multiplied stride over the base learner's)."""
    w = 1
    while w < k:
        w *= 2
    return w


@njit(cache=True, nogil=True, inline="always")
def label_class(y, mode, K):
    """(class index of label y under the indexing mode (2 = auto, acting 1-indexed), status): class
    -1 with ST_OUT_OF_RANGE or ST_NOT_INTEGER for a label that names no class."""
    if not (abs(y) < MAX_LABEL) or y != np.floor(y):
        return -1, ST_NOT_INTEGER
    c = int(y) if mode == 0 else int(y) - 1
    if c < 0 or c >= K:
        return -1, ST_OUT_OF_RANGE
    return c, ST_OK


@njit(nogil=True, inline="always")
def class_scores(idx, val, s, f, table, cfg, st, v, weight, dot_start, dot_end, base, W, mask, K, rows, acc):
    """acc[k] = the raw score of class k: dot_end(dot_start(base) + sum_i weight(slot(h_i, k)) x_i),
    each class summed over the features in their order from dot_start's value, in its type (a learner
    that sums in float32 sums each class in float32, as its binary loop does). The features' rows go
    to ``rows`` once; the classes are summed four at a time (four independent sums over one pass of the
    rows: a single sum waits on each addition)."""
    n = f - s
    for j in range(n):
        rows[j] = (np.int64(idx[s + j]) * W) & mask
    c = 0
    while c + 4 <= K:       # four classes at a time: four independent sums
        a0 = dot_start(base)
        a1 = dot_start(base)
        a2 = dot_start(base)
        a3 = dot_start(base)
        for j in range(n):
            r = rows[j] + c
            x = val[s + j]
            a0 += weight(table, r, cfg, v) * x
            a1 += weight(table, r + 1, cfg, v) * x
            a2 += weight(table, r + 2, cfg, v) * x
            a3 += weight(table, r + 3, cfg, v) * x
        acc[c] = dot_end(a0, base, table, cfg, st)
        acc[c + 1] = dot_end(a1, base, table, cfg, st)
        acc[c + 2] = dot_end(a2, base, table, cfg, st)
        acc[c + 3] = dot_end(a3, base, table, cfg, st)
        c += 4
    while c < K:
        a = dot_start(base)
        for j in range(n):
            a += weight(table, rows[j] + c, cfg, v) * val[s + j]
        acc[c] = dot_end(a, base, table, cfg, st)
        c += 1


@njit(cache=True, nogil=True, inline="always")
def best_class(scores, K):
    """The class of the largest score, ties to the lowest; a NaN score never wins."""
    best = 0
    for c in range(1, K):
        if scores[c] > scores[best] or scores[best] != scores[best]:
            best = c
    return best


@njit(cache=True, nogil=True, inline="always")
def clamp_scores(ctr, st, acc, K, clamp):
    """The scores as predicted: each clamped to the prediction bounds (oaa), NaN as 0; a NaN or
    infinite score is flagged (``C_NONFINITE``: the weights diverged)."""
    lo = st[S_MIN_LABEL]
    hi = st[S_MAX_LABEL]
    for c in range(K):
        r = acc[c]
        if r - r != 0.0:
            ctr[C_NONFINITE] = 1.0
        if r != r:
            r = 0.0
        elif clamp:
            if r < lo:
                r = lo
            elif r > hi:
                r = hi
        acc[c] = r


@njit(cache=True, nogil=True)
def begin_multiclass(ctr, st, y, train, holdout_period, K):
    """Bookkeeping before predicting an example: count it in the pass, decide holdout, read the
    label. Returns (labeled, holdout, class, status)."""
    labeled = y == y
    ctr[C_PASS_EX] += 1.0
    holdout = train and held_out(ctr[C_PASS_EX], holdout_period)
    cls = -1
    status = ST_OK
    if labeled:
        cls, status = label_class(y, st[S_INDEX_MODE], K)
        if status == ST_NOT_INTEGER:
            labeled = False
    return labeled, holdout, cls, status


@njit(cache=True, nogil=True)
def finish_multiclass(ctr, st, preds, e, acc, K, y, h, labeled, holdout, nfeat):
    """Store example e's predicted label and scores and count its 0/1 loss."""
    best = best_class(acc, K)
    shown = float(best) if st[S_INDEX_MODE] == 0 else float(best + 1)
    preds[e, 0] = shown
    for c in range(K):
        preds[e, 1 + c] = acc[c]
    lval = 0.0
    if labeled and h > 0.0 and shown != y:
        lval = h
    account(ctr, labeled, holdout, h, 0.0, lval, nfeat)


@njit(cache=True, nogil=True)
def detect_indexing(st, y, K, status):
    """VW's auto indexing, while learning: a label 0 makes the labels 0-indexed, a label K
    1-indexed (for good). Returns the example's status (ST_NOW_0/ST_NOW_1 when it decided)."""
    if st[S_INDEX_MODE] == 2.0:
        if y == 0.0:
            st[S_INDEX_MODE] = 0.0
            return ST_NOW_0
        if y == float(K):
            st[S_INDEX_MODE] = 1.0
            return ST_NOW_1
    return status


@njit(cache=True, nogil=True)
def max_features(indptr, start, end):
    m = 0
    for e in range(start, end):
        n = indptr[e + 1] - indptr[e]
        if n > m:
            m = n
    return m


@njit(cache=True, nogil=True, inline="always")
def widen_bounds(st, y):
    """The prediction bounds grown to cover a class's label y (VW's set_minmax)."""
    if y < st[S_MIN_LABEL]:
        st[S_MIN_LABEL] = y
    if y > st[S_MAX_LABEL]:
        st[S_MAX_LABEL] = y


@njit(cache=True, nogil=True, inline="always")
def clamp_score(st, r):
    """One score as predicted: NaN as 0, else clamped to the prediction bounds."""
    if r != r:
        return 0.0
    if r < st[S_MIN_LABEL]:
        return st[S_MIN_LABEL]
    if r > st[S_MAX_LABEL]:
        return st[S_MAX_LABEL]
    return r


@njit(nogil=True, inline="always")
def learn_class(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, W, mask, slots, c, t0, learn):
    """One step of the binary learner for class c towards y from prediction p: on the class's slots,
    with its own normalizer sums and the clock at ``t0`` (every class of an example sees the same)."""
    n = f - s
    for j in range(n):
        slots[j] = ((np.int64(idx[s + j]) * W) & mask) + c
    st[S_NORM_SUM] = st[N_ST + 2 * c]
    st[S_TOTAL_W] = st[N_ST + 2 * c + 1]
    st[S_T] = t0
    learn(slots, val[s:f], 0, n, table, prm, iprm, cfg, st, code, p, y, tau, h)
    st[N_ST + 2 * c] = st[S_NORM_SUM]
    st[N_ST + 2 * c + 1] = st[S_TOTAL_W]


@njit(nogil=True, inline="always")
def oaa_update(idx, val, s, f, table, prm, iprm, cfg, st, code, acc, cls, tau, h, K, W, mask, slots,
               bounds_follow, learn):
    """One-against-all learning of one example (module docstring): class k = 0..K-1 learns label
    +1 (k == cls) or -1 with its stored score, on its own slots and normalizer sums."""
    t0 = st[S_T]
    for c in range(K):
        yk = 1.0 if c == cls else -1.0
        if bounds_follow:
            widen_bounds(st, yk)
        learn_class(idx, val, s, f, table, prm, iprm, cfg, st, code, acc[c], yk, tau, h, W, mask, slots, c, t0, learn)
    st[S_T] = t0 + h


@njit(cache=True, nogil=True, inline="always")
def no_class_steps(cfg, st, code, acc, cls, tau, h, K, bounds_follow, steps, active):
    """``class_steps`` of the learners whose update reads more than the class's score (``oaa_loop``):
    none taken here, so every class learns with the learner's ``learn``."""
    return -1


@njit(nogil=True, inline="always")
def plain_class_updates(idx, val, s, f, table, K, W, mask, steps, active, n):
    """Move the weight of class ``active[j]`` of each feature s..f-1 by ``steps[j] * x`` (j < n), one pass
    over the features: a feature's K class weights are one row of W slots, read and written together.
    The slots of two classes never meet, and each slot takes its features' steps in the features'
    order, so the weights are those of the class-by-class updates, bit for bit."""
    if n == K:
        for k in range(s, f):
            row = (np.int64(idx[k]) * W) & mask
            x = val[k]
            for c in range(K):
                table[row + c, 0] += steps[c] * x
    else:
        for k in range(s, f):
            row = (np.int64(idx[k]) * W) & mask
            x = val[k]
            for j in range(n):
                table[row + active[j], 0] += steps[j] * x


@njit(nogil=True, inline="always")
def predict_example(e, block, state, cfg, view, weight, dot_start, dot_end, rows, acc, clamp):
    """The part of both loops before learning: predict example e (its K scores in ``acc``, clamped
    with ``clamp``), store and count it, and find the class it is learned for. Returns (learn it,
    its class or -1, its importance, its first and end feature)."""
    indptr, idx, val, labels, weights, bases, nfeat, preds = block
    table, prm, iprm, st, ctr = state
    K = iprm[I_CLASSES]
    train = iprm[I_TRAIN] != 0
    h = weights[e]
    y = labels[e]
    labeled, holdout, cls, status = begin_multiclass(ctr, st, y, train, iprm[I_HOLDOUT], K)
    s = indptr[e]
    f = indptr[e + 1]
    v = view(cfg, st)
    class_scores(idx, val, s, f, table, cfg, st, v, weight, dot_start, dot_end, bases[e], iprm[I_CLASS_W],
                 np.int64(table.shape[0] - 1), K, rows, acc)
    clamp_scores(ctr, st, acc, K, clamp)
    learned = train and labeled and not holdout
    # VW's oaa decides the indexing as it starts learning: its scores and probabilities (reported after
    # learning) name the deciding example's classes the new way, its plain class output (predicted
    # before learning) the old way
    first = iprm[I_CLASS_FIRST] != 0
    if first:
        finish_multiclass(ctr, st, preds, e, acc, K, y, h, labeled, holdout, nfeat[e])
    if learned:
        status = detect_indexing(st, y, K, status)
        cls, _ = label_class(y, st[S_INDEX_MODE], K)
    if not first:
        finish_multiclass(ctr, st, preds, e, acc, K, y, h, labeled, holdout, nfeat[e])
    preds[e, K + 1] = status
    return learned and h > 0.0, cls, h, s, f


@njit(cache=True, nogil=True, inline="always")
def at_progress_row(ctr):
    return ctr[C_W_LABELED] + ctr[C_W_UNLABELED] >= ctr[C_DUMP]


@njit(nogil=True, inline="always")
def oaa_loop(block, state, start, end, cfg, view, weight, dot_start, dot_end, learn):
    """Predict, score and (when training) learn examples start..end-1 one-against-all with a binary
    learner given by its ``view``, ``weight``, ``dot_start``, ``dot_end`` and ``learn`` (as
    ``streamlearn.core.loop.example_loop`` takes them). Returns the next example index (early at a
    progress row)."""
    return oaa_steps_loop(block, state, start, end, cfg, view, weight, dot_start, dot_end, learn, no_class_steps)


@njit(nogil=True, inline="always")
def oaa_steps_loop(block, state, start, end, cfg, view, weight, dot_start, dot_end, learn, class_steps):
    """``oaa_loop`` with a learner's shortcut for updates that move each weight by its class's step times
    x and touch nothing else per feature (VW's rule under --sgd): ``class_steps(cfg, st, code, acc, cls,
    tau, h, K, bounds_follow, steps, active)`` takes the whole example's class steps as ``oaa_update``
    would (the bounds widened by each class's label first, the clock and the state as the class-by-class
    steps leave them), lists the classes whose step is not 0 (``active``, their steps in ``steps``) and
    returns their number, which ``plain_class_updates`` applies in one pass over the features; -1 when
    the run's rule is not such an update (``oaa_update`` then learns class by class)."""
    indptr, idx, val, labels, weights, bases, nfeat, preds = block
    table, prm, iprm, st, ctr = state
    code = iprm[I_LOSS]
    tau = prm[P_TAU]
    bounds_follow = iprm[I_FIXED_BOUNDS] == 0
    K = iprm[I_CLASSES]
    W = iprm[I_CLASS_W]
    mask = np.int64(table.shape[0] - 1)
    acc = np.empty(K)
    slots = np.empty(max_features(indptr, start, end), np.int64)
    steps = np.empty(K)
    active = np.empty(K, np.int64)
    for e in range(start, end):
        learn_it, cls, h, s, f = predict_example(e, block, state, cfg, view, weight, dot_start, dot_end, slots, acc,
                                                 True)
        if ctr[C_NONFINITE] != 0.0:     # a non-finite score: the first one is recorded
            diverged_at(ctr, e)
        if e + 1 < end:
            prefetch_example(table, idx, f, indptr[e + 2], W, K, mask)
        if learn_it:
            n = class_steps(cfg, st, code, acc, cls, tau, h, K, bounds_follow, steps, active)
            if n >= 0:
                plain_class_updates(idx, val, s, f, table, K, W, mask, steps, active, n)
            else:
                oaa_update(idx, val, s, f, table, prm, iprm, cfg, st, code, acc, cls, tau, h, K, W, mask, slots,
                           bounds_follow, learn)
        if at_progress_row(ctr):
            return e + 1
    return end


@njit(nogil=True, inline="always")
def joint_loop(block, state, start, end, cfg, view, weight, dot_start, dot_end, learn):
    """``oaa_loop`` for learners with a multiclass loss: the raw scores (not clamped) and one
    ``learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask)`` per learned example,
    which updates every class's weight of the touched features. A label outside the classes is not
    learned (there is no class to move towards)."""
    indptr, idx, val, labels, weights, bases, nfeat, preds = block
    table, prm, iprm, st, ctr = state
    K = iprm[I_CLASSES]
    W = iprm[I_CLASS_W]
    mask = np.int64(table.shape[0] - 1)
    acc = np.empty(K)
    rows = np.empty(max_features(indptr, start, end), np.int64)
    for e in range(start, end):
        learn_it, cls, h, s, f = predict_example(e, block, state, cfg, view, weight, dot_start, dot_end, rows, acc,
                                                 False)
        if ctr[C_NONFINITE] != 0.0:     # a non-finite score: the first one is recorded
            diverged_at(ctr, e)
        if e + 1 < end:
            prefetch_example(table, idx, f, indptr[e + 2], W, K, mask)
        if learn_it and cls >= 0:
            learn(idx, val, s, f, table, prm, iprm, cfg, st, acc, cls, h, W, mask)
        if at_progress_row(ctr):
            return e + 1
    return end


# ----------------------------------------------------------------------------- prediction only

@njit(cache=True, nogil=True, inline="always")
def plain_weight(table, i, cfg, v):
    return table[i, 0]


@njit(cache=True, nogil=True, inline="always")
def no_joint_learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask):
    return


@njit(cache=True, nogil=True)
def predict_joint_block(block, state, start, end):
    """Prediction with a saved model of a learner with a multiclass loss (the weights in column 0 are
    in force): the joint loop's raw scores, nothing learned."""
    return joint_loop(block, state, start, end, 0, state_view, plain_weight, base_start, sum_end, no_joint_learn)


# ----------------------------------------------------------------------------- cost-sensitive (--csoaa K)

NO_COST = 3.4028234663852886e38     # VW's FLT_MAX: a class given without a cost (streamlearn.io.costs)


@njit(nogil=True, inline="always")
def class_score(idx, val, s, f, table, cfg, v, weight, W, mask, c):
    """The raw score of class c (its slots, no base: VW's csoaa resets the initial prediction)."""
    acc = 0.0
    for k in range(s, f):
        acc += weight(table, ((np.int64(idx[k]) * W) & mask) + c, cfg, v) * val[k]
    return acc


@njit(cache=True, nogil=True)
def cost_class(st, lbl, K):
    """VW's csoaa indexing of one cost's class ``lbl`` (updating the mode in ``st`` as VW's auto mode
    does: 0 -> 0-indexed, K -> 1-indexed), then its validation: a class outside the classes becomes
    class 0 (0-indexed) or K (1-indexed), as VW's csoaa maps it. Returns (class as labelled, slot
    offset 0..K-1 or -1 for none, status)."""
    status = ST_OK
    mode = st[S_INDEX_MODE]
    if mode == 2.0 and lbl == 0:
        st[S_INDEX_MODE] = 0.0
        mode = 0.0
        status = ST_NOW_0
    elif mode == 2.0 and lbl == K:
        st[S_INDEX_MODE] = 1.0
        mode = 1.0
        status = ST_NOW_1
    if mode == 0.0:
        if lbl >= K:
            return 0, 0, ST_OUT_OF_RANGE
        return lbl, lbl, status
    if lbl < 1 or lbl > K:
        if mode == 1.0:
            return K, K - 1, ST_OUT_OF_RANGE
        return lbl, -1, ST_OUT_OF_RANGE     # auto mode (acting 1-indexed) checks no range: not learned
    return lbl, lbl - 1, status


@njit(nogil=True, inline="always")
def csoaa_loop(block, state, start, end, cfg, view, weight, learn):
    """VW's cost-sensitive one-against-all (csoaa.cc, ``--csoaa K``) of examples start..end-1 over a
    binary learner given by its ``view``, ``weight`` and ``learn`` (``oaa_loop``'s).

    Each cost (class, cost) of an example's label, in the label's order: the class's raw score (a
    dot product over its slots), and when training (not holdout) the prediction bounds widened by the
    cost (a cost that is given) and, for a cost that is given, one step of the learner towards it (importance 1, the clamped
    score as the prediction, the class's own normalizer sums). The prediction is the class of the
    least raw score among the label's classes (ties to the lower class), or among all K for an
    example without costs. The loss is the predicted class's cost less the least cost (0 for a test
    example). A test example (no cost given) is predicted, not learned. Cost-sensitive labels have no
    importance: an example weighs 1, except a learned one whose last cost is a class without a cost,
    which weighs 0 (VW leaves the weight of its last regression on the example: its loss and weight
    then count for nothing)."""
    indptr, idx, val, labels, weights, bases, nfeat, preds, cs_ptr, cs_cls, cs_cost = block
    table, prm, iprm, st, ctr = state
    code = iprm[I_LOSS]
    tau = prm[P_TAU]
    bounds_follow = iprm[I_FIXED_BOUNDS] == 0
    K = iprm[I_CLASSES]
    W = iprm[I_CLASS_W]
    train = iprm[I_TRAIN] != 0
    mask = np.int64(table.shape[0] - 1)
    slots = np.empty(max_features(indptr, start, end), np.int64)
    for e in range(start, end):
        y = labels[e]
        labeled = y == y
        ctr[C_PASS_EX] += 1.0
        holdout = train and held_out(ctr[C_PASS_EX], iprm[I_HOLDOUT])
        learning = train and not holdout and labeled    # VW predicts a test example (test_only)
        s = indptr[e]
        f = indptr[e + 1]
        v = view(cfg, st)
        a = cs_ptr[e]
        b = cs_ptr[e + 1]
        status = ST_OK
        for c in range(K):
            preds[e, 1 + c] = np.nan
        t0 = st[S_T]
        h = 1.0         # the example's weight: VW's last cost's when learned (0 for a class without a cost)
        best = -1
        best_score = NO_COST
        if b > a:
            for j in range(a, b):
                lbl, c, why = cost_class(st, cs_cls[j], K)
                if why != ST_OK:
                    status = why
                if c < 0:
                    continue
                x = cs_cost[j]
                if learning:
                    h = 0.0 if x == NO_COST else 1.0
                if learning and bounds_follow and x != NO_COST:    # VW's scorer widens them first (not by FLT_MAX)
                    widen_bounds(st, x)
                raw = class_score(idx, val, s, f, table, cfg, v, weight, W, mask, c)
                if raw - raw != 0.0:
                    ctr[C_NONFINITE] = 1.0
                if learning and x != NO_COST:
                    learn_class(idx, val, s, f, table, prm, iprm, cfg, st, code, clamp_score(st, raw), x, tau, 1.0,
                                W, mask, slots, c, t0, learn)
                preds[e, 1 + c] = raw
                if best < 0 or raw < best_score or (raw == best_score and lbl < best):
                    best = lbl
                    best_score = raw
        else:
            first = 0 if st[S_INDEX_MODE] == 0.0 else 1
            for c in range(K):
                raw = class_score(idx, val, s, f, table, cfg, v, weight, W, mask, c)
                if raw - raw != 0.0:
                    ctr[C_NONFINITE] = 1.0
                preds[e, 1 + c] = raw
                if best < 0 or raw < best_score:
                    best = c + first
                    best_score = raw
        if learning:
            st[S_T] = t0 + h
        if best < 0:
            best = 0 if st[S_INDEX_MODE] == 0.0 else 1
        lval = 0.0
        if labeled:     # the predicted class's cost less the least cost (VW's cs loss)
            chosen = NO_COST
            least = NO_COST
            for j in range(a, b):
                lbl, c, why = cost_label_only(st, cs_cls[j], K)
                if lbl == best:
                    chosen = cs_cost[j]
                if cs_cost[j] < least:
                    least = cs_cost[j]
            lval = (chosen - least) * h
        preds[e, 0] = float(best)
        preds[e, K + 1] = status
        if ctr[C_NONFINITE] != 0.0:
            diverged_at(ctr, e)
        account(ctr, labeled, holdout, h, 0.0, lval, nfeat[e])
        if at_progress_row(ctr):
            return e + 1
    return end


@njit(cache=True, nogil=True)
def cost_label_only(st, lbl, K):
    """``cost_class`` without deciding the indexing (it is decided): the class as labelled."""
    mode = st[S_INDEX_MODE]
    if mode == 0.0:
        if lbl >= K:
            return 0, 0, ST_OUT_OF_RANGE
        return lbl, lbl, ST_OK
    if mode == 1.0 and (lbl < 1 or lbl > K):
        return K, K - 1, ST_OUT_OF_RANGE
    return lbl, lbl - 1, ST_OK



# ----------------------------------------------------------------------------- multilabel (--multilabel_oaa K)

@njit(nogil=True, inline="always")
def multilabel_loop(block, state, start, end, cfg, view, weight, learn):
    """VW's multilabel one-against-all (multilabel_oaa.cc, ``--multilabel_oaa K``) of examples
    start..end-1 over a binary learner (``csoaa_loop``'s arguments; the label sets in the block's
    costs, classes 0..K-1 in the label's order).

    Class i = 0..K-1 in turn: its score (a dot product over its slots) clamped to the prediction
    bounds, and when training a labeled example (not holdout), the bounds widened by its label and one
    step of the learner (importance 1, its own normalizer sums) towards +1 when i is the next class of
    the label set, else -1 (VW walks the set in its order: a class given out of order or outside
    0..K-1 is never matched). The predicted set is the classes of positive score; with
    ``I_NO_SET`` (VW's --probabilities) none is (VW then predicts the probabilities only). The loss
    is the size of the symmetric difference of the predicted and given sets (VW's walk of the two);
    every example weighs 1."""
    indptr, idx, val, labels, weights, bases, nfeat, preds, cs_ptr, cs_cls, cs_cost = block
    table, prm, iprm, st, ctr = state
    code = iprm[I_LOSS]
    tau = prm[P_TAU]
    bounds_follow = iprm[I_FIXED_BOUNDS] == 0
    no_set = iprm[I_NO_SET] != 0
    K = iprm[I_CLASSES]
    W = iprm[I_CLASS_W]
    train = iprm[I_TRAIN] != 0
    mask = np.int64(table.shape[0] - 1)
    slots = np.empty(max_features(indptr, start, end), np.int64)
    for e in range(start, end):
        labeled = labels[e] == labels[e]
        ctr[C_PASS_EX] += 1.0
        holdout = train and held_out(ctr[C_PASS_EX], iprm[I_HOLDOUT])
        learning = train and not holdout and labeled
        s = indptr[e]
        f = indptr[e + 1]
        v = view(cfg, st)
        a = cs_ptr[e]
        b = cs_ptr[e + 1]
        t0 = st[S_T]
        nxt = a
        status = ST_OK
        for c in range(K):
            y = -1.0
            if nxt < b and cs_cls[nxt] == c:
                y = 1.0
                nxt += 1
            if learning and bounds_follow:
                widen_bounds(st, y)
            raw = class_score(idx, val, s, f, table, cfg, v, weight, W, mask, c)
            if raw - raw != 0.0:
                ctr[C_NONFINITE] = 1.0
            p = clamp_score(st, raw)
            if learning:
                learn_class(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, 1.0, W, mask, slots, c, t0,
                            learn)
            preds[e, 1 + c] = p
        if learning:
            st[S_T] = t0 + 1.0
            if nxt < b:
                status = ST_OUT_OF_RANGE
        lval = 0.0
        if labeled:     # the symmetric difference, walking both sets as VW does
            i = 0
            g = a
            while i < K and g < b:
                while i < K and (no_set or not preds[e, 1 + i] > 0.0):
                    i += 1
                if i >= K:
                    break
                if i < cs_cls[g]:
                    i += 1
                    lval += 1.0
                elif i > cs_cls[g]:
                    g += 1
                    lval += 1.0
                else:
                    i += 1
                    g += 1
            lval += b - g
            while i < K:
                if not no_set and preds[e, 1 + i] > 0.0:
                    lval += 1.0
                i += 1
        preds[e, 0] = 0.0
        preds[e, K + 1] = status
        if ctr[C_NONFINITE] != 0.0:
            diverged_at(ctr, e)
        account(ctr, labeled, holdout, 1.0, 0.0, lval, nfeat[e])
        if at_progress_row(ctr):
            return e + 1
    return end


# ----------------------------------------------------------------------------- label-dependent features
# (--csoaa_ldf m|mc, --wap_ldf)

LDF_M = 0       # --csoaa_ldf m: each action's cost regressed
LDF_MC = 1      # --csoaa_ldf mc: each action classified: -1 for a least cost, else +1, weighted by the gap
LDF_WAP = 2     # --wap_ldf: weighted all pairs of actions
SHARED_CLASS = -1   # the class of a 'shared' line (streamlearn.io.costs; the reader merges it into its actions)
WAP_MIN_GAP = 1e-6  # VW's wap learns a pair only when their values differ by this much


@njit(cache=True, nogil=True, inline="always")
def group_end(grp, e):
    """One past the last row of row e's group (``grp``: the first row of each row's group)."""
    g = e + 1
    n = grp.shape[0]
    while g < n and grp[g] == grp[e]:
        g += 1
    return g


@njit(cache=True, nogil=True)
def group_labeled(cs_ptr, cs_cost, g0, g1):
    """VW's test of a multi-line example: labeled when every action has exactly one cost and none is
    a test cost (a class without a cost, FLT_MAX); otherwise it is predicted only."""
    for r in range(g0, g1):
        if cs_ptr[r + 1] - cs_ptr[r] != 1 or cs_cost[cs_ptr[r]] == NO_COST:
            return False
    return True


@njit(cache=True, nogil=True)
def wap_values(cs_ptr, cs_cost, g0, g1):
    """VW's weighted-all-pairs values of a group's actions: with the costs sorted c_(0) <= c_(1) <= ...,
    v_(0) = 0 and v_(i) = v_(i-1) + (c_(i) - c_(i-1)) / i (float32, as VW)."""
    m = g1 - g0
    costs = np.empty(m, np.float32)
    for r in range(m):
        costs[r] = cs_cost[cs_ptr[g0 + r]]
    order = np.argsort(costs, kind="mergesort")
    out = np.zeros(m, np.float32)
    for i in range(1, m):
        a = order[i - 1]
        b = order[i]
        out[b] = np.float32(out[a] + np.float32(costs[b] - costs[a]) / np.float32(i))
    return out


@njit(nogil=True, inline="always")
def pair_features(idx, val, s1, f1, s2, f2, slots, vals):
    """The features of action 1 followed by those of action 2 negated (VW's wap subtracts them by
    appending them with opposite values); returns their number."""
    n = 0
    for k in range(s1, f1):
        slots[n] = idx[k]
        vals[n] = val[k]
        n += 1
    for k in range(s2, f2):
        slots[n] = idx[k]
        vals[n] = -val[k]
        n += 1
    return n


@njit(nogil=True, inline="always")
def ldf_loop(block, state, start, end, cfg, view, weight, learn, kind):
    """VW's cost-sensitive learning with label-dependent features (csoaa_ldf.cc) of rows start..end-1 over
    a binary learner given by its ``view``, ``weight`` and ``learn`` (``csoaa_loop``'s arguments).

    A row is one action of a multi-line example (the reader merged its 'shared' line's features into
    each action and grouped the actions: ``grp``, the block's last array, holds the first row of each
    row's group), its cost the one cost of its label. At the first row of a group: the raw score of
    every action (a dot product over its features, no base), the prediction the class of the least
    score (the first such action; an action without a cost is not scored), its loss the predicted
    action's cost, counted once for the group (importance 1) with the group's features. A group is
    learned (training) when every action has one cost that is given; each row then learns in turn (so
    a call may stop inside a group and the next go on). Nothing is held out: VW's multi-line examples
    are learned and counted whatever their holdout mark. A row learns:

    * ``LDF_M``: towards its cost, importance 1;
    * ``LDF_MC``: towards -1 with importance (max - min cost) when its cost is the least, else towards
      +1 with importance (cost - min);
    * ``LDF_WAP``: for each later action whose wap value (``wap_values``) differs by WAP_MIN_GAP or
      more, towards -1 (its cost lower) or +1 on the two actions' feature difference, importance the
      values' gap.

    Each step first widens the prediction bounds by its label, takes its prediction clamped to them
    (from the weights as they are then) and leaves the learning-rate clock where it was: VW's
    multi-line examples do not advance it (its shared_data::update is not run for them), and a
    group that is not learned while training moves it back by 1 (VW's weighted unlabeled examples).
    ``preds`` columns: the group's predicted class, the action's raw score, its prediction while
    learning (NaN when not learned)."""
    indptr, idx, val, labels, weights, bases, nfeat, preds, cs_ptr, cs_cls, cs_cost, grp = block
    table, prm, iprm, st, ctr = state
    code = iprm[I_LOSS]
    tau = prm[P_TAU]
    bounds_follow = iprm[I_FIXED_BOUNDS] == 0
    train = iprm[I_TRAIN] != 0
    mask = np.int64(table.shape[0] - 1)
    most = max_features(indptr, 0, labels.shape[0])
    slots = np.empty(2 * most, np.int64)
    vals = np.empty(2 * most, val.dtype)
    for e in range(start, end):
        g0 = grp[e]
        g1 = group_end(grp, e)
        labeled = group_labeled(cs_ptr, cs_cost, g0, g1)
        v = view(cfg, st)
        if e == g0:
            ctr[C_PASS_EX] += 1.0
            best = 0
            least = NO_COST
            feats = 0
            for r in range(g0, g1):
                feats += nfeat[r]
                preds[r, 2] = np.nan
                preds[r, 1] = 0.0
                if cs_ptr[r + 1] == cs_ptr[r]:
                    continue
                raw = class_score(idx, val, indptr[r], indptr[r + 1], table, cfg, v, weight, 1, mask, 0)
                if raw - raw != 0.0:
                    ctr[C_NONFINITE] = 1.0
                preds[r, 1] = raw
                if raw < least:
                    least = raw
                    best = cs_cls[cs_ptr[r]]
            lval = 0.0
            for r in range(g0, g1):
                preds[r, 0] = best
            if labeled:
                for r in range(g0, g1):
                    hit = False
                    for j in range(cs_ptr[r], cs_ptr[r + 1]):
                        if cs_cls[j] == best:
                            hit = True
                    if hit:
                        lval = cs_cost[cs_ptr[r]]
                        break
            if ctr[C_NONFINITE] != 0.0:
                diverged_at(ctr, e)
            account(ctr, labeled, False, 1.0, 0.0, lval, feats)
            if train and not labeled:
                st[S_T] -= 1.0
        if train and labeled:
            t0 = st[S_T]
            s = indptr[e]
            f = indptr[e + 1]
            x = cs_cost[cs_ptr[e]]
            if kind == LDF_WAP:
                wap = wap_values(cs_ptr, cs_cost, g0, g1)
                for r in range(e + 1, g1):
                    gap = abs(wap[r - g0] - wap[e - g0])
                    if gap < WAP_MIN_GAP:
                        continue
                    y = -1.0 if x < cs_cost[cs_ptr[r]] else 1.0
                    n = pair_features(idx, val, s, f, indptr[r], indptr[r + 1], slots, vals)
                    if bounds_follow:
                        widen_bounds(st, y)
                    raw = class_score(slots, vals, 0, n, table, cfg, v, weight, 1, mask, 0)
                    learn(slots, vals, 0, n, table, prm, iprm, cfg, st, code, clamp_score(st, raw), y, tau,
                          np.float64(gap))
                    st[S_T] = t0
                    v = view(cfg, st)
            else:
                y = x
                h = weights[e]
                if kind == LDF_MC:
                    lo = NO_COST
                    hi = -NO_COST
                    for r in range(g0, g1):
                        c = cs_cost[cs_ptr[r]]
                        lo = min(lo, c)
                        hi = max(hi, c)
                    if x <= lo:
                        y = -1.0
                        h = h * (hi - lo)
                    else:
                        y = 1.0
                        h = h * (x - lo)
                if bounds_follow:
                    widen_bounds(st, y)
                p = clamp_score(st, class_score(idx, val, s, f, table, cfg, v, weight, 1, mask, 0))
                preds[e, 2] = p
                learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h)
                st[S_T] = t0
        if e == g1 - 1 and at_progress_row(ctr):
            return e + 1
    return end
