"""Slots of the arrays a learner kernel takes as a run's state, ``(table, prm, iprm, st, ctr)``, beside
the block ``(indptr, idx, val, labels, weights, bases, nfeat, preds)`` and the examples ``start, end``.

``prm``  (float64): real settings fixed for a run, resolved from the options once at set-up.
``iprm`` (int64):   integer settings (codes, flags, table columns, counts), resolved likewise.
``st``   (float64): the learner's state -- the learning-rate clock, the prediction bounds and the
shared machinery's scalars (named here), then the learner's own scalars, which its module declares
(``own_slots``). Every shared slot has one meaning.
``ctr``  (float64): the counters the progress table and summary print, which only the example loop
(``streamlearn.core.loop``) updates; no learner reads or writes them.

All four live in plain arrays so compiled kernels take a fixed, short argument list: a learner's new
state is a slot its module declares, not a new signature.
"""

# ----------------------------------------------------------------------------- prm: real settings
P_TAU = 0             # quantile tau
P_ETA0 = 1            # rate scale: eta * initial_t^power_t (initial_t > 0), else eta
P_POWER_T = 2
P_L1 = 3              # gravity g (tg), lambda of the L1 norm (fobos l1/elastic, smidas, subgradient)
P_THRESHOLD = 4       # theta (tg, rounding, subgradient), +inf by default
P_G0 = 5              # initial sum of squared gradients of every weight (adaptive with initial_t > 0)
P_RADIUS = 6          # l1ball: radius z of the L1 ball; eg: the total z of w+ and w-
P_L2 = 7              # fobos, ftrl: lambda of the squared L2 norm lambda/2 ||w||^2 (fobos l2sq, elastic)
P_LAMBDA = 8          # fobos: lambda of the L2 norm (l2) or the Linf norm (linf)
P_PNORM = 9           # smidas: p of the p-norm link function
P_FTRL_ALPHA = 10     # ftrl: alpha of the per-coordinate rate alpha / (beta + sqrt(n_i))
P_FTRL_BETA = 11      # ftrl: beta
P_L2_BALL = 12        # fobos l2sq, pegasos: radius R of the L2 ball projected onto after every step (inf: none)
P_FG_EPSILON = 13     # freegrad: epsilon, the initial wealth (VW --fepsilon)
P_FG_LIPSCHITZ = 14   # freegrad: the known bound on the gradients (VW --flipschitz_const; 0: none)
P_REBASE = 15         # tg: releases between two rebases of the stamped penalty (learners.tg.rebase_every)
N_PRM = 16

# ----------------------------------------------------------------------------- iprm: integer settings
I_LOSS = 0            # loss code (streamlearn.core.losses)
I_LRQ_DROPOUT = 1     # --lrqdropout: 1 = VW's dropout of the latent weights
I_HOLDOUT = 2         # holdout period (0 = off; -N: the examples after the N-th, --holdout-after N)
I_TRAIN = 3           # 1 = learn, 0 = predict only
I_FIXED_BOUNDS = 4    # 1 = prediction bounds do not follow the labels
I_BINARY = 5          # 1 = report 0/1 loss of sign predictions
I_ADAPTIVE = 6        # 1 = per-feature AdaGrad rates (VW --adaptive)
I_NORMALIZED = 7      # 1 = per-feature scale normalization (VW --normalized)
I_INVARIANT = 8       # 1 = importance-invariant closed-form updates (VW --invariant)
I_COL_G = 9           # table column of the squared-gradient sum (-1: none)
I_COL_N = 10          # table column of the largest |x| seen (-1: none)
I_COL_LAST = 11       # table column of the cumulative regularization at the last touch (-1: none)
I_COL_PEN = 12        # table column of the accrued penalty (cumulative penalty; -1: none)
I_COL_LAST2 = 13      # fobos elastic: table column of the second cumulative at the last touch
I_PERIOD = 14         # K (tg, rounding)
I_PROJECTION = 15     # l1ball: online projection method (PROJ_* codes)
I_BATCH = 16          # mini-batch size B (1: a step per example)
I_LRQ_SHIFT = 17      # --lrq/--lrqfa/--nn: VW's stride shift (a latent weight's random start is seeded with
                      # its index shifted so; --nn's hidden biases sit at VW's constant index shifted back)
I_SEED = 18           # --random-seed: mixed into every random choice (randomized pivots)
I_CLASSES = 19        # multiclass: K, the number of classes (0: a binary or regression model)
I_CLASS_W = 20        # multiclass: W, the smallest power of two >= K (class k of feature h is slot h*W+k)
I_NO_SET = 21         # multilabel: 1 = no predicted set (VW's --probabilities: the probabilities only)
I_COL_RATE = 22       # table column caching each weight's per-feature rate (-1: none; gd.rule_layout)
I_CLASS_FIRST = 23    # oaa: 1 = the class is predicted before the example decides the indexing (VW's plain class output)
I_NN_UNITS = 24       # --nn K: the hidden units (0: none)
I_NN_FLAGS = 25       # --nn: 1 = --dropout, 2 = --inpass (streamlearn.core.nn)
I_COL_ACC = 26        # tg: table column of the stamped penalty a = P - (LAST - C) r (-1: none; learners.tg)
I_STAMPS = 27         # tg under --sgd: the st slot of the first block stamp (-1: none; learners.tg, 4.5 B a slot)
N_IPRM = 28

