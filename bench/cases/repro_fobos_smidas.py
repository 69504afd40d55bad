"""Reproductions of Duchi & Singer 2009 (FOBOS, Fig. 2) and Shalev-Shwartz & Tewari 2009 (SCD/SMIDAS, Fig. 1).

Claims R7-R13 of ../shared/docs/reproductions.md. Run: R7 (FOBOS l2^2 vs Pegasos, Fig. 1), R8 (FOBOS l1
logistic), R11 (MAGIC04S/D), R12 (RCV1 CCAT), R13 (ARCENE-like, with DETCD). R9 and R10 (FOBOS Fig. 3 and
Table 1, batch experiments) run in bench/cases/repro_multiclass.py.

Every run is a `streamlearn train ... --objective` subprocess (objective and data accesses after every pass);
two run at a time. Grids are fixed here, before running: SMIDAS / TG use the paper's constant-eta grid
{1,3}x10^k, 1e-6 <= eta <= 1e-1, plus the extension {0.3, 1} (reported separately), SMIDAS with p = 2 ln d
for the data's own d (``data_stats``); FOBOS / subgradient (R8) use eta0 in {0.01, 0.03, 0.1, 0.3, 1, 3} with
eta_t = eta0/sqrt(t) (`--sgd --initial-t 0`) for all three methods, each at the eta0 that reaches relative gap 1e-2
with the fewest data accesses.
Budgets are far below the papers' (stated per claim); `--quick` shortens them further; `--budget paper` runs R11
(MAGIC04S/D) to the paper's budgets (215 / 208 passes, ~2.5e8 / ~4e9 accesses). R13 keeps 200 passes with it:
the paper's 1.2e9 accesses (~2,200 passes of the ARCENE-like set, plus DETCD to the same budget) would take
several hours on 2 cores. MAGIC04D's 208 passes alone take ~1 h of 2 cores; `--magic04d-passes N` runs fewer.

Usage: python -m bench run repro_fobos_smidas [--quick | --budget paper [--magic04d-passes N]] [--only R7,R8,...] [--jobs N]
(--only runs the claims named and keeps the others' sections from the results an earlier run saved.)
Writes bench/repro/fobos_smidas.md and bench/repro/fobos_smidas-*.png.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import os
import pickle
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import warnings

import numpy as np

from bench.harness import REPO, Case, Context, Progress, head_commit, shared

from streamlearn.datasets import write_libsvm

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

SHARED = REPO.parent / "shared"
OUT = REPO / "bench" / "repro"
DATA = REPO / "bench" / "data" / "repro_fobos_smidas"
LINE = re.compile(r"objective after pass (\d+) .*?: (\S+) = .*non-zero weights = (\d+); data accesses = (\d+)$")

SEED_R7 = 20090700          # R7: synthetic(1000, 400, flip=0.1, seed=SEED_R7 + k), k = 0..19
R7_SEEDS = 20
R7_LAMBDA = 1e-2
R7_PASSES = 10
SEED_R8 = 20090101          # synthetic(1000, 400, flip=0.1)
SEED_SHUFFLE = 1            # --random-seed of every streamlearn run
SEED_ARCENE = 20030601      # ARCENE-like stand-in
SEED_MAGIC = 20091109       # MAGIC04S (seed) / MAGIC04D (seed + 1): bench/cases/objective.py's
PAPER_GRID = tuple(m * 10.0 ** k for k in range(-6, 0) for m in (1, 3)) + (0.1,)
PAPER_GRID = tuple(sorted(set(round(e, 12) for e in PAPER_GRID if e <= 0.1 + 1e-12)))
EXT_GRID = (0.3, 1.0)
# R8's eta0 grid, fixed before the run from the objective's constants (printed in the report): at the top
# 3 ~ 2/L (L = lambda_max(X^T X) / (4m) = 0.668, the largest stable full-gradient step), at the bottom 0.01 ~
# the per-example bound 4 / max ||x_i||^2 = 0.0079 (the earlier grid {0.03..3} plus 0.01)
R8_ETAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def base_cmd() -> list[str]:
    script = Path(sys.executable).parent / "streamlearn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "streamlearn"]


def show(cmd: list[str]) -> str:
    n = len(base_cmd())
    return "streamlearn " + " ".join(shlex.quote(str(c)).replace(str(REPO) + "/", "") for c in cmd[n:])


class Runner:
    """Runs commands two at a time, with a ``bench.harness.Progress`` per group (a bar with the ETA on a
    terminal, else a line per finished run)."""

    def __init__(self, workers: int = 2):
        self.pool = cf.ThreadPoolExecutor(workers)

    def run_all(self, label: str, cmds: list[list[str]]) -> list[list[tuple[int, float, int, int]]]:
        futs = [self.pool.submit(run_one, c) for c in cmds]
        out = []
        bar = Progress(len(cmds), label, every=1)
        for f in futs:
            out.append(f.result())
            bar.step()
        return out


def run_one(cmd: list[str]) -> list[tuple[int, float, int, int]]:
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
    curve = []
    for line in res.stderr.splitlines():
        m = LINE.match(line)
        if m:
            curve.append((int(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4))))
    return curve


def at(curve, budget: float):
    """The last recorded point with data accesses <= budget (None if none)."""
    pts = [c for c in curve if c[3] <= budget * (1 + 1e-9)]
    return pts[-1] if pts else None


def best_of(cmds, curves):
    """(cmd, curve) of the best finite final objective."""
    best = None
    for c, cu in zip(cmds, curves):
        if cu and all(np.isfinite(p[1]) for p in cu) and (best is None or cu[-1][1] < best[1][-1][1]):
            best = (c, cu)
    return best


def ordering(a_curve, b_curve, budget, margin, scale=None):
    """A <= B - margin (or A <= scale*B) at 10/25/50/100% of the budget: must hold at 100% and >= 3 of 4."""
    rows = []
    for frac in (0.1, 0.25, 0.5, 1.0):
        pa, pb = at(a_curve, frac * budget), at(b_curve, frac * budget)
        if pa is None or pb is None:
            rows.append((frac, None, None, False))
            continue
        ok = pa[1] <= (scale * pb[1] if scale is not None else pb[1] - margin)
        rows.append((frac, pa[1], pb[1], ok))
    return rows, rows[-1][3] and sum(r[3] for r in rows) >= 3


def fmt_ord(rows):
    return "; ".join(f"{int(f * 100)}%: {'-' if a is None else f'{a:.4f}'} vs {'-' if b is None else f'{b:.4f}'} "
                     f"({'ok' if ok else 'no'})" for f, a, b, ok in rows)


# ----------------------------------------------------------------------------------------------- data builders
def build_r8():
    from streamlearn.datasets import synthetic
    s = synthetic(1000, 400, flip=0.1, seed=SEED_R8)
    import scipy.sparse as sp
    X = sp.csr_matrix((s.val, s.idx, s.indptr), shape=(1000, 400))
    y = np.asarray(s.y, dtype=float)
    w_gen = np.asarray(s.w)
    path = DATA / "r8_synthetic.libsvm"
    if not path.exists():
        write_libsvm(path, X, y)
    return path, X.toarray(), y, w_gen


def build_arcene():
    """The plan's ARCENE-like stand-in: streamlearn.datasets.arcene_like(SEED_ARCENE) as a LIBSVM file."""
    from streamlearn import datasets
    path = DATA / "arcene_like.libsvm"
    X, y, _ = datasets.arcene_like(SEED_ARCENE)
    if not path.exists():
        write_libsvm(path, X, y)
    return path, int((X != 0).sum())


def build_rcv1():
    """The three RCV1 CCAT LIBSVM files concatenated (union, not de-duplicated)."""
    from streamlearn import datasets
    path = DATA / "rcv1_ccat_union.libsvm"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as out:
            out.write("\n".join(datasets.rcv1_ccat_lines(dedup=False, data_dir=SHARED / "data")) + "\n")
    n = nnz = 0
    with open(path) as f:
        for line in f:
            n += 1
            nnz += len(line.split()) - 1
    return path, n, nnz


def build_magic(kind: str) -> Path:
    """MAGIC04S/D (streamlearn.datasets.magic04), the file bench/cases/objective.py also uses."""
    from streamlearn import datasets
    path = REPO / "bench" / "data" / f"magic04{kind}.libsvm"
    if not path.exists():
        X, y = datasets.magic04(kind, data_dir=SHARED / "data")
        write_libsvm(path, X, y)
    return path


