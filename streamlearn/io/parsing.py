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
E_LABEL_RANGE = 14   # label beyond float32's range (|x| > 3.4e38 once rounded to float32)
E_WEIGHT_RANGE = 15  # importance weight beyond float32's range
E_BASE_RANGE = 16    # base beyond float32's range
E_VALUE_RANGE = 17   # feature value beyond float32's range (features are stored as float32)
E_NS_RANGE = 18      # feature value times its namespace value beyond float32's range
E_PRODUCT_RANGE = 19  # an interaction product (-q/--cubic/--interactions) beyond float32's range
                     # (found after expansion, streamlearn.io.expand.check_products)
E_LABEL_COST = 20    # cost-sensitive label: a token that is not class[:cost] (streamlearn.io.costs)
E_NAME = 21          # cost-sensitive label: a class name that is not one of --named_labels
E_LABEL_SET = 22     # multilabel: a label that is not a comma-separated list of classes

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
def beyond_float32(v):
    """Whether a finite float64 overflows float32 (rounds to an infinite float32): such a number is
    a fault wherever it is read (labels, weights and bases too, which VW keeps as float32)."""
    return np.isinf(np.float32(v))


@njit(cache=True, nogil=True, inline="always")
def _is_digit(c):
    return c >= 48 and c <= 57


@njit(cache=True, nogil=True, inline="always")
def _lower(c):
    if c >= 65 and c <= 90:
        return c + 32
    return c


@njit(cache=True, nogil=True, inline="always")
def line_span(buf, ends, li):
    """Content of line ``li`` of a block: [start, end) without the newline, a trailing CR and a
    leading UTF-8 byte order mark (VW drops both)."""
    s = ends[li - 1] + 1 if li > 0 else 0
    e = ends[li]
    if e > s and buf[e - 1] == CR:
        e -= 1
    if e - s >= 3 and buf[s] == 0xEF and buf[s + 1] == 0xBB and buf[s + 2] == 0xBF:
        s += 3
    return s, e


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


@njit(cache=True, nogil=True, inline="always")
def _is_hex(c):
    return (c >= 48 and c <= 57) or (c >= 97 and c <= 102) or (c >= 65 and c <= 70)


@njit(cache=True, nogil=True, inline="always")
def _hex_value(c):
    if c <= 57:
        return c - 48
    if c >= 97:
        return c - 87
    return c - 55


@njit(cache=True, nogil=True)
def _scale10(mant, exp10):
    v = float(mant)
    if mant != 0 and exp10 != 0:
        if 0 < exp10 <= 22:
            v = v * _POW10[exp10]
        elif -22 <= exp10 < 0:
            v = v / _POW10[-exp10]
        else:
            v = v * 10.0 ** exp10
    return v


@njit(cache=True, nogil=True)
def _digits(buf, q, end, mant, nsig, exp10, fraction):
    """Decimal digits at buf[q:end] appended to the mantissa ``mant`` (18 significant digits kept: a
    later integer digit scales by 10, a later fraction digit is ignored). Returns (position, mant,
    significant digits, decimal exponent, number of digits read)."""
    n = 0
    while q < end and _is_digit(buf[q]):
        if nsig < 18:
            mant = mant * 10 + (np.int64(buf[q]) - 48)
            if fraction:
                exp10 -= 1
            if mant != 0:
                nsig += 1
        elif not fraction:
            exp10 += 1
        q += 1
        n += 1
    return q, mant, nsig, exp10, n


@njit(cache=True, nogil=True)
def _exponent(buf, q, end):
    """Digits of an exponent at buf[q:end] (capped, so that absurd exponents cannot overflow)."""
    e = 0
    while q < end and _is_digit(buf[q]):
        if e < 100000:
            e = e * 10 + (np.int64(buf[q]) - 48)
        q += 1
    return q, e


