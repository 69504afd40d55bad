"""Slots of the two small arrays every learner kernel takes besides the data and the weight table.

``prm`` (float64): settings fixed for a run, resolved from the options once at set-up.
``st``  (float64): everything that changes while learning -- the learner's global scalars (the
learning-rate clock, the cumulative regularization of the lazy table, ...) and the counters the
progress table and summary print. Both live in plain arrays so compiled kernels take a fixed,
short argument list and later learners add slots here instead of changing signatures.
"""

# ----------------------------------------------------------------------------- prm: settings
P_LOSS = 0            # loss code (streamlearn.kernels.losses)
P_TAU = 1             # quantile tau
P_ALGO = 2            # learner code (streamlearn.learners)
P_ETA0 = 3            # rate scale: eta * initial_t^power_t (initial_t > 0), else eta
P_POWER_T = 4
P_L1 = 5              # gravity g (tg)
P_THRESHOLD = 6       # theta (tg), +inf by default
P_PERIOD = 7          # K (tg)
P_HOLDOUT = 8         # holdout period (0 = off)
P_TRAIN = 9           # 1 = learn, 0 = predict only
P_FIXED_BOUNDS = 10   # 1 = prediction bounds do not follow the labels
P_BINARY = 11         # 1 = report 0/1 loss of sign predictions
P_ADAPTIVE = 12       # 1 = per-feature AdaGrad rates (VW --adaptive)
P_NORMALIZED = 13     # 1 = per-feature scale normalization (VW --normalized)
P_INVARIANT = 14      # 1 = importance-invariant closed-form updates (VW --invariant)
P_G0 = 15             # initial sum of squared gradients of every weight (adaptive with initial_t > 0)
P_COL_G = 16          # table column of the squared-gradient sum (-1: none)
P_COL_N = 17          # table column of the largest |x| seen (-1: none)
P_COL_LAST = 18       # table column of the cumulative regularization at the last touch (-1: none)
P_COL_PEN = 19        # table column of the accrued penalty (cumulative penalty; -1: none)
P_RADIUS = 20         # l1ball: radius z of the L1 ball
P_PROJECTION = 21     # l1ball: online projection method (PROJ_* codes)
P_BATCH = 22          # mini-batch size B (1: a step per example)
P_REG = 23            # fobos: regularizer (REG_* codes)
P_L2 = 24             # fobos: lambda of the squared L2 norm (l2sq, elastic)
P_LAMBDA = 25         # fobos: lambda of the L2 norm (l2) or the Linf norm (linf)
P_COL_LAST2 = 26      # fobos elastic: table column of the second cumulative at the last touch
P_PNORM = 27          # smidas: p of the p-norm link function
P_SEED = 28           # --random-seed: mixed into every random choice (randomized pivots)
N_PRM = 32