def data_stats(path: Path, bits: int = 18) -> dict:
    """What SMIDAS's p and SCD's step depend on, from the data as streamlearn reads it (`-b bits`, the
    constant included, as every SMIDAS / SCD run here has it):

    * ``d``: the data's own dimension, the weights the data can touch = the non-empty hashed columns
      (the plan's "features seen", the constant included), not 2^b; ``p`` = 2 ln d (Algorithm 3's
      p = 2 ln(d)), passed to SMIDAS as ``--p-norm``. (streamlearn's default is 2 ln 2^b.)
    * SCD's paper step (``--cd-step paper``, ``learners.scd.column_betas``) bounds column c's curvature by
      beta_c = beta * max(1, max_i x_ic^2), beta = 1/4 for logistic (Eq. 9); the column's real
      curvature is sum_i L''(z_i) x_ic^2 / m <= sum_i x_ic^2 / (4m) (``column_smoothness``, with equality
      at w = 0, where L'' = 1/4 for every example). ``ratio`` = the second over the first per column:
      SCD's step -g/beta_c is this fraction of the step the column's own curvature allows (Newton's at
      w = 0). Quantiles over the columns (the constant's column excluded), each weighted equally, as
      SCD draws columns uniformly."""
    from streamlearn.csr import load_csr
    from streamlearn.learners import scd as K
    from streamlearn.core.losses import LOGISTIC
    X, _, _ = load_csr(str(path), format="libsvm", bits=bits)
    X = X.tocsr()
    X.sort_indices()
    m = X.shape[0]
    cols, colptr, rows, vals = K.csr_to_csc(np.asarray(X.indptr, np.int64), np.asarray(X.indices, np.uint32),
                                            np.asarray(X.data, np.float32), 1 << bits)
    d = int(cols.shape[0])
    beta = K.BETA[LOGISTIC]
    paper = K.column_betas(colptr, vals, beta)
    real = K.column_smoothness(colptr, rows, vals, np.full(m, 1.0 / m), beta)
    counts = np.diff(colptr)
    keep = counts < m          # the constant's column (and any column in every example) aside
    if not keep.any():
        keep = np.ones(d, bool)
    ratio = real[keep] / paper[keep]
    q = np.quantile(ratio, [0.1, 0.5, 0.9])
    return dict(m=m, d=d, p=float(2.0 * np.log(d)), ratio_q10=float(q[0]), ratio_med=float(q[1]),
                ratio_q90=float(q[2]), ratio_min=float(ratio.min()), ratio_max=float(ratio.max()),
                ratio_mean=float(ratio.mean()), col_nnz_med=float(np.median(counts[keep])),
                absmax_max=float(np.abs(vals).max()),
                absmax_med=float(np.median([np.abs(vals[colptr[c]:colptr[c + 1]]).max()
                                            for c in np.flatnonzero(keep)])))


# ----------------------------------------------------------------------------------------------- R7
def r7_data(k: int):
    """synthetic(1000, 400, flip=0.1, seed=SEED_R7 + k) as a LIBSVM file, and (X, y) as the parser reads
    them (the file's values as float32)."""
    from streamlearn.datasets import synthetic
    import scipy.sparse as sp
    s = synthetic(1000, 400, flip=0.1, seed=SEED_R7 + k)
    X = sp.csr_matrix((s.val, s.idx, s.indptr), shape=(1000, 400))
    y = np.asarray(s.y, dtype=float)
    path = DATA / f"r7_synthetic_{k}.libsvm"
    if not path.exists():
        write_libsvm(path, X, y)
    Xr = np.array([[float(f"{v:.6g}") for v in row] for row in X.toarray()], np.float32).astype(np.float64)
    return path, Xr, y