# ----------------------------------------------------------------------------- st: learner state
# The slots every learner shares (the clock, the bounds, the normalizer, and the state of the shared
# machinery: mini-batches, the non-zero list, the regularizers' cumulative, the projection's heap);
# a learner's own slots follow them (``own_slots``).
S_T = 0               # learning-rate clock: initial_t + weighted learned examples
S_ETA = 1             # current rate scale (P_ETA0 x decay^pass)
S_NLEARN = 2          # number of learned examples
S_MIN_LABEL = 3       # prediction bounds
S_MAX_LABEL = 4
S_NORM_SUM = 5        # normalized: sum of h * sum_i (x_i/N_i)^2 over updates (VW normalized_sum_norm_x)
S_TOTAL_W = 6         # normalized: sum of h over updates (VW total_weight)
S_MULT = 7            # normalized: the global update multiplier of the last update
S_BATCH_EX = 8        # mini-batch (l1ball, fobos, eg): examples whose step is pending
S_BATCH_ROWS = 9      # mini-batch: rows with a pending step (listed in the table's list column)
S_BATCH_SCALE = 10    # mini-batch: sum of the batch's step scales (its prox strength)
S_NNZ = 11            # non-zero list (fobos linf, subgradient, smidas): number of listed weights
S_FOBOS_CUM = 12      # fobos, softmax: cumulative prox strength (l1: sum lambda eta; l2sq, elastic:
                      # sum log(1 + lambda eta))
S_FOBOS_CUM2 = 13     # fobos, softmax elastic: sum of l1 shrinks scaled by exp(S_FOBOS_CUM)
S_THETA = 14          # l1 ball projection: cumulative shift Theta of the stored weights
S_HSIZE = 15          # l1 ball projection: number of non-zero weights (entries of the heap)
S_HSUM = 16           # l1 ball projection: sum of their stored keys
S_INDEX_MODE = 17     # multiclass: labels in force: 0-indexed (0), 1-indexed (1), or not detected yet (2)
N_SHARED = 18         # a learner's own slots start here
N_ST = 32
#: multiclass: st[N_ST + 2k] and st[N_ST + 2k + 1] hold class k's normalizer sums (S_NORM_SUM and
#: S_TOTAL_W while class k learns; VW keeps one normalizer per class, vw-spec-2.md §2e)


def own_slots(*names: str) -> dict:
    """A learner's own state slots, name -> slot, declared in its module (``tg``: ``own_slots("gravity",
    "pending")``). One learner runs at a time, so every learner's own slots start after the shared
    ones; the module keeps the numbers as constants for its kernels, and its spec lists them
    (``LearnerSpec.slots``) for the Python side (models, views)."""
    if N_SHARED + len(names) > N_ST:
        raise ValueError(f"{len(names)} own state slots: at most {N_ST - N_SHARED}")
    if len(set(names)) != len(names):
        raise ValueError(f"state slot names repeat: {names}")
    return {name: N_SHARED + k for k, name in enumerate(names)}


# ----------------------------------------------------------------------------- ctr: report counters
# (VW's shared_data) updated by the example loop only
C_EXAMPLES = 0        # non-holdout examples
C_W_LABELED = 1
C_W_UNLABELED = 2
C_W_LABELS = 3        # weighted sum of (loss-space) labels
C_SUM_LOSS = 4
C_SUM_LOSS_SINCE = 5
C_OLD_W_LABELED = 6
C_FEATURES = 7        # total feature count (non-holdout)
C_HO_W = 8            # holdout weight and loss: total, since last row, this pass
C_HO_LOSS = 9
C_HO_W_SINCE = 10
C_HO_LOSS_SINCE = 11
C_HO_W_PASS = 12
C_HO_LOSS_PASS = 13
C_PASS_EX = 14        # examples seen in this pass (holdout selection)
C_DUMP = 15           # next progress row when weighted examples reach this
C_LABEL1 = 16         # first and second distinct labels seen (best constant)
C_LABEL2 = 17
C_MANY_LABELS = 18    # more than two distinct labels seen
C_HAVE_LABEL1 = 19
C_HAVE_LABEL2 = 20
C_NONFINITE = 21      # set when a prediction was NaN or infinite
C_DIVERGED = 22       # 1 once a raw prediction or a weight an example's update wrote was not finite
C_DIVERGED_EX = 23    # that first example: its index in the block the kernel call was given
N_CTR = 24

# ----------------------------------------------------------------------------- l1ball projection
PROJ_TREE = 0         # un-shifted weights, cumulative shift and a heap: O(k log n) per example
PROJ_LINEAR = 1       # Figure 2 over the non-zero weights after every example: expected O(n)
PROJ_SORT = 2         # Figure 1 over the non-zero weights after every example: O(n log n)