@njit(cache=True, nogil=True)
def _strtod(buf, p, end):
    """C's strtod on buf[p:end]: (value, end position, kind, had digits); position p if nothing parses."""
    q = p
    while q < end and (buf[q] == SP or (buf[q] >= 9 and buf[q] <= 13)):
        q += 1
    neg = False
    if q < end and (buf[q] == 45 or buf[q] == 43):
        neg = buf[q] == 45
        q += 1
    # hexadecimal: 0x h* [. h*] [p [+-] d+], at least one hex digit
    if q + 1 < end and buf[q] == 48 and (buf[q + 1] == 120 or buf[q + 1] == 88):
        r = q + 2
        hmant = 0.0
        shift = 0
        nd = 0
        while r < end and _is_hex(buf[r]):
            hmant = hmant * 16.0 + _hex_value(buf[r])
            r += 1
            nd += 1
        if r < end and buf[r] == 46:
            r2 = r + 1
            while r2 < end and _is_hex(buf[r2]):
                hmant = hmant * 16.0 + _hex_value(buf[r2])
                shift -= 4
                r2 += 1
                nd += 1
            if nd > 0:
                r = r2
        if nd > 0:
            if r < end and (buf[r] == 112 or buf[r] == 80):
                r2 = r + 1
                eneg = False
                if r2 < end and (buf[r2] == 45 or buf[r2] == 43):
                    eneg = buf[r2] == 45
                    r2 += 1
                if r2 < end and _is_digit(buf[r2]):
                    r, e = _exponent(buf, r2, end)
                    shift += -e if eneg else e
            v = hmant * 2.0 ** shift
            if neg:
                v = -v
            return v, r, NUM_FINITE if np.isfinite(v) else NUM_NONFINITE, True
        # "0x" without hex digits: strtod reads the "0"
    q, mant, nsig, exp10, nint = _digits(buf, q, end, np.int64(0), 0, 0, False)
    nfrac = 0
    if q < end and buf[q] == 46:
        r, mant2, nsig2, exp102, nfrac = _digits(buf, q + 1, end, mant, nsig, exp10, True)
        if nint + nfrac > 0:
            q, mant, nsig, exp10 = r, mant2, nsig2, exp102
    if nint + nfrac == 0:
        r = _match_word(buf, q, end, _INFINITY)
        if r < 0:
            r = _match_word(buf, q, end, _INF)
        if r < 0:
            r = _match_word(buf, q, end, _NAN)
        if r >= 0:
            return np.nan, r, NUM_NONFINITE, False
        return 0.0, p, NUM_NONE, False
    if q < end and (buf[q] == 101 or buf[q] == 69):
        r = q + 1
        eneg = False
        if r < end and (buf[r] == 45 or buf[r] == 43):
            eneg = buf[r] == 45
            r += 1
        if r < end and _is_digit(buf[r]):
            q, e = _exponent(buf, r, end)
            exp10 += -e if eneg else e
    v = _scale10(mant, exp10)
    if neg:
        v = -v
    return v, q, NUM_FINITE if np.isfinite(v) else NUM_NONFINITE, True


@njit(cache=True, nogil=True, inline="always")
def _plain_digits(buf, q, end, mant):
    """The decimal digits from buf[q] on appended to the integer ``mant``: (position after them, mant,
    their count)."""
    n = 0
    while q < end:
        d = np.int64(buf[np.uint64(q)]) - 48
        if d < 0 or d > 9:
            break
        mant = mant * 10 + d
        n += 1
        q += 1
    return q, mant, n