def r7_optimum(X, y, lam, loss):
    """min_w (1/m) sum_i L(y_i <w, x_i>) + lam/2 ||w||^2 from liblinear through scikit-learn (C = 1/(lam m)
    turns its C sum L + 1/2 ||w||^2 into this objective), at tight tolerance (logistic 1e-10; hinge's dual
    coordinate descent 1e-7, within 1e-7 relative of its value at 1e-10 and 2x faster); the objective in
    streamlearn's definitions (natural-log logistic loss, hinge max(0, 1 - y p))."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC
    m = X.shape[0]
    if loss == "logistic":
        clf = LogisticRegression(C=1.0 / (lam * m), fit_intercept=False, tol=1e-10, max_iter=100000,
                                 solver="liblinear")
    else:
        clf = LinearSVC(C=1.0 / (lam * m), loss="hinge", fit_intercept=False, dual=True, tol=1e-7,
                        max_iter=1000000)
    clf.fit(X, y)
    w = clf.coef_.ravel()
    z = y * (X @ w)
    avg = np.mean(np.logaddexp(0.0, -z)) if loss == "logistic" else np.mean(np.maximum(0.0, 1.0 - z))
    return float(avg + lam / 2 * w @ w)


def r7(runner, quick):
    """FOBOS Fig. 1: l2^2-regularized logistic and hinge, FOBOS (--algo fobos --reg l2sq) vs Pegasos, with the
    projection onto ||w|| <= 1/sqrt(lambda) (both), and logistic without it; eta_t = 1/(lambda t) for both."""
    lam, passes = R7_LAMBDA, R7_PASSES
    radius = 1.0 / np.sqrt(lam)
    panels = (("logistic", True), ("hinge", True), ("logistic", False))
    cmds, keys = [], []
    fstar = {}
    for k in range(R7_SEEDS):
        path, X, y = r7_data(k)
        for loss in ("logistic", "hinge"):
            fstar[(k, loss)] = r7_optimum(X, y, lam, loss)
        base = base_cmd() + ["train", "-d", str(path), "--loss", None, "-b", "18", "--noconstant", "--objective",
                             "--quiet", "--passes", str(passes), "--holdout-off", "--shuffle", "--random-seed",
                             str(SEED_SHUFFLE)]
        for loss, proj in panels:
            b = list(base)
            b[b.index(None)] = loss
            ball = ["--l2-ball", f"{radius:g}"] if proj else []
            cmds.append(b + ["--algo", "fobos", "--reg", "l2sq", "--l2", f"{lam:g}", "--sgd", "-l", f"{1 / lam:g}",
                             "--power-t", "1", "--initial-t", "0"] + ball)
            keys.append((k, loss, proj, "FOBOS"))
            cmds.append(b + ["--algo", "pegasos", "--l2", f"{lam:g}"] + (ball if proj else ["--l2-ball", "inf"]))
            keys.append((k, loss, proj, "Pegasos"))
    curves = runner.run_all("R7 FOBOS vs Pegasos", cmds)
    gaps = {}           # (loss, proj, method) -> array (seeds, passes) of relative gaps
    below = 0
    for (k, loss, proj, meth), cu in zip(keys, curves):
        f = fstar[(k, loss)]
        g = np.array([(p[1] - f) / f for p in cu])
        below += int((g < -1e-9).sum())
        gaps.setdefault((loss, proj, meth), []).append(g)
    gaps = {key: np.array(v) for key, v in gaps.items()}
    mean = {key: np.maximum(v, 0.0).mean(axis=0) for key, v in gaps.items()}
    res = {"mean": mean, "below": below, "cmds": {key[1:]: c for key, c in zip(keys, cmds) if key[0] == 0},
           "fstar": {loss: float(np.mean([fstar[(k, loss)] for k in range(R7_SEEDS)])) for loss in ("logistic", "hinge")},
           "radius": radius}
    checks = {}
    for loss in ("logistic", "hinge"):
        a, b = mean[(loss, True, "FOBOS")], mean[(loss, True, "Pegasos")]
        ratio = np.maximum(a[1:], 1e-300) / np.maximum(b[1:], 1e-300)
        worst = float(np.max(np.maximum(ratio, 1 / ratio)))
        checks[loss] = dict(worst_ratio=worst, within2=worst <= 2.0, final=(float(a[-1]), float(b[-1])),
                            reach=a[-1] <= 1e-2 and b[-1] <= 1e-2)
    a, b = mean[("logistic", False, "FOBOS")], mean[("logistic", False, "Pegasos")]
    at_p = [(p, float(a[p - 1]), float(b[p - 1]), bool(a[p - 1] <= b[p - 1])) for p in (1, 2, 5, 10)]
    checks["noproj"] = dict(rows=at_p, ok=sum(r[3] for r in at_p) >= 3)
    res["checks"] = checks
    res["status"] = "PASS" if all(checks[l]["within2"] and checks[l]["reach"] for l in ("logistic", "hinge")) \
        and checks["noproj"]["ok"] else "FAIL"
    plot_r7(res, panels)
    return res


def plot_r7(res, panels):
    """The paper's Fig. 1: three panels (logistic with projection, hinge with projection, logistic without),
    the objective's gap on a log scale, L2 FOBOS then Pegasos."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, (loss, proj) in zip(axes, panels):
        for meth, style in (("FOBOS", "-"), ("Pegasos", "--")):
            g = res["mean"][(loss, proj, meth)]
            ax.semilogy(np.arange(1, len(g) + 1), np.maximum(g, 1e-12), style, marker="o", ms=3,
                        label="L2 FOBOS" if meth == "FOBOS" else "Pegasos")
        ax.axhline(1e-2, color="grey", ls=":")
        ax.set_xlabel("passes over the data (1,000 examples each)")
        ax.set_ylabel("(f(w_t) + r(w_t) - f(w*) - r(w*)) / (f(w*) + r(w*))")
        ax.set_title(f"{loss}, {'with' if proj else 'without'} projection (mean of {R7_SEEDS} sets)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "fobos_smidas-fig1-fobos.png", dpi=90)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------- R8
def logistic_obj(X, y, w, lam):
    z = y * (X @ w)
    return float(np.mean(np.logaddexp(0.0, -z)) + lam * np.abs(w).sum())


def r8(runner, quick):
    from sklearn.linear_model import LogisticRegression
    path, X, y, w_gen = build_r8()
    m = X.shape[0]
    lam_max = float(np.abs(X.T @ y).max() / (2 * m))
    passes = 100
    res = {"passes": passes, "lam_max": lam_max}

    def opt(lam):
        clf = LogisticRegression(penalty="l1", solver="liblinear", C=1.0 / (lam * m), fit_intercept=False,
                                 tol=1e-8, max_iter=10000)
        clf.fit(X, y)
        w = clf.coef_.ravel()
        return logistic_obj(X, y, w, lam), w

    base = base_cmd() + ["train", "-d", str(path), "--loss", "logistic", "-b", "18", "--noconstant",
                         "--objective", "--quiet", "--passes", str(passes), "--holdout-off", "--random-seed",
                         str(SEED_SHUFFLE)]
    lam = 0.1 * lam_max
    fstar, wstar = opt(lam)
    res.update(lam=lam, fstar=fstar, wstar_nnz=int((wstar != 0).sum()))
    # the constants the eta0 grid was fixed from (before the run): the objective's smoothness L (a full
    # gradient step above 2/L is unstable) and the per-example curvature bound max ||x_i||^2 / 4
    res["L"] = float(np.linalg.eigvalsh(X.T @ X / m).max() / 4)
    res["Li_max"] = float((X ** 2).sum(axis=1).max() / 4)
    rate = ["--sgd", "--initial-t", "0"]      # eta_t = eta0 / sqrt(t) exactly (power_t 0.5, the default)
    methods = {
        "FOBOS (deterministic, batch 1000)": lambda e, l: base + ["--algo", "fobos", "--reg", "l1", "--l1", f"{l:.8g}",
                                                                  "--batch-size", "1000", "-l", f"{e:g}"] + rate,
        "FOBOS (stochastic)": lambda e, l: base + ["--algo", "fobos", "--reg", "l1", "--l1", f"{l:.8g}", "--shuffle",
                                                   "-l", f"{e:g}"] + rate,
        "subgradient": lambda e, l: base + ["--algo", "subgradient", "--l1", f"{l:.8g}", "--shuffle", "-l",
                                            f"{e:g}"] + rate,
    }
    cmds = [(name, e, f(e, lam)) for name, f in methods.items() for e in R8_ETAS]
    curves = runner.run_all("R8 lambda=0.1 lambda_max", [c for _, _, c in cmds])

    def first_acc(curve, tol=1e-2):
        for p in curve:
            if (p[1] - fstar) / fstar <= tol:
                return p[3]
        return None

    # eta0 per method by the quantity compared: the fewest data accesses to relative gap <= 1e-2 (ties:
    # the lower final objective); if no eta0 of the grid reaches it, the lowest final objective
    best, grid_rows = {}, {}
    for name in methods:
        sel = [(e, c, cu) for (n, e, c), cu in zip(cmds, curves) if n == name]
        grid_rows[name] = [(e, first_acc(cu), cu[-1][1] if cu else float("nan")) for e, c, cu in sel]
        ok = [(first_acc(cu), cu[-1][1], e, c, cu) for e, c, cu in sel
              if cu and all(np.isfinite(q[1]) for q in cu) and first_acc(cu) is not None]
        if ok:
            a, _, e, c, cu = min(ok, key=lambda t: (t[0], t[1]))
            best[name] = (c, cu)
        else:
            best[name] = best_of([c for _, c, _ in sel], [cu for _, _, cu in sel])
    res["best"] = best
    res["grid_rows"] = grid_rows
    res["best_eta"] = {n: float(b[0][b[0].index("-l") + 1]) for n, b in best.items()}
    res["edge"] = {n: e in (min(R8_ETAS), max(R8_ETAS)) for n, e in res["best_eta"].items()}
    res["reach"] = {n: first_acc(b[1]) for n, b in best.items()}
    fob = [a for n, a in res["reach"].items() if n.startswith("FOBOS") and a is not None]
    sub = res["reach"]["subgradient"]
    res["c1"] = bool(fob) and (sub is None or min(fob) <= sub / 2)
    sub_nnz = [p[2] / 400 for p in best["subgradient"][1]]
    res["sub_min_nnz"] = min(sub_nnz)
    res["c2"] = min(sub_nnz) >= 0.99

    # lambda sweep for deterministic FOBOS at the eta0 chosen above at 0.1 lambda_max (fixed before the sweep)
    det = "FOBOS (deterministic, batch 1000)"
    eta_det = float(best[det][0][best[det][0].index("-l") + 1])
    sweep = {}
    fr = (0.05, 0.1, 0.2, 0.4)
    scmds = [methods[det](eta_det, f * lam_max) + ["--readable-model", str(DATA / f"r8_det_{f}.txt")] for f in fr]
    scurves = runner.run_all("R8 lambda sweep", scmds)
    step20 = min(20, passes)
    for f, c, cu in zip(fr, scmds, scurves):
        l = f * lam_max
        _, wopt = opt(l)
        w = final_weights(c, 400)
        s_opt, s_ours, s_gen = set(np.flatnonzero(wopt)), set(np.flatnonzero(w)), set(np.flatnonzero(w_gen))
        jac = len(s_opt & s_ours) / max(1, len(s_opt | s_ours))
        jac_gen = len(s_gen & s_ours) / max(1, len(s_gen | s_ours))
        nz20 = cu[step20 - 1][2] / 400
        nzend = cu[-1][2] / 400
        sweep[f] = dict(cmd=c, curve=cu, nz20=nz20, nzend=nzend, jac=jac, jac_gen=jac_gen,
                        ok=abs(nz20 - nzend) <= 0.05 and jac >= 0.9, opt_nnz=len(s_opt))
    res["sweep"] = sweep
    res["eta_det"] = eta_det
    res["c3"] = all(v["ok"] for v in sweep.values())
    res["status"] = "PASS" if res["c1"] and res["c2"] and res["c3"] else "FAIL"
    plot_r8(res)
    return res


def final_weights(cmd, d):
    """Weights 1..d of the model written by `-f` (read back through `--readable-model`-free API: invert_hash)."""
    out = Path(cmd[cmd.index("--readable-model") + 1])
    w = np.zeros(d)
    if out.exists():
        for line in out.read_text().splitlines():
            parts = line.split(":")
            if len(parts) == 2:
                try:
                    j, v = int(parts[0]), float(parts[1])
                except ValueError:
                    continue
                if 1 <= j <= d:
                    w[j - 1] = v
    return w


def plot_r8(res):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, (cmd, cu) in res["best"].items():
        gap = [max((p[1] - res["fstar"]) / res["fstar"], 1e-8) for p in cu]
        a.semilogy([p[3] for p in cu], gap, label=f"{name}, eta0={cmd[cmd.index('-l') + 1]}")
    a.axhline(1e-2, color="grey", ls=":")
    a.set_xlabel("data accesses")
    a.set_ylabel("(f(w_t) - f(w*)) / f(w*)")
    a.set_title(f"l1 logistic, lambda = 0.1 lambda_max = {res['lam']:.3g}")
    a.legend(fontsize=8)
    for f, v in res["sweep"].items():
        b.plot([p[0] for p in v["curve"]], [p[2] / 400 for p in v["curve"]], label=f"lambda = {f} lambda_max")
    b.set_xlabel("iterations (deterministic FOBOS, batch = all 1000 examples)")
    b.set_ylabel("fraction of non-zero weights")
    b.set_ylim(0, 1.05)
    b.set_title("sparsity along the run")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "fobos_smidas-fig2.png", dpi=90)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------- SMIDAS paper
def fig1_runs(runner, label, data, lam, passes, scd_passes, p_norm, bits=18):
    """Best SMIDAS and TG over the paper grid (and over the extended grid), SCD (paper step and newton step).
    SMIDAS runs with ``--p-norm p_norm`` (Algorithm 3's p = 2 ln d for the data's own d: ``data_dim``)."""
    base = base_cmd() + ["train", "-d", str(data), "--loss", "logistic", "-b", str(bits), "--objective", "--quiet"]
    online = ["--holdout-off", "--shuffle", "--random-seed", str(SEED_SHUFFLE), "--passes", str(passes)]
    grid = PAPER_GRID + EXT_GRID
    cmds = []
    for e in grid:
        cmds.append(("smidas", e, base + online + ["--algo", "smidas", "--l1", f"{lam:g}", "-l", f"{e:g}", "--power-t", "0",
                                                 "--p-norm", f"{p_norm:.6g}"]))
        cmds.append(("tg", e, base + online + ["--algo", "tg", "--sgd", "--l1", f"{lam:g}", "-l", f"{e:g}", "--power-t", "0"]))
    for step in ("paper", "newton"):
        cmds.append((f"scd-{step}", None, base + ["--algo", "scd", "--l1", f"{lam:g}", "--cd-step", step,
                                                  "--random-seed", str(SEED_SHUFFLE), "--passes", str(scd_passes)]))
    curves = runner.run_all(label, [c for _, _, c in cmds])
    out = {}
    for learner in ("smidas", "tg"):
        for gname, g in (("paper", PAPER_GRID), ("ext", grid)):
            sel = [(c, cu) for (l, e, c), cu in zip(cmds, curves) if l == learner and e in g]
            out[(learner, gname)] = best_of([c for c, _ in sel], [cu for _, cu in sel])
    for (l, e, c), cu in zip(cmds, curves):
        if l.startswith("scd"):
            out[(l, None)] = (c, cu)
    return out


def budget_of(runs):
    return runs[("tg", "paper")][1][-1][3]


