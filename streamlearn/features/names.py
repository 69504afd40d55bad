"""VW's per-example feature pipeline with feature names, in plain Python (vw-spec-2.md §2.0, §2a-§2d).

Slow and obviously-correct on purpose: the CLI uses it for ``--invert_hash``/``--audit`` (small data
only), and the tests use it as the reference for the compiled expansion. One call handles one line:

1. **Parse** the features after the first ``|`` exactly as ``streamlearn.io.vw`` does (same grammar,
   same hashes, same float parsing via ``streamlearn.io.parsing.parse_number``, same faults: the
   features before a fault are kept, the rest of the line is dropped). The label part is skipped.
   A named namespace's index is its first byte mapped through ``--redefine``; the default namespace
   is always ``' '``. Features go into groups by index; groups are listed in order of first
   appearance (when a chunk first *adds* a feature: values of 0 are dropped and add nothing).
2. **--ignore/--keep** drop whole groups.
3. **n-grams** are appended to each group (VW's ``add_grams`` recursion; index
   ``g = g*27942141 + h_j``, value 1, named ``ns^w1^w2`` after the first component's namespace).
4. **Constant** (index 11650396, value 1, named ``Constant``) as its own group, index 128, last,
   unless ``noconstant``.
5. **Interactions** in processing order (wildcards expanded over ``seen``, the indices seen so far
   in the stream, which this function updates), skipping terms with an empty group; nested loops with
   the self-interaction rule (a repeated index starts at the current position of the previous loop)
   unless ``--permutations``; index ``H = (FNV*H) XOR h`` (64-bit wrap), value the float32 product
   left to right, name the parts' names joined by ``*``.

Names are VW's audit/invert_hash names: ``ns^feature`` (``ns`` the namespace name as written,
without its ``:value``), bare ``feature`` in the default namespace, ``ns^name^value`` for a
string-valued feature (``item^color^red``), ``ns^`` for an anonymous feature (empty in the default
namespace). An n-gram component contributes only its feature name (not a string value), as VW does.

Indices are masked to ``bits`` (VW masks named features at parse time; the interaction and n-gram
formulas only use the low bits, so the slot is the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from streamlearn.features.expansion import CONSTANT_NS, DEFAULT_NS, FeatureSpec
from streamlearn.features.hashing import CONSTANT_RAW_INDEX, hash_string, namespace_hash
from streamlearn.io.parsing import NUM_FINITE, NUM_NONE, parse_number

FNV_PRIME = 16777619
NGRAM_CONSTANT = 27942141          # VW's QUADRATIC_CONSTANT, used by the n-gram hash
M64 = (1 << 64) - 1

SP, TAB, CR, NL, BAR, COLON = 0x20, 0x09, 0x0D, 0x0A, 0x7C, 0x3A
_NAME_STOP = frozenset((SP, TAB, COLON, BAR, CR))
_WS_STOP = frozenset((SP, TAB, CR, NL))

LINEAR = "linear"
IGNORED_LINEAR = "ignored_linear"
CONSTANT = "constant"
INTERACTION = "interaction"


@dataclass
class Feature:
    """One feature of a group: its name parts, its index (masked) and float32 value."""
    ns_name: str          # namespace name as written ('' for the default namespace)
    name: str             # feature name ('' when anonymous)
    index: int
    value: float
    str_value: str | None = None
    constant: bool = False

    @property
    def full_name(self) -> str:
        if self.constant:
            return "Constant"
        s = self.name if self.str_value is None else f"{self.name}^{self.str_value}"
        return s if self.ns_name == "" else f"{self.ns_name}^{s}"


@dataclass
class Entry:
    name: str
    index: int
    value: float
    kind: str             # LINEAR, IGNORED_LINEAR, CONSTANT or INTERACTION

    def __iter__(self):   # so an entry unpacks as (name, index, value, kind)
        return iter((self.name, self.index, self.value, self.kind))


@dataclass
class Expanded:
    """The expanded example: ``entries`` in VW's order and VW's per-example feature ``count``."""
    entries: list[Entry]
    count: int
    groups: list[tuple[int, list[Feature]]] = field(default_factory=list)   # after ignore, n-grams, constant
    terms: list[tuple[int, ...]] = field(default_factory=list)              # interaction terms used
    fault: bool = False                                                      # parsing stopped early

    @property
    def linear(self) -> list[Entry]:
        return [e for e in self.entries if e.kind != INTERACTION]

    @property
    def interactions(self) -> list[Entry]:
        return [e for e in self.entries if e.kind == INTERACTION]


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="surrogateescape")


def _scan(buf: bytes, p: int, e: int, stop) -> int:
    while p < e and buf[p] not in stop:
        p += 1
    return p


def _number(arr: np.ndarray, p: int, e: int):
    v, q, kind, _ = parse_number(arr, p, e)
    return float(v), int(q), int(kind)


def parse_features(line: bytes, spec: FeatureSpec, bits: int, hash_seed: int = 0, hash_mode: str = "strings"):
    """Groups of the features after the first '|' of ``line`` (CR/newline/BOM already removed), as
    ``streamlearn.io.vw`` parses them. Returns (groups, fault): groups is a list of (index,
    [Feature]) in order of first appearance; fault is True when the parser stopped early."""
    mask = (1 << bits) - 1
    arr = np.frombuffer(line, dtype=np.uint8) if line else np.zeros(0, np.uint8)
    e = len(line)
    groups: dict[int, list[Feature]] = {}
    p = line.find(b"|")
    if p < 0:
        return [], False
    dflt_hash = namespace_hash(b"", hash_seed, hash_mode)
    redefine = spec.redefine_map if spec.redefine_some else tuple(range(256))

    def add(ns_index, feat):
        groups.setdefault(ns_index, []).append(feat)

    while p < e and line[p] == BAR:
        p += 1
        ns_value = 1.0
        anon = 0
        ns_index = DEFAULT_NS
        ns_name = ""
        if p >= e or line[p] in (SP, TAB, BAR):
            ns_hash = dflt_hash
        elif line[p] == COLON or line[p] == CR:
            return list(groups.items()), True
        else:
            ns_index = redefine[line[p]]
            q = _scan(line, p, e, _NAME_STOP)
            ns_name = _text(line[p:q])
            ns_hash = hash_string(line[p:q], hash_seed, hash_mode)
            if q < e and line[q] == COLON:
                v, r2, kind = _number(arr, q + 1, e)
                if kind != NUM_FINITE:
                    return list(groups.items()), True
                ns_value = v
                q = r2
            p = q
        while p < e and line[p] in (SP, TAB):
            p += 1
            if p >= e or line[p] in (SP, TAB, BAR):
                continue
            if line[p] == CR:
                return list(groups.items()), True
            fs = p
            q = _scan(line, p, e, _NAME_STOP)
            name_b = line[fs:q]
            h = hash_string(name_b, ns_hash, hash_mode)
            named = q > fs
            value = ns_value
            str_value = None
            if q < e and line[q] == COLON:
                v, r2, kind = _number(arr, q + 1, e)
                if kind == NUM_NONE:
                    # string value: skip whitespace, read up to whitespace; index hash(value, hash(name, ns))
                    r = q + 1
                    while r < e and line[r] in _WS_STOP:
                        r += 1
                    q = r
                    if r < e:
                        q = _scan(line, r, e, _WS_STOP)
                        str_value = _text(line[r:q])
                        h = hash_string(line[r:q], h, hash_mode)
                        named = True
                    value = 1.0
                elif kind == NUM_FINITE:
                    value = v * ns_value
                    q = r2
                else:
                    return list(groups.items()), True
            if not named:
                h = (ns_hash + anon) & 0xFFFFFFFF        # anonymous feature ":value": ns_hash + k
                anon += 1
            p = q
            fv = float(np.float32(value))
            if value != 0.0 and fv != 0.0:
                add(ns_index, Feature(ns_name, _text(name_b), h & mask, fv, str_value))
            if p < e and line[p] not in (SP, TAB, BAR):
                return list(groups.items()), True
        if p < e and line[p] != BAR:
            return list(groups.items()), True
    return list(groups.items()), False


def _add_grams(ngram: int, skip_gram: int, fs: list[Feature], length: int, gram_mask: list[int], skips: int):
    """VW's ``add_grams`` recursion (kskip_ngram_transformer.cc), appending to ``fs``."""
    if ngram == 0 and gram_mask[-1] < length:
        for i in range(length - gram_mask[-1]):
            g = fs[i].index
            name = fs[i].name
            for n in range(1, len(gram_mask)):
                g = (g * NGRAM_CONSTANT + fs[i + gram_mask[n]].index) & M64
                name += "^" + fs[i + gram_mask[n]].name
            fs.append(Feature(fs[i].ns_name, name, g, 1.0))
    if ngram > 0:
        gram_mask.append(gram_mask[-1] + 1 + skips)
        _add_grams(ngram - 1, skip_gram, fs, length, gram_mask, 0)
        gram_mask.pop()
    if skip_gram > 0 and ngram > 0:
        _add_grams(ngram, skip_gram - 1, fs, length, gram_mask, skips + 1)


