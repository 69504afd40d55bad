"""Model files: binary, versioned, sparse, checksummed and written atomically.

Layout (little-endian)::

    8 bytes   magic b"SLMODEL\\x00"
    uint32    format version (FORMAT_VERSION)
    uint32    CRC-32 of everything after this field
    uint64    header length H
    H bytes   JSON header: every option that affects hashing or prediction, the learner settings,
              the learner state needed to resume with -i, the run's performance counters (optional:
              ``counters``, VW's save_resume counters, for --preserve_performance_counters) and the
              array shapes
    uint32/64 index of each stored weight row (uint32 when bits <= 32), increasing
    float64   the stored columns of those rows, row-major (count x columns)

Only rows whose weight is non-zero are stored, so the size grows with the number of non-zero weights,
not with 2^b. Files are written to a temporary file in the same directory and renamed into place, so
an interrupted run never leaves a half-written model.

Reading trusts nothing: ``load_model`` reads at most what the header announces (a regular file of
another size is refused before its body is read; devices and pipes are read as streams, a FIFO
without a writer is given up after FIFO_WAIT seconds), and ``parse_model`` checks the checksum, every
header key (known keys only, each of its type), the saved state, the column names, the indices
(strictly increasing, below 2^bits) and the rows (finite) before anything uses them;
``streamlearn.run.model_io.model_options`` then checks the options as a configuration. Every refusal is
one line: "PATH is not a streamlearn model file", "model file PATH has format version N ...",
"model file PATH is truncated", "model file PATH is corrupt (checksum mismatch)", or
"corrupt model PATH: what".
"""

from __future__ import annotations

import functools
import json
import math
import os
import select
import stat
import struct
import zlib

import numpy as np

from streamlearn._version import __version__
from streamlearn.errors import ModelError

MAGIC = b"SLMODEL\x00"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sII Q")


def write_atomic(path: str, chunks, what: str = "", error: type = ModelError) -> None:
    """Write byte chunks to ``path`` safely: ``streamlearn.io.atomic.write_atomic`` (a temporary file
    renamed over a regular target, written through a device or FIFO, one-line ``error`` on failure)."""
    from streamlearn.io import atomic
    atomic.write_atomic(path, chunks, what, error)


def save_model(path: str, header: dict, index: np.ndarray, rows: np.ndarray) -> None:
    """Save ``rows`` (count x columns float64) for weight indices ``index`` with ``header``."""
    write_atomic(path, model_chunks(header, index, rows), "model")


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


#: the largest JSON header a model file may announce (a real one is a few KiB)
MAX_HEADER = 1 << 24
#: the columns a model file may store (``streamlearn.run.model_io`` checks them against the learner), with
#: those of the learners that declare their own (``LearnerSpec.columns``: ``known_columns()``)
KNOWN_COLUMNS = ("w", "z", "g", "n", "p", "ep", "en", "ftrl_z", "ftrl_n", "theta")
#: columns that hold sums of squares or magnitudes, never negative
NONNEGATIVE_COLUMNS = ("g", "n", "ftrl_n")


@functools.cache
def known_columns() -> tuple[tuple, tuple]:
    """(every column a model file may store, those never negative): the ones above and each
    learner's own (``LearnerSpec.columns``: name -> never negative); derived once."""
    from streamlearn.learners import SPECS
    own = {name: nonneg for spec in SPECS for name, nonneg in spec.columns}
    known = KNOWN_COLUMNS + tuple(n for n in own if n not in KNOWN_COLUMNS)
    return known, NONNEGATIVE_COLUMNS + tuple(n for n, nonneg in own.items() if nonneg)


#: header keys beside the model options (``streamlearn.config.STORED_OPTIONS``)
LAYOUT_KEYS = ("streamlearn", "count", "columns", "bits", "state", "column_names", "mix", "counters")
#: a model's performance counters (VW's save_resume names; ``streamlearn.run.counters``), each:
#: (an integer, never negative); the sums of losses and labels may be negative, the rest not
COUNTER_KEYS = {"example_number": (True, True), "weighted_labeled_examples": (False, True),
                "weighted_unlabeled_examples": (False, True), "weighted_labels": (False, False),
                "sum_loss": (False, False), "total_features": (True, True),
                "sum_loss_since_last_dump": (False, False), "old_weighted_labeled_examples": (False, True),
                "dump_interval": (False, True), "current_pass": (True, True)}
