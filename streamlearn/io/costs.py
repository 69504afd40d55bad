"""Compiled parsers of VW's cost-sensitive and named labels (``--csoaa K``; VW's cost_sensitive.cc, vw-spec.md §1a).

The label part of a line (the text before the first '|', after a TAB prefix, without the tag; see
``streamlearn.io.vw``) is a list of costs, in order::

    cost_label := (CLASS [':' COST])*       -- CLASS a non-negative integer (or, with --named_labels, a name)

A class without a cost (``2``) is a class to predict among, not learned: VW gives it the cost FLT_MAX
(``NO_COST``). An example whose costs are all ``NO_COST`` (or that has none) is a test example. The
costs of a block are in CSR form: example e's are ``cls[ptr[e]:ptr[e + 1]]``, ``cost[...]``.

Named classes (``--named_labels a,b,c``) are looked up by the murmur hash of their bytes in
``names`` (sorted hashes, ``ids`` their 1-based class): a name that is not one of them is class 0,
as VW's ``named_labels::get`` answers (with a warning: fault ``E_NAME``).
"""

import numpy as np
from numba import njit

from streamlearn.features.hashing import murmur3_32
from streamlearn.io.parsing import BAR, COLON, E_LABEL_COST, E_LABEL_SET, E_NAME, NUM_FINITE, SP, TAB, beyond_float32, line_span, parse_number

NO_COST = float(np.finfo(np.float32).max)   # VW's FLT_MAX: a class given without a cost
MAX_CLASS = 2 ** 32 - 1                     # VW keeps a class index as uint32
SHARED_CLASS = -1                           # the class of a 'shared' line (label-dependent features)


@njit(cache=True, nogil=True)
def _is_shared(buf, p):
    """buf[p:p+6] is the word ``shared``."""
    word = (115, 104, 97, 114, 101, 100)
    for j in range(6):
        if buf[p + j] != word[j]:
            return False
    return True


@njit(cache=True, nogil=True)
def _label_bounds(buf, ends, li, tag_s, tag_e):
    """[start, end) of the costs of line li: before the first '|', after a TAB, before the tag."""
    s, e = line_span(buf, ends, li)
    bar = s
    while bar < e and buf[bar] != BAR:
        bar += 1
    for p in range(s, bar):
        if buf[p] == TAB:
            s = p + 1
            break
    end = bar
    if tag_e > tag_s and tag_s >= s and tag_s <= bar:      # the tag is the last token: costs stop before it
        end = tag_s - 1 if tag_s > s and buf[tag_s - 1] == 39 else tag_s
    return s, end


@njit(cache=True, nogil=True)
def _class_of(buf, s, e, names, ids):
    """(class index, ok) of the class name buf[s:e]: its integer, or its named label's id."""
    if names.size:
        h = np.int64(murmur3_32(buf, s, e, 0))
        k = np.searchsorted(names, h)
        if k < names.size and names[k] == h:
            return ids[k], True
        return 0, False
    if e == s:
        return 0, False
    v = 0
    for p in range(s, e):
        c = buf[p]
        if c < 48 or c > 57:
            return 0, False
        v = v * 10 + (c - 48)
        if v > MAX_CLASS:
            return 0, False
    return v, True


@njit(cache=True, nogil=True)
def _label_capacity(buf, ends, first_line, lines, tag_s, tag_e):
    """An upper bound of the labels' tokens over the block's examples (a token and its separator take
    at least two bytes), the size of the CSR arrays."""
    cap = 0
    for ex in range(lines.shape[0]):
        s, e = _label_bounds(buf, ends, lines[ex] - first_line, tag_s[ex], tag_e[ex])
        cap += (e - s + 1) // 2 + 1
    return cap


