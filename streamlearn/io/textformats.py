"""VW's CSV (``--csv``) and JSON (``--json``) input formats, read by turning every input line into the VW
text line with the same features, which the compiled VW text parser then reads (issue 27).

One input line gives one VW line (a CSV header gives an empty one), so line numbers, messages, caches
and ``--audit`` work as for VW text. Each feature's index is computed here as VW's parser computes it
(csv_parser's and json_parser's rules, below); the feature is written by its name when the VW text
parser gives that name the same index (the usual case), else as the all-digit name whose hash is that
index (``--hash strings`` reads an all-digit name d in a namespace of hash S as d + S). Values are
written so that the text parser reads back the same float32 exactly.

CSV (VW 9's csv_parser): the first line of every file is the header. A column named ``_label`` holds
the label (``label [importance [base]]``), ``_tag`` the tag; any other header is ``name`` (the default
namespace) or ``namespace|name``. Cells are split on the separator (``--csv_separator``, one byte,
``\\t`` for TAB; not ``"``, ``|`` or ``:``) with RFC 4180 quoting (a cell starting with ``"`` runs to
the closing ``"``, ``""`` inside is one ``"``); the outer quotes of a cell are removed. A cell that is
wholly a number (VW's float reading) is a float feature ``hash(name, ns)`` with that value times the
namespace's ``--csv_ns_value``; an empty name gives ``ns + k`` (k counts the namespace's anonymous
columns); any other cell, quoted numbers included, is the string feature ``hash(cell, hash(name,
ns))`` of value 1; an empty cell is no feature. A line with another number of cells than the header,
an empty line, an unclosed or stray quote stop the run with a message naming the file and line (VW
stops too).

JSON (VW 9's json_parser, simple labels): one object per line. ``"_label"``: a number, a string (VW's
text label) or ``{"Label": .., "Weight": .., "Initial": ..}``; ``"_tag"``: the tag; ``"_text"``: words
(split on spaces, ``:`` and ``|`` read as ``_``) in the current namespace; other keys starting with
``_`` are ignored. A number is the feature ``hash(key, ns)``; ``true`` the feature ``key`` (``false``
and ``null`` nothing); a string is the feature ``key`` + string (spaces, TABs, ``:`` and ``|`` read as
``_``) hashed as one name, or with ``--chain_hash`` ``hash(string, hash(key, ns))``; an object is the
namespace ``key`` (hash(key), first byte its index); an array of numbers gives the anonymous features
``ns + i`` of the namespace ``key``, and its objects are read in that namespace. The top level is the
default namespace, whose hash is the seed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from streamlearn.errors import InputError
from streamlearn.features.hashing import default_namespace_hash, hash_string
from streamlearn.io.parsing import NUM_FINITE, NUM_NONE, parse_number

from streamlearn.options import TEXT_FORMATS  # noqa: F401  (defined once, in options)
_M32 = 0xFFFFFFFF
#: bytes that end a name in VW text (a name holding one cannot be written as it is)
_UNSAFE = frozenset(b" \t:|\r\n")
#: a string value the text parser reads as a string, never as a number
_STRING_VALUE = re.compile(rb"[A-DF-HJ-MO-Za-df-hj-mo-z_][^ \t:|\r\n]*")


@dataclass(frozen=True)
class TextFormat:
    """How a CSV or JSON source becomes VW text: the format and its options."""

    name: str                   # "csv" or "json"
    csv_separator: str = ","
    csv_ns_value: str = ""
    chain_hash: bool = False
    csv_header: str = ""
    csv_no_file_header: bool = False

    def as_dict(self) -> dict:
        if self.name == "csv":
            d = {"format": "csv", "csv_separator": self.csv_separator, "csv_ns_value": self.csv_ns_value}
            if self.csv_header or self.csv_no_file_header:
                d.update(csv_header=self.csv_header, csv_no_file_header=self.csv_no_file_header)
            return d
        return {"format": "json", "chain_hash": self.chain_hash}

    def converter(self, source: str, hash_seed: int, hash_mode: str):
        conv = CsvConverter if self.name == "csv" else JsonConverter
        return conv(self, source, hash_seed, hash_mode)


def csv_separator(value: str) -> str:
    """VW's --csv_separator: one byte, ``\\t`` for TAB; raises ValueError (the reason) otherwise."""
    if len(value) > 1:
        if value == "\\t":
            value = "\t"
        else:
            raise ValueError(f"--csv_separator must be one character (or \\t), not {value!r}")
    if not value:
        raise ValueError("--csv_separator must be one character (or \\t)")
    if value in "\"|:":
        raise ValueError(f"--csv_separator cannot be {value!r} (\", | and : are reserved)")
    return value


