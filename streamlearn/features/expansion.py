"""Feature-expansion options: parsing and normalisation exactly as VW 9.11.9 does it (vw-spec-2.md
§2a-§2c). Pure Python; used once at set-up by the compiled path and by ``streamlearn.features.names``.

Options handled (all repeatable, values as given on the command line, ``\\xNN`` escapes decoded):

* ``-q/--quadratic XY`` (exactly 2 bytes), ``--cubic XYZ`` (exactly 3), ``--interactions S`` (>= 2),
  ``--leave_duplicate_interactions``, ``--permutations``. The bytes are namespace *indices* (the first
  byte of a namespace name); ``' '`` is the default namespace, ``:`` (0x3A) the wildcard.
* ``--ngram N`` / ``--ngram tN`` and ``--skips K`` / ``--skips tK``.
* ``--ignore S``, ``--ignore_linear S``, ``--keep S`` (byte sets) and ``--redefine N:=S``.

Normalisation of the interaction terms (§2a "Normalisation at start-up", VW's
``sort_and_filter_duplicate_interactions``):

1. all terms in one list, sorted by (length, bytes as unsigned); this is the processing order;
2. unless ``--leave_duplicate_interactions``: a term whose *sorted* byte multiset equals that of an
   earlier term of the sorted list is removed (``Removed: N``);
3. a term whose sorted form has a repeated byte next to a different byte (``aab``, ``abb``, ``aabb``;
   not ``aa``, ``aaa``, ``abc``) is replaced by its sorted form, counted even when that changes
   nothing (``Interactions affected: N``). The list is not re-sorted afterwards.

Wildcard terms (containing ``:``) are kept as they are by this start-up step (they take part in 1-3
like any term) and are expanded per example by :func:`expand_wildcards` over the namespace indices
seen so far in the stream.

n-grams (VW's ``kskip_ngram_transformer``): an argument starting with a digit sets the default for
all namespace indices; ``tN`` sets index ``t``. A per-index value always overrides the default,
whatever the order of the arguments; a later value for the same target replaces an earlier one. The
same holds for ``--skips``, independently of ``--ngram`` (``--ngram t3 --skips 1`` gives t 3-grams with
1 skip). An index whose n is <= 1 gets no n-grams. Because a leading digit means "all namespaces", a
namespace index that is a digit cannot be targeted (``--ngram 13`` is 13-grams for all).

--ignore/--keep/--ignore_linear: the bytes of all occurrences are merged. ``--keep`` replaces the
ignore set by "every byte not kept" (so ``--keep`` overrides ``--ignore``, and drops the default
namespace unless ``' '`` is kept). The constant (index 128) is added after this filter and is never
removed by it.

--redefine ``N:=S``, applied in order: every byte of S gets index N; a ``:`` in S maps all 256
bytes (and stops reading S); ``:=S`` means N = ``' '``. The table is transcribed from VW including its
quirks (``N:=`` with empty S only sets entry ``' '``, to ``' '``; with several target bytes only the
first is used, with a warning). The text parser never consults the table for the default namespace
(``| f``): that is the parser's job, the table here has an entry for ``' '`` that is simply unused.

Decisions where VW is lax (all raise :class:`streamlearn.errors.OptionError` with a one-line message
naming the option and the value):

* interaction terms of the wrong length (VW throws too; our messages name the option and value);
* ``--ngram``/``--skips`` values that are not ``<digits>`` or ``<byte><digits>``: VW reads them with
  ``atoi`` (``--ngram x`` is logged and ignored, ``--ngram 2x`` is 2, ``--ngram tx`` is 0);
* ``--ngram`` with n = 0 (``--ngram 0``, ``--ngram t0``): VW accepts it and generates nothing;
  n = 1 is accepted (it generates nothing, and ``--ngram 2 --ngram t1`` is a way to switch t off);
* ``--skips`` without ``--ngram``: VW's own message ``skip cannot be used unless ngram is > 1``;
* a malformed ``\\xNN`` escape (not two hex digits) is kept literally, as VW does (it warns).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from streamlearn.errors import OptionError

WILDCARD = 0x3A            # ':' in an interaction term
DEFAULT_NS = 0x20          # ' ', the default namespace's index
CONSTANT_NS = 128          # the constant feature's group index
WILDCARD_LOW, WILDCARD_HIGH = 0x20, 0x7E   # indices a wildcard expands to (VW's is_interaction_ns)

Term = tuple[int, ...]

_HEX = set(b"0123456789abcdefABCDEF")

MSG_ANY_DUPLICATES = ("[info] Any duplicate namespace interactions will be removed\n"
                      "You can use --leave_duplicate_interactions to disable this behaviour.")
MSG_REMOVED = ("[warning] Duplicate namespace interactions were found. Removed: {}.\n"
               "You can use --leave_duplicate_interactions to disable this behaviour.")
MSG_REORDERED = ("[warning] Some interactions contain duplicate characters and their characters order has "
                 "been changed. Interactions affected: {}.")
MSG_REDEFINE_MULTI = ("[warning] Multiple namespaces are used in target part of --redefine argument. Only first "
                      "one ('{}') will be used as target namespace.")
MSG_SKIPS_WITHOUT_NGRAM = "skip cannot be used unless ngram is > 1"


# --------------------------------------------------------------------------- bytes and escapes

def parse_namespace_bytes(arg: str) -> bytes:
    """Decode VW's ``\\xNN`` escapes (``'c\\x80'`` -> ``b'c\\x80'``); other characters become their
    UTF-8 bytes. Like VW's ``decode_inline_hex``, an escape not followed by two hex digits is kept
    literally."""
    raw = arg.encode("utf-8") if isinstance(arg, str) else bytes(arg)
    out = bytearray()
    i = 0
    n = len(raw)
    while i < n:
        if (raw[i] == 0x5C and i + 3 < n and raw[i + 1] == 0x78
                and raw[i + 2] in _HEX and raw[i + 3] in _HEX):
            out.append(int(raw[i + 2:i + 4], 16))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)


def byte_text(b: int) -> str:
    """One namespace byte for messages and headers: printable ASCII as is (backslash excepted),
    anything else as ``\\xNN`` (which :func:`parse_namespace_bytes` reads back)."""
    if 0x20 <= b <= 0x7E and b != 0x5C:
        return chr(b)
    return "\\x%02x" % b


def bytes_text(bs: Iterable[int]) -> str:
    return "".join(byte_text(b) for b in bs)


def term_text(term: Sequence[int]) -> str:
    """An interaction term as text (``(97, 128)`` -> ``'a\\x80'``)."""
    return bytes_text(term)


# --------------------------------------------------------------------------- interactions

def _sort_key(term: Term):
    return (len(term), term)


def must_be_left_sorted(sorted_term: Sequence[int]) -> bool:
    """VW's ``must_be_left_sorted`` on an already sorted term: True when a byte repeats next to a
    different byte (``aab``, ``abb``, ``aabb``), False for ``aa``, ``aaa``, ``abc``."""
    if len(sorted_term) <= 1:
        return True
    diff_found = pair_found = False
    for a, b in zip(sorted_term, sorted_term[1:]):
        if a == b:
            if diff_found:
                return True
            pair_found = True
        else:
            if pair_found:
                return True
            diff_found = True
    return False


def normalize_terms(terms: Iterable[Sequence[int]], leave_duplicates: bool = False) -> tuple[list[Term], int, int]:
    """Sort, de-duplicate and re-order a term list as VW does at start-up (module docstring, 1-3).

    Returns (terms in processing order, number removed as duplicates, number re-ordered)."""
    ordered = sorted((tuple(t) for t in terms), key=_sort_key)
    entries = [(tuple(sorted(t)), t) for t in ordered]
    removed = 0
    if not leave_duplicates:
        seen = set()
        kept = []
        for s, t in entries:
            if s in seen:
                removed += 1
                continue
            seen.add(s)
            kept.append((s, t))
        entries = kept
    out: list[Term] = []
    reordered = 0
    for s, t in entries:
        if must_be_left_sorted(s):
            out.append(s)
            reordered += 1
        else:
            out.append(t)
    return out, removed, reordered


def has_wildcard(terms: Iterable[Sequence[int]]) -> bool:
    return any(WILDCARD in t for t in terms)


def _wildcard_tuples(w: int, values: list[int], leave_duplicates: bool) -> list[Term]:
    """The w-tuples a term with w wildcards expands to, over the sorted index list ``values``."""
    if w == 2:
        # VW's quadratic fast path: pairs (x, y) with x <= y, plus (y, x) with leave_duplicates
        pairs = set()
        for i, x in enumerate(values):
            for y in values[i:]:
                pairs.add((x, y))
                if leave_duplicates:
                    pairs.add((y, x))
        return sorted(pairs)
    if leave_duplicates:
        return list(itertools.product(values, repeat=w))          # permutations with repetition
    # combinations with repetition, emitted as non-increasing tuples, e.g. (c, b, a)
    return [tuple(reversed(c)) for c in itertools.combinations_with_replacement(values, w)]


def expand_wildcards(terms: Iterable[Sequence[int]], seen: Iterable[int], leave_duplicates: bool = False) -> list[Term]:
    """Expand the wildcard terms over the namespace indices ``seen`` so far (VW's
    ``generate_interactions`` reduction, §2a "Wildcard").

    Only printable ASCII indices 0x20-0x7E take part (the constant 128 and UTF-8 first bytes never do).
    A term with w wildcards becomes one term per w-tuple (:func:`_wildcard_tuples`) with its fixed
    bytes put back at their positions; terms without a wildcard are kept. The whole list is then
    sorted and normalised like at start-up, silently. If no index of ``seen`` is eligible, the result
    is empty (VW then uses no interaction at all, not even the fixed terms).

    ``--permutations`` plays no part here: only ``leave_duplicates`` selects permutations."""
    values = sorted({int(x) for x in seen if WILDCARD_LOW <= int(x) <= WILDCARD_HIGH})
    if not values:
        return []
    out: list[Term] = []
    for t in terms:
        t = tuple(t)
        w = t.count(WILDCARD)
        if w == 0:
            out.append(t)
            continue
        fixed = [(pos, ns) for pos, ns in enumerate(t) if ns != WILDCARD]
        for combo in _wildcard_tuples(w, values, leave_duplicates):
            res = list(combo)
            for pos, ns in fixed:
                res.insert(pos, ns)
            out.append(tuple(res))
    out.sort(key=_sort_key)
    return normalize_terms(out, leave_duplicates)[0]


def _parse_terms(option: str, values: Sequence[str], check) -> list[Term]:
    terms = []
    for v in values:
        b = parse_namespace_bytes(v)
        msg = check(len(b))
        if msg:
            raise OptionError(f"{option} {v}: {msg} (got {len(b)} byte{'s' if len(b) != 1 else ''})")
        terms.append(tuple(b))
    return terms


# --------------------------------------------------------------------------- n-grams

def _parse_gram_args(option: str, values: Sequence[str], minimum: int) -> tuple[int, dict[int, int]]:
    """(default n, {index: n}) from ``--ngram``/``--skips`` arguments (module docstring)."""
    default = 0
    per: dict[int, int] = {}
    what = "n-gram length" if option == "--ngram" else "skip count"
    for v in values:
        b = parse_namespace_bytes(v)
        if b and b.isdigit():
            n = int(b)
            target = None
        elif len(b) >= 2 and b[1:].isdigit():
            n = int(b[1:])
            target = b[0]
        else:
            raise OptionError(f"{option} {v}: expected N or a namespace letter followed by N "
                              f"(e.g. 2 or t3), N the {what}")
        if n < minimum:
            raise OptionError(f"{option} {v}: the {what} must be at least {minimum}")
        if target is None:
            default = n
        else:
            per[target] = n
    return default, per


def _parse_limits(values: Sequence[str]) -> tuple[int, ...]:
    """VW's --feature_limit table (compile_limits): 256 entries, the most features each namespace index
    keeps, -1 for no limit. ``N`` limits every index, ``AN`` the index of byte A (the first byte as
    given); later arguments override earlier ones. ``A:N`` is read as ``AN`` (VW reads its ``:N`` as 0)."""
    table = [-1] * 256
    for v in values:
        raw = v.encode("utf-8")
        if raw[:1].isdigit() and raw.isdigit():
            table = [int(raw)] * 256
            continue
        rest = raw[1:]
        if rest[:1] == b":":
            rest = rest[1:]
        if len(raw) < 2 or not rest.isdigit():
            raise OptionError(f"--feature_limit {v}: expected N or a namespace letter followed by N "
                              f"(e.g. 10 or a10), N the features kept per namespace")
        table[raw[0]] = int(rest)
    return tuple(table)


# --------------------------------------------------------------------------- ignore / keep / redefine

def _merge_bytes(values: Sequence[str]) -> bytes:
    s = set()
    for v in values:
        s.update(parse_namespace_bytes(v))
    return bytes(sorted(s))


def _redefine_table(values: Sequence[str]) -> tuple[list[int], list[str]]:
    """VW's --redefine table (256 entries, identity by default) and its warnings."""
    table = list(range(256))
    warnings = []
    for arg in values:
        a = parse_namespace_bytes(arg)
        n = len(a)
        operator_pos = 0          # position after the last ':' seen before '=' (VW's operator_pos)
        found = False
        new_ns = DEFAULT_NS
        for i in range(n):
            if found:
                if i > 2:
                    new_ns = a[0]
                break
            if a[i] == 0x3A:
                operator_pos = i + 1
            elif a[i] == 0x3D and operator_pos == i:
                found = True
        if not found:
            raise OptionError(f"--redefine {arg}: argument of --redefine is malformed. "
                              "Valid format is N:=S, :=S or N:=")
        operator_pos += 1         # now the start of S
        if operator_pos > 3:
            warnings.append(MSG_REDEFINE_MULTI.format(byte_text(new_ns)))
        if operator_pos == n:
            table[DEFAULT_NS] = new_ns
        else:
            for c in a[operator_pos:]:
                if c == 0x3A:
                    table = [new_ns] * 256
                    break
                table[c] = new_ns
    return table, warnings


