"""Helpers shared by the tests: running the CLI in-process, small generated VW data, reading models
and predictions back, and turning a VW file into the example tuples of support/reference.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from streamlearn.cli import main
from streamlearn.features.hashing import HASH_MODES
from streamlearn.io.blocks import FMT_VW, parse_block
from streamlearn.io.model_file import load_model


def cli(*args, expect_ok: bool = True, input: str | None = None):
    """Run ``streamlearn ARGS`` in-process (``input`` on stdin); asserts success unless ``expect_ok``
    is False."""
    res = CliRunner().invoke(main, [str(a) for a in args], input=input)
    if expect_ok:
        assert res.exit_code == 0, (args, res.output, res.exception)
    return res


def text_buffer(data: bytes | str) -> bytearray:
    """Text for the compiled parsers (parse_block), as a bytearray: parse_block views bytes and
    bytearrays alike (np.frombuffer), but the view of bytes is read-only, which numba compiles as
    another type -- the whole parser a second time (about half a minute on a cold cache), a
    specialization the CLI never runs (the reader's buffers are writable, as this view is)."""
    return bytearray(data.encode("utf-8") if isinstance(data, str) else data)


def vw_dataset(n: int, seed: int = 0, namespaces: str = "abc", vocab: int = 40,
               weighted: bool = True) -> list[str]:
    """``n`` VW lines (logistic labels -1/1 from a hidden sparse linear model) with several
    namespaces, features with and without values, repeated names across namespaces and, with
    ``weighted``, some importance weights other than 1."""
    rng = np.random.default_rng(seed)
    truth = {(ns, j): rng.normal() if rng.random() < 0.3 else 0.0 for ns in namespaces for j in range(vocab)}
    lines = []
    for _ in range(n):
        parts = []
        score = 0.0
        for ns in namespaces:
            k = int(rng.integers(1, 7))
            names = rng.choice(vocab, size=k, replace=False)
            feats = []
            for j in names:
                if rng.random() < 0.4:
                    v = 1.0
                    feats.append(f"f{j}")
                else:
                    v = round(float(rng.uniform(-2, 2)), 3) or 0.5
                    feats.append(f"f{j}:{v:g}")
                score += truth[(ns, int(j))] * v
            parts.append(f"|{ns} " + " ".join(feats))
        label = 1 if score + rng.normal(scale=0.5) > 0 else -1
        head = f"{label}"
        if weighted and rng.random() < 0.15:
            head += f" {float(rng.choice([0.5, 2.0, 3.0])):g}"
        lines.append(head + " " + " ".join(parts) + "\n")
    return lines


def shuffle_namespaces(lines: list[str], seed: int = 1) -> list[str]:
    """The same examples with the features of every namespace in a random order."""
    rng = np.random.default_rng(seed)
    out = []
    for line in lines:
        head, *groups = line.rstrip("\n").split("|")
        new = []
        for g in groups:
            name, *feats = g.split(" ")
            feats = [f for f in feats if f]
            order = rng.permutation(len(feats))
            new.append(" ".join([name] + [feats[i] for i in order]))
        out.append("|".join([head] + new) + "\n")
    return out


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(lines))
    return path


def model_arrays(path) -> tuple[dict, np.ndarray, np.ndarray]:
    """(header, index, rows) of a model file."""
    return load_model(str(path))


def file_digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_predictions(path) -> np.ndarray:
    """The first column of a predictions file (tags dropped)."""
    return np.array([float(line.split()[0]) for line in Path(path).read_text().splitlines()])


def same_model(a, b, rtol: float = 0.0, atol: float = 0.0, header: bool = True) -> None:
    """Assert two model files hold the same rows (exactly by default) and, with ``header``, the same
    header (the learner state it carries compared with the same tolerance)."""
    (ha, ia, ra), (hb, ib, rb) = model_arrays(a), model_arrays(b)
    assert np.array_equal(ia, ib), f"different non-zero rows: {ia.size} vs {ib.size}"
    assert ra.shape == rb.shape
    if rtol == 0 and atol == 0:
        assert np.array_equal(ra, rb), np.abs(ra - rb).max()
    else:
        assert np.allclose(ra, rb, rtol=rtol, atol=atol), np.abs(ra - rb).max()
    if header:
        sa, sb = dict(ha.pop("state", {})), dict(hb.pop("state", {}))
        assert ha == hb
        assert sa.keys() == sb.keys()
        for k in sa:
            if isinstance(sa[k], float) and isinstance(sb[k], float) and (rtol or atol):
                assert np.isclose(sa[k], sb[k], rtol=rtol, atol=atol), (k, sa[k], sb[k])
            else:
                assert sa[k] == sb[k], (k, sa[k], sb[k])


def parse_examples(path, bits: int, noconstant: bool = False) -> list[tuple]:
    """A VW file as the example tuples of support/reference.py: (label or None, importance, base,
    [(hashed index, value), ...]), hashed as the CLI hashes them with ``-b bits`` (default hashing)."""
    data = text_buffer(Path(path).read_bytes())
    b = parse_block(str(path), data, 1, FMT_VW, (1 << bits) - 1, noconstant, 0, HASH_MODES["strings"])
    assert len(b.faults) == 0
    out = []
    for e in range(b.n):
        s, t = int(b.indptr[e]), int(b.indptr[e + 1])
        label = None if np.isnan(b.labels[e]) else float(b.labels[e])
        feats = [(int(i), float(v)) for i, v in zip(b.idx[s:t], b.val[s:t])]
        out.append((label, float(b.weights[e]), float(b.bases[e]), feats))
    return out


def dense_rows(path, bits: int | None = None) -> tuple[dict, np.ndarray]:
    """(header, rows of every weight index, zeros where the model has no row)."""
    header, index, rows = model_arrays(path)
    dense = np.zeros((1 << (bits or header["bits"]), rows.shape[1]))
    dense[index] = rows
    return header, dense


def close_models(a, b, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """Assert two models hold the same rows to ``rtol``/``atol`` (a row absent from one counts as
    zeros) and the same options and learner state (floats to the same tolerance). The runs'
    performance counters are not the model (a -i run without --preserve_performance_counters counts
    from 0, as VW's: tests/cli/test_counters.py)."""
    (ha, ra), (hb, rb) = dense_rows(a), dense_rows(b)
    assert ra.shape == rb.shape
    assert np.allclose(ra, rb, rtol=rtol, atol=atol), np.abs(ra - rb).max()
    sa, sb = dict(ha.pop("state", {})), dict(hb.pop("state", {}))
    ha.pop("count", None), hb.pop("count", None)
    ha.pop("counters", None), hb.pop("counters", None)
    assert ha == hb
    assert sa.keys() == sb.keys()
    for k in sa:
        if isinstance(sa[k], float) and isinstance(sb[k], float):
            assert np.isclose(sa[k], sb[k], rtol=rtol, atol=atol), (k, sa[k], sb[k])
        else:
            assert sa[k] == sb[k], (k, sa[k], sb[k])


def table_dtype(path) -> str:
    """The weight table's type ("float64", or "float32": sgd's and tg's under per-feature rates, issue
    30) of the run that saved the model at ``path``."""
    from streamlearn import learners
    from streamlearn.config import train_config
    from streamlearn.run.model_io import model_options
    return learners.layout(train_config({}, model_options(load_model(str(path))[0], str(path)))).dtype


#: how far a float32 table's run continued with -i may be from the one run (relative and absolute): the
#: save catches every lazy weight up, a float64 sum the one run makes in another order, and where that
#: flips one float32 rounding of a weight, G or N, later values move by float32 ulps
RESUME_TOL32 = 1e-5
