"""In-memory batch and mini-batch solvers for the constrained and regularized problems of the papers'
batch experiments: per-class L1 balls (optionally sign-constrained), per-class exponentiated gradient,
FOBOS on the weight matrix, and a backtracking line search for full-gradient steps.

The streaming learners (``streamlearn train``) see each example once per pass and keep their state in
the hashed table. The experiments of Duchi, Shalev-Shwartz, Singer & Chandra 2008 (Section 7,
Figures 4, 5 and 7) and of Duchi & Singer 2009 (Section 7, Figure 3, Table 1) instead take steps on
the gradient of the whole training set, or of a random fraction of it, and compare methods per
gradient computation. That needs the data in memory, and class-specific constraints (eq. 12 below)
that do not fit a hashed row layout; so these solvers work on a matrix ``X`` (a NumPy array or a
SciPy sparse matrix, ``n x d``) and a dense weight matrix ``W`` (``d x K``), with NumPy/SciPy
products (the work is matrix products, which BLAS does better than a loop of ours).

**Problem.** ``min_W F(W) = (1/n) sum_i loss(x_i W, y_i) + R(W)``, where the scores of an example
are ``s = x W`` (K of them) and

* ``loss="softmax"`` (K classes, labels 0..K-1): ``log sum_r exp(s_r) - s_y``, the multiclass
  logistic loss of Duchi et al. 2008 eq. 12, ``log(1 + sum_{r != y} exp(s_r - s_y))``;
* ``loss="logistic"`` (K = 1, labels -1/+1): ``log(1 + exp(-y s))``;
* ``loss="squared"`` (K = 1, real labels): ``(s - y)^2`` (streamlearn's squared loss).

**Methods** (``method``):

* ``"l1"``: projected gradient (Duchi et al. 2008, Section 7): ``W <- Proj_C(W - eta_t G)`` with C
  the product over classes j of ``{w_j : ||w_j||_1 <= z}`` (``radius=z``), or with ``signs`` of
  ``{w_j : signs_j * w_j >= 0, ||w_j||_1 <= z}``. ``signs="nonneg"`` is ``w_j >= 0`` (eq. 12's
  ``w_j >= 0``); an array ``(d, K)`` of +-1 gives every weight its own sign, as the kernel features
  of Fig. 7 need: there ``k(x, j) = sum_i w_ji sigma_ji K(x_i, x)`` with ``w_j >= 0`` and
  ``sigma_ji = +1`` if support point i is of class j and -1 otherwise, which is our shared features
  ``K(x_i, x)`` with weights ``sigma_ji w_ji``, i.e. ``signs[i, j] = sigma_ji``. The projection is
  the sort-based one of Figure 1 (the threshold theta of the simplex projection), per column.
* ``"eg"``: exponentiated gradient on the simplex of radius z per class (Kivinen & Warmuth 1997, as
  in Duchi et al. 2008 Section 7): ``u_j <- z u_j exp(-eta_t g_j) / Z_j``. With ``signs`` the
  weights are ``signs * u`` (the positive simplex when "nonneg"); without, EG+- (``w = u+ - u-`` with
  ``||u+||_1 + ||u-||_1 = z``). Starts at the uniform point.
* ``"fobos"``: FOBOS (Duchi & Singer 2009, eq. 2-3): ``W <- prox_{eta_t lam r}(W - eta_t G)`` with
  ``reg`` ``"l1"`` (lam ||W||_1, eq. 6), ``"l1l2"`` (lam sum_rows ||row||_2, Section 4 / eq. 9) or
  ``"l1linf"`` (lam sum_rows ||row||_inf, eq. 8's dual: ``row - Proj_{||.||_1 <= eta lam}(row)``).

**Steps.** ``batch`` is the fraction of the training set per step (1.0: the full gradient). Each
epoch draws a seeded permutation and cuts it into consecutive batches of ``max(1, round(batch n))``
examples (the last one may be smaller). ``eta_t = eta0`` (``schedule="const"``), ``eta0/sqrt(t)``
("sqrt") or ``eta0/t`` ("inv"), t = 1, 2, ... the step.

``line_search=True`` (full gradient only; ``"l1"`` and ``"fobos"``): backtracking (Beck & Teboulle
2009's condition, the "L1-Line" of Duchi et al. 2008 Fig. 4/5): try ``eta = 2 eta_prev`` (``eta0``
first), take ``W+ = step(W, eta)``, and halve eta until ``f(W+) <= f(W) + <G, W+ - W> +
||W+ - W||^2 / (2 eta)`` for the smooth part f. Since W+ minimises the right side plus R (plus the
constraint) and W is feasible, F(W+) <= F(W): the objective never increases. ``accelerate=True``
takes MFISTA's steps instead (Beck & Teboulle 2009's monotone FISTA: the backtracked step from an
extrapolated point, then the better of it and the previous iterate), still never increasing F; on the
LandSat stand-in it converged in 5-10x fewer steps.

**Counts.** ``examples``: gradient computations (examples whose gradient was taken); ``accesses``:
feature entries read, once per example per gradient (as streamlearn's ``--objective`` counts a pass)
and once more per function value of the line search; wall time excludes
the recorded evaluations (objective, test error), which are not counted.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from streamlearn.regularizers import REGULARIZERS, simplex_threshold  # noqa: F401 (batch.simplex_threshold)

LOSSES = ("squared", "logistic", "softmax")
METHODS = ("l1", "eg", "fobos")
REGS = tuple(name for name, r in REGULARIZERS.items() if r.prox is not None)
SCHEDULES = ("const", "sqrt", "inv")


# ----------------------------------------------------------------------------- losses

def loss_and_gradient(S: np.ndarray, y: np.ndarray, loss: str) -> tuple[float, np.ndarray]:
    """The summed loss of the scores S (b x K) and its derivative with respect to S."""
    if loss == "softmax":
        m = S.max(axis=1, keepdims=True)
        E = np.exp(S - m)
        Z = E.sum(axis=1, keepdims=True)
        rows = np.arange(S.shape[0])
        total = float(np.sum(np.log(Z[:, 0]) + m[:, 0] - S[rows, y]))
        D = E / Z
        D[rows, y] -= 1.0
        return total, D
    s = S[:, 0]
    if loss == "logistic":
        z = y * s
        total = float(np.sum(np.logaddexp(0.0, -z)))
        d = -y * np.exp(-np.logaddexp(0.0, z))          # -y / (1 + e^{ys}), without overflow
    else:
        r = s - y
        total = float(r @ r)
        d = 2.0 * r
    return total, d[:, None]


def scores(X, W: np.ndarray) -> np.ndarray:
    """x W for every row of X (n x K)."""
    return np.asarray(X @ W)


def predict(X, W: np.ndarray, loss: str) -> np.ndarray:
    """Class indices (softmax), signs (logistic) or values (squared)."""
    S = scores(X, W)
    if loss == "softmax":
        return S.argmax(axis=1)
    return np.where(S[:, 0] > 0, 1.0, -1.0) if loss == "logistic" else S[:, 0]


# ----------------------------------------------------------------------------- projections and proxes

def project_columns(W: np.ndarray, z: float, signs: np.ndarray | None) -> np.ndarray:
    """Each column onto ``{w: ||w||_1 <= z}``, or with signs onto ``{w: signs * w >= 0, ||w||_1 <= z}``
    (the orthant first: entries of the wrong sign become 0; then the simplex threshold)."""
    if signs is None:
        A = np.abs(W)
        return np.sign(W) * np.maximum(A - simplex_threshold(A, z), 0.0)
    U = np.maximum(signs * W, 0.0)
    return signs * np.maximum(U - simplex_threshold(U, z), 0.0)


def prox(W: np.ndarray, reg: str, a: float) -> np.ndarray:
    """The prox of strength a of lam r (a = eta lam) on W (rows are features): l1 soft threshold;
    l1l2 ``row [1 - a/||row||_2]_+``; l1linf ``row - Proj_{||.||_1 <= a}(row)``, i.e. every |w| capped
    at the row's threshold, the zero row when ||row||_1 <= a (Duchi & Singer 2009, eq. 6, 9, 8;
    ``streamlearn.regularizers``)."""
    if a <= 0.0:
        return W
    return REGULARIZERS[reg].prox(W, a)


# ----------------------------------------------------------------------------- the solver

@dataclass
class BatchResult:
    """The weights (d x K) and the recorded curve: one entry per recorded step."""

    W: np.ndarray
    history: dict = field(default_factory=dict)
    steps: int = 0
    examples: int = 0
    accesses: int = 0
    seconds: float = 0.0


def _entries(X) -> int:
    """The feature entries of X (its non-zeros)."""
    return int(X.nnz) if hasattr(X, "nnz") else int(np.count_nonzero(X))


def _check(X, y, loss, method, reg, schedule, batch, radius, lam, signs, line_search, classes):
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)} (got {loss!r})")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)} (got {method!r})")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)} (got {schedule!r})")
    if not 0.0 < batch <= 1.0:
        raise ValueError(f"batch must be a fraction of the training set in (0, 1] (got {batch})")
    if method in ("l1", "eg") and not (radius is not None and 0.0 < radius < math.inf):
        raise ValueError(f"method {method!r} needs a radius z > 0 (the L1 norm each class vector may reach)")
    if method == "fobos":
        if reg not in REGS:
            raise ValueError(f"reg must be one of {', '.join(REGS)} (got {reg!r})")
        if not lam >= 0.0:
            raise ValueError(f"lam must be >= 0 (got {lam})")
    if line_search and (batch != 1.0 or method == "eg"):
        raise ValueError("line_search needs the full gradient (batch=1.0) and method 'l1' or 'fobos'")
    if X.shape[0] != len(y) or len(y) == 0:
        raise ValueError(f"X has {X.shape[0]} rows and y {len(y)} labels")
    d = X.shape[1]
    if loss == "softmax":
        K = int(classes) if classes is not None else int(np.max(y)) + 1
        if np.any(y < 0) or np.any(y >= K):
            raise ValueError(f"softmax labels must be class indices 0..{K - 1}")
    else:
        K = 1
    if isinstance(signs, str):
        if signs != "nonneg":
            raise ValueError(f"signs must be 'nonneg' or an array of +1/-1 (got {signs!r})")
        signs = np.ones((d, K))
    elif signs is not None:
        signs = np.asarray(signs, dtype=np.float64).reshape(d, K)
        if not np.all(np.abs(signs) == 1.0):
            raise ValueError("signs must hold +1 or -1 for every weight")
    if signs is not None and method == "fobos":
        raise ValueError("signs constrain the 'l1' and 'eg' methods, not 'fobos'")
    return K, signs


def objective(X, y, W, loss, method="l1", reg="l1", lam=0.0) -> float:
    """F(W): the average loss plus, for fobos, lam r(W)."""
    total, _ = loss_and_gradient(scores(X, W), y, loss)
    return total / X.shape[0] + _penalty(W, method, reg, lam)


def _penalty(W, method, reg, lam) -> float:
    if method != "fobos" or lam <= 0.0:
        return 0.0
    r = REGULARIZERS[reg]
    return r.value({name: lam for name in r.strengths}, W)


def fit(X, y, loss: str = "softmax", method: str = "l1", *, radius: float | None = None, signs=None,
        reg: str = "l1", lam: float = 0.0, eta0: float = 1.0, schedule: str = "sqrt", batch: float = 1.0,
        steps: int = 100, line_search: bool = False, seed: int = 0, record: int | np.ndarray = 50,
        X_test=None, y_test=None, classes: int | None = None, init: np.ndarray | None = None,
        tol: float | None = None, accelerate: bool = False) -> BatchResult:
    """Run ``steps`` steps of ``method`` (module docstring) and record the curve at ``record`` steps
    (an int: that many log-spaced steps, the last one included; or an array of step numbers).

    The history has, per recorded step: ``step``, ``examples``, ``accesses``, ``seconds``,
    ``objective`` (F on the training set), ``nonzeros`` (weights), ``rows`` (non-zero rows),
    ``zeros_in_rows`` (the fraction of zeros inside non-zero rows), ``class_zeros`` (per class, the
    fraction of zero weights: a K-vector per step), ``eta`` and, with test data, ``test_error``
    (``test_loss`` too).

    ``init`` starts ``l1`` and ``fobos`` from the given weights (d x K; warm starts along a path of
    lambdas); ``l1`` projects them first. ``tol`` (with ``line_search``) stops once the objective
    fell by less than ``tol`` (relative) over the last 10% of the steps (at least 10 steps, the
    objective of every step being the line search's accepted value): the run is then recorded at its
    last step. ``accelerate`` (with ``line_search``) takes MFISTA's steps (Beck & Teboulle 2009, the
    monotone FISTA): the gradient step from an extrapolated point, the better of it and the previous
    iterate kept, so the objective still never increases."""
    y = np.asarray(y)
    y = y.astype(np.int64) if loss == "softmax" else y.astype(np.float64)
    K, signs = _check(X, y, loss, method, reg, schedule, batch, radius, lam, signs, line_search, classes)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    b = max(1, int(round(batch * n)))
    if isinstance(record, (int, np.integer)):
        marks = np.unique(np.round(np.geomspace(1, steps, max(1, int(record)))).astype(np.int64))
    else:
        marks = np.unique(np.asarray(record, dtype=np.int64))
    marks = set(int(s) for s in marks if 1 <= s <= steps) | {steps}

    if method == "eg":
        if signs is None:        # EG+-: u = [u+; u-], w = u+ - u-
            U = np.full((2 * d, K), radius / (2 * d))
        else:
            U = np.full((d, K), radius / d)
    W = _eg_weights(U, signs, d) if method == "eg" else np.zeros((d, K))
    if init is not None:
        if method == "eg":
            raise ValueError("init starts 'l1' and 'fobos', not 'eg' (which starts at the uniform point)")
        W = np.array(init, dtype=np.float64).reshape(d, K)
        if method == "l1":
            W = project_columns(W, radius, signs)
    if tol is not None and not line_search:
        raise ValueError("tol needs line_search (the accepted step's objective is its test)")
    values = []
    Y, momentum = W, 1.0
    if accelerate:
        if not line_search:
            raise ValueError("accelerate needs line_search (MFISTA's steps are backtracked)")
        current = objective(X, y, W, loss, method, reg, lam)
    else:
        current = math.inf

    hist = {k: [] for k in ("step", "examples", "accesses", "seconds", "objective", "nonzeros", "rows",
                            "zeros_in_rows", "class_zeros", "eta")}
    if X_test is not None:
        hist["test_error"], hist["test_loss"] = [], []
    all_entries = _entries(X)
    order = np.empty(0, dtype=np.int64)
    pos = 0
    examples = accesses = 0
    seconds = 0.0
    eta_prev = eta0
    ahead = None        # the scores X W of the next gradient's point, when the line search computed them
    for t in range(1, steps + 1):
        started = time.perf_counter()
        if b >= n:
            Xb, yb, nb, entries = X, y, n, all_entries
        else:
            if pos >= len(order):
                order, pos = rng.permutation(n), 0
            rows = order[pos:pos + b]
            pos += b
            Xb, yb, nb = X[rows], y[rows], len(rows)
            entries = _entries(Xb)
        P = Y if accelerate else W              # the point whose gradient is taken
        Sb = scores(Xb, P) if ahead is None else ahead
        ahead = None
        fb, D = loss_and_gradient(Sb, yb, loss)
        G = np.asarray(Xb.T @ D) / nb
        examples += nb
        accesses += entries
        if line_search:
            f0 = fb / nb
            eta = 2.0 * eta_prev if t > 1 else eta0
            while True:
                Wn = _step(P, G, eta, method, radius, signs, reg, lam)
                diff = Wn - P
                Sn = scores(X, Wn)
                fn, _ = loss_and_gradient(Sn, y, loss)
                accesses += entries
                if fn / n <= f0 + float((G * diff).sum()) + float((diff * diff).sum()) / (2.0 * eta) + 1e-15 * abs(f0):
                    break
                eta *= 0.5
                if eta < 1e-300:
                    Wn, Sn = P, None
                    break
            eta_prev = eta
            value = fn / n + _penalty(Wn, method, reg, lam)
            if accelerate:                      # MFISTA: keep the better of z_k and x_{k-1}, then extrapolate
                momentum_next = (1.0 + math.sqrt(1.0 + 4.0 * momentum * momentum)) / 2.0
                Wx = Wn if value <= current else W
                Y = Wx + (momentum / momentum_next) * (Wn - Wx) + ((momentum - 1.0) / momentum_next) * (Wx - W)
                momentum = momentum_next
                W, current = Wx, min(value, current)
            else:
                W, current = Wn, value
                ahead = Sn                      # the next step's gradient is taken at W: its scores are known
            if tol is not None:
                values.append(current)
                back = max(10, len(values) // 10)
                if len(values) > back and values[-1 - back] - values[-1] <= tol * abs(values[-1]):
                    marks.add(t)
                    steps = t
        else:
            eta = eta0 if schedule == "const" else eta0 / math.sqrt(t) if schedule == "sqrt" else eta0 / t
            if method == "eg":
                if signs is None:
                    GU = np.vstack([G, -G])
                else:
                    GU = signs * G
                E = -eta * GU
                U = U * np.exp(E - E.max(axis=0, keepdims=True))
                U *= radius / U.sum(axis=0, keepdims=True)
                W = _eg_weights(U, signs, d)
            else:
                W = _step(W, G, eta, method, radius, signs, reg, lam)
        seconds += time.perf_counter() - started
        if t in marks:
            _record(hist, X, y, W, loss, method, reg, lam, X_test, y_test,
                    t, examples, accesses, seconds, eta)
        if t == steps:
            break
    out = {k: (np.array(v) if k != "class_zeros" else np.array(v).reshape(len(hist["step"]), K))
           for k, v in hist.items()}
    return BatchResult(W=W, history=out, steps=steps, examples=examples, accesses=accesses, seconds=seconds)


def _eg_weights(U, signs, d):
    return U[:d] - U[d:] if signs is None else signs * U


def _step(W, G, eta, method, radius, signs, reg, lam):
    V = W - eta * G
    if method == "l1":
        return project_columns(V, radius, signs)
    return prox(V, reg, eta * lam)


def _record(hist, X, y, W, loss, method, reg, lam, X_test, y_test, t, examples, accesses, seconds, eta):
    nz = W != 0.0
    row_nz = nz.any(axis=1)
    hist["step"].append(t)
    hist["examples"].append(examples)
    hist["accesses"].append(accesses)
    hist["seconds"].append(seconds)
    hist["objective"].append(objective(X, y, W, loss, method, reg, lam))
    hist["nonzeros"].append(int(nz.sum()))
    hist["rows"].append(int(row_nz.sum()))
    inside = nz[row_nz]
    hist["zeros_in_rows"].append(float(1.0 - inside.mean()) if inside.size else 0.0)
    hist["class_zeros"].append(1.0 - nz.mean(axis=0))
    hist["eta"].append(eta)
    if X_test is not None:
        yt = np.asarray(y_test)
        total, _ = loss_and_gradient(scores(X_test, W), yt.astype(np.int64) if loss == "softmax" else
                                     yt.astype(np.float64), loss)
        hist["test_loss"].append(total / X_test.shape[0])
        p = predict(X_test, W, loss)
        hist["test_error"].append(float(np.mean(p != yt)) if loss != "squared" else
                                  float(np.mean((p - yt) ** 2)))
