"""VW's low-rank quadratic features while learning (``--lrq``, ``--lrqfa``; VW's lrq.cc and lrqfa.cc over its
gd): the example loop of ``streamlearn.core.loop`` for examples whose extra features are made of weights.

The options and the weights' layout are in ``streamlearn.features.lowrank``: a feature h's weights are the
row of W slots from h*W (its own weight in slot 0, its latent weights after it); the feature expansion
hands each example's features of the low-rank namespaces, by group, beside its CSR row
(``streamlearn.io.expand.lowrank_groups``). For one example this loop

1. builds the features the base learner sees: the example's own (slot ``(h*W) & mask``) and, for each
   pair and orientation (left L, right R): for each feature l of L and n = 1..k, l's latent weight
   w = table[(h_l*W + wbase + n) & mask] and, for each feature r of R, the feature of slot
   ``(h_r*W + fbase + n) & mask`` and value float32(float32(w x_l) x_r). While learning an example with a
   label, a latent weight still 0 first takes VW's random start: ``merand48`` seeded with VW's index of
   the weight (its unmasked slot shifted by VW's stride), times 0.5/sqrt(k) with --lrqfa;
2. predicts with them (the reported prediction, loss and -p output are this first one's);
3. learns twice when training an example with a label (VW's two iterations): first with the
   orientation of its parity (VW's example counter: every example of the run, one more at each pass's
   end), the left namespace's latent weights held fixed, then with the other orientation, predicted
   again with the updated weights (with --lrqfa the second orientation's features of a namespace take
   the first's indices, as VW's do: ``stale_indices``). Both steps see the same learning-rate clock (VW's
   t counts examples); the normalizer's sums take both, as VW's gd does. The base that scores and learns
   is the update rule's (``gd_base``) or, with --nn, the network's (``streamlearn.core.nn``). A held-out example is predicted as a test example
   is (the orientation of an even counter, no random starts: VW predicts it); one of weight 0 goes
   through both orientations (its latent weights start) without a step.

With --lrqdropout (VW's, --lrq only) a learned example keeps each left feature's n-th latent weight (drawn
anew in each round) when VW's generator, seeded with --random-seed | 8675309 and run on through the whole
run, draws more than 1/2, and a predicted one halves every latent weight.

The report counts the example's features as parsed (VW's num_features, set before the reduction).
"""

import math

import numpy as np
from numba import njit

from streamlearn.core.initial import _advance, _draw
from streamlearn.core.loop import begin_example, diverged_at, example_loss, finish_prediction, written_finite
from streamlearn.core.rules import gd_settings, sgd_learn
from streamlearn.core.state import (
    C_DUMP, C_W_LABELED, C_W_UNLABELED, I_BINARY, I_CLASS_W, I_FIXED_BOUNDS, I_HOLDOUT, I_LOSS, I_LRQ_DROPOUT,
    I_LRQ_SHIFT, I_SEED, I_TRAIN, P_TAU, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_T, own_slots,
)
from streamlearn.core.table import W as WCOL

#: the state slot counting the run's examples (VW's example_counter), which decides each example's
#: orientation; the learner running the loop (sgd) declares it as its own
SLOTS = own_slots("example_counter", "dropout_seeded", "dropout_seed_lo", "dropout_seed_hi",
                  "nn_seeded", "nn_seed_lo", "nn_seed_hi", "nn_dropout_seeded", "nn_dropout_seed_lo",
                  "nn_dropout_seed_hi")       # the nn_ ones: --nn's (core/nn.py)
S_COUNTER = SLOTS["example_counter"]
#: --lrqdropout: VW's generator state (64 bits in two halves), seeded on first use with --random-seed | 8675309
S_SEEDED = SLOTS["dropout_seeded"]
S_SEED_LO = SLOTS["dropout_seed_lo"]
S_SEED_HI = SLOTS["dropout_seed_hi"]
DROPOUT_SALT = 8675309


@njit(cache=True, nogil=True, inline="always")
def cheesyrand(x):
    """VW's ``cheesyrand``: the first draw of merand48 seeded with x (a float32 in [0, 1))."""
    return _draw(_advance(np.uint64(x)))


@njit(cache=True, nogil=True)
def generated_count(e, lptr, pairs, m):
    """How many low-rank features example e has in either orientation (sum over pairs of |A| k |B|)."""
    total = 0
    for p in range(pairs.shape[0]):
        a = pairs[p, 0]
        b = pairs[p, 1]
        total += (lptr[e * m + a + 1] - lptr[e * m + a]) * pairs[p, 2] * (lptr[e * m + b + 1] - lptr[e * m + b])
    return total


