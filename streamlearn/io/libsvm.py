"""Compiled parser for LIBSVM / SVMlight text: ``label idx:val idx:val ... [# comment]``.

VW has no LIBSVM reader; streamlearn maps LIBSVM exactly as VW would map the same data written as
``label | idx:val ...``: each index is a numeric feature name in the default namespace, so its weight
index is ``(idx + default namespace hash) & mask`` (``idx & mask`` with the default hash seed), and
``--hash all`` murmurs the index text instead. ``qid:N`` tokens are ignored, ``#`` starts a comment,
tokens are separated by spaces or TABs, values of 0 are dropped, and the constant feature ends every
example unless ``noconstant``. Output arrays and fault handling are those of the VW parser.
"""

import numpy as np
from numba import njit

from streamlearn.features.hashing import CONSTANT_RAW_INDEX, default_namespace_hash, hash_name
from streamlearn.io.parsing import (
    COLON, CR, E_CR, E_INDEX, E_LABEL, E_LABEL_RANGE, E_NUMBER, E_TOKEN, E_VALUE, E_VALUE_RANGE, NUM_FINITE,
    NUM_NONFINITE, SP, TAB, beyond_float32, line_span, parse_number,
)

HASH = 35
_QID = np.frombuffer(b"qid", dtype=np.uint8).copy()


@njit(cache=True, nogil=True, inline="always")
def _is_sep(c):
    return c == SP or c == TAB


@njit(cache=True, nogil=True)
def _is_qid(buf, s, e):
    if e - s != 3:
        return False
    for i in range(3):
        if buf[s + i] != _QID[i]:
            return False
    return True


@njit(cache=True, nogil=True)
def parse_libsvm_block(buf, ends, first_line, mask, noconstant, seed, mode,
                       labels, weights, bases, lines, tag_s, tag_e, indptr, idx, val, faults):
    """Parse a line-aligned block of LIBSVM text (same arguments and outputs as parse_vw_block)."""
    ex = 0
    nf = 0
    nfault = 0
    indptr[0] = 0
    const_idx = np.uint32(CONSTANT_RAW_INDEX & mask)
    ns_hash = default_namespace_hash(seed)
    for li in range(ends.size):
        ls, e = line_span(buf, ends, li)
        # a comment ends the data part of the line
        for c in range(ls, e):
            if buf[c] == HASH:
                e = c
                break
        p = ls
        while p < e and _is_sep(buf[p]):
            p += 1
        if p >= e:
            continue   # empty, blank or comment-only line: skipped
        labels[ex] = np.nan
        weights[ex] = 1.0
        bases[ex] = 0.0
        tag_s[ex] = 0
        tag_e[ex] = 0
        q = p
        while q < e and not _is_sep(buf[q]):
            q += 1
        v, r, kind, digits = parse_number(buf, p, q)
        if kind == NUM_FINITE and r == q and digits and not beyond_float32(v):
            labels[ex] = v
        else:
            faults[nfault, 0] = ex
            faults[nfault, 1] = E_LABEL_RANGE if kind == NUM_FINITE and r == q and digits else E_LABEL
            faults[nfault, 2] = p
            faults[nfault, 3] = q
            nfault += 1
        p = q
        while p < e:
            while p < e and _is_sep(buf[p]):
                p += 1
            if p >= e:
                break
            ts = p
            q = p
            while q < e and not _is_sep(buf[q]) and buf[q] != COLON:
                q += 1
            te = q
            while q < e and not _is_sep(buf[q]):
                q += 1
            code = 0
            has_cr = False
            for c in range(ts, q):
                if buf[c] == CR:
                    has_cr = True
                    break
            if has_cr:
                code = E_CR
            elif te >= q or buf[te] != COLON:
                code = E_TOKEN
            elif _is_qid(buf, ts, te):
                p = q
                continue
            else:
                digits = te > ts
                for c in range(ts, te):
                    if buf[c] < 48 or buf[c] > 57:
                        digits = False
                        break
                if not digits:
                    code = E_INDEX
                else:
                    v, r, kind, digits = parse_number(buf, te + 1, q)
                    if kind == NUM_NONFINITE and r == q:
                        code = E_VALUE
                    elif kind != NUM_FINITE or r != q or not digits:
                        code = E_NUMBER
                    else:
                        fv = np.float32(v)
                        if np.isinf(fv):      # beyond float32: a fault, as inf is
                            code = E_VALUE_RANGE
                        elif fv != 0.0:
                            h = hash_name(buf, ts, te, ns_hash, mode)
                            idx[nf] = np.uint32(h & mask)
                            val[nf] = fv
                            nf += 1
            if code != 0:
                if nfault == 0 or faults[nfault - 1, 0] != ex:
                    faults[nfault, 0] = ex
                    faults[nfault, 1] = code
                    faults[nfault, 2] = ts
                    faults[nfault, 3] = q
                    nfault += 1
                break
            p = q
        if not noconstant:
            idx[nf] = const_idx
            val[nf] = 1.0
            nf += 1
        lines[ex] = first_line + li
        ex += 1
        indptr[ex] = nf
    return ex, nf, nfault