def _list_bytes(mask: Sequence[bool], want: bool) -> str:
    return "".join(" " + byte_text(i) for i in range(256) if bool(mask[i]) == want)


# --------------------------------------------------------------------------- FeatureSpec

def _tup(v) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(str(x) for x in v)


@dataclass(frozen=True)
class FeatureSpec:
    """All feature-expansion options: the raw values as given and their normalised forms.

    Raw (as given, in order; stored in model files and printed):
      quadratic, cubic, interactions, ngram, skips, ignore, ignore_linear, keep, redefine: tuple[str, ...]
      leave_duplicate_interactions, permutations: bool
    Normalised:
      terms: the interaction terms in processing order (tuples of index bytes; may hold WILDCARD)
      removed_duplicates, reordered: the counts of VW's start-up warnings
      wildcards: any term holds ':' (expand per example with :meth:`expand_terms`)
      ngram_default, skip_default: the "all namespaces" values (0 = none)
      ngram_by_ns, skip_by_ns: per-index overrides, ((index, n), ...) sorted by index
      ngram_table, skip_table: 256 entries, n (resp. k) for each index, overrides applied
      ignore_mask: 256 bools, groups dropped at setup (after --keep); ignore_linear_mask likewise
      limit_table: 256 entries, the most features a group keeps (--feature_limit), -1 for no limit
      redefine_map: 256 entries, first byte of a named namespace -> index (identity by default)
      redefine_warnings: VW's warnings for --redefine arguments with several target bytes
    """
    quadratic: tuple[str, ...] = ()
    cubic: tuple[str, ...] = ()
    interactions: tuple[str, ...] = ()
    leave_duplicate_interactions: bool = False
    permutations: bool = False
    ngram: tuple[str, ...] = ()
    skips: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    ignore_linear: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    redefine: tuple[str, ...] = ()
    feature_limit: tuple[str, ...] = ()
    # normalised forms
    terms: tuple[Term, ...] = ()
    removed_duplicates: int = 0
    reordered: int = 0
    wildcards: bool = False
    ngram_default: int = 0
    skip_default: int = 0
    ngram_by_ns: tuple[tuple[int, int], ...] = ()
    skip_by_ns: tuple[tuple[int, int], ...] = ()
    ngram_table: tuple[int, ...] = field(default=(0,) * 256, repr=False)
    skip_table: tuple[int, ...] = field(default=(0,) * 256, repr=False)
    ignore_mask: tuple[bool, ...] = field(default=(False,) * 256, repr=False)
    ignore_linear_mask: tuple[bool, ...] = field(default=(False,) * 256, repr=False)
    redefine_map: tuple[int, ...] = field(default=tuple(range(256)), repr=False)
    redefine_warnings: tuple[str, ...] = ()
    limit_table: tuple[int, ...] = field(default=(-1,) * 256, repr=False)

    RAW_FIELDS = ("quadratic", "cubic", "interactions", "leave_duplicate_interactions", "permutations",
                  "ngram", "skips", "ignore", "ignore_linear", "keep", "redefine", "feature_limit")

    @classmethod
    def from_options(cls, quadratic=(), cubic=(), interactions=(), leave_duplicate_interactions=False,
                     permutations=False, ngram=(), skips=(), ignore=(), ignore_linear=(), keep=(),
                     redefine=(), feature_limit=()) -> "FeatureSpec":
        """Parse and normalise; raises OptionError on a malformed value."""
        quadratic, cubic, interactions = _tup(quadratic), _tup(cubic), _tup(interactions)
        ngram, skips = _tup(ngram), _tup(skips)
        ignore, ignore_linear, keep, redefine = _tup(ignore), _tup(ignore_linear), _tup(keep), _tup(redefine)
        leave = bool(leave_duplicate_interactions)
        feature_limit = _tup(feature_limit)
        limits = _parse_limits(feature_limit)

        if skips and not ngram:
            raise OptionError(f"--skips {' '.join(skips)}: {MSG_SKIPS_WITHOUT_NGRAM}")
        ng_default, ng_per = _parse_gram_args("--ngram", ngram, 1)
        sk_default, sk_per = _parse_gram_args("--skips", skips, 0)
        ng_table = tuple(ng_per.get(i, ng_default) for i in range(256))
        sk_table = tuple(sk_per.get(i, sk_default) for i in range(256))

        raw_terms = (
            _parse_terms("-q/--quadratic", quadratic,
                         lambda n: None if n == 2 else "quadratic features must involve two namespaces")
            + _parse_terms("--cubic", cubic,
                           lambda n: None if n == 3 else "cubic features must involve three namespaces")
            + _parse_terms("--interactions", interactions,
                           lambda n: None if n >= 2 else "feature interactions must involve at least two namespaces"))
        terms, removed, reordered = normalize_terms(raw_terms, leave)

        ign = [False] * 256
        for b in _merge_bytes(ignore):
            ign[b] = True
        if keep:
            ign = [True] * 256
            for b in _merge_bytes(keep):
                ign[b] = False
        ign_lin = [False] * 256
        for b in _merge_bytes(ignore_linear):
            ign_lin[b] = True
        table, warnings = _redefine_table(redefine)

        return cls(quadratic=quadratic, cubic=cubic, interactions=interactions,
                   leave_duplicate_interactions=leave, permutations=bool(permutations),
                   ngram=ngram, skips=skips, ignore=ignore, ignore_linear=ignore_linear, keep=keep,
                   redefine=redefine, terms=tuple(terms), removed_duplicates=removed, reordered=reordered,
                   wildcards=has_wildcard(terms), ngram_default=ng_default, skip_default=sk_default,
                   ngram_by_ns=tuple(sorted(ng_per.items())), skip_by_ns=tuple(sorted(sk_per.items())),
                   ngram_table=ng_table, skip_table=sk_table, ignore_mask=tuple(ign),
                   ignore_linear_mask=tuple(ign_lin), redefine_map=tuple(table),
                   redefine_warnings=tuple(warnings), feature_limit=feature_limit, limit_table=limits)

    # ---- serialisation (model header)
    def to_dict(self) -> dict:
        """The raw option values (JSON-able); :meth:`from_dict` rebuilds the same spec."""
        return {k: (getattr(self, k) if isinstance(getattr(self, k), bool) else list(getattr(self, k)))
                for k in self.RAW_FIELDS if k != "feature_limit" or self.feature_limit}   # (newer: if given)

    @classmethod
    def from_dict(cls, d: dict) -> "FeatureSpec":
        unknown = set(d) - set(cls.RAW_FIELDS)
        if unknown:
            raise OptionError(f"unknown feature option(s) in model header: {', '.join(sorted(unknown))}")
        return cls.from_options(**d)

    # ---- properties
    @property
    def is_identity(self) -> bool:
        """True when the options change nothing (the default fast path): no interaction term, no
        index with n-grams, nothing ignored, no linear term ignored, --redefine the identity."""
        return (not self.terms and max(self.ngram_table) <= 1 and not any(self.ignore_mask)
                and not any(self.ignore_linear_mask) and self.redefine_map == tuple(range(256))
                and not self.feature_limit)

    @property
    def has_ngrams(self) -> bool:
        return max(self.ngram_table) > 1

    @property
    def redefine_some(self) -> bool:
        """VW's redefine_some: --redefine was given (the parser then maps named namespaces)."""
        return bool(self.redefine)

    def expand_terms(self, seen: Iterable[int]) -> list[Term]:
        """The interaction terms for an example, given the indices seen so far in the stream."""
        if not self.wildcards:
            return list(self.terms)
        return expand_wildcards(self.terms, seen, self.leave_duplicate_interactions)

    def limited(self, index: int, features: list) -> list:
        """The features a group of ``index`` keeps under --feature_limit (VW's feature_limit: beyond
        the limit the group is sorted by (index, value), duplicates of an index dropped after the
        first, and the first N kept); ``features`` have ``.index`` and ``.value``."""
        n = self.limit_table[index]
        if n < 0 or len(features) <= n:
            return features
        out: list = []
        for f in sorted(features, key=lambda f: (f.index, f.value)):
            if len(out) == n:
                break
            if not out or out[-1].index != f.index:
                out.append(f)
        return out

    def ngram_for(self, index: int) -> int:
        return self.ngram_table[index]

    def skips_for(self, index: int) -> int:
        return self.skip_table[index]

    # ---- texts
    def messages(self, quiet: bool = False) -> list[tuple[str, str]]:
        """VW's start-up lines for these options, as (stream, text) with stream 'stdout' or 'stderr',
        in VW's order (parse_feature_tweaks). A text may hold a newline (two-line warnings).
        ``quiet`` (VW's --quiet) suppresses all of them."""
        if quiet:
            return []
        out: list[tuple[str, str]] = []
        for desc, args in (("grams", self.ngram), ("skips", self.skips)):
            for v in args:
                b = parse_namespace_bytes(v)
                if b.isdigit():
                    out.append(("stdout", f"[info] Generating {int(b)}-{desc} for all namespaces."))
                else:
                    out.append(("stdout", f"[info] Generating {int(b[1:])}-{desc} for {byte_text(b[0])} namespaces."))
        if self.quadratic:
            out.append(("stderr", "creating quadratic features for pairs: " + " ".join(self.quadratic)))
        if self.cubic:
            out.append(("stderr", "creating cubic features for triples: " + " ".join(self.cubic)))
        if self.interactions:
            out.append(("stderr", "creating features for following interactions: " + " ".join(self.interactions)))
        if self.terms or self.quadratic or self.cubic or self.interactions:
            if not self.leave_duplicate_interactions and self.wildcards:
                out.append(("stdout", MSG_ANY_DUPLICATES))
            if self.removed_duplicates:
                out.append(("stdout", MSG_REMOVED.format(self.removed_duplicates)))
            if self.reordered:
                out.append(("stdout", MSG_REORDERED.format(self.reordered)))
        if self.ignore:
            ign = [False] * 256
            for b in _merge_bytes(self.ignore):
                ign[b] = True
            out.append(("stderr", "ignoring namespaces beginning with:" + _list_bytes(ign, True)))
        if self.ignore_linear:
            out.append(("stderr", "ignoring linear terms for namespaces beginning with:"
                        + _list_bytes(self.ignore_linear_mask, True)))
        if self.keep:
            out.append(("stderr", "using namespaces beginning with:" + _list_bytes(self.ignore_mask, False)))
        for w in self.redefine_warnings:
            out.append(("stdout", w))
        return out

    def header_options(self) -> list[str]:
        """The ``options:`` tokens VW writes to a model header for these options: interaction
        arguments as given (duplicates included), --ignore/--ignore_linear/--keep as one merged,
        byte-sorted string each, --redefine as given. (Order: quadratic, cubic, interactions,
        ignore, ignore_linear, keep, redefine; the cases show quadratic before ignore_linear and
        before redefine, the rest is our choice.)"""
        out: list[str] = []
        for name, vals in (("--quadratic", self.quadratic), ("--cubic", self.cubic),
                           ("--interactions", self.interactions)):
            for v in vals:
                out += [name, v]
        for name, vals in (("--ignore", self.ignore), ("--ignore_linear", self.ignore_linear),
                           ("--keep", self.keep)):
            if vals:
                out += [name, bytes_text(_merge_bytes(vals))]
        for v in self.redefine:
            out += ["--redefine", v]
        return out

    def ngram_header(self) -> tuple[str, str]:
        """The ``N ngram:a1 a2 `` and ``N skip:…`` model-header lines (each argument followed by a space)."""
        return (f"{len(self.ngram)} ngram:" + "".join(a + " " for a in self.ngram),
                f"{len(self.skips)} skip:" + "".join(a + " " for a in self.skips))