def check_csv_header(header: str, no_file_header: bool) -> None:
    """VW's --csv_no_file_header needs --csv_header; raises ValueError."""
    if no_file_header and not header:
        raise ValueError("--csv_no_file_header needs --csv_header (the CSV has no header line)")


def csv_ns_values(text: str) -> dict:
    """VW's --csv_ns_value ``ns:ratio,...`` (an empty ns: the default namespace) as {ns bytes: float32}."""
    out = {}
    if not text:
        return out
    for k, pair in enumerate(text.split(","), 1):
        parts = pair.split(":")
        if len(parts) != 2 or not parts[1]:
            raise ValueError(f"--csv_ns_value: malformed namespace:value pair {k}: {pair!r}")
        raw = parts[1].encode()
        v, q, kind, _ = parse_number(np.frombuffer(raw, np.uint8), 0, len(raw))
        if q != len(raw) or kind == NUM_NONE or v != v:
            raise ValueError(f"--csv_ns_value: the value of pair {k} is not a number: {pair!r}")
        out[parts[0].encode()] = np.float32(v)
    return out


def _number(raw: bytes):
    """VW's reading of a whole cell as a float: the float32 value, or None when it is not one number."""
    if not raw:
        return None
    v, q, kind, _ = parse_number(np.frombuffer(raw, np.uint8), 0, len(raw))
    if q != len(raw) or kind == NUM_NONE or v != v:
        return None
    with np.errstate(over="ignore"):
        return np.float32(v)


def number_text(v) -> bytes:
    """float32 ``v`` as text the VW text parser reads back exactly: the shortest decimal when it does,
    else the exact hexadecimal form (read by strtod)."""
    v = np.float32(v)
    s = repr(float(v)) if not np.isfinite(v) else np.format_float_positional(v, unique=True, trim="-")
    if len(s) > 12:
        s = np.format_float_scientific(v, unique=True, trim="-")
    raw = s.encode()
    back, q, kind, _ = parse_number(np.frombuffer(raw, np.uint8), 0, len(raw))
    if q == len(raw) and kind == NUM_FINITE and np.float32(back) == v:
        return raw
    return float(v).hex().encode()


class _Writer:
    """Builds one VW text line from features given by their VW index."""

    def __init__(self, conv):
        self.conv = conv
        self.parts = []
        self.segment = None         # (namespace bytes as written, its text hash)

    def namespace(self, ns: bytes, index_byte: int) -> None:
        """Start a segment for VW namespace ``ns`` (its first byte ``index_byte``)."""
        conv = self.conv
        if ns and not (set(ns) & _UNSAFE) and ns.strip(b" ") == ns:
            name = ns
        elif index_byte == 32:
            name = b""
        elif index_byte not in _UNSAFE:
            name = bytes([index_byte])
        else:
            raise InputError(f"namespace {ns.decode('utf-8', 'backslashreplace')!r} starts with a byte VW "
                             "text cannot hold")
        seg_hash = conv.default_hash if not name else hash_string(name, conv.seed, conv.mode)
        self.parts.append(b" |" + name)
        self.segment = seg_hash

    def feature(self, index: int, value, name: bytes | None = None, string: bytes | None = None) -> None:
        """The feature of VW index ``index`` (32 bits) and float32 ``value``; ``name`` (and ``string``)
        the text that may give it."""
        conv, seg = self.conv, self.segment
        index &= _M32
        token = None
        if name and not (set(name) & _UNSAFE):
            if string is None:
                if hash_string(name, seg, conv.mode) == index:
                    token = name
            elif _STRING_VALUE.fullmatch(string) and \
                    hash_string(string, hash_string(name, seg, conv.mode), conv.mode) == index:
                token = name + b":" + string
                value = None
        if token is None:
            if conv.mode != "strings":
                raise InputError("a feature name VW text cannot hold needs --hash strings")
            token = str((index - seg) & _M32).encode()
        if value is not None and np.float32(value) != 1:
            token += b":" + number_text(value)
        self.parts.append(b" " + token)

    def line(self, label: bytes = b"", tag: bytes | None = None) -> bytes:
        head = label
        if tag:
            head = (head + b" " if head else b"") + b"'" + tag
        return head + (b"".join(self.parts) or b" |")


