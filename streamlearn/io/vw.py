"""Compiled parser for Vowpal Wabbit's text format (vw-spec.md §1a; VW's parse_example_text.cc).

Grammar, per line (a trailing CR and a leading UTF-8 BOM are dropped; empty lines are skipped)::

    line       := [label_part] ('|' namespace)*
    label_part := text before the first '|'; if it holds a TAB, everything up to and including the
                  first TAB is dropped; split on runs of spaces. The last token is the tag if it ends
                  where the label part ends (touches the '|', or there is no '|') or starts with "'"
                  (the quote is removed). The 0-3 tokens left are: label [importance [base]].
    namespace  := [NAME [':' FLOAT]] ((' ' | TAB) [feature])*     -- no NAME: the default namespace
    feature    := NAME [':' VALUE] | ':' FLOAT                      -- the second is anonymous
    NAME       := bytes other than space, TAB, ':', '|', CR
    VALUE      := FLOAT (leading spaces skipped) | STRING (leading whitespace skipped, up to whitespace)

Values are multiplied by the namespace value; a value of 0 drops the feature. A string value gives
value 1 and index hash(value, hash(name, ns)). Anonymous features get index ns_hash + k. The constant
feature (raw index 11650396) ends every example unless ``noconstant``.

Faults (see streamlearn.io.parsing): in the label part the example keeps its features and loses its
label (it is predicted, not learned); in the feature part the features before the fault are kept and
the rest of the line is dropped. Only the first fault of a line is recorded.
"""

import numpy as np
from numba import njit

from streamlearn.core.prefetch import prefetch_read
from streamlearn.features.hashing import CONSTANT_RAW_INDEX, default_namespace_hash, scan_hash
from streamlearn.io.parsing import (
    BAR, COLON, CR, E_BASE, E_BASE_RANGE, E_CR, E_LABEL, E_LABEL_RANGE, E_LABEL_TOKENS, E_NEG_WEIGHT,
    E_NS_NAME, E_NS_RANGE, E_NS_VALUE, E_STRAY, E_VALUE, E_VALUE_RANGE, E_WEIGHT, E_WEIGHT_RANGE, NL,
    NUM_FINITE, NUM_NONE, QUOTE, SP, TAB, beyond_float32, line_span, parse_number, plain_decimal,
)


CONSTANT_NS = np.uint8(128)             # namespace index of the constant feature (VW's constant_namespace)


@njit(cache=True, nogil=True, inline="always")
def _is_ws(c):
    return c == SP or c == TAB or c == CR or c == NL


@njit(cache=True, nogil=True)
def _token_end(buf, p, end):
    """End of the whitespace-delimited token starting at p (for fault spans)."""
    while p < end and not (buf[p] == SP or buf[p] == TAB):
        p += 1
    return p


@njit(cache=True, nogil=True)
def _full_number(buf, s, e):
    """(value, ok): buf[s:e] must be exactly one finite number with at least one digit (stricter than
    VW, which reads "1abc" as 1 and "-" as 0)."""
    ok, v, q = plain_decimal(buf, s, e)
    if ok and q == e:
        return v, True
    v, q, kind, digits = parse_number(buf, s, e)
    return v, (kind == NUM_FINITE and q == e and digits)


@njit(cache=True, nogil=True, inline="always")
def _value(buf, p, e):
    """The value after a ':' at buf[p:e] (a namespace's or a feature's): read in line by
    ``plain_decimal`` when it has the common shape, else by ``parse_number``. Returns (value, position
    after it, kind)."""
    ok, v, q = plain_decimal(buf, p, e)
    if ok:
        return v, q, NUM_FINITE
    v, q, kind, _ = parse_number(buf, p, e)
    return v, q, kind


@njit(cache=True, nogil=True)
def _label_fault(faults, nfault, ex, code, s, e):
    faults[nfault, 0] = ex
    faults[nfault, 1] = code
    faults[nfault, 2] = s
    faults[nfault, 3] = e
    return nfault + 1