@njit(cache=True, nogil=True)
def parse_cost_labels(buf, ends, first_line, lines, tag_s, tag_e, names, ids, shared=False):
    """The costs of every example of a block (``lines``: their line numbers; ``tag_s``/``tag_e``: their
    tags). Returns (ptr, cls, cost, faults): CSR costs, and (k, 4) faults (example, code, start, end)
    of the first malformed token of a line (its costs before it are kept). With ``shared``
    (--csoaa_ldf, --wap_ldf) a first token ``shared`` is the one cost (SHARED_CLASS, 0) of a shared line."""
    n = lines.shape[0]
    cap = _label_capacity(buf, ends, first_line, lines, tag_s, tag_e)
    ptr = np.zeros(n + 1, np.int64)
    cls = np.empty(cap, np.int64)
    cost = np.empty(cap, np.float64)
    faults = np.empty((n, 4), np.int64)
    nf = 0
    k = 0
    for ex in range(n):
        s, e = _label_bounds(buf, ends, lines[ex] - first_line, tag_s[ex], tag_e[ex])
        p = s
        while p < e:
            while p < e and (buf[p] == SP or buf[p] == TAB):
                p += 1
            if p >= e:
                break
            q = p
            while q < e and buf[q] != SP and buf[q] != TAB:
                q += 1
            if shared and k == ptr[ex] and q - p == 6 and _is_shared(buf, p):
                cls[k] = SHARED_CLASS
                cost[k] = 0.0
                k += 1
                p = q
                continue
            colon = p
            while colon < q and buf[colon] != COLON:
                colon += 1
            c, known = _class_of(buf, p, colon, names, ids)
            x = NO_COST
            ok = known or names.size > 0        # an unknown name is class 0 (VW), a bad number a fault
            if ok and colon + 1 < q:
                end2 = colon + 1
                while end2 < q and buf[end2] != COLON:
                    end2 += 1
                v, r, kind, digits = parse_number(buf, colon + 1, end2)
                if kind != NUM_FINITE or r != end2 or not digits or beyond_float32(v):
                    ok = False
                else:
                    x = v
            if not (ok and known) and (nf == 0 or faults[nf - 1, 0] != ex):     # the line's first fault
                faults[nf, 0] = ex
                faults[nf, 1] = E_NAME if ok else E_LABEL_COST
                faults[nf, 2] = p
                faults[nf, 3] = colon if ok else q      # the name, or the whole token
                nf += 1
            if not ok:      # a malformed token ends the line's costs
                break
            cls[k] = c
            cost[k] = x
            k += 1
            p = q
        ptr[ex + 1] = k
    return ptr, cls[:k], cost[:k], faults[:nf]


@njit(cache=True, nogil=True)
def named_class_labels(buf, ends, first_line, lines, tag_s, tag_e, names, ids, labels, weights):
    """--named_labels with --oaa: the label part's first token is a class name, its class id (1..K)
    the example's label (a name that is not one of them is class 0, as VW's ``named_labels::get``
    answers, with fault ``E_NAME``), the second an importance weight. ``labels`` and ``weights`` are
    filled in place (NaN: no label). Returns the (k, 4) faults (example, code, start, end)."""
    n = lines.shape[0]
    faults = np.empty((n, 4), np.int64)
    nf = 0
    for ex in range(n):
        s, e = _label_bounds(buf, ends, lines[ex] - first_line, tag_s[ex], tag_e[ex])
        labels[ex] = np.nan
        weights[ex] = 1.0
        ntok = 0
        p = s
        while p < e and ntok < 2:
            while p < e and (buf[p] == SP or buf[p] == TAB):
                p += 1
            if p >= e:
                break
            q = p
            while q < e and buf[q] != SP and buf[q] != TAB:
                q += 1
            code = 0
            if ntok == 0:
                c, known = _class_of(buf, p, q, names, ids)
                labels[ex] = float(c)
                code = 0 if known else E_NAME
            else:
                v, r, kind, digits = parse_number(buf, p, q)
                if kind != NUM_FINITE or r != q or not digits or beyond_float32(v) or v < 0:
                    labels[ex] = np.nan
                    code = E_LABEL_COST
                else:
                    weights[ex] = v
            if code != 0 and (nf == 0 or faults[nf - 1, 0] != ex):
                faults[nf, 0] = ex
                faults[nf, 1] = code
                faults[nf, 2] = p
                faults[nf, 3] = q
                nf += 1
            ntok += 1
            p = q
    return faults[:nf]


@njit(cache=True, nogil=True)
def parse_multilabels(buf, ends, first_line, lines, tag_s, tag_e):
    """--multilabel_oaa: the label part's first token is a comma-separated list of classes 0..K-1
    (VW's multilabel.cc), in CSR form as ``parse_cost_labels`` returns costs (the cost column 0).
    Returns (ptr, cls, cost, faults)."""
    n = lines.shape[0]
    cap = _label_capacity(buf, ends, first_line, lines, tag_s, tag_e)
    ptr = np.zeros(n + 1, np.int64)
    cls = np.empty(cap, np.int64)
    faults = np.empty((n, 4), np.int64)
    nf = 0
    k = 0
    empty = np.zeros(0, np.int64)
    for ex in range(n):
        s, e = _label_bounds(buf, ends, lines[ex] - first_line, tag_s[ex], tag_e[ex])
        p = s
        while p < e and (buf[p] == SP or buf[p] == TAB):
            p += 1
        q = p
        while q < e and buf[q] != SP and buf[q] != TAB:
            q += 1
        a = p
        while a < q:
            b = a
            while b < q and buf[b] != 44:       # ','
                b += 1
            if b > a:
                c, ok = _class_of(buf, a, b, empty, empty)
                if not ok:
                    faults[nf, 0] = ex
                    faults[nf, 1] = E_LABEL_SET
                    faults[nf, 2] = p
                    faults[nf, 3] = q
                    nf += 1
                    k = ptr[ex]         # a malformed list: the example is a test example
                    break
                cls[k] = c
                k += 1
            a = b + 1
        ptr[ex + 1] = k
    return ptr, cls[:k], np.zeros(k), faults[:nf]
