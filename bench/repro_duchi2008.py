"""Reproduction of Duchi, Shalev-Shwartz, Singer & Chandra 2008, "Efficient projections onto the
l1-ball" (issue 15; plan: ../shared/docs/reproductions.md, section "Duchi ... 2008").

Claims run here: R1 (Fig. 4/5, synthetic; n = m = 800 fully, n = m = 4000 in a short form), R2 (Fig. 6
left, RCV1 CCAT, full and 1/4 batches, L1 vs EG), R3 (Fig. 6 right, batches of 1 and 100), R5 (Fig. 8,
online L1 vs EG on the unigram + bigram stream of rcv1_dev, CCAT and ECAT, with `train --trace`), R6
(Section 7 timing, benchmark stream and R5's bigram stream). R4 (per-class L1/EG on MNIST kernel
features, a batch experiment) runs in bench/repro_multiclass.py. The data come from streamlearn.datasets.

Usage: ``.venv/bin/python bench/repro_duchi2008.py [--quick] [--only R1,R2,R5,R6]``. Writes
bench/repro/duchi2008.md and bench/repro/duchi2008-*.png. --quick: n = 800 only, 30 passes (R1), 50
passes (R2), 10 (R3), eta0 in (1, 10, 100) (R5), fewer lines and repetitions (R6). Exits 0 with a
message when ../shared is absent.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")   # one BLAS thread: threaded BLAS is far slower on a shared 2-core machine

import numpy as np  # noqa: E402

from repro_common import Progress  # noqa: E402

from streamlearn import batch as sbatch  # noqa: E402
from streamlearn import datasets  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
OUT = REPO / "bench" / "repro"
SEED = 20080705
T0 = time.time()


def say(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- R1 data and optimum
def synthetic(n: int, kind: str, seed: int):
    """n x n (m = n): streamlearn.datasets.regression (squared: y = Xw + N(0,1)) or .classification
    (logistic: sign(w.x), 10% flipped); w ~ N(0,1), half zeroed."""
    if kind == "squared":
        X, y, _ = datasets.regression(n, n, seed)
    else:
        X, y, _ = datasets.classification(n, n, seed, flip=0.1)
    return X, y


def penalised_optimum(X, y, kind):
    """lambda = 0.1 lambda_max (lambda_max = ||X^T y||_inf / m); z = ||w*||_1 and the optimum of the
    constrained problem = streamlearn's average loss at w* (the penalised solution solves the
    constrained problem with radius ||w*||_1)."""
    from sklearn.linear_model import Lasso
    m = X.shape[0]
    lam = 0.1 * np.abs(X.T @ y).max() / m
    if kind == "squared":
        est = Lasso(alpha=lam, fit_intercept=False, tol=1e-12, max_iter=100000).fit(X, y)
        w = est.coef_
        f = np.mean((X @ w - y) ** 2)
    else:
        w = penalised_logistic(X, y, lam)
        f = np.mean(np.logaddexp(0.0, -y * (X @ w)))
    return lam, float(np.abs(w).sum()), float(f), w


def penalised_logistic(X, y, lam, iters=3000):
    """min mean log(1 + exp(-y x.w)) + lam ||w||_1 by FISTA (soft-threshold prox, gradient-based
    restart); scikit-learn's liblinear did not finish at a tight tolerance in minutes here."""
    m = X.shape[0]
    rng = np.random.default_rng(SEED)
    v = rng.standard_normal(X.shape[1])
    for _ in range(60):                              # power iteration for ||X||_2^2
        v = X.T @ (X @ v)
        v /= np.linalg.norm(v)
    L = 1.05 * np.linalg.norm(X @ v) ** 2 / (4 * m)
    F = lambda w: np.mean(np.logaddexp(0.0, -y * (X @ w))) + lam * np.abs(w).sum()
    last = np.inf
    grad = lambda w: -(X.T @ (y / (1.0 + np.exp(y * (X @ w))))) / m
    w = np.zeros(X.shape[1])
    v, t = w.copy(), 1.0
    for it in range(iters):
        if it % 50 == 0:
            now = F(w)
            if last - now < 1e-13 * abs(now):
                break
            last = now
        u = v - grad(v) / L
        w_new = np.sign(u) * np.maximum(np.abs(u) - lam / L, 0.0)
        if np.dot(v - w_new, w_new - w) > 0:        # restart
            t = 1.0
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        v = w_new + (t - 1) / t_new * (w_new - w)
        w, t = w_new, t_new
    return w