class _Converter:
    def __init__(self, fmt: TextFormat, source: str, seed: int, mode: str):
        self.fmt = fmt
        self.source = source
        self.seed = seed & _M32
        self.mode = mode
        self.default_hash = int(default_namespace_hash(self.seed))

    def fail(self, line: int, reason: str):
        raise InputError(f"{self.source} line {line}: {reason}")

    def block(self, data: np.ndarray, ends: np.ndarray, first_line: int):
        """The VW text of a line-aligned block: (uint8 buffer, line ends), one VW line per input line."""
        raw = data.tobytes()
        out = []
        start = 0
        for k, end in enumerate(ends.tolist()):
            line = raw[start:end]
            start = end + 1
            try:
                out.append(self.line(line, first_line + k))
            except InputError as exc:
                if str(exc).startswith(f"{self.source} line "):
                    raise
                self.fail(first_line + k, str(exc))
        return _joined(out)

    def label_text(self, words: list, line: int) -> bytes:
        for w in words:
            if set(w) & _UNSAFE or w.startswith(b"'"):
                self.fail(line, f"label {b' '.join(words).decode('utf-8', 'backslashreplace')!r} cannot be read")
        return b" ".join(words)

    def tag_text(self, tag: bytes, line: int) -> bytes:
        if set(tag) & _UNSAFE:
            self.fail(line, f"tag {tag.decode('utf-8', 'backslashreplace')!r} holds a space, TAB, ':' or '|' "
                            "(streamlearn's tags cannot)")
        return tag


# ----------------------------------------------------------------------------------------------- CSV

_TRIM = b"\r\n\xef\xbb\xbf\f\v"