def plot_fig1(panels, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2))
    for ax, (title, runs, ykind) in zip(np.atleast_1d(axes), panels):
        budget = budget_of(runs)
        ys = []
        for key, name in ((("scd-paper", None), "SCD"), (("scd-newton", None), "SCD (newton step)"),
                          (("detcd", None), "DETCD"), (("smidas", "paper"), "SMIDAS"), (("tg", "paper"), "TruncGrad")):
            if key not in runs or runs[key] is None:
                continue
            cmd, cu = runs[key]
            cu = [p for p in cu if p[3] <= budget * 1.0001] or cu[:1]
            y = [p[1] if ykind == "obj" else p[2] for p in cu]
            ys += y
            lab = name + (f" (eta={cmd[cmd.index('-l') + 1]})" if "-l" in cmd else "")
            ax.plot([0] + [p[3] for p in cu], [np.log(2) if ykind == "obj" else 0] + y, label=lab,
                    ls="--" if "newton" in name else ":" if name == "DETCD" else "-")
        ax.set_title(title)
        ax.set_xlabel("Number of Data Accesses")
        ax.set_ylabel("L1 regularized loss" if ykind == "obj" else "Density of w (non-zero weights)")
        if ykind == "obj":
            lo = min(ys)
            ax.set_ylim(lo - 0.05, max(0.75, lo + 0.1))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


R11_PASSES = {"quick": (10, 3), "full": (20, 6), "paper": (215, 208)}   # (MAGIC04S, MAGIC04D)


def r11(runner, quick, budget="full", d_passes=None):
    res = {}
    ps, pd = R11_PASSES["quick" if quick else budget]
    pd = d_passes or pd
    for kind, name, passes in (("s", "MAGIC04S", ps), ("d", "MAGIC04D", pd)):
        data = build_magic(kind)
        res[name + "_stats"] = st = data_stats(data)
        # SCD's pass reads the data about twice (accesses are counted); run it to at least the same budget
        res[name] = fig1_runs(runner, f"R11 {name}", data, 1e-4, passes, passes, st["p"])
        res[name + "_passes"] = passes
    S, D = res["MAGIC04S"], res["MAGIC04D"]
    bS, bD = budget_of(S), budget_of(D)
    res["c_d"] = ordering(D[("smidas", "paper")][1], D[("tg", "paper")][1], bD, 0.005)
    res["c_s"] = ordering(S[("tg", "paper")][1], S[("smidas", "paper")][1], bS, -0.005)  # TG <= SMIDAS + 0.005
    scd = D[("scd-paper", None)][1]
    tg = D[("tg", "paper")][1]
    rows = []
    for frac in (0.1, 0.25, 0.5, 1.0):
        a, b = at(scd, frac * bD), at(tg, frac * bD)
        rows.append((frac, a[2] if a else None, b[2] if b else None, a is not None and b is not None and a[2] <= b[2]))
    fs, ft = at(scd, bD), at(tg, bD)
    res["c_nnz"] = (rows, all(r[3] for r in rows), fs[1] if fs else None, ft[1],
                    fs is not None and ft[1] <= fs[1] + 0.002)
    res["status"] = "PASS" if res["c_d"][1] and res["c_s"][1] and res["c_nnz"][1] and res["c_nnz"][4] else "FAIL"
    plot_fig1([("MAGIC04S (lambda = 1e-4)", S, "obj"), ("MAGIC04D (lambda = 1e-4)", D, "obj"),
               ("MAGIC04D (lambda = 1e-4)", D, "nnz")], OUT / "fobos_smidas-fig1-magic.png")
    return res


def r12(runner, quick):
    path, n, nnz = build_rcv1()
    passes = 20
    st = data_stats(path)
    runs = fig1_runs(runner, "R12 RCV1 CCAT", path, 1e-6, passes, passes, st["p"], bits=18)
    b = budget_of(runs)
    scd = at(runs[("scd-paper", None)][1], b)
    scdn = at(runs[("scd-newton", None)][1], b)
    best_on = min(runs[("tg", "paper")][1][-1][1], runs[("smidas", "paper")][1][-1][1])
    res = dict(runs=runs, n=n, nnz=nnz, passes=passes, budget=b, scd=scd, scdn=scdn, best_online=best_on, stats=st)
    res["status"] = "PASS" if scd is not None and scd[1] <= best_on else "FAIL"
    plot_fig1([("REUTERS stand-in: RCV1 CCAT, 1,750 docs (lambda = 1e-6)", runs, "obj")],
              OUT / "fobos_smidas-fig1-reuters.png")
    return res


def detcd_curve(path, lam: float, budget: float, chunk: int = 2):
    """DETCD (`--algo scd --cd-order greedy --cd-step paper`, logistic, -b 18, the constant included) run
    in-process on the LIBSVM file until its data accesses reach ``budget``: a point (steps, objective,
    non-zero weights, accesses) every ``chunk`` steps. The CLI's --passes counts epochs of d' steps, and
    one greedy step reads all the entries (the full gradient), so an epoch of it is d' times the budget:
    the kernel is driven step by step instead (the same kernel and step rule as the CLI)."""
    from streamlearn.csr import load_csr
    from streamlearn.learners import scd as K
    from streamlearn.core.losses import LOGISTIC
    X, y, _ = load_csr(str(path), format="libsvm", bits=18)
    X = X.tocsr()
    X.sort_indices()
    cols, colptr, rows, vals = K.csr_to_csc(np.asarray(X.indptr, np.int64), np.asarray(X.indices, np.uint32),
                                            np.asarray(X.data, np.float32), 1 << 18)
    m, d = X.shape[0], cols.shape[0]
    labels = np.where(y > 0, 1.0, -1.0)
    hn = np.full(m, 1.0 / m)
    betas = K.column_betas(colptr, vals, K.BETA[LOGISTIC])
    z = np.zeros(m)
    w = np.zeros(2 * d)
    curve, steps, reads = [], 0, 0
    while reads < budget:
        reads += int(K.scd_epochs(colptr, rows, vals, betas, labels, hn, z, w, lam, LOGISTIC, 1, chunk,
                                  K.GREEDY, 0, steps, K.PAPER))
        steps += chunk
        ls, reg, _ = K.scd_objective(labels, hn, z, w, lam, LOGISTIC)
        curve.append((steps, ls + reg, int(np.count_nonzero(w[:d] != w[d:])), reads))
    cmd = base_cmd() + ["train", "-d", str(path), "--loss", "logistic", "-b", "18", "--algo", "scd", "--l1",
                        f"{lam:g}", "--cd-order", "greedy", "--cd-step", "paper"]
    return cmd, curve


def r13(runner, quick):
    path, nnz = build_arcene()
    passes = 50 if quick else 200
    res = {"nnz": nnz, "passes": passes, "stats": data_stats(path)}
    for lam in (1e-2, 1e-6):
        res[lam] = fig1_runs(runner, f"R13 ARCENE-like lambda={lam:g}", path, lam, passes, passes,
                             res["stats"]["p"], bits=18)
        err(f"R13 DETCD lambda={lam:g} (in-process, to the online budget)")
        res[lam][("detcd", None)] = detcd_curve(path, lam, budget_of(res[lam]))
    r_hi, r_lo = res[1e-2], res[1e-6]
    b = budget_of(r_hi)
    res["c_hi"] = ordering(r_hi[("smidas", "paper")][1], r_hi[("tg", "paper")][1], b, 0.01)
    res["c_lo"] = ordering(r_lo[("smidas", "paper")][1], r_lo[("tg", "paper")][1], b, 0.0, scale=1.25)
    scd_ok = []
    for lam in (1e-2, 1e-6):
        r = res[lam]
        best_on = min(r[("tg", "paper")][1][-1][1], r[("smidas", "paper")][1][-1][1])
        s = at(r[("scd-paper", None)][1], budget_of(r))
        scd_ok.append((lam, s[1] if s else None, best_on, s is not None and s[1] <= 1.1 * best_on))
    res["c_scd"] = scd_ok
    # DETCD slower than SCD per data access: SCD's objective <= DETCD's at 10/25/50/100% of the budget
    # (at 100% and at >= 3 of the 4), for both lambdas
    res["c_detcd"] = {lam: ordering(res[lam][("scd-paper", None)][1], res[lam][("detcd", None)][1],
                                    budget_of(res[lam]), 0.0) for lam in (1e-2, 1e-6)}
    res["detcd_status"] = "PASS" if all(v[1] for v in res["c_detcd"].values()) else "FAIL"
    res["status"] = "PASS" if res["c_hi"][1] and res["c_lo"][1] and all(x[3] for x in scd_ok) else "FAIL"
    plot_fig1([("ARCENE-like (lambda = 1e-2)", r_hi, "obj"), ("ARCENE-like (lambda = 1e-6)", r_lo, "obj")],
              OUT / "fobos_smidas-fig1-arcene.png")
    return res


# ----------------------------------------------------------------------------------------------- report
def best_line(runs, key):
    cmd, cu = runs[key]
    return f"`{show(cmd)}` → final {cu[-1][1]:.5f}, {cu[-1][2]} non-zero, {cu[-1][3]:,} accesses"