#: a merged model's record of its mixing (``streamlearn.mix.merge``): key -> (check, what it must be)
MIX_KEYS = {"workers": (lambda v: _is_int(v) and 1 <= v < 1 << 31, "an integer >= 1"),
            "syncs": (lambda v: _is_int(v) and 0 <= v < 1 << 62, "an integer >= 0"),
            "rule": (lambda v: v in ("weighted", "uniform"), "weighted or uniform")}
#: saved learner state that counts or sums non-negative quantities (not VW's gravity "gravity_vw": the
#: invariant step of a logistic label inside (-1, 1) can lower it below 0, in VW too)
NONNEGATIVE_STATE = ("t", "eta", "pending", "n_learned", "norm_sum", "total_weight", "multiplier",
                     "contraction_vw")
#: how long a model read from a FIFO waits for a writer before giving up (seconds)
FIFO_WAIT = 10.0


def printable(text: str) -> str:
    """``text`` with every character that is not printable escaped (a crafted value echoed in a
    message must not break it over lines or into the terminal's control codes)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _corrupt(path, what: str) -> ModelError:
    return ModelError(f"corrupt model {path}: {printable(what)}")


def _truncated(path) -> ModelError:
    return ModelError(f"model file {path} is truncated")


def _longer(path) -> ModelError:
    return ModelError(f"model file {path} is corrupt (checksum mismatch)")


def _is_vw_model(prefix) -> bool:
    """The first bytes are a VW model's (``streamlearn.io.vw_model``, imported only for a file that is
    not streamlearn's)."""
    from streamlearn.io import vw_model
    return vw_model.looks_like(bytes(prefix[:8]))


def _check_prefix(prefix, path) -> tuple[int, int]:
    """(crc, header length) of the 24-byte prefix (fewer bytes: a file that ends inside it)."""
    if len(prefix) < 8 or bytes(prefix[:8]) != MAGIC:
        if _is_vw_model(prefix):
            raise ModelError(f"{path} is a VW model file; only -i of streamlearn train and predict reads one")
        raise ModelError(f"{path} is not a streamlearn model file")
    if len(prefix) < _PREFIX.size:
        raise _truncated(path)
    _, version, crc, head_len = _PREFIX.unpack_from(prefix, 0)
    if version != FORMAT_VERSION:
        raise ModelError(f"model file {path} has format version {version}; "
                         f"this streamlearn reads version {FORMAT_VERSION}")
    return crc, head_len


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice")
        out[key] = value
    return out