def add_ngrams(index: int, fs: list[Feature], spec: FeatureSpec, bits: int) -> None:
    """Append the n-grams of one group (VW's ``generate_grams``), indices masked to ``bits``."""
    n_max = spec.ngram_for(index)
    if n_max <= 1:
        return
    length = len(fs)
    k = spec.skips_for(index)
    start = len(fs)
    for n in range(1, n_max):
        _add_grams(n, k, fs, length, [0], 0)
    mask = (1 << bits) - 1
    for f in fs[start:]:
        f.index &= mask


def interact(term, groups: dict[int, list[Feature]], permutations: bool, bits: int) -> list[Entry]:
    """The features one interaction term generates, in VW's loop order."""
    lists = [groups.get(t) for t in term]
    if any(not fl for fl in lists):
        return []
    mask = (1 << bits) - 1
    out: list[Entry] = []
    n = len(term)

    def rec(k, start, h, value, names):
        fl = lists[k]
        for pos in range(start, len(fl)):
            f = fl[pos]
            if k == 0:
                hh, vv = f.index, np.float32(f.value)
            else:
                hh = ((FNV_PRIME * h) & M64) ^ f.index
                vv = np.float32(value * np.float32(f.value))
            nm = names + [f.full_name]
            if k == n - 1:
                out.append(Entry("*".join(nm), hh & mask, float(vv), INTERACTION))
            else:
                nxt = pos if (not permutations and term[k + 1] == term[k]) else 0
                rec(k + 1, nxt, hh, vv, nm)

    rec(0, 0, 0, np.float32(1.0), [])
    return out