@njit(cache=True, nogil=True)
def lowrank_features(e, lptr, lidx, lval, pairs, m, which, init, table, W, mask, shift, out_i, out_v, out_t, pos,
                     drop, scale, seed):
    """Append example e's low-rank features of orientation parity ``which`` (step 1 of the module
    docstring) to out_i/out_v from ``pos``, the group each goes to (its right namespace) to out_t; with
    ``init`` a latent weight still 0 takes its random start first. With ``drop`` (--lrqdropout while
    learning) each left feature's n-th latent weight takes part only when VW's generator (``seed[0]``,
    advanced) draws more than 1/2; ``scale`` multiplies the latent weight (1/2 when --lrqdropout
    predicts). Returns the new end."""
    for p in range(pairs.shape[0]):
        k = pairs[p, 2]
        o = (which + pairs[p, 7]) % 2
        if o == 0:
            left, right, wb, fb = pairs[p, 0], pairs[p, 1], pairs[p, 3], pairs[p, 4]
        else:
            left, right, wb, fb = pairs[p, 1], pairs[p, 0], pairs[p, 5], pairs[p, 6]
        fa = pairs[p, 8] != 0
        sqrtk = np.float32(math.sqrt(k))
        ls = lptr[e * m + left]
        le = lptr[e * m + left + 1]
        rs = lptr[e * m + right]
        re = lptr[e * m + right + 1]
        for q in range(ls, le):
            lx = lval[q]
            lh = np.int64(lidx[q]) * W
            for n in range(1, k + 1):
                if drop:
                    seed[0] = _advance(seed[0])
                    if not _draw(seed[0]) > np.float32(0.5):
                        continue
                slot = (lh + wb + n) & mask
                if init and table[slot, WCOL] == 0.0:
                    r = cheesyrand(np.uint64(lh + wb + n) << np.uint64(shift))
                    if fa:
                        r = np.float32(np.float32(r * np.float32(0.5)) / sqrtk)
                    table[slot, WCOL] = r
                lw = np.float32(scale * np.float32(table[slot, WCOL]))
                lwx = np.float32(lw * lx)
                for t in range(rs, re):
                    out_i[pos] = (np.int64(lidx[t]) * W + fb + n) & mask
                    out_v[pos] = np.float32(lwx * lval[t])
                    out_t[pos] = right
                    pos += 1
    return pos


@njit(cache=True, nogil=True)
def stale_indices(out_i, out_t, a, n, g0_i, g0_t, n0, m, tmp):
    """VW's --lrqfa in its second orientation: after the first, VW cuts each namespace's values back but
    not its indices, so the j-th feature the second orientation appends to a namespace takes the index of
    the j-th the first appended to it, while there is one, and after those the index of the (j - that
    count)-th of its own. Rewrites the indices of the generated features out_*[a:n] (groups in out_t) so,
    from the first orientation's g0_i/g0_t[:n0]."""
    for j in range(a, n):
        tmp[j - a] = out_i[j]
    for x in range(m):
        c0 = 0
        b = 0
        for j in range(a, n):
            if out_t[j] != x:
                continue
            while c0 < n0 and g0_t[c0] != x:
                c0 += 1
            if c0 < n0:
                out_i[j] = g0_i[c0]
                c0 += 1
            else:
                while out_t[a + b] != x:
                    b += 1
                out_i[j] = tmp[b]
                b += 1


@njit(cache=True, nogil=True, inline="always")
def example_features(e, s, f, idx, val, lptr, lidx, lval, pairs, m, which, init, table, W, mask, shift,
                     out_i, out_v, out_t, drop, scale, seed):
    """The features the base learner sees for example e (its own in their slots, then its low-rank
    ones of orientation ``which``); returns their number. (VW appends the low-rank features to their
    namespace, which changes only the order of the score's sum; see docs/vw.md for the float32 ties.)"""
    pos = 0
    for q in range(s, f):
        out_i[pos] = (np.int64(idx[q]) * W) & mask
        out_v[pos] = val[q]
        pos += 1
    return lowrank_features(e, lptr, lidx, lval, pairs, m, which, init, table, W, mask, shift, out_i, out_v, out_t,
                            pos, drop, scale, seed)


@njit(cache=True, nogil=True, inline="always")
def raw_score(base, out_i, out_v, n, table):
    """The score base + sum_j w_j x_j (float64, as the other sgd kernels)."""
    acc = base
    for j in range(n):
        acc += table[out_i[j], WCOL] * out_v[j]
    return acc


@njit(cache=True, nogil=True, inline="always")
def gd_base(rows, xs, n, base, table, prm, iprm, cfg, st, code, y, tau, h, learn_it, t0, aux):
    """``lowrank_loop``'s base of the plain rule: the raw score of the features rows/xs[:n] (rows of the
    weight column), then, when learned, one step of the rule (sgd) from the score clamped to the label
    bounds, at the example's clock t0. Returns the raw score."""
    raw = raw_score(base, rows, xs, n, table)
    if learn_it:
        p = raw if raw == raw else 0.0
        if p < st[S_MIN_LABEL]:
            p = st[S_MIN_LABEL]
        if p > st[S_MAX_LABEL]:
            p = st[S_MAX_LABEL]
        st[S_T] = t0
        sgd_learn(rows, xs, 0, n, table, prm, iprm, cfg, st, code, p, y, tau, h)
    return raw