class CsvConverter(_Converter):
    def __init__(self, *args):
        super().__init__(*args)
        self.sep = csv_separator(self.fmt.csv_separator).encode()[0]
        self.ns_value = csv_ns_values(self.fmt.csv_ns_value)
        self.header = None
        self.first = True
        if self.fmt.csv_header:
            self.read_header(self.fmt.csv_header.encode("utf-8", "surrogateescape").split(b","), 0)

    def split(self, sv: bytes, line: int) -> list:
        """VW's cells of a line: quoted cells keep their outer quotes, ``""`` inside them is ``"``."""
        sv = sv.strip(_TRIM)
        if not sv:
            return [b""]
        sep, q = self.sep, 34
        cells, cell, i, n = [], bytearray(), 0, len(sv)
        at_start, quoted = True, False
        while i < n:
            c = sv[i]
            if at_start and not quoted and c == q:
                quoted, at_start = True, False
                cell.append(c)
            elif quoted and c == q:
                if i + 1 < n and sv[i + 1] == q:
                    cell.append(q)
                    i += 1
                elif i + 1 == n or sv[i + 1] == sep:
                    quoted = False
                    cell.append(c)
                else:
                    self.fail(line, f"unescaped quote at position {i + 1} (a quote inside a quoted cell is "
                                    "written \"\")")
            elif not quoted and c == sep:
                cells.append(bytes(cell))
                cell, at_start = bytearray(), True
            else:
                cell.append(c)
                at_start = False
            i += 1
        if quoted:
            self.fail(line, "unclosed quote")
        cells.append(bytes(cell))
        return cells

    @staticmethod
    def unquote(cell: bytes) -> bytes:
        return cell[1:-1] if len(cell) > 1 and cell[0] == 34 and cell[-1] == 34 else cell

    def line(self, raw: bytes, line: int) -> bytes:
        with np.errstate(over="ignore"):
            return self._line(raw, line)

    def _line(self, raw: bytes, line: int) -> bytes:
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw:
            self.fail(line, "empty line (VW's CSV has none)")
        cells = self.split(raw, line)
        first, self.first = self.first, False
        if self.header is None:
            self.read_header(cells, line)
            return b""
        names, label_col, tag_col, groups = self.header
        if len(cells) != len(names):
            self.fail(line, f"{len(cells)} cells where the header has {len(names)}")
        if first and not self.fmt.csv_no_file_header:
            return b""          # the file's header, --csv_header in force
        label = b""
        if label_col is not None:
            label = self.label_text(_words(self.unquote(cells[label_col])), line)
        tag = None
        if tag_col is not None:
            tag = self.unquote(cells[tag_col])
            tag = self.tag_text(tag[1:] if tag.startswith(b"'") else tag, line)
        w = _Writer(self)
        if all(not cells[c] for _, _, cols in groups for c in cols):
            return b""
        for ns, ns_hash, cols in groups:
            w.namespace(ns if ns else b" ", ns[0] if ns else 32)
            scale = self.ns_value.get(ns, np.float32(1))
            anon = 0
            for c in cols:
                cell, name = cells[c], names[c]
                if not cell:
                    continue
                v = None if cell[0] == 34 else _number(cell)
                if v is None:
                    s = self.unquote(cell)
                    w.feature(hash_string(s, hash_string(name, ns_hash, self.mode), self.mode), 1.0, name, s)
                elif name:
                    v = np.float32(scale * v)
                    if v != 0:
                        w.feature(hash_string(name, ns_hash, self.mode), v, name)
                else:
                    v = np.float32(scale * v)
                    if v != 0:
                        w.feature(ns_hash + anon, v)
                    anon += 1
        return w.line(label, tag)

    def read_header(self, cells: list, line: int) -> None:
        names, label_col, tag_col, groups = [], None, None, {}
        for i, cell in enumerate(cells):
            cell = self.unquote(cell)
            if cell in (b"_tag", b"_label"):
                if cell == b"_tag":
                    tag_col = i if tag_col is None else tag_col
                else:
                    label_col = i if label_col is None else label_col
                names.append(b"")
                continue
            parts = cell.strip(_TRIM).split(b"|")
            if len(parts) > 2:
                self.fail(line, f"malformed header cell {i + 1}: {cell.decode('utf-8', 'backslashreplace')!r} "
                                "(namespace|name)")
            ns, name = (b"", parts[0]) if len(parts) == 1 else parts
            names.append(name)
            groups.setdefault(ns, []).append(i)
        out = []
        for ns, cols in groups.items():
            ns_hash = self.default_hash if not ns else hash_string(ns, self.seed, self.mode)
            out.append((ns, ns_hash, cols))
        self.header = (names, label_col, tag_col, out)


# ---------------------------------------------------------------------------------------------- JSON