def fig1_table(runs, budget):
    rows = ["| learner | grid | best setting | objective at budget | non-zero | accesses |", "|---|---|---|---:|---:|---:|"]
    for key, name in ((("scd-paper", None), "SCD (--cd-step paper)"), (("scd-newton", None), "SCD (--cd-step newton, extra)"),
                      (("smidas", "paper"), "SMIDAS"), (("smidas", "ext"), "SMIDAS"), (("tg", "paper"), "TruncGrad"),
                      (("tg", "ext"), "TruncGrad")):
        cmd, cu = runs[key]
        p = at(cu, budget) or cu[0]
        g = "-" if key[1] is None else ("paper 1e-6..1e-1" if key[1] == "paper" else "extended to 1")
        eta = cmd[cmd.index("-l") + 1] if "-l" in cmd else "(none)"
        rows.append(f"| {name} | {g} | eta = {eta} | {p[1]:.5f} | {p[2]} | {p[3]:,} |")
    return "\n".join(rows)


def round2(v: float) -> float:
    """v to 2 significant digits."""
    return float(f"{v:.2g}")


def scd_step_text(st, name, newton=None, best_online=None):
    """Why SCD's paper step is short on a data set, from ``data_stats``'s measurement."""
    return (f"SCD's step on {name} (measured by `data_stats` on the file as streamlearn reads it, m = {st['m']:,}, "
            f"{st['d']:,} columns): Algorithm 1 (`--cd-step paper`, `learners.scd.column_betas`) bounds column c's "
            f"curvature by beta_c = max(1, max_i x_ic^2) / 4 ({'= 1/4 here: every |x| <= 1' if st.get('absmax_max', 2) <= 1 else 'here some |x| > 1'}), while the column's real "
            f"curvature is sum_i L''(z_i) x_ic^2 / m <= sum_i x_ic^2 / (4m) (equal at w = 0). Their ratio per column is a "
            f"median {st['ratio_med']:.2g} (10-90%: {st['ratio_q10']:.2g}-{st['ratio_q90']:.2g}, mean {st['ratio_mean']:.2g}): "
            f"a median column holds {st['col_nnz_med']:.0f} of the {st['m']:,} documents and its largest |x| is "
            f"{st['absmax_med']:.2f} (cosine-normalised TF-IDF), so each SCD step is ~1/{round2(1 / st['ratio_med']):,.0f} of the step "
            f"the column's own curvature allows. That ratio is the share of documents holding a word times its mean "
            f"squared TF-IDF value, set by the word statistics and the normalisation, not by m (a word held by the same "
            f"share of the paper's 806,791 documents gives the same ratio; we did not run the full collection), so the "
            f"short step, not our smaller m, is why SCD (paper step) trails here" + ("" if newton is None else
                               f"; coordinate descent with a step from the column's own curvature (`--cd-step newton`, "
                               f"not the paper's algorithm) reaches {newton:.5f} at the same budget against the best online "
                               f"{best_online:.5f}") + ".")