# ----------------------------------------------------------------------------- st: state
S_T = 0               # learning-rate clock: initial_t + weighted learned examples
S_ETA = 1             # current rate scale (P_ETA0 x decay^pass)
S_CUM = 2             # cumulative regularization of the lazy table (tg: released gravity)
S_PENDING = 3         # tg: gravity accrued in the current period, not released yet
S_NLEARN = 4          # number of learned examples
S_MIN_LABEL = 5       # prediction bounds
S_MAX_LABEL = 6
S_NONFINITE = 7       # set when a prediction was NaN or infinite
# counters reported in the progress table and summary (VW's shared_data)
S_EXAMPLES = 8        # non-holdout examples
S_W_LABELED = 9
S_W_UNLABELED = 10
S_W_LABELS = 11       # weighted sum of (loss-space) labels
S_SUM_LOSS = 12
S_SUM_LOSS_SINCE = 13
S_OLD_W_LABELED = 14
S_FEATURES = 15       # total feature count (non-holdout)
S_HO_W = 16           # holdout weight and loss: total, since last row, this pass
S_HO_LOSS = 17
S_HO_W_SINCE = 18
S_HO_LOSS_SINCE = 19
S_HO_W_PASS = 20
S_HO_LOSS_PASS = 21
S_PASS_EX = 22        # examples seen in this pass (holdout selection)
S_DUMP = 23           # next progress row when weighted examples reach this
S_LABEL1 = 24         # first and second distinct labels seen (best constant)
S_LABEL2 = 25
S_MANY_LABELS = 26    # more than two distinct labels seen
S_HAVE_LABEL1 = 27
S_HAVE_LABEL2 = 28
S_NORM_SUM = 29       # normalized: sum of h * sum_i (x_i / N_i)^2 over updates (VW normalized_sum_norm_x)
S_TOTAL_W = 30        # normalized: sum of h over updates (VW total_weight)
S_MULT = 31           # normalized: the global update multiplier of the last update
S_HSIZE = 32          # l1ball: number of non-zero weights (entries of the heap)
S_HSUM = 33           # l1ball: sum of their stored keys (the shift Theta is S_CUM)
S_BATCH_EX = 34       # mini-batch: examples whose step is pending
S_BATCH_ROWS = 35     # mini-batch: rows with a pending step (listed in the table's list column)
S_CUM2 = 36           # fobos: second cumulative (elastic: sum of l1 shrinks scaled by exp(S_CUM))
S_SCALE = 37          # fobos l2: global scale sigma of the stored weights (weight = sigma * stored)
S_SQNORM = 38         # fobos l2: squared norm of the stored weights
S_EPOCH = 39          # fobos l2: weights stored in an earlier epoch are 0 (the prox zeroed the vector)
S_EG_M = 40           # eg: reference log-weight M (the normalizer is kept as sum exp(phi - M))
S_EG_D = 41           # eg: sum over all 2d entries of exp(phi - M) - exp(-M)
S_SINCE = 42          # updates since a running sum was last recomputed from scratch
S_BATCH_SCALE = 43    # mini-batch: sum of the batch's step scales (its prox strength)
S_NNZ = 44            # fobos linf, subgradient, smidas: number of listed non-zero weights
S_XI1 = 45            # smidas: sum_j (|theta_j| / M)^p, M = st[S_XIMAX]
S_XIMAX = 46          # smidas: M = max_j |theta_j|
N_ST = 48

# ----------------------------------------------------------------------------- learner codes
A_SGD = 0             # plain stochastic gradient descent
A_TG = 1              # truncated gradient (Langford, Li & Zhang 2009)
A_L1BALL = 2          # projected SGD onto the L1 ball (Duchi et al. 2008)
A_FOBOS = 3           # forward-backward splitting (Duchi & Singer 2009)
A_EG = 4              # exponentiated gradient with positive and negative weights (Duchi et al. 2008, eq. 13)
A_SMIDAS = 5          # stochastic mirror descent made sparse (Shalev-Shwartz & Tewari 2009, Algorithm 3)
A_ROUNDING = 6        # SGD with coefficient rounding every K steps (Langford, Li & Zhang 2009, Section 3.1)
A_SUBGRADIENT = 7     # L1-regularized subgradient (Langford, Li & Zhang 2009, Section 3.2)
A_SCD = 8             # stochastic coordinate descent, a batch method (Shalev-Shwartz & Tewari 2009, Algorithm 2)

# ----------------------------------------------------------------------------- fobos regularizers
REG_L1 = 0            # lambda ||w||_1, eq. 6 (lazy, per coordinate)
REG_L2SQ = 1          # lambda/2 ||w||_2^2, eq. 7 (lazy, per coordinate)
REG_ELASTIC = 2       # both: l1 shrink, then l2sq scaling (lazy, per coordinate)
REG_L2 = 3            # lambda ||w||_2, Section 4 (a global factor)
REG_LINF = 4          # lambda ||w||_inf, eq. 8 (dual L1 projection over the non-zero weights)
REG_SUBGRADIENT = 5   # --algo subgradient: w -= eta lambda sgn(w) over the non-zero weights

# ----------------------------------------------------------------------------- l1ball projection
PROJ_TREE = 0         # un-shifted weights, cumulative shift and a heap: O(k log n) per example
PROJ_LINEAR = 1       # Figure 2 over the non-zero weights after every example: expected O(n)
PROJ_SORT = 2         # Figure 1 over the non-zero weights after every example: O(n log n)