class JsonConverter(_Converter):
    def line(self, raw: bytes, line: int) -> bytes:
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip():
            return b""
        try:
            obj = json.loads(raw, object_pairs_hook=lambda pairs: pairs)
        except (ValueError, RecursionError) as exc:
            self.fail(line, f"not a JSON object ({str(exc).split(':')[0]})")
        if not isinstance(obj, list) or (obj and not isinstance(obj[0], tuple)):
            self.fail(line, "not a JSON object")
        self.label, self.tag = b"", None
        self.w = _Writer(self)
        self.stack = []
        try:
            self.members(obj, b" ", line)
        except RecursionError:
            self.fail(line, "JSON nested too deeply")
        return self.w.line(self.label, self.tag)

    def push(self, ns: bytes) -> None:
        h = hash_string(ns.split(b"\0")[0], self.seed, self.mode)
        self.stack.append((ns, h))
        self.w.namespace(ns, ns[0] if ns else 0)

    def pop(self) -> None:
        self.stack.pop()
        if self.stack:
            ns = self.stack[-1][0]
            self.w.namespace(ns, ns[0] if ns else 0)

    def members(self, pairs: list, ns: bytes, line: int) -> None:
        self.push(ns)
        for key, value in pairs:
            k = key.encode("utf-8", "surrogatepass")
            if k.startswith(b"_"):
                self.special(k, value, line)
                continue
            self.value(k, value, line)
        self.pop()

    def value(self, k: bytes, value, line: int) -> None:
        ns_hash = self.stack[-1][1]
        key = k.split(b"\0")[0]
        if isinstance(value, bool):
            if value:
                self.w.feature(hash_string(key, ns_hash, self.mode), 1.0, key)
        elif isinstance(value, (int, float)):
            v = self.float32(value, line)
            if v != 0:
                self.w.feature(hash_string(key, ns_hash, self.mode), v, key)
        elif isinstance(value, str):
            s = value.encode("utf-8", "surrogatepass").split(b"\0")[0]
            s = s.translate(_JSON_ESCAPE)
            if self.fmt.chain_hash:
                self.w.feature(hash_string(s, hash_string(key, ns_hash, self.mode), self.mode), 1.0, key, s)
            else:
                name = key + s
                self.w.feature(hash_string(name, ns_hash, self.mode), 1.0, name)
        elif isinstance(value, list) and (not value or isinstance(value[0], tuple)):
            self.members(value, k, line)
        elif isinstance(value, list):
            self.array(k, value, line)
        elif value is not None:
            self.fail(line, f"unexpected JSON value for {key!r}")

    def array(self, k: bytes, items: list, line: int) -> None:
        self.push(k)
        h = self.stack[-1][1]
        for item in items:
            if item is None:
                continue
            if isinstance(item, bool) or isinstance(item, str):
                self.fail(line, f"array {k.decode('utf-8', 'backslashreplace')!r} holds a "
                                f"{'string' if isinstance(item, str) else 'bool'} (VW's arrays hold numbers "
                                "and objects)")
            if isinstance(item, (int, float)):
                v = self.float32(item, line)
                if v != 0:
                    self.w.feature(h, v)
                h += 1
            elif isinstance(item, list) and (not item or isinstance(item[0], tuple)):
                self.members(item, k, line)
            else:
                self.fail(line, "nested arrays are not supported (VW)")
        self.pop()

    def float32(self, value, line: int):
        try:
            with np.errstate(over="ignore"):
                v = np.float32(value)
        except OverflowError:
            v = np.float32(np.inf)
        if not np.isfinite(v):
            self.fail(line, f"value {value!r} is beyond float32's range")
        return v

    def special(self, k: bytes, value, line: int) -> None:
        if k == b"_label":
            if isinstance(value, bool):
                self.fail(line, "_label is a boolean")
            if isinstance(value, (int, float)):
                self.label = number_text(self.float32(value, line))
            elif isinstance(value, str):
                self.label = self.label_text(_words(value.encode("utf-8", "surrogatepass")), line)
            elif isinstance(value, list) and (not value or isinstance(value[0], tuple)):
                parts = {"label": None, "weight": None, "initial": None}
                for key, v in value:
                    if key.lower() in parts and isinstance(v, (int, float)) and not isinstance(v, bool):
                        parts[key.lower()] = self.float32(v, line)
                if parts["label"] is not None:
                    words = [parts["label"]]
                    if parts["weight"] is not None or parts["initial"] is not None:
                        words.append(np.float32(1) if parts["weight"] is None else parts["weight"])
                    if parts["initial"] is not None:
                        words.append(parts["initial"])
                    self.label = b" ".join(number_text(x) for x in words)
            elif value is not None:
                self.fail(line, "_label is neither a number, a string nor an object")
        elif k.lower() == b"_tag" and isinstance(value, str):
            self.tag = self.tag_text(value.encode("utf-8", "surrogatepass"), line)
        elif k == b"_text" and isinstance(value, str):
            ns_hash = self.stack[-1][1]
            words = value.encode("utf-8", "surrogatepass").split(b"\0")[0].translate(_TEXT_ESCAPE)
            for word in re.split(rb"[ \t]", words):
                if word:
                    self.w.feature(hash_string(word, ns_hash, self.mode), 1.0, word)


def _joined(lines: list):
    """(uint8 buffer, line ends) of VW text lines, each ended by a newline."""
    buf = np.frombuffer(b"".join(line + b"\n" for line in lines), np.uint8).copy()
    return buf, np.flatnonzero(buf == 10)