def report(args, raw, results, elapsed):
    L = []
    meta = results.get("_meta", {})
    r11_budget = meta.get("R11", {}).get("budget", args.budget)

    def produced(cid):
        mt = meta[cid]
        argv = list(mt["argv"])
        return (f"`python -m bench run repro_fobos_smidas{' ' + ' '.join(argv) if argv else ''}` on {mt['date']}, "
                f"commit {mt['commit']}, {mt['elapsed']:.0f} s with {mt.get('jobs', 2)} run(s) at a time, "
                f"load at the end {mt.get('load', '?')}")
    L += ["# Reproduction: FOBOS (Duchi & Singer 2009) and SCD / SMIDAS (Shalev-Shwartz & Tewari 2009)", "",
          f"- Report written: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by "
          f"`python -m bench run repro_fobos_smidas{' ' + ' '.join(raw) if raw else ''}` ({'quick' if args.quick else 'full'} version); "
          f"{os.cpu_count()} cores, Python {platform.python_version()}. Each claim's section comes from the run named here "
          f"(an `--only` run keeps the other claims' saved results, bench/out/repro_fobos_smidas_results.pkl):"]
    for cid in ("R7", "R8", "R11", "R12", "R13"):
        if cid in meta:
            L.append(f"  - {cid}: {produced(cid)}")
    if "R11" in results and r11_budget == "paper":
        L.append(f"- Budgets: R11 MAGIC04S at the paper's 215 passes, MAGIC04D at "
                 + ("the paper's 208" if results["R11"]["MAGIC04D_passes"] >= 208 else f"{results['R11']['MAGIC04D_passes']} (paper 208)")
                 + " passes; R13 at 200 passes, not the paper's 1.2e9 accesses")
    L += [f"- Seeds: synthetic (R8) {SEED_R8}; MAGIC random features {SEED_MAGIC} (S) / {SEED_MAGIC + 1} (D); "
          f"ARCENE-like {SEED_ARCENE}; `--random-seed {SEED_SHUFFLE}` (shuffles, SCD's coordinates) in every run",
          f"- SMIDAS / TG grid (fixed before running; the paper's): constant eta in "
          f"{{{', '.join(f'{e:g}' for e in PAPER_GRID)}}} (`--power-t 0`); extended grid adds {{0.3, 1}} (reported separately, "
          f"not used for PASS/FAIL). SMIDAS: `--p-norm` = 2 ln d for the data's own d (Algorithm 3's p = 2 ln(d)): d = the "
          f"weights the data touches (non-empty hashed columns at `-b 18`, the constant included), not 2^b (streamlearn's default "
          f"p = 2 ln 2^18 = 24.95, which the earlier runs used). SCD: `--cd-step paper` (Algorithm 1's step, used for PASS/FAIL); "
          f"`--cd-step newton` (streamlearn's default) shown as an extra line.",
          f"- FOBOS / subgradient grid (R8; fixed before the run from the objective's constants, see R8): eta0 in "
          f"{{{', '.join(f'{e:g}' for e in R8_ETAS)}}}, eta_t = eta0/sqrt(t) (`--sgd --initial-t 0`, `--power-t 0.5`) for "
          f"all three methods (t = examples for the stochastic ones, steps for the deterministic one); eta0 chosen per method "
          f"by the fewest data accesses to relative gap <= 1e-2 (ties: lower final objective; none reaching it: lowest final "
          f"objective).", "",
          "## Claims", "", "| claim | paper | ours | status |", "|---|---|---|---|"]
    r = results
    if "R7" in r:
        x = r["R7"]
        c = x["checks"]
        L.append(f"| R7 FOBOS Fig. 1 | l2^2 FOBOS performs comparably to Pegasos with projection (logistic, hinge); "
                 f"without projection FOBOS slightly outperforms Pegasos | with projection: worst ratio of the mean gaps "
                 f"from pass 2 on logistic {c['logistic']['worst_ratio']:.2f}, hinge {c['hinge']['worst_ratio']:.2f}; "
                 f"mean gap at pass 10 (FOBOS / Pegasos) logistic {c['logistic']['final'][0]:.1e} / "
                 f"{c['logistic']['final'][1]:.1e}, hinge {c['hinge']['final'][0]:.1e} / {c['hinge']['final'][1]:.1e}; "
                 f"without projection FOBOS <= Pegasos at {sum(q[3] for q in c['noproj']['rows'])} of passes 1, 2, 5, 10 "
                 f"| {x['status']} |")
    if "R8" in r:
        x = r["R8"]
        reach_s = ", ".join(f"{k}: {'never' if v is None else format(v, ',')}"
                            + (f" (eta0 {x['best_eta'][k]:g})" if "best_eta" in x else "") for k, v in x["reach"].items())
        sweep_s = ", ".join(f"{f}: {v['ok']}" for f, v in x["sweep"].items())
        L.append(f"| R8 FOBOS Fig. 2 | FOBOS reaches gap 1e-2 fast; subgradient slow and never sparse; sparsity fixed early | "
                 f"accesses to rel. gap 1e-2: {reach_s}; "
                 f"subgradient min non-zero fraction {x['sub_min_nnz']:.3f}; sweep ok: "
                 f"{sweep_s} | {x['status']} |")
    if "R11" in r:
        x = r["R11"]
        L.append(f"| R11 MAGIC04S/D | D: SMIDAS much better than TG; S: TG competitive; D: TG lower objective, SCD sparser | "
                 f"D SMIDAS<=TG-0.005: {x['c_d'][1]}; S TG<=SMIDAS+0.005: {x['c_s'][1]}; D SCD nnz<=TG: {x['c_nnz'][1]}, "
                 f"TG<=SCD+0.002: {x['c_nnz'][4]} | {x['status']} |")
    if "R12" in r:
        x = r["R12"]
        L.append(f"| R12 REUTERS | SCD outperforms the others | SCD {x['scd'][1]:.4f} vs best online {x['best_online']:.4f}"
                 + (f" (SCD's paper step bound is a median {x['stats']['ratio_med']:.1e} of the real column curvature)" if "stats" in x else "")
                 + f" | {x['status']} |")
    if "R13" in r:
        x = r["R13"]
        L.append(f"| R13 ARCENE | 1e-2: SMIDAS much better; 1e-6: SMIDAS worse but competitive; SCD does well | "
                 f"1e-2: {x['c_hi'][1]}; 1e-6: {x['c_lo'][1]}; SCD within 10%: {[s[3] for s in x['c_scd']]} | {x['status']} |")
        L.append("| R13 DETCD | DETCD slower than SCD per data access | SCD (paper step) <= DETCD at the checkpoints: "
                 + "; ".join(f"lambda {lam:g}: {v[1]}" for lam, v in x["c_detcd"].items()) + f" | {x['detcd_status']} |")
    L += ["| R9 FOBOS Fig. 3 | stochastic batches reach min test error with <= 25% of the gradients | see "
          "[multiclass.md](multiclass.md) | run by bench/cases/repro_multiclass.py (mini-batch FOBOS on W in memory) |",
          "| R10 FOBOS Table 1 | test error at 5/10/20/40% non-zero rows | see [multiclass.md](multiclass.md) | "
          "run by bench/cases/repro_multiclass.py (30-lambda paths per regularizer) |", ""]

    if "R7" in r:
        x = r["R7"]
        c = x["checks"]
        L += ["## R7 — FOBOS Fig. 1 (l2^2-regularized FOBOS vs Pegasos)", "", "![R7](fobos_smidas-fig1-fobos.png)", "",
              f"Data: `streamlearn.datasets.synthetic(1000, 400, flip=0.1, seed={SEED_R7} + k)`, k = 0..{R7_SEEDS - 1} "
              f"({R7_SEEDS} sets; every curve is the mean over them of the relative gap), no constant. lambda = {R7_LAMBDA:g}, "
              f"objective (1/m) sum_i L(y_i <w, x_i>) + lambda/2 ||w||^2 with streamlearn's losses (natural-log logistic, "
              f"hinge max(0, 1 - y p)). Step eta_t = 1/(lambda t) for both methods (Pegasos's; the paper's text prints "
              f"lambda/t, which is not what logarithmic regret needs): FOBOS `--sgd -l {1 / R7_LAMBDA:g} --power-t 1 --initial-t 0`, "
              f"t counting the examples over all passes. Projection onto ||w|| <= 1/sqrt(lambda) = {x['radius']:g}: "
              f"`--l2-ball {x['radius']:g}` for both; without: FOBOS plain l2sq, Pegasos `--l2-ball inf`. "
              f"{R7_PASSES} passes, the first in file order, then shuffled (`--shuffle --random-seed {SEED_SHUFFLE}`, the "
              f"same order for both methods). Optimum per set from liblinear through scikit-learn (tol 1e-10 logistic, 1e-7 hinge) "
              f"(`LogisticRegression(C=1/(lambda m), fit_intercept=False, solver='liblinear')`, "
              f"`LinearSVC(C=1/(lambda m), loss='hinge', fit_intercept=False, dual=True)`; mean f* logistic "
              f"{x['fstar']['logistic']:.6f}, hinge {x['fstar']['hinge']:.6f}). Points where a run went below the "
              f"solver's optimum (gap < -1e-9, counted as 0): {x['below']}.", "",
              "| panel | method | mean rel. gap after pass 1 | 2 | 5 | 10 | command (set k = 0) |", "|---|---|---:|---:|---:|---:|---|"]
        for loss, proj in (("logistic", True), ("hinge", True), ("logistic", False)):
            for meth in ("FOBOS", "Pegasos"):
                g = x["mean"][(loss, proj, meth)]
                L.append(f"| {loss}, {'with' if proj else 'without'} projection | {'L2 FOBOS' if meth == 'FOBOS' else meth} | "
                         + " | ".join(f"{g[p - 1]:.2e}" for p in (1, 2, 5, 10)) + f" | `{show(x['cmds'][(loss, proj, meth)])}` |")
        L += ["", "Must show:", ""]
        for loss in ("logistic", "hinge"):
            L.append(f"- {loss} with projection: mean gaps within a factor 2 of each other from pass 2 on: "
                     f"**{'PASS' if c[loss]['within2'] else 'FAIL'}** (largest ratio {c[loss]['worst_ratio']:.2f}); both reach "
                     f"relative gap <= 1e-2 in {R7_PASSES} passes: **{'PASS' if c[loss]['reach'] else 'FAIL'}** "
                     f"(FOBOS {c[loss]['final'][0]:.2e}, Pegasos {c[loss]['final'][1]:.2e})")
        L.append("- logistic without projection: FOBOS's mean gap <= Pegasos' at >= 3 of passes 1, 2, 5, 10: "
                 f"**{'PASS' if c['noproj']['ok'] else 'FAIL'}** — "
                 + "; ".join(f"pass {p}: {a:.2e} vs {b:.2e} ({'ok' if ok else 'no'})" for p, a, b, ok in c["noproj"]["rows"]))
        L += [""]
    if "R8" in r:
        x = r["R8"]
        L += ["## R8 — FOBOS Fig. 2 left/middle (l1 logistic regression)", "",
              "![R8](fobos_smidas-fig2.png)", "",
              f"Data: `streamlearn.datasets.synthetic(1000, 400, flip=0.1, seed={SEED_R8})` (Gaussian, half of the generating w zero), "
              f"no constant (`--noconstant`). lambda_max = ||X^T y||_inf / (2m) = {x['lam_max']:.5g}; lambda = 0.1 lambda_max = {x['lam']:.5g}. "
              f"Optimum from liblinear (scikit-learn `LogisticRegression(penalty='l1', solver='liblinear', C=1/(lambda m), "
              f"fit_intercept=False, tol=1e-8)`): f* = {x['fstar']:.8f}, {x['wstar_nnz']} of 400 non-zero. {x['passes']} passes (paper: 100 steps of deterministic FOBOS). "
              f"Every command has `--sgd --initial-t 0` (eta_t = eta0/sqrt(t); the earlier stochastic FOBOS and subgradient "
              f"commands lacked `--sgd` and ran streamlearn's adaptive default rule), and the deterministic runs were made "
              f"after the mini-batch clock fix (step k of `--batch-size 1000` gets eta0/sqrt(k)). "
              f"Objective and accesses are read after every pass (400,000 accesses: 1,000 examples x 400 features), so the "
              f"accesses to 1e-2 are counted in whole passes for every method.", "",
              f"eta0 grid, fixed before the run from the objective's constants: L = lambda_max(X^T X) / (4m) = {x['L']:.4f}, "
              f"1/L = {1 / x['L']:.3f}, 2/L = {2 / x['L']:.3f} (a full-gradient step above 2/L is unstable; the grid's top is 3); "
              f"per-example curvature bound max_i ||x_i||^2 / 4 = {x['Li_max']:.1f}, 1/that = {1 / x['Li_max']:.4f} (the grid's "
              f"bottom is 0.01). Selection per method: fewest accesses to relative gap <= 1e-2 (the claim's quantity).", "",
              "| method | eta0: accesses to rel. gap <= 1e-2 (final rel. gap) |", "|---|---|"]
        for name, rows in x["grid_rows"].items():
            L.append(f"| {name} | " + "; ".join(
                f"{e:g}: {'never' if a is None else f'{a:,}'} ({(fo - x['fstar']) / x['fstar']:.1e})" for e, a, fo in rows) + " |")
        edges = [n for n, v in x["edge"].items() if v]
        L += ["", ("The chosen eta0 sits at the edge of the fixed grid for: " + ", ".join(
                   f"{n} (eta0 = {x['best_eta'][n]:g})" for n in edges) + " (the grid was not widened after the run).")
              if edges else "No chosen eta0 sits at the edge of the grid.", "",
              "| method | chosen command | accesses to rel. gap <= 1e-2 | final rel. gap | final non-zero |", "|---|---|---:|---:|---:|"]
        for name, (cmd, cu) in x["best"].items():
            a = x["reach"][name]
            L.append(f"| {name} | `{show(cmd)}` | {'never' if a is None else f'{a:,}'} | {(cu[-1][1] - x['fstar']) / x['fstar']:.2e} | {cu[-1][2]} |")
        L += ["", f"- FOBOS reaches 1e-2 with <= half the subgradient's accesses (or subgradient never does): **{x['c1']}**",
              f"- Subgradient keeps >= 99% of the 400 weights non-zero at every pass: **{x['c2']}** (minimum {x['sub_min_nnz']:.3f})",
              f"- Deterministic FOBOS (eta0 = {x['eta_det']:g}, chosen at 0.1 lambda_max and kept for the sweep):", "",
              "| lambda / lambda_max | non-zero fraction at step 20 | at the last step | Jaccard with liblinear's support | (with the generating w's) | ok |",
              "|---:|---:|---:|---:|---:|---|"]
        for f, v in x["sweep"].items():
            L.append(f"| {f} | {v['nz20']:.3f} | {v['nzend']:.3f} | {v['jac']:.3f} (optimum: {v['opt_nnz']} non-zero) | {v['jac_gen']:.3f} | {v['ok']} |")
        L += ["", f"Sweep command: `{show(next(iter(x['sweep'].values()))['cmd'])}` (with `--l1` = the fraction times lambda_max).", ""]
    if "R11" in r:
        x = r["R11"]
        L += ["## R11 — MAGIC04S / MAGIC04D (Fig. 1 bottom-middle, bottom-right, top-right)", "",
              "![R11](fobos_smidas-fig1-magic.png)", "",
              f"Data: bench/cases/objective.py's builders (MAGIC04 centred, scaled into [-1, 1], + 1,000 random features). "
              f"lambda = 1e-4 (the panel titles). Budget: MAGIC04S {x['MAGIC04S_passes']} passes "
              f"({budget_of(x['MAGIC04S']):,} accesses; paper 2.5e8), MAGIC04D {x['MAGIC04D_passes']} passes "
              f"({budget_of(x['MAGIC04D']):,} accesses; paper 4e9). SCD runs the same number of passes; its curve is cut at the online budget. "
              + "SMIDAS's p = 2 ln d: " + "; ".join(
                  f"{nm} d = {x[nm + '_stats']['d']:,} (its non-empty columns, the constant included), p = {x[nm + '_stats']['p']:.4f}"
                  for nm in ("MAGIC04S", "MAGIC04D") if nm + "_stats" in x) + ".", ""]
        for name in ("MAGIC04S", "MAGIC04D"):
            L += [f"### {name}", "", fig1_table(x[name], budget_of(x[name])), ""]
        L += [f"- MAGIC04D: SMIDAS <= TG - 0.005 (checkpoints 10/25/50/100%): **{x['c_d'][1]}** — {fmt_ord(x['c_d'][0])}",
              f"- MAGIC04S: TG <= SMIDAS + 0.005: **{x['c_s'][1]}** — {fmt_ord(x['c_s'][0])} (values: TG vs SMIDAS)",
              f"- MAGIC04D: SCD non-zero <= TG non-zero at every checkpoint: **{x['c_nnz'][1]}** — "
              + "; ".join(f"{int(f * 100)}%: {a} vs {b}" for f, a, b, _ in x["c_nnz"][0]),
              f"- MAGIC04D: TG final <= SCD final + 0.002: **{x['c_nnz'][4]}** (TG {x['c_nnz'][3]:.5f}, SCD "
              f"{'-' if x['c_nnz'][2] is None else format(x['c_nnz'][2], '.5f')})", ""]
    if "R12" in r:
        x = r["R12"]
        L += ["## R12 — REUTERS (Fig. 1 top-left), lambda = 1e-6", "", "![R12](fobos_smidas-fig1-reuters.png)", "",
              f"Data: union of ../shared/data/real/rcv1/ rcv1_small.train, rcv1_small.test, rcv1_smaller (LIBSVM rcv1 index, "
              f"cosine TF-IDF, CCAT = +1): {x['n']:,} documents, {x['nnz']:,} non-zeros (paper: 806,791 documents, 9.8e7 non-zeros). "
              f"{x['passes']} passes ({x['budget']:,} accesses). The binary unigrams of rcv1_dev (the plan's second set) were not built in this session. "
              f"SMIDAS's p = 2 ln d with d = {x['stats']['d']:,} (the distinct features of the 1,750 documents + the constant), "
              f"p = {x['stats']['p']:.4f}.", "",
              fig1_table(x["runs"], x["budget"]), "",
              f"- SCD's objective at the budget <= best TG and best SMIDAS (paper grid): **{x['status'] == 'PASS'}** "
              f"(SCD paper step {x['scd'][1]:.5f}; SCD newton step {'-' if x['scdn'] is None else format(x['scdn'][1], '.5f')}; best online {x['best_online']:.5f})", "",
              scd_step_text(x["stats"], "RCV1 CCAT", None if x["scdn"] is None else x["scdn"][1], x["best_online"]), ""]
    if "R13" in r:
        x = r["R13"]
        L += ["## R13 — ARCENE (Fig. 1 top-middle lambda = 1e-2, bottom-left lambda = 1e-6)", "", "![R13](fobos_smidas-fig1-arcene.png)", "",
              f"Data: ARCENE-like stand-in built here (seed {SEED_ARCENE}): 100 x 10,000, 7,000 correlated features x = A s "
              f"(s in R^50, A Gaussian), 3,000 independent Gaussian probes, 46% of entries zeroed, columns divided by max |value|, "
              f"labels sign(x . w*) with w* on 100 of the correlated features, 10% flipped; {x['nnz']:,} non-zeros (ARCENE 5.4e5). "
              f"{x['passes']} passes ({budget_of(x[1e-2]):,} accesses; paper 1.2e9). SMIDAS's p = 2 ln d with d = {x['stats']['d']:,} "
              f"(its non-empty columns, the constant included), p = {x['stats']['p']:.4f}. "
              f"SCD's paper step on this set: the column curvature bound sum_i x_ic^2 / (4m) is a median "
              f"{x['stats']['ratio_med']:.3g} of beta_c = max(1, max_i x_ic^2) / 4 (10-90%: {x['stats']['ratio_q10']:.3g}-"
              f"{x['stats']['ratio_q90']:.3g}).", ""]
        for lam in (1e-2, 1e-6):
            L += [f"### lambda = {lam:g}", "", fig1_table(x[lam], budget_of(x[lam])), ""]
        L += [f"- lambda = 1e-2: SMIDAS <= TG - 0.01: **{x['c_hi'][1]}** — {fmt_ord(x['c_hi'][0])}",
              f"- lambda = 1e-6: SMIDAS <= 1.25 x TG: **{x['c_lo'][1]}** — {fmt_ord(x['c_lo'][0])}",
              "- SCD within 10% of the best online method: " + "; ".join(
                  f"lambda {lam:g}: SCD {'-' if s is None else format(s, '.5f')} vs {b:.5f} (**{ok}**)" for lam, s, b, ok in x["c_scd"]),
              f"- DETCD slower than SCD per data access (SCD's objective <= DETCD's at 10/25/50/100% of the budget, "
              f"at 100% and >= 3 of 4, both lambdas): **{x['detcd_status']}** — "
              + "; ".join(f"lambda {lam:g}: {fmt_ord(v[0])} (values: SCD vs DETCD)" for lam, v in x["c_detcd"].items()),
              f"- DETCD: `{show(x[1e-2][('detcd', None)][0])}` run in-process to the online budget (see `detcd_curve`: "
              f"one greedy step reads all the entries, so the CLI's epoch of d' steps is d' times the budget); "
              f"steps taken: " + ", ".join(f"lambda {lam:g}: {x[lam][('detcd', None)][1][-1][0]}" for lam in (1e-2, 1e-6))
              + ". Final objective: " + ", ".join(f"lambda {lam:g}: {x[lam][('detcd', None)][1][-1][1]:.5f}" for lam in (1e-2, 1e-6)),
              ""]
    L += ["## What did not reproduce, and why (likely)", "", results.get("discussion", "(see the claims table)"), ""]
    (OUT / "fobos_smidas.md").write_text("\n".join(L))


