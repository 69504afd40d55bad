"""Deterministic data generators: the papers' synthetic setup, the sample files, the benchmark stream.

* ``synthetic`` -- the setup of Duchi & Singer 2009 (FOBOS, §7) and Duchi et al. 2008 (§7): a target
  vector w* with standard normal entries of which a random 50% are zeroed; examples x with standard
  normal entries (``kind="gaussian"``) or sparse binary entries (``kind="binary"``, each feature on
  with probability ``density``); labels y = sign(<w*, x>) with 10% of them flipped.
* ``write_samples`` -- the small files in ``data/samples/`` (VW and LIBSVM renderings of the same data).
* ``write_bench_stream`` -- a large VW file for benchmarks: ~30 features per line in four namespaces,
  Zipf-distributed tokens, labels from a hidden sparse linear model.

Run ``python -m streamlearn.datasets samples DIR`` or ``python -m streamlearn.datasets bench FILE --lines N``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

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