def _words(text: bytes) -> list:
    """VW's tokenize on spaces (empty words dropped)."""
    return [w for w in text.split(b" ") if w]


_JSON_ESCAPE = bytes.maketrans(b" \t|:", b"____")
_TEXT_ESCAPE = bytes.maketrans(b"|:", b"__")


# ------------------------------------------------------------------------------------------- --affix

AFFIX_NAMESPACE = 0x84          # VW's affix namespace (\x84)
DICTIONARY_NAMESPACE = 0x87     # VW's dictionary namespace (\x87)
AFFIX_CONSTANT = 13903957
QUADRATIC_CONSTANT = 27942141


def parse_affix(text: str) -> dict:
    """VW's ``--affix`` (``+2a,-3b``: prefixes (+, the default) or suffixes (-) of length 1..7 of the
    names of namespace a, b, or of the default namespace when none is given) as {namespace byte:
    [(is_prefix, length, code)]} in the order VW adds them (the last given first); raises ValueError."""
    out = {}
    for token in text.split(","):
        if not token:
            continue
        q, prefix = token, 1
        if q[:1] in "+-":
            prefix, q = (0 if q[0] == "-" else 1), q[1:]
        if not q or not "1" <= q[0] <= "7":
            raise ValueError(f"--affix: the length must be 1..7 in {token!r}")
        ns = 32
        if len(q) > 1:
            ns = q[1].encode("utf-8", "surrogateescape")
            if len(q) > 2 or len(ns) != 1 or ns in (b"|", b":"):
                raise ValueError(f"--affix: malformed {token!r} (+/-, a length 1..7, a namespace byte)")
            ns = ns[0]
        length = int(q[0])
        out.setdefault(ns, []).insert(0, (bool(prefix), length, (length << 1) | prefix))
    return out


class AffixConverter:
    """VW text lines with VW's affix features (``--affix``) and dictionary features (``--dictionary``)
    added, as VW's text parser adds them.

    Affixes: for every named feature of a namespace with affixes, value v, the feature of index
    ``hash(affix, ns) * (13903957 + code * 27942141)`` and value v in namespace \\x84 (the affix is the
    name's first or last ``length`` bytes, the whole name when it is shorter; code = length * 2 +
    prefix). Dictionaries: for every feature of a namespace with dictionaries (value not 0), the
    features its name has in each of them (``read_dictionary``), as they are, in namespace \\x87. Both
    are written as the all-digit names of their indices in segments ``|\\x84`` and ``|\\x87`` added at
    the end of the line."""

    def __init__(self, affix: dict, source: str, seed: int, mode: str, spec=None, dictionaries=None):
        from streamlearn.features.expansion import FeatureSpec
        self.dictionaries = dictionaries or {}
        self.dict_hash = hash_string(bytes([DICTIONARY_NAMESPACE]), seed & _M32, mode)
        self.affix = affix
        self.source = source
        self.seed = seed & _M32
        self.mode = mode
        self.spec = spec if spec is not None else FeatureSpec.from_options()
        self.seg_hash = hash_string(bytes([AFFIX_NAMESPACE]), self.seed, mode)

    def line(self, raw: bytes) -> bytes:
        from streamlearn.features.names import parse_features
        body = raw[:-1] if raw.endswith(b"\r") else raw
        tail = raw[len(body):]
        text = body[3:] if body.startswith(b"\xef\xbb\xbf") else body
        with np.errstate(over="ignore"):
            groups, _ = parse_features(text, self.spec, 32, self.seed, self.mode)
        tokens, dict_tokens = [], []
        for index, feats in groups:
            for table in self.dictionaries.get(index, ()):
                for f in feats:
                    for h, v in table.get(f.name.encode("utf-8", "surrogateescape"), ()) if not f.constant else ():
                        token = str((h - self.dict_hash) & _M32).encode()
                        dict_tokens.append(token if v == 1 else token + b":" + number_text(v))
            affixes = self.affix.get(index)
            if not affixes:
                continue
            for f in feats:
                if f.constant or not f.name:
                    continue
                name = f.name.encode("utf-8", "surrogateescape")
                ns_hash = self.default_hash() if f.ns_name == "" else \
                    hash_string(f.ns_name.encode("utf-8", "surrogateescape"), self.seed, self.mode)
                for is_prefix, length, code in affixes:
                    part = name if len(name) <= length else (name[:length] if is_prefix else name[-length:])
                    h = (hash_string(part, ns_hash, self.mode) * (AFFIX_CONSTANT + code * QUADRATIC_CONSTANT))
                    token = str((h - self.seg_hash) & _M32).encode()
                    if np.float32(f.value) != 1:
                        token += b":" + number_text(f.value)
                    tokens.append(token)
        if not tokens and not dict_tokens:
            return raw
        if self.mode != "strings":
            raise InputError(f"{self.source}: --affix and --dictionary need --hash strings")
        if tokens:
            body += b" |" + bytes([AFFIX_NAMESPACE]) + b" " + b" ".join(tokens)
        if dict_tokens:
            body += b" |" + bytes([DICTIONARY_NAMESPACE]) + b" " + b" ".join(dict_tokens)
        return body + tail

    def default_hash(self) -> int:
        return int(default_namespace_hash(self.seed))

    def block(self, data: np.ndarray, ends: np.ndarray, first_line: int):
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        out, start = [], 0
        for end in ends.tolist():
            out.append(self.line(raw[start:end]))
            start = end + 1
        return _joined(out)