def discussion(results, budget="full"):
    parts = []
    for cid in ("R7", "R8", "R11", "R12", "R13"):
        if cid in results and results[cid]["status"] == "FAIL":
            parts.append(cid)
    budget = results.get("_meta", {}).get("R11", {}).get("budget", budget)
    if "R11" not in results:
        head = ("R11 was not run for this report. The budgets are below the papers' (ARCENE-like 200 passes of ~5.4e5 "
                "accesses vs 1.2e9 accesses, RCV1 1,750 documents vs 806,791), so orderings that the paper shows at the "
                "end of long runs are checked there on the early part of the curves.")
    elif budget == "paper":
        pd = results["R11"]["MAGIC04D_passes"]
        head = ("R11 ran MAGIC04S to the paper's budget (215 passes, ~2.5e8 accesses) and MAGIC04D to "
                + ("the paper's (208 passes, ~4e9)" if pd >= 208 else
                   f"{pd} passes ({budget_of(results['R11']['MAGIC04D']):,} accesses; paper 208 passes, ~4e9: the paper's budget needs ~1 h of "
                   "2 cores for the 28 runs, more than this session had)") + ". "
                "The other budgets are below the papers' (ARCENE-like 200 passes of ~5.4e5 accesses vs 1.2e9 accesses, "
                "RCV1 1,750 documents vs 806,791), so orderings that the paper shows at the end of long runs are checked "
                "there on the early part of the curves.")
    else:
        head = ("All budgets are far below the papers' (MAGIC04D 3 (quick) / 6 (full) passes vs 208, MAGIC04S 10 / 20 vs "
                "215, ARCENE-like 50 / 200 passes of ~5.4e5 accesses vs 1.2e9 accesses, RCV1 1,750 documents vs 806,791), "
                "so orderings that the paper shows at the end of long runs are checked on the early part of the curves.")
    text = ("Claims that failed: " + (", ".join(parts) if parts else "none") + ". " + head)
    if "R12" in results and "stats" in results["R12"]:
        st = results["R12"]["stats"]
        text += (f" REUTERS (R12): SCD's Algorithm 1 step bounds each column's curvature by 1/4 (beta of Eq. 9 with "
                 f"|x| <= 1), while on this sparse TF-IDF text a column's real curvature sum_i x_ic^2 / (4m) is a median "
                 f"{st['ratio_med']:.2g} of that bound (measured, see R12), so SCD's steps are ~{round2(1 / st['ratio_med']):,.0f} "
                 f"times shorter than the column allows; the earlier report's reason (our m ~460x smaller) was wrong: the "
                 f"ratio is the share of documents holding a word times its mean squared value, which m does not set. "
                 f"The plan flagged this claim as 'may not reproduce here'.")
    text += " ARCENE-like is a synthetic stand-in, not ARCENE."
    if "R7" in results:
        c = results["R7"]["checks"]
        text += ("\n\nR7: FOBOS l2^2 and Pegasos track each other closely (largest ratio of the mean gaps from pass 2 on: "
                 f"{c['logistic']['worst_ratio']:.2f} logistic, {c['hinge']['worst_ratio']:.2f} hinge), as the paper says, "
                 "but neither reaches a relative gap of 1e-2 in 10 passes. With eta_t = 1/(lambda t) both are within a "
                 "factor (1 + eta_t lambda) of each other per step, and their gap after T steps is of order "
                 "G^2 / (lambda T) with G^2 = max ||x||^2: here the features are unscaled N(0, 1) in 400 dimensions, "
                 "||x||^2 ~ 400, so after T = 10,000 steps at lambda = 1e-2 that is ~4, the size we measure for hinge "
                 "(logistic's gradient shrinks as the margin grows, hence its smaller gap). The paper does not say how "
                 "its features were scaled or how many steps its x-axis ('Number of Operations') covers; the plan fixes "
                 "this data, lambda and 10 passes, so the claim is reported as not holding here rather than rescued by "
                 "rescaling the data or running longer. "
                 "Without projection the two are equal to 3 digits at every pass (FOBOS lower at "
                 f"{sum(q[3] for q in c['noproj']['rows'])} of the 4 checkpoints), so 'FOBOS slightly outperforms "
                 "Pegasos' is not seen: the difference between the two updates, w/(1 + eta lambda) after the step against "
                 "(1 - eta lambda) w before it, is of order (eta lambda)^2 = 1/t^2 per step.")
    if "R8" in results and "grid_rows" in results["R8"]:
        x = results["R8"]
        bad = [t for t, ok in (("FOBOS reaching 1e-2 with <= half the subgradient's accesses", x["c1"]),
                               ("the subgradient iterates staying >= 99% non-zero", x["c2"]),
                               ("the lambda sweep (step-20 fraction within 0.05 of the last, Jaccard >= 0.9)", x["c3"])) if not ok]
        text += ("\n\nR8 was rerun with a fair setup: `--sgd --initial-t 0` on every command (the stochastic FOBOS and "
                 "subgradient commands of the earlier report lacked `--sgd` and ran the adaptive default rule), eta0 chosen "
                 "per method by the accesses to relative gap 1e-2 (earlier: by the final objective), and deterministic "
                 "FOBOS after the mini-batch clock fix (earlier, step k of `--batch-size 1000` got about eta0/sqrt(1000 k)). "
                 + ("All three checks hold." if not bad else "Not holding: " + "; ".join(bad) + " (numbers in R8)."))
        per_pass = x["best"]["subgradient"][1][0][3]
        fob = {n: a for n, a in x["reach"].items() if n.startswith("FOBOS") and a is not None}
        sub = x["reach"]["subgradient"]
        if fob and sub is not None:
            fn = min(fob, key=fob.get)
            text += (f" Accesses to relative gap 1e-2: {fn} {fob[fn]:,} ({fob[fn] / per_pass:.0f} passes), the subgradient "
                     f"method {sub:,} ({sub / per_pass:.0f} passes), a ratio of {fob[fn] / sub:.2f} (the claim needs <= 0.5). "
                     f"With `--sgd` and eta0 chosen by this quantity the stochastic subgradient method is a strong baseline on "
                     f"this small dense problem. Stochastic FOBOS and the subgradient method differ only for weights that "
                     f"cross zero in a step, and on these dense Gaussian features every weight takes a gradient step at every "
                     f"example, so stochastic FOBOS barely differs (largest objective difference over the passes "
                     f"{max(abs(p[1] - q[1]) for p, q in zip(x['best']['FOBOS (stochastic)'][1], x['best']['subgradient'][1])):.1e}, "
                     f"{x['best']['FOBOS (stochastic)'][1][-1][2]} of 400 non-zero at the end)"
                     + (" and reaches 1e-2 in the same pass" if x["reach"].get("FOBOS (stochastic)") == sub else "")
                     + ". The paper does not say whether its subgradient baseline is stochastic or deterministic; the plan "
                     "names the stochastic `--algo subgradient`, which is what ran.")
        edges = [n for n, v in x["edge"].items() if v]
        if edges:
            text += (" The chosen eta0 is at the edge of the fixed grid for " + ", ".join(edges)
                     + "; the grid was fixed from 1/L and the per-example bound before the run and not widened after it.")
    if "R13" in results and not results["R13"]["c_lo"][1]:
        r = results["R13"][1e-6]
        b = budget_of(r)
        sm, se, tg = (at(r[k][1], b) for k in (("smidas", "paper"), ("smidas", "ext"), ("tg", "paper")))
        eta = lambda k: r[k][0][r[k][0].index("-l") + 1]
        text += (f"\n\nR13 at lambda = 1e-6 (SMIDAS <= 1.25 x TG) does not hold with p = 2 ln d either: SMIDAS's best "
                 f"eta on the paper grid is {eta(('smidas', 'paper'))}"
                 + (" (the grid's top)" if float(eta(("smidas", "paper"))) >= max(PAPER_GRID) else "")
                 + f", objective {sm[1]:.5f} at the budget against TG's {tg[1]:.5f} (eta {eta(('tg', 'paper'))}); on the grid "
                 f"extended to 1 SMIDAS reaches {se[1]:.5f} (eta {eta(('smidas', 'ext'))}), {'still above' if se[1] > 1.25 * tg[1] else 'within'} 1.25 x TG (not used for PASS/FAIL). The earlier run "
                 f"(streamlearn's default p = 2 ln 2^18) failed this check too; the audit re-derived that failure as honest.")
    if "R13" in results and "detcd_status" in results["R13"]:
        text += ("\n\nDETCD (R13): every greedy step reads all the entries (the full gradient), so at the same number of "
                 "data accesses it takes ~d' = 10,000 times fewer coordinate steps than SCD; status "
                 f"{results['R13']['detcd_status']}.")
    return text