@njit(cache=True, nogil=True)
def _parse_label_part(buf, s, e, labels, weights, bases, tag_s, tag_e, ex, faults, nfault):
    """Label part buf[s:e]. Fills label/weight/base/tag of example ex; returns the new fault count."""
    labels[ex] = np.nan
    weights[ex] = 1.0
    bases[ex] = 0.0
    tag_s[ex] = 0
    tag_e[ex] = 0
    # drop everything up to and including the first TAB
    for p in range(s, e):
        if buf[p] == TAB:
            s = p + 1
            break
    # tokenize on spaces (runs collapsed): the first three token spans, the last one, and the count
    s0 = e0 = s1 = e1 = s2 = e2 = 0
    last_s = last_e = 0
    ntok = 0
    p = s
    while p < e:
        while p < e and buf[p] == SP:
            p += 1
        if p >= e:
            break
        q = p
        while q < e and buf[q] != SP:
            q += 1
        if ntok == 0:
            s0, e0 = p, q
        elif ntok == 1:
            s1, e1 = p, q
        elif ntok == 2:
            s2, e2 = p, q
        last_s, last_e = p, q
        ntok += 1
        p = q
    if ntok == 0:
        return nfault
    if last_e == e or buf[last_s] == QUOTE:
        tag_s[ex] = last_s + 1 if buf[last_s] == QUOTE else last_s
        tag_e[ex] = last_e
        ntok -= 1
    if ntok == 0:
        return nfault
    if ntok > 3:
        return _label_fault(faults, nfault, ex, E_LABEL_TOKENS, s0, last_e)
    lab, ok = _full_number(buf, s0, e0)
    if not ok:
        return _label_fault(faults, nfault, ex, E_LABEL, s0, e0)
    if beyond_float32(lab):
        return _label_fault(faults, nfault, ex, E_LABEL_RANGE, s0, e0)
    w = 1.0
    if ntok >= 2:
        w, ok = _full_number(buf, s1, e1)
        if not ok:
            return _label_fault(faults, nfault, ex, E_WEIGHT, s1, e1)
        if beyond_float32(w):
            return _label_fault(faults, nfault, ex, E_WEIGHT_RANGE, s1, e1)
        if w < 0:
            return _label_fault(faults, nfault, ex, E_NEG_WEIGHT, s1, e1)
    b = 0.0
    if ntok == 3:
        b, ok = _full_number(buf, s2, e2)
        if not ok:
            return _label_fault(faults, nfault, ex, E_BASE, s2, e2)
        if beyond_float32(b):
            return _label_fault(faults, nfault, ex, E_BASE_RANGE, s2, e2)
    labels[ex] = lab
    weights[ex] = w
    bases[ex] = b
    return nfault


@njit(cache=True, nogil=True, inline="always")
def _store(idx, val, ns, nf, index, value, want_ns, ns_index):
    """Feature entry ``nf`` of the block: its masked index, its float32 value and (``want_ns``) its
    namespace; returns the next entry's position."""
    un = np.uint64(nf)
    idx[un] = np.uint32(index)
    val[un] = value
    if want_ns:
        ns[un] = ns_index
    return nf + 1


@njit(cache=True, nogil=True, inline="always")
def _at(buf, p):
    """buf[p] for 0 <= p < buf.size, indexed unsigned: numba adds no negative-index wraparound (three
    instructions on every byte read of the feature loop)."""
    return buf[np.uint64(p)]