def cd_curve(X, y, lam, fstar):
    """scikit-learn's coordinate descent (Lasso) stopped after k epochs: (accesses, gap) per k."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso
    out = []
    for k in (1, 2, 3, 5, 10, 20, 50, 100):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            w = Lasso(alpha=lam, fit_intercept=False, tol=0.0, max_iter=k).fit(X, y).coef_
        out.append((k * X.size, max(np.mean((X @ w - y) ** 2) - fstar, 1e-16)))
    return out


def fit_curve(kind, X, y, passes, bits, seed, **kw):
    """One streamlearn run with objective after every pass: (accesses, objective) arrays and seconds."""
    from streamlearn.estimators import SparseLinearClassifier, SparseLinearRegressor
    cls = SparseLinearRegressor if kind == "squared" else SparseLinearClassifier
    opts = dict(noconstant=True, holdout_off=True, sgd=True, bits=bits, random_seed=seed, passes=passes,
                objective=True)
    opts.update(kw)
    if kind == "logistic":
        opts["loss"] = "logistic"
    t = time.perf_counter()
    est = cls(**opts).fit(X, y)
    secs = time.perf_counter() - t
    acc = np.array([o["accesses"] for o in est.objective_], float)
    obj = np.array([o["objective"] for o in est.objective_], float)
    return acc, obj, secs


def timed(kind, X, y, passes, bits, seed, reps=3, **kw):
    """Median wall seconds of the same run without objective reporting."""
    from streamlearn.estimators import SparseLinearClassifier, SparseLinearRegressor
    cls = SparseLinearRegressor if kind == "squared" else SparseLinearClassifier
    opts = dict(noconstant=True, holdout_off=True, sgd=True, bits=bits, random_seed=seed, passes=passes)
    opts.update(kw)
    if kind == "logistic":
        opts["loss"] = "logistic"
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        cls(**opts).fit(X, y)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cmd_of(kind, **kw):
    parts = ["streamlearn train --noconstant --holdout-off --sgd --power-t 0.5", f"--loss {kind}"]
    for k, v in kw.items():
        if k in ("power_t",):
            parts[0] = parts[0].replace("--power-t 0.5", f"--power-t {v:g}")
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            parts.append(flag)
        elif k == "learning_rate":
            parts.append(f"-l {v:g}")
        elif k == "bits":
            parts.append(f"-b {v}")
        else:
            parts.append(f"{flag} {v:g}" if isinstance(v, float) else f"{flag} {v}")
    return " ".join(parts)


# ----------------------------------------------------------------------------- figures
def new_fig(ncols=1, w=6.0):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(w * ncols, 4.2), layout="constrained")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def save(fig, name):
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"duchi2008-{name}.png"
    fig.savefig(path, dpi=100)
    return path


# ----------------------------------------------------------------------------- R1
R1_ETAS = {"squared": (0.001, 0.01, 0.1), "logistic": (0.1, 1.0, 10.0)}


def run_r1(quick, results):
    sizes = [(800, 30 if quick else 100)] + ([] if quick else [(4000, 10)])
    rows = []
    best_eta = {}
    for kind, fig_name in (("squared", "fig4"), ("logistic", "fig5")):
        fig, axes = new_fig(len(sizes))
        for ax, (n, passes) in zip(axes, sizes):
            seed = SEED + n + (0 if kind == "squared" else 1)
            X, y = synthetic(n, kind, seed)
            lam, z, fstar, _ = penalised_optimum(X, y, kind)
            bits = int(np.ceil(np.log2(n))) + 1
            say(f"R1 {kind} n=m={n}: seed {seed}, lambda {lam:.4g}, z {z:.4g}, f* {fstar:.6g}")
            curves = {}
            for name, batch in (("L1-Batch", n), ("L1-Stoch", 1)):
                if n == 800:
                    grid = R1_ETAS[kind]
                else:
                    grid = (best_eta[(kind, name)],)      # the n = 800 choice, not searched again
                best = None
                for eta in grid:
                    kw = dict(algo="l1ball", radius=z, learning_rate=eta, power_t=0.5, batch_size=batch,
                              shuffle=True)
                    acc, obj, secs = fit_curve(kind, X, y, passes, bits, seed, **kw)
                    say(f"  {name} eta0 {eta:g}: final objective {obj[-1]:.6g} ({secs:.1f} s)")
                    if best is None or obj[-1] < best[1][-1]:
                        best = (acc, obj, eta, kw)
                curves[name] = best
                if n == 800:
                    best_eta[(kind, name)] = best[2]
            gaps = {k: np.maximum(v[1] - fstar, 1e-16) for k, v in curves.items()}
            rel = {k: g / fstar for k, g in gaps.items()}
            # L1-Line: full-gradient projected gradient with a backtracking line search
            # (streamlearn.batch, in memory); its accesses include the line search's function values
            line = sbatch.fit(X, y, kind, "l1", radius=z, line_search=True, eta0=1.0, steps=passes,
                              record=np.arange(1, passes + 1))
            line_gap = np.maximum(line.history["objective"] - fstar, 1e-16)
            ax.plot(line.history["accesses"], line_gap, "g-", label="L1-Line")
            line_at = {p: float(line_gap[min(p, passes) - 1] / fstar) for p in (1, 10, passes)}
            say(f"  L1-Line: rel. gap after 1/10/{passes} steps {line_at[1]:.3g}/{line_at[10]:.3g}/"
                f"{line_at[passes]:.3g}; {line.accesses / (n * n):.1f} passes of accesses")
            if kind == "squared":
                cd = cd_curve(X, y, lam, fstar)
                ax.plot([a for a, _ in cd], [g for _, g in cd], "k:", marker=".", label="CD (sklearn Lasso)")
            for name, style in (("L1-Batch", "b-"), ("L1-Stoch", "r-")):
                ax.plot(curves[name][0], gaps[name], style, label=name)
            ax.set_yscale("log")
            ax.set_xscale("log")
            ax.set_xlabel("data accesses")
            ax.set_ylabel("f(w_t) - f(w*)")
            ax.set_title(f"{'Fig. 4' if kind == 'squared' else 'Fig. 5'} ({kind}), n = m = {n}")
            ax.legend()
            st = rel["L1-Stoch"]
            k10 = min(10, len(st)) - 1
            c1 = bool(np.min(st[:k10 + 1]) <= 1e-2)
            c2 = bool(gaps["L1-Stoch"][0] < gaps["L1-Batch"][0])
            if len(st) >= 100:
                d1 = np.log10(st[0]) - np.log10(st[9])
                d2 = np.log10(st[9]) - np.log10(st[99])
                c3 = bool(d1 > d2)
                c3txt = f"log10 drop pass 1->10 {d1:.2f} vs 10->100 {d2:.2f}"
            else:
                c3, c3txt = None, f"not checked ({len(st)} passes)"
            rows.append(dict(kind=kind, n=n, passes=passes, z=z, lam=lam, fstar=fstar,
                             eta={k: v[2] for k, v in curves.items()},
                             cmd={k: cmd_of(kind, bits=bits, passes=passes, **v[3])
                                  for k, v in curves.items()},
                             rel10=float(np.min(st[:k10 + 1])), gap1=(gaps["L1-Stoch"][0], gaps["L1-Batch"][0]),
                             c1=c1, c2=c2, c3=c3, c3txt=c3txt, relfinal=float(st[-1]),
                             batchfinal=float(rel["L1-Batch"][-1]), line=line_at,
                             line_passes=line.accesses / (n * n),
                             line_cmd=f"streamlearn.batch.fit(X, y, '{kind}', 'l1', radius=z, line_search=True, "
                                      f"eta0=1.0, steps={passes})"))
        results.setdefault("figs", []).append(save(fig, fig_name))
    results["R1"] = rows


# ----------------------------------------------------------------------------- RCV1
def load_rcv1():
    return datasets.rcv1_ccat(dedup=True, data_dir=SHARED / "data")


def proj_l1(v, z):
    u = np.abs(v)
    if u.sum() <= z:
        return v
    s = np.sort(u)[::-1]
    cs = np.cumsum(s)
    k = np.nonzero(s * np.arange(1, len(s) + 1) > (cs - z))[0][-1]
    theta = (cs[k] - z) / (k + 1)
    return np.sign(v) * np.maximum(u - theta, 0)


def constrained_logistic_optimum(X, y, z, iters=4000):
    """Accelerated projected gradient (FISTA) on mean logistic loss over ||w||_1 <= z."""
    m = X.shape[0]
    L = 0.25 * (np.sqrt((X.multiply(X)).sum(axis=1)).max() ** 2)   # Lipschitz bound (rows' norms)
    f = lambda w: np.mean(np.logaddexp(0.0, -y * (X @ w)))
    grad = lambda w: -(X.T @ (y / (1.0 + np.exp(y * (X @ w))))) / m
    w = np.zeros(X.shape[1])
    v, t = w.copy(), 1.0
    for _ in range(iters):
        w_new = proj_l1(v - grad(v) / L, z)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        v = w_new + (t - 1) / t_new * (w_new - w)
        w, t = w_new, t_new
    return f(w)


R2_ETAS = (1.0, 10.0, 100.0)
EG_POWERS = (0.0, 0.5, 1.0)


def best_run(X, y, passes, bits, seed, algo, batch, extra):
    best = None
    powers = EG_POWERS if algo == "eg" else (0.5,)
    for p in powers:
        for eta in R2_ETAS:
            kw = dict(algo=algo, radius=10.0, learning_rate=eta, power_t=p, batch_size=batch, shuffle=True, **extra)
            acc, obj, secs = fit_curve("logistic", X, y, passes, bits, seed, **kw)
            if best is None or obj[-1] < best[1][-1]:
                best = (acc, obj, kw)
    return best


def checkpoints(n):
    return [max(1, int(round(f * n))) - 1 for f in (0.1, 0.25, 0.5, 1.0)]


def ordering(a, b):
    """a below b at the four checkpoints: (held at 100%, count held)."""
    idx = checkpoints(len(a))
    held = [bool(a[i] < b[i]) for i in idx]
    return held[-1] and sum(held) >= 3, held


def fig6_runs(tag, X, y, passes, bits, seed, fstar, quick, runs, title, fig_name, results):
    """Each run (name, algo, batch, extra options, line style) at its best grid point, timed, drawn
    against data accesses and seconds (Fig. 6's two panels)."""
    cur = {}
    for name, algo, batch, extra, _ in runs:
        acc, obj, kw = best_run(X, y, passes, bits, seed, algo, batch, extra)
        secs = timed("logistic", X, y, passes, bits, seed, reps=1 if quick else 3, **kw)
        cur[name] = dict(acc=acc, gap=np.maximum(obj - fstar, 1e-16), kw=kw, secs=secs,
                         cmd=cmd_of("logistic", bits=bits, passes=passes, **kw))
        say(f"  {tag} {name}: eta0 {kw['learning_rate']:g} power_t {kw['power_t']:g}, final gap "
            f"{cur[name]['gap'][-1]:.4g}, {secs:.2f} s for {passes} passes")
    fig, axes = new_fig(2)
    for name, _, _, _, style in runs:
        c = cur[name]
        axes[0].plot(c["acc"], c["gap"], style, label=name)
        axes[1].plot(np.arange(1, passes + 1) * c["secs"] / passes, c["gap"], style, label=name)
    for ax, xl in zip(axes, ("data accesses", "seconds (median of 3, no objective reporting)")):
        ax.set_yscale("log")
        ax.set_xlabel(xl)
        ax.set_ylabel("f(w_t) - f(w*)")
        ax.legend()
    axes[0].set_title(title)
    results.setdefault("figs", []).append(save(fig, fig_name))
    return cur


def run_r2_r3(quick, results):
    X, y = load_rcv1()
    m = X.shape[0]
    bits = 16          # 47,237 columns into 65,536 rows: no collisions with --hash strings
    seed = SEED + 2
    say(f"R2/R3 RCV1: {m} documents after de-duplication, {X.nnz} non-zeros; seed {seed}")
    fstar = constrained_logistic_optimum(X, y, 10.0)
    say(f"  optimum (FISTA, 4000 iterations) f* = {fstar:.8g}")
    # R2
    passes = 50 if quick else 200
    cur = fig6_runs("R2", X, y, passes, bits, seed, fstar, quick,
                    (("L1-Full", "l1ball", m, {"projection": "linear"}, "b-"),
                     ("L1-Stoch", "l1ball", m // 4, {"projection": "linear"}, "r-"),
                     ("EG-Full", "eg", m, {}, "b--"), ("EG-Stoch", "eg", m // 4, {}, "r--")),
                    "Fig. 6 left: RCV1 CCAT, z = 10", "fig6-left", results)
    best_l1 = min(cur["L1-Full"]["gap"][-1], cur["L1-Stoch"]["gap"][-1])
    best_eg = min(cur["EG-Full"]["gap"][-1], cur["EG-Stoch"]["gap"][-1])
    o_full = ordering(cur["L1-Full"]["gap"], cur["EG-Full"]["gap"])
    o_stoch = ordering(cur["L1-Stoch"]["gap"], cur["EG-Stoch"]["gap"])

    def per_second(a, b):
        ta, tb = cur[a]["secs"] / passes, cur[b]["secs"] / passes
        T = min(ta, tb) * passes
        held = []
        for f in (0.1, 0.25, 0.5, 1.0):
            ia = min(passes, max(1, int(f * T / ta))) - 1
            ib = min(passes, max(1, int(f * T / tb))) - 1
            held.append(bool(cur[a]["gap"][ia] < cur[b]["gap"][ib]))
        return held[-1] and sum(held) >= 3, held
    s_full = per_second("L1-Full", "EG-Full")
    s_stoch = per_second("L1-Stoch", "EG-Stoch")
    results["R2"] = dict(m=m, fstar=fstar, passes=passes, cur=cur, best_l1=best_l1, best_eg=best_eg,
                         ratio=best_l1 / best_eg, o_full=o_full, o_stoch=o_stoch, s_full=s_full, s_stoch=s_stoch,
                         ok=bool(best_l1 <= 0.5 * best_eg and o_full[0] and o_stoch[0] and s_full[0] and s_stoch[0]))
    # R3
    passes = 10 if quick else 50
    cur3 = fig6_runs("R3", X, y, passes, bits, seed, fstar, quick,
                     (("L1-1", "l1ball", 1, {"projection": "tree"}, "b-"),
                      ("L1-100", "l1ball", 100, {"projection": "tree"}, "r-"),
                      ("EG-1", "eg", 1, {}, "b--"), ("EG-100", "eg", 100, {}, "r--")),
                     "Fig. 6 right: RCV1 CCAT, batches of 1 and 100", "fig6-right", results)
    eg1, l11 = cur3["EG-1"]["secs"] / passes, cur3["L1-1"]["secs"] / passes
    results["R3"] = dict(passes=passes, cur=cur3, eg1=eg1, l11=l11, ok=bool(eg1 <= l11))


# ----------------------------------------------------------------------------- R6
def projection_timings(path, tiny, lines, reps, what):
    """Kernel time per example (us) of plain SGD ("none"), the tree and (at -b 22) the linear
    projection at -b 16, 22, 24, median of ``reps`` runs (linear: 1), also with the table's pages
    pre-touched ("_warm"); ``tiny`` (10 lines) loads the kernels before the clock runs. Returns the
    rows, linear / tree above SGD at -b 22 and the tree's -b 24 / -b 16 growth (pre-touched)."""
    from bench_l1ball import kernel_time
    rows = {}
    for bits in (16, 22, 24):
        row = {}
        for proj in ("none", "tree", "linear"):
            if proj == "linear" and bits != 22:
                continue
            r = 1 if proj == "linear" else reps
            kernel_time(tiny, bits, proj, 100.0)
            row[proj] = statistics.median(kernel_time(path, bits, proj, 100.0) for _ in range(r)) / lines * 1e6
            if proj != "linear":
                row[proj + "_warm"] = statistics.median(kernel_time(path, bits, proj, 100.0, pretouch=True)
                                                        for _ in range(r)) / lines * 1e6
        rows[bits] = row
        say(f"R6 {what} -b {bits}: " + ", ".join(f"{k} {v:.2f} us" for k, v in row.items()))
    r22 = rows[22]
    ratio = (r22["linear"] - r22["none"]) / (r22["tree"] - r22["none"])
    growth = (rows[24]["tree_warm"] - rows[24]["none_warm"]) / (rows[16]["tree_warm"] - rows[16]["none_warm"])
    return dict(lines=lines, rows=rows, ratio=ratio, growth=growth, ok=bool(ratio >= 10 and growth <= 1.5))


def run_r6(quick, results):
    sys.path.insert(0, str(REPO / "bench"))
    from bench_core import DEFAULT_SEED, ensure_data, ensure_head
    lines = 5000 if quick else 20000
    data, meta = ensure_data(200_000, DEFAULT_SEED)
    head = ensure_head(data, meta, Path("bench/data") / f"bench-l1ball-{lines}.vw", lines)
    tiny = ensure_head(data, meta, Path("bench/data") / "bench-l1ball-10.vw", 10)
    results["R6"] = dict(projection_timings(head, tiny, lines, 3, "benchmark"), data=str(data))


# ----------------------------------------------------------------------------- R5 (Fig. 8) and R6's bigram stream
R5_TOPICS = ("CCAT", "ECAT")
R5_ETAS = (1.0, 3.0, 10.0, 30.0, 100.0)        # the plan's eta0 grid (fixed); EG also tries EG_POWERS
R5_QUICK_ETAS = (1.0, 10.0, 100.0)
R5_RADIUS = 100.0
R5_BITS = 22
R5_EVERY = 58                                    # 2,316 documents: 40 rows; deciles on every 4th row
R5_DATA = REPO / "bench" / "data" / "repro_duchi2008"
R5_PAPER_ERR = {"CCAT": 11.9, "ECAT": 14.9}      # L1's error over all 804k examples (EG: > 15% and 20%)


def r5_stream(topic):
    """The bigram stream of one topic (rebuilt every run: deterministic, under a second) and its labels."""
    docs = datasets.rcv1_dev_ngrams(topic, bigrams=True, data_dir=SHARED / "data")
    path = R5_DATA / f"rcv1_dev_{topic.lower()}.vw"
    datasets.write_vw_ngrams(path, docs)
    return path, np.array([d[0] for d in docs]), len({f for d in docs for f in d[1]})


def r5_args(path, algo, eta, power):
    return ["-d", str(path.relative_to(REPO)), "-b", str(R5_BITS), "--loss", "logistic", "--sgd", "--power-t", f"{power:g}",
            "--noconstant", "--algo", algo, "--radius", f"{R5_RADIUS:g}", "-l", f"{eta:g}"]


def r5_run(path, algo, eta, power):
    """One pass with a trace row every R5_EVERY documents: dict of the trace's columns (arrays)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.tsv"
        cmd = [sys.executable, "-m", "streamlearn", "train"] + r5_args(path, algo, eta, power) + [
            "--trace", str(trace), "--trace-every", str(R5_EVERY), "--quiet"]
        subprocess.run(cmd, cwd=REPO, check=True)
        lines = trace.read_text().splitlines()
    head = lines[0].split("\t")
    cols = {h: np.array([float(x.split("\t")[i]) for x in lines[1:]]) for i, h in enumerate(head)}
    cols["cumloss"] = cols["average_loss"] * cols["weighted"]
    cols["cmd"] = " ".join(["streamlearn train"] + r5_args(path, algo, eta, power) +
                           ["--trace FILE", f"--trace-every {R5_EVERY}"])
    return cols


def run_r5(quick, results):
    etas = R5_QUICK_ETAS if quick else R5_ETAS
    out = {}
    for topic in R5_TOPICS:
        path, labels, nfeat = r5_stream(topic)
        pos = float(np.mean(labels > 0))
        const_err = 100.0 * min(pos, 1.0 - pos)
        runs = {}
        for algo, powers in (("l1ball", (0.5,)), ("eg", EG_POWERS)):
            best, grid = None, []
            for p in powers:
                for eta in etas:
                    c = r5_run(path, algo, eta, p)
                    grid.append((eta, p, c["cumloss"][-1], 100.0 * c["error_rate"][-1]))
                    if best is None or c["cumloss"][-1] < best["cumloss"][-1]:
                        best = dict(c, eta=eta, power=p)
            best["grid"] = grid
            runs[algo] = best
            say(f"R5 {topic} {algo}: best eta0 {best['eta']:g} power-t {best['power']:g}, cumulative loss "
                f"{best['cumloss'][-1]:.1f}, error {100 * best['error_rate'][-1]:.2f}%")
        l1, eg = runs["l1ball"], runs["eg"]
        n = len(labels)
        ex = l1["examples"]
        pts = [int(np.argmin(np.abs(ex - f * n))) for f in np.arange(1, 11) / 10]
        wins = sum(bool(l1["cumloss"][i] < eg["cumloss"][i]) for i in pts)
        l1_err, eg_err = 100.0 * l1["error_rate"][-1], 100.0 * eg["error_rate"][-1]
        frac_l1 = l1["nonzero"][-1] / l1["features_seen"][-1]
        frac_eg = eg["nonzero"][-1] / eg["features_seen"][-1]
        c_loss = bool(l1["cumloss"][-1] < eg["cumloss"][-1] and wins >= 8)
        c_sparse = bool(frac_l1 <= 0.10 and eg["nonzero"][-1] >= eg["features_seen"][-1])
        if topic == "CCAT":
            c_err = bool(l1_err <= eg_err - 1.0)
            err_txt = f"L1 {l1_err:.2f}% <= EG {eg_err:.2f}% - 1"
        else:
            c_err = bool(l1_err <= eg_err and l1_err <= const_err + 0.5)
            err_txt = f"L1 {l1_err:.2f}% <= EG {eg_err:.2f}% and <= constant {const_err:.2f}% + 0.5"
        out[topic] = dict(n=n, pos=pos, const_err=const_err, nfeat=nfeat, runs=runs, wins=wins,
                          pts=[int(ex[i]) for i in pts], l1_err=l1_err, eg_err=eg_err, frac_l1=frac_l1,
                          frac_eg=frac_eg, c_loss=c_loss, c_sparse=c_sparse, c_err=c_err, err_txt=err_txt,
                          path=str(path.relative_to(REPO)))
    results["R5"] = dict(topics=out, etas=etas, quick=quick,
                         ok=all(t["c_loss"] and t["c_sparse"] and t["c_err"] for t in out.values()))
    plot_r5(results["R5"])


def plot_r5(r):
    fig, (ax1, ax2) = new_fig(2)
    style = {("l1ball", "CCAT"): ("C0", "-"), ("l1ball", "ECAT"): ("C0", "--"),
             ("eg", "CCAT"): ("C3", "-"), ("eg", "ECAT"): ("C3", "--")}
    for topic, t in r["topics"].items():
        for algo, name in (("eg", "EG"), ("l1ball", "L1")):
            c = t["runs"][algo]
            col, ls = style[(algo, topic)]
            ax1.plot(c["examples"], c["cumloss"], color=col, ls=ls, label=f"{name} - {topic}")
        c = t["runs"]["l1ball"]
        ls = style[("l1ball", topic)][1]
        ax2.plot(c["examples"], 100 * c["nonzero"] / c["features_seen"], color="C0", ls=ls,
                 label=f"L1 - {topic}: % of features seen")
        ax2.plot(c["examples"], 100 * c["nonzero"] / 2 ** R5_BITS, color="C2", ls=ls,
                 label=f"L1 - {topic}: % of 2^{R5_BITS} weights")
    ax1.set_xlabel("Training examples")
    ax1.set_ylabel("Cumulative loss")
    ax1.legend()
    ax1.set_title("RCV1 dev (2,316 docs), unigrams + bigrams, one pass")
    ax2.set_xlabel("Training examples")
    ax2.set_ylabel("% non-zero (sparsity)")
    ax2.set_title("L1 weights over time (EG: 100% of features seen)")
    ax2.legend(fontsize=8)
    save(fig, "fig8")


def run_r6_bigram(quick, results):
    """R6 on R5's bigram stream (CCAT): kernel time per example above plain SGD, linear vs tree at -b 22;
    tree at -b 24 vs -b 16 with the table's pages pre-touched (as run_r6 on the benchmark stream)."""
    sys.path.insert(0, str(REPO / "bench"))
    path = R5_DATA / "rcv1_dev_ccat.vw"
    if not path.exists():
        r5_stream("CCAT")
    lines = sum(1 for _ in open(path))
    tiny = R5_DATA / "rcv1_dev_ccat-10.vw"          # compiles / loads the kernels before the clock runs
    with open(path) as f, open(tiny, "w") as t:
        t.writelines(next(f) for _ in range(10))
    results["R6b"] = dict(projection_timings(path, tiny, lines, 1 if quick else 3, "bigram"),
                          data=str(path.relative_to(REPO)))


# ----------------------------------------------------------------------------- report
def r6_table(rows) -> list[str]:
    """R6's timing table: one line per -b (us per example)."""
    return ["| -b | sgd (us) | tree (us) | linear (us) | sgd pre-touched | tree pre-touched |",
            "|---:|---:|---:|---:|---:|---:|"] + [
        f"| {b} | {row['none']:.2f} | {row['tree']:.2f} | {row.get('linear', float('nan')):.2f} | "
        f"{row['none_warm']:.2f} | {row['tree_warm']:.2f} |" for b, row in rows.items()]


def pf(ok):
    return "PASS" if ok else "FAIL"


def report(args, results, secs):
    sys.path.insert(0, str(REPO / "bench"))
    from bench_core import machine_facts
    mf = machine_facts()
    L = ["# Duchi, Shalev-Shwartz, Singer & Chandra 2008 — reproduction (bench/repro_duchi2008.py)", "",
         f"- Command: `.venv/bin/python bench/repro_duchi2008.py{' --quick' if args.quick else ''}` "
         f"({'quick' if args.quick else 'full'} version)",
         f"- Run time: {secs:.0f} s",
         f"- Machine: nproc {mf['nproc']}, CPU {mf['cpu']}, load average at the end {mf['load']}; Python "
         f"{mf['python']}, numpy {mf['numpy']}, numba {mf['numba']}; commit {mf['commit']}",
         f"- Seeds: base {SEED}; R1 data seed = {SEED} + n (+1 for logistic), the same as streamlearn's "
         f"`--random-seed` (shuffles); R2/R3 seed {SEED + 2}; R6 uses the benchmark stream's seed.",
         "- Step size everywhere eta_t = eta0/sqrt(t) (`--sgd --power-t 0.5`); EG also tries power-t 0 and 1.",
         f"  Fixed grids (chosen before running, never widened): R1 squared eta0 in {R1_ETAS['squared']}, "
         f"logistic {R1_ETAS['logistic']}; R2/R3 eta0 in {R2_ETAS}; the best final objective per method is kept.",
         "", "## Claims", "", "| claim | paper | ours | status |", "|---|---|---|---|"]
    r1 = results.get("R1", [])
    for r in r1:
        st = "PASS" if r["c1"] and r["c2"] and r["c3"] is not False else "FAIL"
        L.append(f"| R1 {r['kind']} n=m={r['n']} ({r['passes']} passes) | L1-Stoch gap <= 1e-2 (rel.) in 10 passes; "
                 f"beats L1-Batch after 1 pass; fast then slow | rel. gap by pass 10 {r['rel10']:.2e}; gap after 1 pass "
                 f"stoch {r['gap1'][0]:.3g} vs batch {r['gap1'][1]:.3g}; {r['c3txt']} | {st} |")
    if "R2" in results:
        r = results["R2"]
        L.append(f"| R2 Fig. 6 left | best L1 gap <= 0.5x best EG; L1 < EG per access and per second | "
                 f"ratio {r['ratio']:.3g}; full per pass {r['o_full'][1]}, stoch per pass {r['o_stoch'][1]}, "
                 f"full per s {r['s_full'][1]}, stoch per s {r['s_stoch'][1]} | {pf(r['ok'])} |")
    if "R3" in results:
        r = results["R3"]
        L.append(f"| R3 Fig. 6 right | EG-1 time/pass <= L1-1's | EG-1 {r['eg1'] * 1e3:.2f} ms, L1-1 "
                 f"{r['l11'] * 1e3:.2f} ms per pass | {pf(r['ok'])} |")
    L.append("| R4 Fig. 7 | L1 < EG on MNIST kernel features | see [multiclass.md](multiclass.md) | "
             "run by bench/repro_multiclass.py |")
    if "R5" in results:
        for topic, t in results["R5"]["topics"].items():
            l1, eg = t["runs"]["l1ball"], t["runs"]["eg"]
            L.append(f"| R5 Fig. 8 {topic} | cumulative log-loss L1 < EG (end, >= 8/10 points); L1 <= 10% of features "
                     f"seen non-zero (paper ~5%), EG all; error "
                     f"{'L1 <= EG - 1 pt' if topic == 'CCAT' else 'L1 <= EG and <= constant + 0.5 pt'} "
                     f"(paper L1 {R5_PAPER_ERR[topic]}% on 804k docs) | cum. loss L1 {l1['cumloss'][-1]:.1f} vs EG "
                     f"{eg['cumloss'][-1]:.1f}, L1 lower at {t['wins']}/10 [{pf(t['c_loss'])}]; non-zero/seen L1 "
                     f"{100 * t['frac_l1']:.2f}%, EG {100 * t['frac_eg']:.2f}% [{pf(t['c_sparse'])}]; error L1 "
                     f"{t['l1_err']:.2f}%, EG {t['eg_err']:.2f}%, constant {t['const_err']:.2f}% [{pf(t['c_err'])}] | "
                     f"{pf(t['c_loss'] and t['c_sparse'] and t['c_err'])} |")
    else:
        L.append("| R5 Fig. 8 | online bigrams CCAT/ECAT | — | not run (--only) |")
    if "R6" in results:
        r = results["R6"]
        L.append(f"| R6 Section 7 | linear 15x tree (ours: >= 10x at -b 22 on the benchmark stream); tree -b 24 "
                 f"<= 1.5x -b 16 | linear/tree (above sgd) {r['ratio']:.1f}x; growth {r['growth']:.2f}x | {pf(r['ok'])} |")
    if "R6b" in results:
        r = results["R6b"]
        L.append(f"| R6 Section 7, R5's bigram stream | linear >= 10x tree at -b 22; tree -b 24 <= 1.5x -b 16 | "
                 f"linear/tree (above sgd) {r['ratio']:.1f}x; growth {r['growth']:.2f}x | {pf(r['ok'])} |")
    L += ["", "## R1 — Fig. 4 and 5 (synthetic)", "",
          "![Fig. 4](duchi2008-fig4.png)", "", "![Fig. 5](duchi2008-fig5.png)", "",
          "z = ||w*||_1 of scikit-learn's penalised optimum at lambda = 0.1 ||X^T y||_inf / m (Lasso, or "
          "FISTA on the L1-penalised mean logistic loss, run to a change < 1e-13: liblinear at a tight tolerance "
          "did not finish in minutes); the gap's optimum is streamlearn's average loss "
          "at that w* (it solves the constrained problem of radius z). \"L1-Line\" is full-gradient "
          "projected gradient with a backtracking line search (`streamlearn.batch.fit(..., line_search=True)`, "
          "in memory; its data accesses include the line search's function values). The interior-point "
          "methods are not available. The CD curve is scikit-learn's "
          "Lasso stopped after k epochs (squared loss only; liblinear gives no per-iteration curve).",
          "n = m = 4000 runs only 10 passes (3 s a pass), with eta0 taken from the n = 800 choice.", ""]
    for r in r1:
        L.append(f"- {r['kind']}, n = m = {r['n']}: lambda {r['lam']:.4g}, z {r['z']:.4g}, f* {r['fstar']:.6g}; "
                 f"final rel. gap L1-Stoch {r['relfinal']:.2e}, L1-Batch {r['batchfinal']:.2e}; L1-Line "
                 + "/".join(f"{v:.2e}" for v in r["line"].values())
                 + f" after {'/'.join(str(k) for k in r['line'])} steps ({r['line_passes']:.0f} passes of accesses)")
        L.append(f"  - L1-Line: `{r['line_cmd']}`")
        for k, c in r["cmd"].items():
            L.append(f"  - {k}: `{c} --objective`")
    if "R2" in results:
        r = results["R2"]
        L += ["", "## R2 — Fig. 6 left (RCV1 CCAT, full and 1/4 batches)", "", "![Fig. 6 left](duchi2008-fig6-left.png)", "",
              f"{r['m']} documents (the three LIBSVM RCV1 files, exact duplicate lines removed), logistic, z = 10, "
              f"{r['passes']} passes. f* = {r['fstar']:.8g} from 4,000 FISTA iterations of projected gradient "
              "(sort-based projection). Checkpoints 10/25/50/100%.", ""]
        for k, c in r["cur"].items():
            L.append(f"- {k}: final gap {c['gap'][-1]:.4g}, {c['secs']:.2f} s; `{c['cmd']} --objective`")
    if "R3" in results:
        r = results["R3"]
        L += ["", "## R3 — Fig. 6 right (batches of 1 and 100)", "", "![Fig. 6 right](duchi2008-fig6-right.png)", "",
              f"{r['passes']} passes, tree projection. Wall time is the median of 3 runs without objective reporting "
              "(Python API, includes its per-pass overhead).", ""]
        for k, c in r["cur"].items():
            L.append(f"- {k}: final gap {c['gap'][-1]:.4g}, {c['secs'] / r['passes'] * 1e3:.2f} ms per pass; "
                     f"`{c['cmd']} --objective`")
    if "R6" in results:
        r = results["R6"]
        L += ["", "## R6 — Section 7 timing", "",
              f"Kernel time per example (`bench_l1ball.kernel_time`, in-process, parsed beforehand), first "
              f"{r['lines']:,} lines of `{r['data']}`, logistic, radius 100, `-l 1`; median of 3 (linear: 1).", "",
              *r6_table(r["rows"])]
        L += ["", f"Projection cost above plain SGD at -b 22: linear / tree = {r['ratio']:.1f}x (paper: 15x). "
              f"Tree above SGD, pre-touched, -b 24 / -b 16 = {r['growth']:.2f}x (target <= 1.5x)."]
    if "R6b" in results:
        r = results["R6b"]
        L += ["", f"The same on R5's bigram stream (`{r['data']}`, all {r['lines']:,} documents, about 220 features "
              f"each; median of {1 if args.quick else 3}, linear: 1):", "",
              *r6_table(r["rows"])]
        L += ["", f"Linear / tree above plain SGD at -b 22 = {r['ratio']:.1f}x; tree, pre-touched, -b 24 / -b 16 = "
              f"{r['growth']:.2f}x."]
    if "R5" in results:
        L += r5_report(results["R5"])
    L += ["", "## R4", "", "- R4 (Fig. 7, per-class L1 ball and EG on MNIST kernel features) is a batch "
          "experiment on `streamlearn.batch`: bench/repro_multiclass.py, report [multiclass.md](multiclass.md).", "",
          "## What did not reproduce", "", results.get("notes", "(see the table)"), "",
          "Likely reasons. (1) Step sizes: the plan fixes eta_t = eta0/sqrt(t) for the L1 learners, and our "
          "eta0 grids were fixed before running (three values each) and not widened afterwards. Where a "
          "method's chosen eta0 lies at the edge of its grid (printed in the commands above: e.g. L1 on "
          "RCV1 at eta0 = 100, the top; L1-Stoch logistic at 0.1, the bottom) the grid, not the method, "
          "may limit it; the paper does not give its eta0. (2) R1 uses the relative gap (gap / f*) and a "
          "1e-2 target by pass 10; with eta0/sqrt(t) the stochastic projected gradient is still at a few "
          "percent after 10 passes here, while the paper's curves (absolute gap against flops) look faster. "
          "n = m = 4000 ran only 10 passes (about 3 s a pass through the Python API), with eta0 taken from "
          "n = 800, so its 'fast then slow' check was not made. (3) R2: on 1,747 RCV1 documents (not 804k) "
          "with cosine-normalised TF-IDF rows, the full-batch gradient is small, so eta0/sqrt(t) steps of "
          "the L1 projection move slowly, while EG may take a constant rate (the plan allows EG's best "
          "schedule) and converges linearly to the optimum (gap 1e-8 in 200 passes); the paper's figure "
          "shows the opposite ordering. This is a real disagreement under the plan's protocol, not rescued "
          "by tuning. (4) R6's ratio (linear / tree above plain SGD) is larger than the paper's 15x because "
          "the benchmark stream has many more non-zero weights at -b 22 than the paper's run. (5) R6's timings "
          "come from one run on a shared 2-core machine with other jobs running (load average above): the tree's "
          f"-b 24 / -b 16 ratio on the benchmark stream was {results['R6']['growth'] if 'R6' in results else float('nan'):.2f}x "
          "in this run and 1.19x and 1.67x in two earlier full runs, so the 1.5x criterion is within this "
          "machine's noise; on the bigram stream -b 16 also "
          "folds the ~240k features into 65,536 indices, so the tree there holds fewer weights than at -b 24. "
          "(6) R5: the stream has 2,316 documents (the paper: 804k), so the cumulative losses are those of the "
          "first moments of learning. In the run recorded here EG's best eta0 is the top of the fixed grid (100) "
          "on both topics, with every seen feature non-zero; on CCAT L1 has the higher cumulative log-loss but a "
          "lower error, and on ECAT both errors sit at the constant predictor's (2,316 documents are too few to "
          "learn a 15% topic beyond its base rate). The sparsity claim holds. (7) L1-Line (the full gradient "
          "with a backtracking line search, in memory) is the fastest L1 curve of R1 per data access here: "
          "it needs about 3 passes of accesses per step (the gradient and the line search's function values) "
          "and its relative gap falls below 1e-2 within 10 steps in all four panels, while L1-Stoch with "
          "eta0/sqrt(t) is at 5-22% after 10 passes.", ""]
    (OUT / "duchi2008.md").write_text("\n".join(L))


def r5_report(r):
    L = ["", "## R5 — Fig. 8 (online learning on unigrams + bigrams, CCAT and ECAT)", "", "![Fig. 8](duchi2008-fig8.png)", "",
         "Data: `streamlearn.datasets.rcv1_dev_ngrams(topic)` — the 2,316 documents of `rcv1_text/rcv1_dev.json` in "
         "file order, tokens lower-cased and reduced to [a-z0-9] (empty ones dropped), features = the set of "
         "unigrams and adjacent bigrams, each document scaled to unit L2 norm, label +1 when the document has the "
         "topic; written as VW lines by `write_vw_ngrams`. One pass, no shuffling (nothing random), `--noconstant` "
         "(the paper's linear model has no bias; a constant weight would also count against the radius). The "
         f"trace has a row every {R5_EVERY} documents (`--trace-every`); the 10 checkpoints are the rows nearest "
         "10%, 20%, ..., 100% of the stream. Cumulative loss = the progressive average logistic loss (natural log) "
         "times the examples; error = progressive 0/1 error; features seen = distinct hashed indices. Grid (fixed "
         f"before running): eta0 in {r['etas']}, `--power-t 0.5` for L1; EG also power-t in {EG_POWERS} (the "
         "paper let EG take its best schedule); each method at its best final cumulative loss.", "",
         "| topic | docs | positive | constant predictor's error | method | eta0 | power-t | cumulative loss | "
         "progressive error | paper's error (804k docs) | non-zero | features seen | non-zero / seen | non-zero / 2^22 |",
         "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for topic, t in r["topics"].items():
        for algo, name, paper in (("l1ball", "L1", f"{R5_PAPER_ERR[topic]}%"),
                                  ("eg", "EG", "> 15%" if topic == "CCAT" else "> 20%")):
            c = t["runs"][algo]
            L.append(f"| {topic} | {t['n']:,} | {100 * t['pos']:.1f}% | {t['const_err']:.2f}% | {name} | {c['eta']:g} | "
                     f"{c['power']:g} | {c['cumloss'][-1]:.1f} | {100 * c['error_rate'][-1]:.2f}% | {paper} | "
                     f"{int(c['nonzero'][-1]):,} | {int(c['features_seen'][-1]):,} | "
                     f"{100 * c['nonzero'][-1] / c['features_seen'][-1]:.2f}% | {100 * c['nonzero'][-1] / 2 ** R5_BITS:.3f}% |")
    L.append("")
    for topic, t in r["topics"].items():
        l1, eg = t["runs"]["l1ball"], t["runs"]["eg"]
        L.append(f"- {topic}: {t['nfeat']:,} distinct feature strings, {int(l1['features_seen'][-1]):,} distinct "
                 f"indices at -b {R5_BITS} ({100 * (1 - l1['features_seen'][-1] / t['nfeat']):.1f}% lost to collisions). "
                 f"Cumulative loss at the checkpoints {t['pts']}: L1 "
                 + ", ".join(f"{l1['cumloss'][int(np.argmin(np.abs(l1['examples'] - e)))]:.0f}" for e in t["pts"])
                 + "; EG " + ", ".join(f"{eg['cumloss'][int(np.argmin(np.abs(eg['examples'] - e)))]:.0f}" for e in t["pts"])
                 + f" (L1 lower at {t['wins']}/10).")
        for name, c in (("L1", l1), ("EG", eg)):
            L.append(f"  - {name}: `{c['cmd']}`; grid (eta0, power-t: cumulative loss, error %): "
                     + "; ".join(f"{e:g}, {p:g}: {cl:.1f}, {er:.2f}" for e, p, cl, er in c["grid"]))
    return L


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="R1,R2,R5,R6", help="comma-separated parts (R2 includes R3)")
    args = ap.parse_args()
    if not SHARED.is_dir():
        print(f"skipped: {SHARED} is absent (the reproductions need ../shared/data)")
        return 0
    sys.path.insert(0, str(REPO))
    os.chdir(REPO)
    print(f"seeds: base {SEED}")
    results = {}
    parts = args.only.split(",")
    steps = [(part, fn) for part, fns in (("R1", (run_r1,)), ("R2", (run_r2_r3,)), ("R5", (run_r5,)),
                                          ("R6", (run_r6, run_r6_bigram))) if part in parts for fn in fns]
    bar = Progress(len(steps), "parts", every=1)     # the full run's parts took 1-5 minutes each
    for part, fn in steps:
        fn(args.quick, results)
        bar.step(f"{fn.__name__} done")
    notes = []
    for r in results.get("R1", []):
        st = "PASS" if r["c1"] and r["c2"] and r["c3"] is not False else "FAIL"
        print(f"R1 {r['kind']} n=m={r['n']}: rel gap by pass 10 {r['rel10']:.3g} (paper: <= 1e-2) [{r['c1']}]; "
              f"gap after 1 pass stoch {r['gap1'][0]:.4g} < batch {r['gap1'][1]:.4g} [{r['c2']}]; {r['c3txt']} "
              f"[{r['c3']}] -> {st}")
        for k, c in r["cmd"].items():
            print(f"   {k}: {c} --objective")
        if st == "FAIL":
            notes.append(f"R1 {r['kind']} n=m={r['n']}: relative gap by pass 10 {r['rel10']:.2e} "
                         f"(<=1e-2: {r['c1']}), stoch < batch after pass 1: {r['c2']}, fast-then-slow: {r['c3']}.")
    if "R2" in results:
        r = results["R2"]
        print(f"R2: best L1 gap {r['best_l1']:.4g} / best EG gap {r['best_eg']:.4g} = {r['ratio']:.3g} (paper: L1 "
              f"well below EG; need <= 0.5); orderings per pass full {r['o_full'][1]} stoch {r['o_stoch'][1]}, "
              f"per second full {r['s_full'][1]} stoch {r['s_stoch'][1]} -> {pf(r['ok'])}")
        for k, c in r["cur"].items():
            print(f"   {k}: {c['cmd']} --objective")
        if not r["ok"]:
            notes.append(f"R2: best L1 / best EG final gap = {r['ratio']:.3g}; orderings (10/25/50/100%) per pass "
                         f"full {r['o_full'][1]}, stoch {r['o_stoch'][1]}; per second full {r['s_full'][1]}, "
                         f"stoch {r['s_stoch'][1]}.")
    if "R3" in results:
        r = results["R3"]
        print(f"R3: EG-1 {r['eg1'] * 1e3:.2f} ms/pass vs L1-1 {r['l11'] * 1e3:.2f} ms/pass (paper: EG faster on "
              f"very sparse gradients) -> {pf(r['ok'])}; gaps " +
              ", ".join(f"{k} {c['gap'][-1]:.3g}" for k, c in r["cur"].items()))
        if not r["ok"]:
            notes.append(f"R3: EG-1 took {r['eg1'] * 1e3:.2f} ms per pass against L1-1's {r['l11'] * 1e3:.2f} ms.")
    print("R4: run by bench/repro_multiclass.py (bench/repro/multiclass.md)")
    if "R5" in results:
        for topic, t in results["R5"]["topics"].items():
            l1, eg = t["runs"]["l1ball"], t["runs"]["eg"]
            st = pf(t["c_loss"] and t["c_sparse"] and t["c_err"])
            print(f"R5 {topic}: {t['n']} docs, {100 * t['pos']:.1f}% positive, constant predictor's error "
                  f"{t['const_err']:.2f}%; cumulative loss L1 {l1['cumloss'][-1]:.1f} vs EG {eg['cumloss'][-1]:.1f}, "
                  f"L1 lower at {t['wins']}/10 decile points [{pf(t['c_loss'])}]; non-zero / features seen L1 "
                  f"{100 * t['frac_l1']:.2f}%, EG {100 * t['frac_eg']:.2f}% [{pf(t['c_sparse'])}]; error "
                  f"{t['err_txt']} (paper L1 {R5_PAPER_ERR[topic]}%) [{pf(t['c_err'])}] -> {st}")
            for name, c in (("L1", l1), ("EG", eg)):
                print(f"   {name}: {c['cmd']}")
            if st == "FAIL":
                notes.append(f"R5 {topic}: cumulative loss L1 {l1['cumloss'][-1]:.1f} vs EG {eg['cumloss'][-1]:.1f} "
                             f"(L1 lower at {t['wins']}/10 points: {t['c_loss']}); L1 keeps {100 * t['frac_l1']:.2f}% "
                             f"of the features seen, EG {100 * t['frac_eg']:.2f}% ({t['c_sparse']}); {t['err_txt']} "
                             f"({t['c_err']}).")
    for key, what, paper in (("R6", "R6", "paper 15x; "), ("R6b", "R6 (bigram stream)", "")):
        if key in results:
            r = results[key]
            print(f"{what}: linear / tree above sgd at -b 22 = {r['ratio']:.1f}x ({paper}need >= 10x); tree "
                  f"-b24/-b16 = {r['growth']:.2f}x (need <= 1.5x) -> {pf(r['ok'])}")
            if not r["ok"]:
                notes.append(f"{what}: linear/tree {r['ratio']:.1f}x, growth {r['growth']:.2f}x.")
    results["notes"] = "\n".join(f"- {n}" for n in notes) or "- Everything that ran reproduced."
    secs = time.time() - T0
    report(args, results, secs)
    print(f"run time {secs:.0f} s; report bench/repro/duchi2008.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