def _parse_header(head, path) -> dict:
    """The JSON header (a one-line ModelError for anything but a JSON object with unique keys)."""
    try:
        header = json.loads(bytes(head).decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise _corrupt(path, "the header is not UTF-8 text") from None
    except RecursionError:
        raise _corrupt(path, "the header is not valid JSON (nested too deeply)") from None
    except ValueError as exc:
        why = str(exc).splitlines()[0] if str(exc) else "invalid"
        raise _corrupt(path, f"the header is not valid JSON ({why})") from None
    if not isinstance(header, dict):
        raise _corrupt(path, "the header is not a JSON object")
    return header


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _sizes(header: dict, path) -> tuple[int, int, int]:
    """(count, columns, bits) of a header, checked: bits within -b's range, 0 <= count <= 2^bits,
    1 <= columns <= the known columns."""
    from streamlearn.config import MAX_BITS
    for key in ("count", "columns", "bits"):
        if key not in header:
            raise _corrupt(path, f"the header lacks {key!r}")
        if not _is_int(header[key]):
            raise _corrupt(path, f"{key} is {header[key]!r}, not an integer")
    count, columns, bits = header["count"], header["columns"], header["bits"]
    if not 1 <= bits <= MAX_BITS:
        raise _corrupt(path, f"bits is {bits}, not between 1 and {MAX_BITS}")
    if not 0 <= count <= 1 << bits:
        raise _corrupt(path, f"count is {count}, not between 0 and 2^bits = {1 << bits}")
    most = len(known_columns()[0])
    if not 1 <= columns <= most:
        raise _corrupt(path, f"columns is {columns}, not between 1 and {most}")
    return count, columns, bits


def _body_size(count: int, columns: int, bits: int) -> int:
    return count * ((4 if bits <= 32 else 8) + 8 * columns)


def _option_types() -> dict:
    """Each model option's declared type (``TrainConfig``'s annotation: "int", "float | None", ...)."""
    from dataclasses import fields

    from streamlearn.config import STORED_OPTIONS, TrainConfig
    types = {f.name: str(f.type) for f in fields(TrainConfig)}
    return {name: types[name] for name in STORED_OPTIONS}


def _check_option(name: str, kind: str, value, path) -> None:
    """A model option's JSON value has its TrainConfig type (its range is ``train_config``'s to check)."""
    if value is None and "None" in kind:
        return
    base = kind.split("|")[0].strip()
    if base == "bool":
        ok = isinstance(value, bool)
    elif base == "int":
        ok = _is_int(value) and -(1 << 63) <= value < 1 << 63
    elif base == "float":
        ok = _is_number(value) and not (isinstance(value, float) and math.isnan(value))
    elif base == "str":
        ok = isinstance(value, str)
    elif base == "tuple":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        ok = False
    if not ok:
        want = {"bool": "true or false", "int": "a 64-bit integer", "float": "a number", "str": "a string",
                "tuple": "a list of strings"}.get(base, base)
        raise _corrupt(path, f"option {name} is {_show(value)}, not {want}"
                       + (" or null" if "None" in kind else ""))


def _show(value) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_state(state, path) -> None:
    """The saved learner state: known keys, finite numbers (the counters and sums not negative, the
    label mode 0, 1 or 2), class_norm a list of finite numbers."""
    from streamlearn.learners import OWN_STATE, SAVED_STATE
    if not isinstance(state, dict):
        raise _corrupt(path, f"state is {_show(state)}, not an object")
    for key, value in state.items():
        if key == "class_norm":
            if not isinstance(value, list) or not all(_is_number(v) and math.isfinite(v) for v in value):
                raise _corrupt(path, "state class_norm is not a list of finite numbers")
            continue
        if key not in SAVED_STATE and key not in OWN_STATE:
            raise _corrupt(path, f"unknown state {key!r}")
        if not _is_number(value) or not math.isfinite(value):
            raise _corrupt(path, f"state {key} is {_show(value)}, not a finite number")
        if key in NONNEGATIVE_STATE and value < 0:
            raise _corrupt(path, f"state {key} is {_show(value)}, not >= 0")
        if key == "index_mode" and value not in (0, 1, 2):
            raise _corrupt(path, f"state index_mode is {_show(value)}, not 0, 1 or 2")
    if "min_label" in state and "max_label" in state and state["min_label"] > state["max_label"]:
        raise _corrupt(path, "state min_label is above max_label")


def check_counters(counters, path) -> None:
    """The performance counters: exactly COUNTER_KEYS, each a finite number (the counts integers, the
    weights and counts not negative)."""
    if not isinstance(counters, dict):
        raise _corrupt(path, f"counters is {_show(counters)}, not an object")
    for key, value in counters.items():
        if key not in COUNTER_KEYS:
            raise _corrupt(path, f"unknown counter {_show(key)}")
        integer, nonnegative = COUNTER_KEYS[key]
        if not (_is_int(value) and 0 <= value < 1 << 62 if integer else _is_number(value) and math.isfinite(value)):
            raise _corrupt(path, f"counter {key} is {_show(value)}, not "
                                 f"{'an integer >= 0' if integer else 'a finite number'}")
        if nonnegative and value < 0:
            raise _corrupt(path, f"counter {key} is {_show(value)}, not >= 0")
    missing = [key for key in COUNTER_KEYS if key not in counters]
    if missing:
        raise _corrupt(path, f"counters lack {missing[0]}")


def check_header(header: dict, path, columns: int) -> list:
    """Every header key known and of its type (see the module docstring); returns the column names
    (a file without them holds the weight "w" only)."""
    types = _option_types()
    for key, value in header.items():
        if key in types:
            _check_option(key, types[key], value, path)
        elif key == "streamlearn":
            if not isinstance(value, str):
                raise _corrupt(path, "the streamlearn version is not a string")
        elif key == "state":
            _check_state(value, path)
        elif key == "mix":
            if not isinstance(value, dict):
                raise _corrupt(path, f"mix is {_show(value)}, not an object")
            for name, item in value.items():
                if name not in MIX_KEYS:
                    raise _corrupt(path, f"unknown mix record {_show(name)}")
                if not MIX_KEYS[name][0](item):
                    raise _corrupt(path, f"mix {name} is {_show(item)}, not {MIX_KEYS[name][1]}")
        elif key == "counters":
            check_counters(value, path)
        elif key not in LAYOUT_KEYS:
            raise _corrupt(path, f"unknown header key {_show(key)}")
    names = header.get("column_names", ["w"])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _corrupt(path, "column_names is not a list of strings")
    known = known_columns()[0]
    for name in names:
        if name not in known:
            raise _corrupt(path, f"unknown column {_show(name)}")
    if len(set(names)) != len(names):
        raise _corrupt(path, "a column name appears twice")
    if len(names) != columns:
        raise _corrupt(path, f"{len(names)} column names for {columns} columns")
    if names[0] != "w":
        raise _corrupt(path, "the first column is not the weight w")
    return names


def check_rows(index: np.ndarray, rows: np.ndarray, names: list, bits: int, path) -> None:
    """Indices strictly increasing (sorted, unique) and below 2^bits; every stored value finite, the
    sums of squares and magnitudes not negative."""
    if index.shape[0]:
        top = int(index.max())
        if top >= 1 << bits:
            raise _corrupt(path, f"weight index {top} is out of range for -b {bits}")
        step = np.flatnonzero(index[1:] <= index[:-1])
        if step.shape[0]:
            j = int(step[0]) + 1
            raise _corrupt(path, f"weight indices are not increasing (row {j}: {int(index[j])} after "
                                 f"{int(index[j - 1])})")
    bad = ~np.isfinite(rows)
    if bad.any():
        j, c = (int(v) for v in np.argwhere(bad)[0])
        raise _corrupt(path, f"column {names[c]} of weight index {int(index[j])} is {rows[j, c]!r}, "
                             f"not a finite number")
    nonnegative = known_columns()[1]
    for c, name in enumerate(names):
        if name in nonnegative:
            neg = np.flatnonzero(rows[:, c] < 0)
            if neg.shape[0]:
                j = int(neg[0])
                raise _corrupt(path, f"column {name} of weight index {int(index[j])} is negative")


def load_model(path: str) -> tuple[dict, np.ndarray, np.ndarray]:
    """Read a model file: (header, index, rows). Any problem is a one-line ModelError.

    A regular file is read bounded by its header: the 24-byte prefix, the header (at most
    MAX_HEADER bytes, within the file), then exactly the arrays the header announces, after checking
    the file's size against them (a file of another size is refused before its body is read).
    Anything else is read as a stream (as stdin is) with the same bounds: a device such as
    /dev/zero ends at its first 8 bytes ("not a streamlearn model file"), a FIFO waits FIFO_WAIT
    seconds for a writer and then gives up; a directory or socket is refused."""
    return parse_model(read_model_bytes(path), path)


def read_model_bytes(path: str) -> bytearray:
    """The bytes of a model file, read as ``load_model`` reads them (bounded by the header; streams
    and devices as streams, a FIFO without a writer refused); parse them with ``parse_model``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ModelError(f"cannot read model {path}: {exc.strerror or exc}") from None
    try:
        return _read_fd(fd, path)
    except OSError as exc:
        raise ModelError(f"cannot read model {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _read_fd(fd: int, path) -> bytearray:
    info = os.fstat(fd)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise ModelError(f"cannot read model {path}: Is a directory")
    if stat.S_ISSOCK(mode):
        raise ModelError(f"cannot read model {path}: it is a socket, not a file")
    size = info.st_size if stat.S_ISREG(mode) else None
    if stat.S_ISFIFO(mode):
        _wait_for_writer(fd, path)
    os.set_blocking(fd, True)
    prefix = _read(fd, _PREFIX.size)
    if bytes(prefix[:8]) != MAGIC and _is_vw_model(prefix):     # a VW model: its bytes, for run/vw_models.py
        return _read_rest(fd, prefix, path)
    _, head_len = _check_prefix(prefix, path)
    _check_head_len(head_len, size, path)
    head = _read(fd, head_len)
    if len(head) < head_len:
        raise _truncated(path)
    header = _parse_header(head, path)
    count, columns, bits = _sizes(header, path)
    expected = _PREFIX.size + head_len + _body_size(count, columns, bits)
    if size is not None:
        if size < expected:
            raise _truncated(path)
        if size > expected:
            raise _longer(path)
    if size is None:            # a stream: memory grows only with what arrives
        data = bytearray(prefix)
        data += head
        while len(data) < expected:
            chunk = os.read(fd, min(expected - len(data), 1 << 24))
            if not chunk:
                raise _truncated(path)
            data += chunk
        if _read(fd, 1):
            raise _longer(path)
        return data
    try:
        data = bytearray(expected)
    except MemoryError:
        raise ModelError(f"cannot read model {path}: its {expected} bytes do not fit in memory") from None
    data[:_PREFIX.size] = prefix
    data[_PREFIX.size:_PREFIX.size + head_len] = head
    view = memoryview(data)
    pos = _PREFIX.size + head_len
    while pos < expected:
        n = os.readv(fd, [view[pos:min(expected, pos + (1 << 24))]])
        if n == 0:
            raise _truncated(path)      # the file shrank while it was read
        pos += n
    return data


def _read_rest(fd: int, prefix: bytes, path) -> bytearray:
    """``prefix`` and the rest of the file, to its end (a VW model announces no size)."""
    data = bytearray(prefix)
    while True:
        chunk = os.read(fd, 1 << 24)
        if not chunk:
            return data
        data += chunk


def _check_head_len(head_len: int, size, path) -> None:
    """The announced header length fits in the file (``size`` bytes; None: a stream) and in
    MAX_HEADER."""
    if size is not None and head_len > size - _PREFIX.size:
        raise _truncated(path)
    if head_len > MAX_HEADER:
        raise _corrupt(path, f"the header length {head_len} is beyond {MAX_HEADER} bytes")


def _read(fd: int, n: int) -> bytes:
    """Up to ``n`` bytes (fewer only at the end of the file)."""
    parts = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _wait_for_writer(fd: int, path) -> None:
    """A FIFO: wait up to FIFO_WAIT seconds for a writer to send something (or to close), else refuse
    (opened without blocking, so a FIFO nobody writes to never hangs the run)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if not poller.poll(int(FIFO_WAIT * 1000)):
        raise ModelError(f"cannot read model {path}: nothing wrote to the FIFO within {FIFO_WAIT:g} s")


def parse_model(data: bytes, path: str = "model") -> tuple[dict, np.ndarray, np.ndarray]:
    """(header, index, rows) of a model file's bytes; ``path`` names it in the messages.

    Checks everything the file itself says (``check_header``, ``check_rows``): the prefix, sizes and
    checksum, every header key known and of its type, the state finite, the column names, the
    indices strictly increasing below 2^bits, the rows finite. Whether the options make a valid
    configuration is ``streamlearn.run.model_io.model_options``'s check (``validate_model`` does both)."""
    crc, head_len = _check_prefix(data[:_PREFIX.size], path)
    start = _PREFIX.size
    _check_head_len(head_len, len(data), path)
    header = _parse_header(memoryview(data)[start:start + head_len], path)
    count, columns, bits = _sizes(header, path)
    expected = start + head_len + _body_size(count, columns, bits)
    if len(data) < expected:
        raise _truncated(path)
    if len(data) > expected or zlib.crc32(memoryview(data)[16:]) != crc:
        raise _longer(path)
    names = check_header(header, path, columns)
    pos = start + head_len
    isize = 4 if bits <= 32 else 8
    index = np.frombuffer(data, dtype="<u4" if isize == 4 else "<u8", count=count, offset=pos)
    pos += count * isize
    rows = np.frombuffer(data, dtype="<f8", count=count * columns, offset=pos).reshape(count, columns)
    check_rows(index, rows, names, bits, path)
    return header, index, rows