def _strip(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    return line


def expand_line(line: bytes | str, spec: FeatureSpec, bits: int = 18, noconstant: bool = False,
                hash_seed: int = 0, hash_mode: str = "strings", seen: set | None = None) -> Expanded | None:
    """Expand one line of VW text (module docstring). Returns None for an empty line (VW skips it).

    ``seen`` is the cumulative set of namespace indices of the stream, used to expand wildcard
    terms; it is updated in place with this example's group indices (after --ignore/--keep)."""
    shared = None
    if isinstance(line, tuple):     # an action of a multi-line example and its shared line (streamlearn.io.ldf)
        line, shared = line
    if isinstance(line, str):
        line = line.encode("utf-8")
    line = _strip(bytes(line))
    if not line:
        return None
    mask = (1 << bits) - 1
    parsed, fault = parse_features(line, spec, bits, hash_seed, hash_mode)
    groups = [(i, fs) for i, fs in parsed if not spec.ignore_mask[i]]
    for i, fs in groups:
        add_ngrams(i, fs, spec, bits)
    if not noconstant:
        groups.append((CONSTANT_NS, [Feature("", "Constant", CONSTANT_RAW_INDEX & mask, 1.0, constant=True)]))
    if shared is not None:          # VW's merge: each shared namespace's features after the action's own
        extra, _ = parse_features(_strip(bytes(shared)), spec, bits, hash_seed, hash_mode)
        for i, fs in extra:
            if spec.ignore_mask[i]:
                continue
            add_ngrams(i, fs, spec, bits)
            mine = next((g for j, g in groups if j == i), None)
            if mine is None:
                groups.append((i, list(fs)))
            else:
                mine.extend(fs)
    if spec.feature_limit:      # VW limits the groups after the n-grams and the constant
        groups = [(i, spec.limited(i, fs)) for i, fs in groups]
    if seen is None:
        seen = set()
    seen.update(i for i, _ in groups)

    entries: list[Entry] = []
    for i, fs in groups:
        for f in fs:
            if f.constant:
                kind = IGNORED_LINEAR if spec.ignore_linear_mask[i] else CONSTANT
                entries.append(Entry("Constant", f.index, f.value, kind))
            else:
                kind = IGNORED_LINEAR if spec.ignore_linear_mask[i] else LINEAR
                entries.append(Entry(f.full_name, f.index, f.value, kind))
    count = len(entries)
    by_index: dict[int, list[Feature]] = {}
    for i, fs in groups:
        by_index[i] = fs
    terms = spec.expand_terms(seen) if spec.terms else []
    for t in terms:
        inter = interact(t, by_index, spec.permutations, bits)
        entries.extend(inter)
        count += len(inter)
    return Expanded(entries=entries, count=count, groups=groups, terms=terms, fault=fault)


def expand_lines(lines, spec: FeatureSpec, bits: int = 18, noconstant: bool = False, hash_seed: int = 0,
                 hash_mode: str = "strings"):
    """Expand a stream of lines (bytes), sharing the wildcard ``seen`` set; yields (line number
    from 0, Expanded) for the non-empty lines."""
    seen: set = set()
    for n, line in enumerate(lines):
        ex = expand_line(line, spec, bits, noconstant, hash_seed, hash_mode, seen)
        if ex is not None:
            yield n, ex
