"""Vowpal Wabbit's binary model files (VW 8.0.2 and later, as VW 9.11.9 writes them), read and written
from their format's description: VW's ``io_buf`` records, the header of ``save_load_header``
(parse_regressor.cc) and the linear learners' weights (gd.cc ``save_load_regressor`` and
``save_load_online_state``; ftrl.cc). Nothing here knows streamlearn's options: this module reads the
bytes into a ``VWModel`` and writes one back; ``streamlearn.run.vw_models`` maps it to a run.

Layout (little-endian; "str" is a uint32 length then that many bytes, the last a NUL)::

    str       version ("9.11.9")
    str       id                                     (8.0.3 and later)
    1 byte    'm'
    float32   min label, max label
    uint32    bits, lda
    uint32    n, then n x 3 bytes: the --ngram values   (same for --skips)
    str       the "keep" options (" --oaa 3 --quadratic ab")
    str       checksum: uint32 (4 bytes)
    1 byte    1 = save_resume (the online state follows), 0 = --predict_only_model
    online state (save_resume only): float32 initial_t, float64 normalizer sum, t, sum_loss, sum_loss
              since the last dump, float32 dump interval, min label, max label, float64 weighted
              labeled examples, weighted labels, weighted unlabeled examples, uint64 example number,
              total features, float64 total weight, previous weighted labeled examples, uint64 pass
              (float64 before 8.3.3... read as 8 bytes either way), float64 l1 state, l2 state (9.0.0 on)
    records   to the end of the file: uint32 index (uint64 when bits >= 31), then float32 values:
              1 (predict-only, or plain sgd), 2 (adaptive or normalized), 3 (both; ftrl's w z n)

The checksum is VW's MurmurHash3 (32 bits) chained over every read of the header after the version
string, each read seeded with the hash of the previous ones. Records are in slot order from a dense
table and in hash-map order from VW's ``--sparse_weights``: both are read.

Reading trusts nothing: every refusal is one ModelError line naming the file and the reason.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import numpy as np

from streamlearn.errors import ModelError

#: the oldest VW model version read (the chained header checksum)
OLDEST = (8, 0, 2)
#: the version written (the layout above is VW 9.11.9's)
WRITTEN = "9.11.9"
#: the largest "keep" options string VW reads (its sanity check: 100 MB)
MAX_OPTIONS = 104857600
_VERSION = re.compile(rb"(\d{1,4})\.(\d{1,4})\.(\d{1,4})")

#: the online state's fields (name, struct code), in the file's order
ONLINE = (("initial_t", "f"), ("norm_sum", "d"), ("t", "d"), ("sum_loss", "d"), ("sum_loss_since", "d"),
          ("dump_interval", "f"), ("min_label", "f"), ("max_label", "f"), ("w_labeled", "d"),
          ("w_labels", "d"), ("w_unlabeled", "d"), ("example_number", "Q"), ("total_features", "Q"),
          ("total_weight", "d"), ("old_w_labeled", "d"), ("current_pass", "Q"),
          ("l1_state", "d"), ("l2_state", "d"))


@dataclass
class VWModel:
    """What a VW model file holds (``values``: float32 records, one row per stored slot)."""
    version: tuple
    id: str
    min_label: float
    max_label: float
    bits: int
    ngram: list
    skips: list
    options: str
    resume: bool
    online: dict = field(default_factory=dict)
    index: np.ndarray = None
    values: np.ndarray = None
    #: where the learner's data starts (after the header's checksum)
    body: int = 0


def looks_like(prefix: bytes) -> bool:
    """The first bytes of a file are those of a VW model: a short length, then a version string."""
    if len(prefix) < 5:
        return False
    n = struct.unpack_from("<I", prefix, 0)[0]
    return 2 <= n <= 32 and prefix[4:5].isdigit()


def murmur(data: bytes, seed: int) -> int:
    """MurmurHash3 x86 32 of ``data`` with ``seed`` (VW's ``uniform_hash``)."""
    from streamlearn.features.hashing import murmur3
    return murmur3(bytes(data), seed) if data else seed


class _Reader:
    """Bounded reads of a file's bytes, hashing what it reads while ``hashing`` (VW's chained checksum)."""

    def __init__(self, data, path):
        self.data, self.pos, self.path, self.hash, self.hashing = memoryview(data), 0, path, 0, False

    def take(self, n: int, where: str) -> bytes:
        if n > len(self.data) - self.pos:
            raise ModelError(f"VW model {self.path} is truncated (it ends inside {where})")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        if self.hashing:
            self.hash = murmur(out, self.hash)
        return out

    def unpack(self, code: str, where: str):
        return struct.unpack("<" + code, self.take(struct.calcsize("<" + code), where))[0]

    def string(self, where: str, most: int) -> bytes:
        n = self.unpack("I", where)
        if n > most:
            raise ModelError(f"VW model {self.path} is corrupt ({where} has length {n}, beyond {most} bytes)")
        return self.take(n, where)


def _text(raw: bytes, path, what: str) -> str:
    text = raw.split(b"\0", 1)[0]
    try:
        out = text.decode("ascii")
    except UnicodeDecodeError:
        raise ModelError(f"VW model {path} is corrupt ({what} is not text)") from None
    if not out.isprintable():
        raise ModelError(f"VW model {path} is corrupt ({what} is not printable text)")
    return out


def parse(data, path, widths=(1,), check=None) -> VWModel:
    """The VW model in ``data`` (the file's bytes). ``widths``: the values per record to try, in order,
    for a save_resume model (VW stores no update rule in a model: its reader takes the width from
    its command line; the first width whose records fit the file and stay below 2^bits is taken).
    ``check(model)``: called once the header is read and checked (the options a reader refuses are
    named before the learner's data, which other reductions lay out otherwise, is read); it may
    return new ``widths``."""
    r = _Reader(data, path)
    raw = r.string("the version", 32)
    m = _VERSION.fullmatch(raw.split(b"\0", 1)[0])
    if m is None:
        raise ModelError(f"VW model {path} is corrupt (its version {raw[:12]!r} is not a VW version)")
    version = tuple(int(v) for v in m.groups())
    text = ".".join(map(str, version))
    if version < OLDEST:
        raise ModelError(f"VW model {path} was written by VW {text}; streamlearn reads VW models of "
                         f"version {'.'.join(map(str, OLDEST))} and later")
    r.hashing = True
    ident = _text(r.string("the id", 1 << 16), path, "the id") if version >= (8, 0, 3) else ""
    if r.take(1, "the header") != b"m":
        raise ModelError(f"VW model {path} is corrupt (its header has no model marker 'm')")
    min_label, max_label = r.unpack("f", "the header"), r.unpack("f", "the header")
    bits = r.unpack("I", "the header")
    if version <= (7, 8, 0):        # pragma: no cover (older than OLDEST; kept for the layout's record)
        r.unpack("I", "the header")
    lda = r.unpack("I", "the header")
    grams = []
    for what in ("ngram", "skip"):
        n = r.unpack("I", f"the {what} list")
        if n > 256:
            raise ModelError(f"VW model {path} is corrupt ({n} {what} values)")
        grams.append([_text(r.take(3, f"the {what} list"), path, f"a {what} value") for _ in range(n)])
    options = _text(r.string("the options", MAX_OPTIONS), path, "the options string")
    r.hashing = False
    if r.unpack("I", "the checksum") != 4:
        raise ModelError(f"VW model {path} is corrupt (its checksum record is not 4 bytes)")
    saved = r.unpack("I", "the checksum")
    if saved != r.hash:
        raise ModelError(f"VW model {path} is corrupt (header checksum mismatch: {saved} stored, "
                         f"{r.hash} computed)")
    if lda:
        raise ModelError(f"VW model {path} holds an LDA model (--lda {lda}), which streamlearn does not implement")
    if not 1 <= bits <= 32:
        raise ModelError(f"VW model {path} has -b {bits}; streamlearn takes -b from 1 to 32")
    model = VWModel(version, ident, min_label, max_label, bits, grams[0], grams[1], options.strip(),
                    resume=False, body=r.pos)
    if check is not None:
        widths = check(model) or widths
    if r.pos == len(r.data):
        raise ModelError(f"VW model {path} is truncated (it ends after its header: no learner's data)")
    flag = r.take(1, "the save_resume flag")[0]
    if flag not in (0, 1):
        raise ModelError(f"VW model {path} is corrupt (its save_resume flag is {flag}, not 0 or 1)")
    model.resume = bool(flag)
    if model.resume:
        for name, code in ONLINE:
            if name in ("l1_state", "l2_state") and version < (9, 0, 0):
                model.online[name] = 0.0 if name == "l1_state" else 1.0
                continue
            model.online[name] = r.unpack(code, "the online state")
        bad = [k for k, v in model.online.items() if not np.isfinite(v)]
        if bad:
            raise ModelError(f"VW model {path} is corrupt (its online state {bad[0]} is {model.online[bad[0]]})")
    model.index, model.values = _records(bytes(r.data[r.pos:]), bits, widths if model.resume else (1,), path)
    return model


def _records(body: bytes, bits: int, widths, path) -> tuple[np.ndarray, np.ndarray]:
    """(index, values) of the weight records, checked: they fill the file, every index is below
    2^bits, every value is finite. A slot stored twice keeps its last record (as VW's reader)."""
    isize = 4 if bits < 31 else 8
    tried = []
    for width in widths:
        size = isize + 4 * width
        if len(body) % size:
            tried.append(f"{width} value{'s' if width > 1 else ''}: {len(body)} bytes are not records of {size}")
            continue
        rec = np.frombuffer(body, dtype=[("i", "<u4" if isize == 4 else "<u8"), ("v", "<f4", (width,))])
        index = rec["i"].astype(np.int64)
        if index.shape[0] and int(index.max()) >= 1 << bits:
            tried.append(f"{width} value{'s' if width > 1 else ''}: index {int(index.max())} is out of range "
                         f"for -b {bits}")
            continue
        values = np.array(rec["v"], dtype=np.float32).reshape(-1, width)
        bad = ~np.isfinite(values)
        if bad.any():
            j = int(np.argwhere(bad)[0][0])
            raise ModelError(f"VW model {path} is corrupt (the weights of slot {int(index[j])} are "
                             f"{values[j].tolist()}, not finite numbers)")
        order = np.argsort(index, kind="stable")
        index, values = index[order], values[order]
        last = np.ones(index.shape[0], bool)
        last[:-1] = index[1:] != index[:-1]
        return index[last], values[last]
    raise ModelError(f"VW model {path} is corrupt or of another update rule (its weights fit no record "
                     f"layout: {'; '.join(tried)})")


# ----------------------------------------------------------------------------- writing

def _string(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def dump(model: VWModel) -> bytes:
    """The bytes of a VW model (``model.version`` is ignored: the layout written is VW 9.11.9's)."""
    out = [_string(WRITTEN.encode() + b"\0")]
    chunks = [struct.pack("<I", len(model.id) + 1), model.id.encode() + b"\0", b"m",
              struct.pack("<f", model.min_label), struct.pack("<f", model.max_label),
              struct.pack("<I", model.bits), struct.pack("<I", 0)]
    for values in (model.ngram, model.skips):
        chunks.append(struct.pack("<I", len(values)))
        chunks += [v.encode()[:3].ljust(3, b"\0") for v in values]
    options = (" " + model.options if model.options else "").encode() + b"\0"
    chunks += [struct.pack("<I", len(options)), options]
    h = 0
    for chunk in chunks:
        h = murmur(chunk, h)
    out += chunks + [struct.pack("<I", 4), struct.pack("<I", h), bytes([1 if model.resume else 0])]
    if model.resume:
        out += [struct.pack("<" + code, model.online[name]) for name, code in ONLINE]
    isize = "<u4" if model.bits < 31 else "<u8"
    values = np.asarray(model.values, dtype="<f4")
    rec = np.empty(values.shape[0], dtype=[("i", isize), ("v", "<f4", (values.shape[1],))])
    rec["i"] = model.index
    rec["v"] = values
    out.append(rec.tobytes())
    return b"".join(out)