@njit(cache=True, nogil=True)
def _parse_features(buf, p, e, mask, seed, mode, dflt_hash, idx, val, nf, redefine, ns, want_ns):
    """Namespaces and features from the first '|' at p to the line end e. With ``want_ns`` each
    feature's namespace index goes to ``ns``: the first byte of its namespace's name mapped through
    ``redefine`` (VW's --redefine), or ' ' for the default namespace, which is never redefined
    (vw-spec-2.md §2.0 step 1, §2c).

    Returns (new feature count, fault code or 0, fault start, fault end).
    """
    while p < e and _at(buf, p) == BAR:
        p += 1
        ns_value = 1.0
        anon = np.int64(0)
        ns_index = np.uint8(SP)
        c = _at(buf, p) if p < e else np.uint8(SP)
        if c == SP or c == TAB or c == BAR:
            ns_hash = dflt_hash
        elif c == COLON:
            return nf, E_NS_NAME, p - 1, _token_end(buf, p, e)
        elif c == CR:
            return nf, E_CR, p, p + 1
        else:
            if want_ns:
                ns_index = redefine[c]
            q, ns_hash = scan_hash(buf, p, e, seed, mode, False)
            if q < e and _at(buf, q) == COLON:
                v, r2, kind = _value(buf, q + 1, e)
                if kind != NUM_FINITE:
                    return nf, E_NS_VALUE, p - 1, _token_end(buf, max(r2, q + 1), e)
                ns_value = v
                q = r2
            p = q
        # a feature without a value has the namespace's value: its float32 and what becomes of it
        # (stored, dropped when 0, a fault beyond float32) settled once a namespace
        ns_fv = np.float32(ns_value)
        ns_store = ns_value != 0.0 and ns_fv != 0.0 and not np.isinf(ns_fv)
        ns_inf = ns_value != 0.0 and np.isinf(ns_fv)
        # features
        while p < e:
            c = _at(buf, p)
            if c != SP and c != TAB:
                break
            p += 1
            if p >= e:
                break
            c = _at(buf, p)
            if c == SP or c == TAB or c == BAR:
                continue
            if c == CR:
                return nf, E_CR, p, p + 1
            fs = p
            q, h = scan_hash(buf, p, e, ns_hash, mode, False)   # h = hash(name, ns)
            if q >= e or _at(buf, q) != COLON:
                # no value (then the name is not empty: the scan stopped at a byte other than ':')
                p = q
                if ns_store:
                    nf = _store(idx, val, ns, nf, h & mask, ns_fv, want_ns, ns_index)
                elif ns_inf:
                    return nf, E_NS_RANGE, fs, _token_end(buf, fs, e)
            else:
                named = q > fs
                value = ns_value
                v, r2, kind = _value(buf, q + 1, e)
                if kind == NUM_NONE:
                    # string value: skip whitespace, read up to whitespace; index hash(value, hash(name))
                    r = q + 1
                    while r < e and _is_ws(_at(buf, r)):
                        r += 1
                    q = r
                    if r < e:
                        q, h = scan_hash(buf, r, e, h, mode, True)
                        named = True
                    value = 1.0
                elif kind == NUM_FINITE:
                    value = v * ns_value
                    q = r2
                else:
                    return nf, E_VALUE, fs, _token_end(buf, fs, e)
                if not named:
                    h = (ns_hash + anon) & 0xFFFFFFFF   # anonymous feature ":value": ns_hash + k
                    anon += 1
                p = q
                if value != 0.0:
                    fv = np.float32(value)
                    if np.isinf(fv):    # beyond float32 (a finite float64 here): the model would hold inf
                        return nf, E_VALUE_RANGE if ns_value == 1.0 else E_NS_RANGE, fs, _token_end(buf, fs, e)
                    if fv != 0.0:
                        nf = _store(idx, val, ns, nf, h & mask, fv, want_ns, ns_index)
            if p < e:
                c = _at(buf, p)
                if not (c == SP or c == TAB or c == BAR):
                    if c == CR:
                        return nf, E_CR, p, p + 1
                    return nf, E_STRAY, p, _token_end(buf, p, e)
        if p < e and _at(buf, p) != BAR:
            if _at(buf, p) == CR:
                return nf, E_CR, p, p + 1
            return nf, E_STRAY, p, _token_end(buf, p, e)
    return nf, 0, 0, 0


# _nrt=False (numba's flag, inherited by the functions it calls): no reference counting of the arrays. The
# kernel allocates nothing, but numba counted references to the buffer and the output arrays around every
# inlined helper taking them (scan_hash, parse_number, the label and feature parts): an atomic increment
# and decrement per name and a dozen per line, ~15% of the parse (issue 30).
@njit(cache=True, nogil=True, _nrt=False)
def parse_vw_block(buf, ends, first_line, mask, noconstant, seed, mode,
                   labels, weights, bases, lines, tag_s, tag_e, indptr, idx, val, faults,
                   redefine, ns, want_ns):
    """Parse a line-aligned block of VW text whose lines end at ``ends`` into the output arrays (see
    streamlearn.io.parsing; sized by ``streamlearn.io.blocks.Outputs``). With ``want_ns`` the
    namespace index of every feature is written to ``ns`` (the constant's is 128), for feature
    expansion. Returns (n_examples, n_features, n_faults)."""
    ex = 0
    nf = 0
    nfault = 0
    indptr[0] = 0
    const_idx = np.uint32(CONSTANT_RAW_INDEX & mask)
    dflt_hash = default_namespace_hash(seed)
    nlines = ends.size
    for li in range(nlines):
        if li + 1 < nlines:
            prefetch_read(buf, ends[li + 1])
        ls, e = line_span(buf, ends, li)
        if e > ls:
            bar = ls
            while bar < e and _at(buf, bar) != BAR:
                bar += 1
            nfault = _parse_label_part(buf, ls, bar, labels, weights, bases, tag_s, tag_e, ex,
                                       faults, nfault)
            had_fault = nfault > 0 and faults[nfault - 1, 0] == ex
            if bar < e:
                nf, code, fs, fe = _parse_features(buf, bar, e, mask, seed, mode, dflt_hash, idx, val, nf,
                                                   redefine, ns, want_ns)
                if code != 0 and not had_fault:
                    faults[nfault, 0] = ex
                    faults[nfault, 1] = code
                    faults[nfault, 2] = fs
                    faults[nfault, 3] = fe
                    nfault += 1
            if not noconstant:
                idx[nf] = const_idx
                val[nf] = 1.0
                if want_ns:
                    ns[nf] = CONSTANT_NS
                nf += 1
            lines[ex] = first_line + li
            ex += 1
            indptr[ex] = nf
    return ex, nf, nfault