SAVED = REPO / "bench" / "out" / "repro_fobos_smidas_results.pkl"


def load_saved(quick: bool) -> dict:
    """The claims saved by an earlier run in the same mode (quick or not): {claim: {"result", "meta"}}."""
    try:
        with open(SAVED, "rb") as f:
            obj = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return {}
    if not isinstance(obj, dict) or obj.get("version") != 2 or obj.get("quick") != quick:
        return {}
    return obj.get("claims", {})


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "quick", help="shorter budgets: MAGIC04S/D 10/3 passes (full 20/6), ARCENE-like 50 (full 200); R8 100 and RCV1 20 in both")
    ap.add_argument("--budget", choices=("full", "paper"), default="full",
                    help="paper: R11 (MAGIC04S/D) to the paper's 215 / 208 passes (~2.5e8 / ~4e9 accesses; about an hour "
                         "on 2 free cores); R13 stays at 200 passes (the paper's 1.2e9 accesses would take hours)")
    ap.add_argument("--magic04d-passes", type=int, default=None,
                    help="override MAGIC04D's passes in R11 (e.g. with --budget paper when ~1 h of 2 cores for its "
                         "208 passes are not available; the report states the passes run)")
    shared(ap, "only", default="R7,R8,R11,R12,R13",
                    help="comma-separated claims to run; the other claims' sections are kept from the saved results "
                         "of an earlier run (bench/out/repro_fobos_smidas_results.pkl) in the same mode (quick or not), "
                         "each with the command that produced it")
    shared(ap, "jobs", help="streamlearn runs at a time (default 2)")


def run(args: argparse.Namespace, ctx: Context):
    raw = ctx.argv
    if args.quick and args.budget == "paper":
        ctx.error("--quick and --budget paper exclude each other")
    if not SHARED.exists():
        print(f"{SHARED} is absent: skipping the FOBOS / SMIDAS reproductions", flush=True)
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    DATA.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    runner = Runner(max(1, args.jobs))
    only = [c for c in args.only.split(",") if c]
    saved = load_saved(args.quick)
    results, runs_meta = {}, {}
    fns = {"R7": r7, "R8": r8, "R11": r11, "R12": r12, "R13": r13}
    kept = [c for c in ("R7", "R8", "R11", "R12", "R13") if c not in only and c in saved]
    for cid in kept:
        results[cid], runs_meta[cid] = saved[cid]["result"], saved[cid]["meta"]
    for cid in only:
        err(f"== {cid} ==")
        t1 = time.time()
        results[cid] = fns[cid](runner, args.quick, **({"budget": args.budget, "d_passes": args.magic04d_passes} if cid == "R11" else {}))
        runs_meta[cid] = dict(argv=raw, date=f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", commit=head_commit(),
                              elapsed=time.time() - t1, budget=args.budget, jobs=args.jobs,
                              load="/".join(f"{x:.2f}" for x in os.getloadavg()))
        print(f"{cid}: {results[cid]['status']}", flush=True)
        # the raw results after every claim, so the report can be rewritten without a rerun and an --only run
        # keeps the other claims (bench/out is git-ignored)
        try:
            (REPO / "bench" / "out").mkdir(exist_ok=True)
            tmp = SAVED.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                pickle.dump({"version": 2, "quick": args.quick,
                             "claims": {c: {"result": results[c], "meta": runs_meta[c]} for c in results}}, f)
            os.replace(tmp, SAVED)
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as e:
            err(f"could not save the raw results: {e}")
    results["_meta"] = runs_meta
    results["_kept"] = kept
    results["discussion"] = discussion(results, args.budget)
    report(args, raw, results, time.time() - t0)
    for line in (OUT / "fobos_smidas.md").read_text().splitlines():
        if line.startswith("| R") or line.startswith("- "):
            print(line)
    print(f"run time {time.time() - t0:.0f} s; report bench/repro/fobos_smidas.md")
    return 0


CASE = Case("repro_fobos_smidas", arguments, run, __doc__)
