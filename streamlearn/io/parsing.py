"""Pieces shared by the compiled VW and LIBSVM parsers: the float grammar, fault codes, output buffers.

Both parsers turn one line-aligned byte block into examples in CSR form:

    labels[e]   float64, NaN when the example has no (usable) label
    weights[e]  importance weight (default 1)
    bases[e]    initial prediction ("base", default 0)
    lines[e]    1-based line number in the source
    tag_s/e[e]  byte offsets of the tag in the block (equal when there is no tag)
    indptr      int64[n + 1]; features of example e are idx/val[indptr[e]:indptr[e+1]]
    idx, val    uint32 masked weight index, float32 value

The caller provides the output arrays (``streamlearn.io.blocks.Outputs``: at most one example per
line, and at most nbytes // 2 + lines + 1 features, since a feature takes a byte plus a separator and
every example may add the constant). A malformed line records one fault (the first): the example
index, a code from the table below and the byte span of the offending text. Messages are formatted in Python (``streamlearn.io.blocks``);
compiled code only returns codes and positions.
"""

import numpy as np
from numba import njit

# Fault codes (see streamlearn.io.blocks.FAULTS for the messages).
E_LABEL = 1          # label is not a finite number
E_WEIGHT = 2         # importance weight is not a finite number
E_NEG_WEIGHT = 3     # importance weight is negative
E_BASE = 4           # base is not a finite number
E_LABEL_TOKENS = 5   # more than three label tokens
E_NS_NAME = 6        # '|' followed by ':' (no namespace name)
E_NS_VALUE = 7       # namespace value missing or not a finite number
E_VALUE = 8          # feature value is NaN or infinite
E_STRAY = 9          # unexpected bytes where a separator was expected
E_CR = 10            # carriage return inside a line
E_TOKEN = 11         # LIBSVM: token is not index:value
E_INDEX = 12         # LIBSVM: index is not a non-negative integer
E_NUMBER = 13        # LIBSVM: value is not a number

# parse_number kinds
NUM_NONE = 0
NUM_FINITE = 1
NUM_NONFINITE = 2

SP = 32
TAB = 9
CR = 13
NL = 10
BAR = 124
COLON = 58
QUOTE = 39

_POW10 = np.array([10.0 ** i for i in range(23)])


@njit(cache=True, nogil=True, inline="always")
def _is_digit(c):
    return c >= 48 and c <= 57


@njit(cache=True, nogil=True, inline="always")
def _lower(c):
    if c >= 65 and c <= 90:
        return c + 32
    return c


@njit(cache=True, nogil=True)
def _match_word(buf, p, end, word):
    """Case-insensitive match of the ASCII bytes ``word`` at buf[p:]; returns the end position or -1."""
    n = word.size
    if end - p < n:
        return -1
    for i in range(n):
        if _lower(buf[p + i]) != word[i]:
            return -1
    return p + n


_INF = np.frombuffer(b"inf", dtype=np.uint8).copy()
_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8).copy()
_NAN = np.frombuffer(b"nan", dtype=np.uint8).copy()


@njit(cache=True, nogil=True)
def parse_number(buf, p, end):
    """Longest prefix of buf[p:end] that is a decimal float, as C's strtof would read it.

    Grammar: [+-] (digits [. digits] | . digits) [(e|E) [+-] digits], or inf / infinity / nan in any
    case. Like VW's fast path, an exponent marker without digits is consumed and means e0.
    Returns (value, position after the number, kind) with kind NUM_NONE (no number; position = p),
    NUM_FINITE, or NUM_NONFINITE (inf, nan, or overflow).
    """
    q = p
    neg = False
    if q < end and (buf[q] == 45 or buf[q] == 43):
        neg = buf[q] == 45
        q += 1
    mant = np.int64(0)
    nsig = 0
    exp10 = 0
    any_digit = False
    while q < end and _is_digit(buf[q]):
        any_digit = True
        if nsig < 18:
            mant = mant * 10 + (np.int64(buf[q]) - 48)
            if mant != 0:
                nsig += 1
        else:
            exp10 += 1
        q += 1
    if q < end and buf[q] == 46:
        r = q + 1
        frac_digit = False
        while r < end and _is_digit(buf[r]):
            frac_digit = True
            if nsig < 18:
                mant = mant * 10 + (np.int64(buf[r]) - 48)
                exp10 -= 1
                if mant != 0:
                    nsig += 1
            r += 1
        if any_digit or frac_digit:
            any_digit = True
            q = r
    if not any_digit:
        r = _match_word(buf, q, end, _INFINITY)
        if r < 0:
            r = _match_word(buf, q, end, _INF)
        if r < 0:
            r = _match_word(buf, q, end, _NAN)
        if r >= 0:
            return np.nan, r, NUM_NONFINITE
        return 0.0, p, NUM_NONE
    if q < end and (buf[q] == 101 or buf[q] == 69):
        q += 1
        eneg = False
        if q < end and (buf[q] == 45 or buf[q] == 43):
            eneg = buf[q] == 45
            q += 1
        e = 0
        while q < end and _is_digit(buf[q]):
            if e < 100000:
                e = e * 10 + (np.int64(buf[q]) - 48)
            q += 1
        exp10 += -e if eneg else e
    v = float(mant)
    if mant != 0 and exp10 != 0:
        if 0 < exp10 <= 22:
            v = v * _POW10[exp10]
        elif -22 <= exp10 < 0:
            v = v / _POW10[-exp10]
        else:
            v = v * 10.0 ** exp10
    if neg:
        v = -v
    if np.isfinite(v):
        return v, q, NUM_FINITE
    return v, q, NUM_NONFINITE