# -------------------------------------------------------------------------------------- --dictionary

def _file_hash(data: bytes) -> int:
    """VW's hash of a dictionary file's bytes (CRs skipped; bytes read as signed chars)."""
    h = 5289374183516789128
    for b in data:
        if b == 13:
            continue
        h = (h * 341789041 + (b - 256 if b > 127 else b)) & 0xFFFFFFFFFFFFFFFF
    return h


def find_dictionary(name: str, paths) -> str:
    """The first ``path/name`` that exists, over ``paths`` then the working folder (VW's order)."""
    import os
    for path in list(paths) + ["."]:
        full = os.path.join(path, name)
        if os.path.isfile(full):
            return full
    raise ValueError(f"cannot find dictionary '{name}' in path; try adding --dictionary_path")


def read_dictionary(path: str, bits: int, seed: int, mode: str) -> dict:
    """VW's dictionary file: a line ``word features...`` gives ``word`` (the first one kept) the
    features of its default namespace, read as VW text (``| features``); {word: [(index, value)]}."""
    import gzip
    from streamlearn.features.expansion import FeatureSpec
    from streamlearn.features.names import parse_features
    try:
        data = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    except (OSError, EOFError, ValueError) as exc:
        raise ValueError(f"cannot read dictionary {path}: {exc}") from None
    spec = FeatureSpec.from_options()
    out = {}
    for line in data.split(b"\n"):
        line = line.lstrip(b" \t")
        end = next((i for i, c in enumerate(line) if c in b" \t"), None)
        if not end:
            continue
        word = line[:end]
        if word in out:
            continue
        with np.errstate(over="ignore"):
            groups, _ = parse_features(b"|" + line[end:].rstrip(b"\r"), spec, bits, seed, mode)
        feats = [(f.index, f.value) for index, fs in groups if index == 32 for f in fs]
        if feats:
            out[word] = feats
    return out


def load_dictionaries(args, paths, bits: int, seed: int, mode: str) -> dict:
    """VW's ``--dictionary [ns:]file`` (repeatable): {namespace byte: [dictionary, ...]}; a file whose
    content was already read (VW's content hash) is that dictionary again. Raises ValueError."""
    out, seen = {}, {}
    for arg in args:
        ns, name = (ord(arg[0]) if ord(arg[0]) < 256 else 32, arg[2:]) if len(arg) > 2 and arg[1] == ":" \
            else (32, arg)
        path = find_dictionary(name, paths)
        try:
            import gzip
            raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
        except (OSError, EOFError, ValueError) as exc:
            raise ValueError(f"cannot read dictionary {path}: {exc}") from None
        key = _file_hash(raw)
        if key not in seen:
            seen[key] = read_dictionary(path, bits, seed, mode)
        out.setdefault(ns, []).append(seen[key])
    return out
