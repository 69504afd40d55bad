"""Load VW or LIBSVM files into a SciPy CSR matrix with streamlearn's hashing and feature expansion.

``load_csr`` reads its input with the parser, hashing and expansion of ``streamlearn train`` (the same
``streamlearn.run.stream.text_blocks`` pipeline, configured through ``streamlearn.config.train_config``
as the CLI configures it), so column ``j`` of the matrix is weight slot ``j`` of a streamlearn (or VW)
model trained with the same options, the constant feature included unless ``noconstant``. A model's
raw prediction of an example is then ``X[i] @ w + base_i`` with ``w`` its dense weight vector.

SciPy is imported only when ``load_csr`` is called (``pip install 'streamlearn[csr]'``).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from streamlearn.errors import StreamlearnError

#: feature-expansion options taking a list of values (the CLI's repeatable options)
_LIST_OPTIONS = ("quadratic", "cubic", "interactions", "ngram", "skips", "ignore", "ignore_linear", "keep",
                 "redefine")


def _as_tuple(name: str, value) -> tuple:
    if isinstance(value, (str, bytes, os.PathLike)):
        value = (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be a string or a sequence of strings (got {value!r})") from None
    return tuple(os.fsdecode(v) if isinstance(v, bytes) else v for v in items)


def _config(sources: tuple, format, bits, noconstant, hash, hash_seed, lists: dict,
            leave_duplicate_interactions, permutations):
    """The TrainConfig the CLI would build from these options (only the options given, as the CLI
    passes them); option errors become ValueError with the CLI's one-line text."""
    from streamlearn.config import train_config

    explicit = {"sources": sources, "bits": bits}
    if format is not None:
        explicit["format"] = format
    if noconstant:
        explicit["noconstant"] = True
    if hash != "strings":
        explicit["hash"] = hash
    if hash_seed:
        explicit["hash_seed"] = hash_seed
    if leave_duplicate_interactions:
        explicit["leave_duplicate_interactions"] = True
    if permutations:
        explicit["permutations"] = True
    explicit.update({name: value for name, value in lists.items() if value})
    try:
        return train_config(explicit)
    except StreamlearnError as exc:
        raise ValueError(str(exc)) from None


def load_csr(path_or_paths, *, format: str | None = None, bits: int = 18, quadratic=(), cubic=(),
             interactions=(), ngram=(), skips=(), ignore=(), ignore_linear=(), keep=(), redefine=(),
             leave_duplicate_interactions: bool = False, permutations: bool = False,
             noconstant: bool = False, hash: str = "strings", hash_seed: int = 0, strict: bool = True):
    """Read VW or LIBSVM examples into ``(X, y, sample_weight)``.

    ``path_or_paths``: a file name (``.gz``, ``.bz2``, ``.xz`` decompressed by extension, ``"-"`` for
    stdin) or a sequence of them, read in order as one stream (so wildcard interactions see the
    namespaces of the earlier files, as in ``streamlearn train -d A -d B``).

    The options are ``streamlearn train``'s (and VW's) hashing and expansion options, with the same
    meaning and the same checks: ``format`` 'vw' or 'libsvm' (None: decided from each file's first
    data line, as ``--format auto``), ``bits`` (``-b``), ``quadratic`` (``-q``, e.g. ``["ui"]``),
    ``cubic``, ``interactions``, ``ngram``, ``skips``, ``ignore``, ``ignore_linear``, ``keep``,
    ``redefine``, ``leave_duplicate_interactions``, ``permutations``, ``noconstant``, ``hash``,
    ``hash_seed``. A list option also takes a single string. A bad option raises ValueError with the
    CLI's one-line message (``-q/--quadratic a: quadratic features must involve two namespaces``).

    Returns

    * ``X``: ``scipy.sparse.csr_matrix`` of shape ``(n, 2**bits)``, float64, one row per example in
      input order: column j holds the example's value for weight slot j after hashing and expansion,
      the constant feature (value 1, slot of VW's constant) included unless ``noconstant``. Features
      of one example that land in the same slot (a name repeated, a hash collision, an interaction
      equal to a linear term) are summed, as scipy sums duplicate entries (``sum_duplicates``): the
      row's dot product with a weight vector is the one streamlearn computes. The indices are
      sorted and entries that sum to exactly 0 are dropped. Values are the parser's float32 values
      (and interaction products) widened to float64.
    * ``y``: float64 labels, NaN for an unlabelled example (or, with ``strict=False``, one whose
      label part is malformed). Labels are as written: logistic and hinge loss read > 0 as +1.
    * ``sample_weight``: float64 importance weights (1 unless given).

    A VW example's base (initial prediction, the third label token) is not returned.

    Malformed input: with ``strict`` (the default) the first malformed line raises ValueError with
    the message of ``streamlearn train --strict`` (``data.vw line 3: feature value in "x:inf" is not
    finite``); with ``strict=False`` each malformed line gives a ``UserWarning`` with the CLI's
    warning text and keeps what ``streamlearn train`` keeps (the features before the fault; a fault in
    the label part leaves the label NaN). A file that cannot be opened or read to its end raises
    ValueError (``cannot read x.vw: No such file or directory``).
    """
    try:
        import scipy.sparse as sp
    except ImportError:
        raise ImportError("streamlearn.csr.load_csr needs SciPy: pip install 'streamlearn[csr]' "
                          "(or scipy>=1.10)") from None
    from streamlearn.io.reader import check_readable
    from streamlearn.run.stream import hashing_of, text_blocks

    paths = path_or_paths
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = (paths,)
    sources = tuple(os.fsdecode(p) for p in paths)
    if not sources:
        raise ValueError("no input: give a file name or a list of file names")
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"bits must be an int (got {bits!r})")
    lists = {name: _as_tuple(name, value) for name, value in
             zip(_LIST_OPTIONS, (quadratic, cubic, interactions, ngram, skips, ignore, ignore_linear, keep,
                                 redefine))}
    cfg = _config(sources, format, int(bits), noconstant, hash, int(hash_seed), lists,
                  leave_duplicate_interactions, permutations)
    hashing = hashing_of(cfg)

    lengths, idx, val, labels, weights = [], [], [], [], []
    try:
        check_readable(cfg.sources)
        for block in text_blocks(cfg.sources, cfg.format, hashing, cfg.block_size):
            for line, reason, consequence in block.fault_lines():
                if strict:
                    raise ValueError(f"{block.source} line {line}: {reason}")
                warnings.warn(f"{block.source} line {line}: {reason}; {consequence}", UserWarning,
                              stacklevel=2)
            n = block.n
            nf = int(block.indptr[n])
            lengths.append(np.diff(block.indptr[:n + 1]))
            idx.append(block.idx[:nf].copy())     # the blocks' arrays are reused by the next block
            val.append(block.val[:nf].astype(np.float64))
            labels.append(block.labels.copy())
            weights.append(block.weights.copy())
    except StreamlearnError as exc:
        raise ValueError(str(exc)) from None

    def joined(parts, dtype):
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)

    counts = joined(lengths, np.int64)
    ncols = 1 << cfg.bits
    index_dtype = np.int32 if ncols <= np.iinfo(np.int32).max and counts.sum() <= np.iinfo(np.int32).max \
        else np.int64
    indptr = np.zeros(counts.size + 1, index_dtype)
    np.cumsum(counts, out=indptr[1:])
    X = sp.csr_matrix((joined(val, np.float64), joined(idx, index_dtype), indptr),
                      shape=(counts.size, ncols))
    X.sum_duplicates()
    X.eliminate_zeros()
    return X, joined(labels, np.float64), joined(weights, np.float64)
