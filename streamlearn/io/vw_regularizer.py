"""VW's per-feature regularizer files of ``--bfgs`` (``--output_feature_regularizer_binary`` /
``_text``, ``--input_feature_regularizer``): a VW model header, then the flag 1 (``:1`` in text) and
the non-zero entries ``i:value`` of the interleaved array (entry 2k: feature k's strength, 2k+1: its
centre), as index (uint32) and value (float32) records in the binary form. A file written before
convergence holds the weights instead (flag 0, ``k:w``), as VW's."""

from __future__ import annotations

import numpy as np

from streamlearn.errors import ModelError
from streamlearn.io import vw_model
from streamlearn.io.vw_text import cpp_g, header_lines, header_pieces


def text(min_label, max_label, bits, ngram, skips, options, values: np.ndarray, regularizer: bool) -> str:
    """The text file: ``values`` the interleaved regularizer (2 per feature) or the weights."""
    lines = header_lines(header_pieces(min_label, max_label, bits, ngram, skips, options))
    lines.append(":1" if regularizer else ":0")
    nz = np.flatnonzero(values)
    lines += [f"{int(i)}:{cpp_g(float(values[i]))}" for i in nz]
    return "\n".join(lines) + "\n"


def binary(min_label, max_label, bits, ngram, skips, options, values: np.ndarray, regularizer: bool) -> bytes:
    """The binary file (VW's layout; the header as ``vw_model.dump`` writes it)."""
    nz = np.flatnonzero(values)
    model = vw_model.VWModel((9, 11, 9), "", float(min_label), float(max_label), bits, list(ngram), list(skips),
                             options.strip(), resume=False, index=nz,
                             values=np.asarray(values[nz], np.float32)[:, None])
    data = bytearray(vw_model.dump(model))
    head = len(vw_model.dump(vw_model.VWModel((9, 11, 9), "", float(min_label), float(max_label), bits,
                                                 list(ngram), list(skips), options.strip(), resume=False,
                                                 index=np.zeros(0, np.int64), values=np.zeros((0, 1), np.float32))))
    data[head - 1] = 1 if regularizer else 0
    return bytes(data)


def read(path: str, bits: int) -> tuple[np.ndarray, float, float]:
    """(the (2^bits, 2) float32 array (strength, centre), the header's min and max label) of a binary
    regularizer file (VW reads it as a model: its label bounds are the run's start)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ModelError(f"cannot read the feature regularizer {path}: {exc.strerror}") from None

    class Header(Exception):
        pass

    def stop(model):
        raise Header(model)
    if not vw_model.looks_like(data[:8]):
        raise ModelError(f"feature regularizer {path} is not a VW regularizer file (written by "
                         f"--output_feature_regularizer_binary)")
    try:
        vw_model.parse(data, path, check=stop)
    except Header as exc:
        model = exc.args[0]
    else:       # pragma: no cover (parse calls check once the header is read)
        raise ModelError(f"feature regularizer {path} is corrupt")
    if model.bits != bits:
        raise ModelError(f"feature regularizer {path} has -b {model.bits}; this run has -b {bits}")
    body = data[model.body:]
    if not body or body[0] != 1:
        raise ModelError(f"feature regularizer {path} holds weights, not a regularizer (it was written "
                         f"before convergence)")
    body = body[1:]
    if len(body) % 8:
        raise ModelError(f"feature regularizer {path} is corrupt ({len(body)} bytes are not records of 8)")
    rec = np.frombuffer(body, dtype=[("i", "<u4"), ("v", "<f4")])
    out = np.zeros(2 << bits, np.float32)
    if rec.shape[0]:
        if int(rec["i"].max()) >= out.shape[0]:
            raise ModelError(f"feature regularizer {path} is corrupt (index {int(rec['i'].max())} is out of "
                             f"range for -b {bits})")
        if not np.all(np.isfinite(rec["v"])):
            raise ModelError(f"feature regularizer {path} is corrupt (a value is not a finite number)")
        out[rec["i"].astype(np.int64)] = rec["v"]
    return out.reshape(-1, 2), float(model.min_label), float(model.max_label)

