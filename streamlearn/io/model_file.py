"""Model files: binary, versioned, sparse, checksummed and written atomically.

Layout (little-endian)::

    8 bytes   magic b"SLMODEL\\x00"
    uint32    format version (FORMAT_VERSION)
    uint32    CRC-32 of everything after this field
    uint64    header length H
    H bytes   JSON header: every option that affects hashing or prediction, the learner settings,
              the learner state needed to resume with -i, and the array shapes
    uint32/64 index of each stored weight row (uint32 when bits <= 32), increasing
    float64   the stored columns of those rows, row-major (count x columns)

Only rows whose weight is non-zero are stored, so the size grows with the number of non-zero weights,
not with 2^b. Files are written to a temporary file in the same directory and renamed into place, so
an interrupted run never leaves a half-written model.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
import zlib

import numpy as np

from streamlearn import __version__
from streamlearn.errors import ModelError

MAGIC = b"SLMODEL\x00"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sII Q")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str, chunks, what: str = "", error: type = ModelError) -> None:
    """Write byte chunks to ``path`` safely: ``streamlearn.io.atomic.write_atomic`` (a temporary file
    renamed over a regular target, written through a device or FIFO, one-line ``error`` on failure)."""
    from streamlearn.io import atomic
    atomic.write_atomic(path, chunks, what, error)


def save_model(path: str, header: dict, index: np.ndarray, rows: np.ndarray) -> None:
    """Save ``rows`` (count x columns float64) for weight indices ``index`` with ``header``."""
    write_atomic(path, model_chunks(header, index, rows))


def model_bytes(header: dict, index: np.ndarray, rows: np.ndarray) -> bytes:
    """The bytes ``save_model`` writes."""
    return b"".join(model_chunks(header, index, rows))


def model_chunks(header: dict, index: np.ndarray, rows: np.ndarray) -> list:
    """The model file's content, as a list of byte strings (see ``save_model``)."""
    bits = int(header["bits"])
    index = np.ascontiguousarray(index, dtype="<u4" if bits <= 32 else "<u8")
    rows = np.ascontiguousarray(rows, dtype="<f8")
    if rows.ndim != 2 or rows.shape[0] != index.shape[0]:
        raise ValueError("rows must be (count, columns) matching index")
    header = dict(header)
    header.update(streamlearn=__version__, count=int(index.shape[0]), columns=int(rows.shape[1]))
    head = json.dumps(header, sort_keys=True).encode("utf-8")
    body = [struct.pack("<Q", len(head)), head, index.tobytes(), rows.tobytes()]
    crc = 0
    for chunk in body:
        crc = zlib.crc32(chunk, crc)
    return [MAGIC, struct.pack("<II", FORMAT_VERSION, crc)] + body


def load_model(path: str) -> tuple[dict, np.ndarray, np.ndarray]:
    """Read a model file: (header, index, rows). Any problem is a one-line ModelError."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ModelError(f"cannot read model {path}: {exc.strerror or exc}") from None
    return parse_model(data, path)


def parse_model(data: bytes, path: str = "model") -> tuple[dict, np.ndarray, np.ndarray]:
    """(header, index, rows) of a model file's bytes; ``path`` names it in the messages."""
    if len(data) < 8 or data[:8] != MAGIC:
        raise ModelError(f"{path} is not a streamlearn model file")
    if len(data) < _PREFIX.size:
        raise ModelError(f"model file {path} is truncated")
    _, version, crc, head_len = _PREFIX.unpack_from(data, 0)
    if version != FORMAT_VERSION:
        raise ModelError(f"model file {path} has format version {version}; "
                         f"this streamlearn reads version {FORMAT_VERSION}")
    start = _PREFIX.size
    if len(data) < start + head_len:
        raise ModelError(f"model file {path} is truncated")
    try:
        header = json.loads(data[start:start + head_len].decode("utf-8"))
        count = int(header["count"])
        columns = int(header["columns"])
        bits = int(header["bits"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ModelError(f"model file {path} is corrupt (bad header)") from None
    isize = 4 if bits <= 32 else 8
    expected = start + head_len + count * (isize + 8 * columns)
    if len(data) < expected:
        raise ModelError(f"model file {path} is truncated")
    if len(data) > expected or zlib.crc32(memoryview(data)[16:]) != crc:
        raise ModelError(f"model file {path} is corrupt (checksum mismatch)")
    pos = start + head_len
    index = np.frombuffer(data, dtype="<u4" if isize == 4 else "<u8", count=count, offset=pos)
    pos += count * isize
    rows = np.frombuffer(data, dtype="<f8", count=count * columns, offset=pos).reshape(count, columns)
    if count and int(index.max()) >= (1 << bits):
        raise ModelError(f"model file {path} is corrupt (weight index out of range)")
    return header, index, rows