@njit(nogil=True, inline="always")
def lowrank_loop(block, state, start, end, cfg, base_step, aux):
    """Predict, score and (when training) learn examples start..end-1 with low-rank features over the
    base ``base_step(rows, xs, n, base, table, prm, iprm, cfg, st, code, y, tau, h, learn_it, t0, aux)``,
    which scores the features (rows of the weight column) and learns them when asked, returning the raw
    score (``gd_base``; --nn's in ``streamlearn.core.nn``) (module docstring; the bookkeeping is
    ``streamlearn.core.loop``'s). Returns the next example (early at a progress row)."""
    indptr, idx, val, labels, weights, bases, nfeat, preds, lptr, lidx, lval, pairs = block
    table, prm, iprm, st, ctr = state
    code = iprm[I_LOSS]
    tau = prm[P_TAU]
    holdout_period = iprm[I_HOLDOUT]
    train = iprm[I_TRAIN] != 0
    bounds_follow = iprm[I_FIXED_BOUNDS] == 0
    binary = iprm[I_BINARY] != 0
    W = np.int64(iprm[I_CLASS_W])
    shift = iprm[I_LRQ_SHIFT]
    mask = np.int64(table.shape[0] - 1)
    m = (lptr.shape[0] - 1) // max(labels.shape[0], 1)
    out_i = np.empty(64, np.int64)
    out_v = np.empty(64, np.float32)
    out_t = np.empty(64, np.int64)
    g0_i = np.empty(64, np.int64)
    g0_t = np.empty(64, np.int64)
    tmp = np.empty(64, np.int64)
    field_aware = pairs.shape[0] > 0 and pairs[0, 8] != 0
    n0 = 0
    dropout = iprm[I_LRQ_DROPOUT] != 0
    seed = np.zeros(1, np.uint64)
    if dropout:
        if st[S_SEEDED] == 0.0:
            seed[0] = np.uint64(iprm[I_SEED]) | np.uint64(DROPOUT_SALT)
        else:
            seed[0] = np.uint64(st[S_SEED_LO]) | (np.uint64(st[S_SEED_HI]) << np.uint64(32))
    for e in range(start, end):
        h = weights[e]
        y, labeled, holdout = begin_example(ctr, st, code, labels[e], train, holdout_period, bounds_follow)
        s = indptr[e]
        f = indptr[e + 1]
        counter = np.int64(st[S_COUNTER])
        st[S_COUNTER] += 1.0
        learning = train and labeled and not holdout      # VW learns it (a held-out example is predicted)
        which = counter if learning else 0
        need = f - s + generated_count(e, lptr, pairs, m)
        if need > out_i.shape[0]:
            out_i = np.empty(2 * need, np.int64)
            out_v = np.empty(2 * need, np.float32)
            out_t = np.empty(2 * need, np.int64)
            g0_i = np.empty(2 * need, np.int64)
            g0_t = np.empty(2 * need, np.int64)
            tmp = np.empty(2 * need, np.int64)
        learn_it = learning and h > 0.0
        drop = dropout and learning
        scale = np.float32(0.5) if dropout and not learning else np.float32(1.0)
        t0 = st[S_T]
        nlearn = st[S_NLEARN]
        for it in range(2 if learning else 1):
            n = example_features(e, s, f, idx, val, lptr, lidx, lval, pairs, m, which + it, learning, table, W,
                                 mask, shift, out_i, out_v, out_t, drop, scale, seed)
            if field_aware:
                if it == 0 and learning:
                    for j in range(f - s, n):
                        g0_i[j - (f - s)] = out_i[j]
                        g0_t[j - (f - s)] = out_t[j]
                    n0 = n - (f - s)
                elif it == 1:
                    stale_indices(out_i, out_t, f - s, n, g0_i, g0_t, n0, m, tmp)
            raw = base_step(out_i, out_v, n, bases[e], table, prm, iprm, cfg, st, code, y, tau, h, learn_it, t0, aux)
            if it == 0:
                if raw - raw != 0.0:
                    diverged_at(ctr, e)
                preds[e] = finish_prediction(ctr, st, raw, code, y, tau, h, labeled, holdout, binary, nfeat[e],
                                             example_loss)
            if learn_it and not written_finite(table, out_i, 0, n):
                diverged_at(ctr, e)
        if learn_it:
            st[S_T] = t0 + h
            st[S_NLEARN] = nlearn + 1.0
        if dropout:
            st[S_SEEDED] = 1.0
            st[S_SEED_LO] = np.float64(seed[0] & np.uint64(0xFFFFFFFF))
            st[S_SEED_HI] = np.float64(seed[0] >> np.uint64(32))
        if ctr[C_W_LABELED] + ctr[C_W_UNLABELED] >= ctr[C_DUMP]:
            return e + 1
    return end


@njit(cache=True, nogil=True)
def lowrank_sgd_block(block, state, start, end):
    """Examples start..end-1 with low-rank features over gradient descent under the update rule (sgd;
    also every low-rank model's prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    return lowrank_loop(block, state, start, end, gd_settings(prm, iprm), gd_base, 0)


def end_pass(cfg, table, st) -> None:
    """VW's example counter counts the example that ends a pass too."""
    st[S_COUNTER] += 1.0