@njit(cache=True, nogil=True, inline="always")
def plain_decimal(buf, p, end):
    """The common number shape at buf[p:end], read in line (issue 30): [-] digits [. digits] [(e|E) [+|-]
    digits] with 1 to 17 digits before the exponent and 1 to 4 in it, the power of ten in all (exponent
    less fraction digits) within +-22, ended by a space, a TAB or ``end``. Returns (ok, value, position
    after it); ok False for anything else, which ``parse_number`` then reads. When ok the value is
    parse_number's, bit for bit: the digits form an exact integer mantissa (below 10^17 < 2^57, and its
    float64 is parse_number's rounding of it), multiplied or divided by the exact power of ten (<= 10^22),
    one correctly rounded operation as in parse_number's ``_scale10`` (an exponent with a + sign, which
    parse_number hands to its strtod, gives the same value there)."""
    q = p
    neg = False
    if q < end and buf[np.uint64(q)] == 45:
        neg = True
        q += 1
    q, mant, nd = _plain_digits(buf, q, end, np.int64(0))
    nfrac = 0
    if q < end and buf[np.uint64(q)] == 46:
        q, mant, nfrac = _plain_digits(buf, q + 1, end, mant)
    nd += nfrac
    scale = -nfrac
    ok = nd > 0 and nd <= 17
    if q < end and (buf[np.uint64(q)] | 32) == 101:     # 'e' or 'E'
        r = q + 1
        eneg = False
        if r < end and (buf[np.uint64(r)] == 45 or buf[np.uint64(r)] == 43):
            eneg = buf[np.uint64(r)] == 45
            r += 1
        q, ex, ne = _plain_digits(buf, r, end, np.int64(0))
        ok = ok and ne > 0 and ne <= 4
        scale += -ex if eneg else ex
        ok = ok and scale >= -22 and scale <= 22
    ok = ok and (q == end or buf[np.uint64(q)] == SP or buf[np.uint64(q)] == TAB)
    v = float(mant)
    if mant != 0 and scale != 0:
        if scale < 0:
            v = v / _POW10[min(np.uint64(-scale), np.uint64(22))]   # unsigned: never out of the table
        else:
            v = v * _POW10[min(np.uint64(scale), np.uint64(22))]
    if neg:
        v = -v
    return ok, v, q


@njit(cache=True, nogil=True)
def parse_number(buf, p, end):
    """A number at buf[p:end] read exactly as VW's ``parseFloat`` reads it (parse_primitives.h).

    Fast path: spaces, [-], digits, [. digits], [(e|E) [-] digits], accepted when a space, TAB or the
    end of the line follows -- even without any digit ("-", ".", "e5" and trailing spaces read as 0;
    nothing read at all is "not a number"). A decimal exponent below -37 reads as 0, as VW's
    power-of-ten table does (VW's table also wraps exponents beyond +-127; streamlearn does not).
    Otherwise C's strtod reads it (a + sign, hexadecimal, inf, nan). Returns (value, position after the
    number, kind, had digits) with kind NUM_NONE (position = p), NUM_FINITE or NUM_NONFINITE (inf,
    nan, overflow).
    """
    q = p
    while q < end and buf[q] == SP:
        q += 1
    neg = False
    if q < end and buf[q] == 45:
        neg = True
        q += 1
    q, mant, nsig, exp10, nint = _digits(buf, q, end, np.int64(0), 0, 0, False)
    ndec = 0
    if q < end and buf[q] == 46:
        q, mant, nsig, exp10, ndec = _digits(buf, q + 1, end, mant, nsig, exp10, True)
    digits = nint + ndec > 0
    eacc = 0
    if q < end and (buf[q] == 101 or buf[q] == 69):
        q += 1
        eneg = False
        if q < end and buf[q] == 45:
            eneg = True
            q += 1
        q, eacc = _exponent(buf, q, end)
        if eneg:
            eacc = -eacc
    if q == end or buf[q] == SP or buf[q] == TAB or buf[q] == NL:
        if q == p:
            return 0.0, p, NUM_NONE, False     # VW: "success" with nothing read = not a number
        if eacc - min(ndec, 35) < -37:
            v = 0.0
        else:
            v = _scale10(mant, exp10 + eacc)
        if neg:
            v = -v
        return v, q, NUM_FINITE if np.isfinite(v) else NUM_NONFINITE, digits
    return _strtod(buf, p, end)
