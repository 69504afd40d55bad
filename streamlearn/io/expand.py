"""Feature expansion, compiled: VW's n-grams, --ignore/--keep/--ignore_linear and interactions of any
arity, applied to a parsed block in the parsing thread (vw-spec-2.md §2.0, §2a-§2c).

The parser gives every feature its namespace index (the first byte of its namespace's name after
--redefine, ' ' for the default namespace, 128 for the constant). For each example this kernel

1. groups the features by namespace index, groups in order of first appearance, features in
   stored order, and drops the groups --ignore/--keep remove (the constant always stays);
2. appends each group's n-grams and skip-grams (value 1; index g = g * 27942141 + h_j), then keeps
   at most --feature_limit features of the group (``limit_group``);
3. writes the linear features of every group not in --ignore_linear (the constant last, as the
   parser placed it);
4. writes the interaction terms in processing order: nested loops over the groups' features, a
   loop over the same namespace as the one before it starting at that loop's position unless
   --permutations; index (FNV * h1) XOR h2 ..., value the float32 product left to right.

The result is a plain CSR block: every learner sees expanded examples without knowing about
expansion. ``counts`` holds VW's per-example feature count (the groups' sizes, --ignore_linear
groups and n-grams included, plus the interaction features), which the reports print.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamlearn.errors import InputError
from streamlearn.io.blocks import ParsedBlock
from streamlearn.io.parsing import E_PRODUCT_RANGE

FNV = np.uint64(16777619)            # FNV_PRIME, VW's interaction multiplier (constant.h)
NGRAM_MULT = np.uint64(27942141)     # QUADRATIC_CONSTANT, VW's n-gram multiplier
#: one example may not expand to more features than --max-example-features, by default an eighth of the
#: RAM at BYTES_PER_FEATURE bytes a feature (its index and value in the expanded block, the scratch arrays
#: of the expansion, and their doubling as they grow), never less than MIN_EXAMPLE_FEATURES
MIN_EXAMPLE_FEATURES = 1_000_000
BYTES_PER_FEATURE = 32


def default_example_features() -> int:
    """The default of --max-example-features: an eighth of the physical memory / BYTES_PER_FEATURE,
    at least MIN_EXAMPLE_FEATURES (MIN_EXAMPLE_FEATURES when the memory cannot be read)."""
    import os
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return MIN_EXAMPLE_FEATURES
    return max(MIN_EXAMPLE_FEATURES, int(ram) // 8 // BYTES_PER_FEATURE)

ST_DONE = 0           # every example expanded
ST_FULL = 1           # the output arrays are full: grow them and continue at the returned example
ST_SCRATCH = 2        # the scratch arrays are too small for the returned example: grow them
ST_TOO_MANY = 3       # the returned example expands to more than the limit


@njit(cache=True, nogil=True)
def _grams(sidx, sval, base, length, n, k, pos, cap, mask):
    """Append the 2..n-grams with up to k skips of the ``length`` features at sidx[base:] to
    sidx/sval from ``pos`` (VW's kskip_ngram_transformer ``add_grams``): for each gram size, the
    gap patterns in the recursion's order -- extra gaps (e_1, ..., e_{size-1}), sum <= k, in
    lexicographic order -- and for each pattern every start position. Returns the new end, or -1
    when ``cap`` would be exceeded."""
    ext = np.zeros(max(n, 1), np.int64)
    off = np.zeros(max(n, 1), np.int64)
    for size in range(2, n + 1):
        m = size - 1
        for j in range(m):
            ext[j] = 0
        while True:
            total = 0
            off[0] = 0
            for j in range(m):
                total += ext[j]
                off[j + 1] = j + 1 + total
            last = off[m]
            for i in range(length - last):
                if pos >= cap:
                    return -1
                g = np.uint64(sidx[base + i])
                for j in range(1, size):
                    g = g * NGRAM_MULT + np.uint64(sidx[base + i + off[j]])
                sidx[pos] = np.uint32(g & mask)
                sval[pos] = np.float32(1.0)
                pos += 1
            # next pattern: raise the rightmost gap that keeps the sum <= k, zero the ones after it
            p = m - 1
            prefix = total
            while p >= 0:
                prefix -= ext[p]
                if prefix + ext[p] + 1 <= k:
                    break
                p -= 1
            if p < 0:
                break
            ext[p] += 1
            for j in range(p + 1, m):
                ext[j] = 0
    return pos


@njit(cache=True, nogil=True)
def limit_group(sidx, sval, a, b, n):
    """VW's --feature_limit on one group sidx/sval[a:b] longer than ``n`` (feature_limit,
    unique_features): sorted by (index, value), the later features of an index dropped, the first
    ``n`` kept, in place from ``a``. Returns the group's new end."""
    seg_i = sidx[a:b].copy()
    seg_v = sval[a:b].copy()
    by_value = np.argsort(seg_v, kind="mergesort")
    order = by_value[np.argsort(seg_i[by_value], kind="mergesort")]     # stable: ties keep value order
    w = a
    for t in range(order.shape[0]):
        q = order[t]
        if w > a and sidx[w - 1] == seg_i[q]:
            continue
        if w - a >= n:
            break
        sidx[w] = seg_i[q]
        sval[w] = seg_v[q]
        w += 1
    return w


@njit(cache=True, nogil=True)
def expand_block(indptr, idx, val, ns, n, start, keep, linear, ngram, skips, terms, term_ptr,
                 permutations, mask, limit, out_indptr, out_idx, out_val, counts, sidx, sval, limits, limited):
    """Expand examples start..n-1 of a parsed block (module docstring) into out_* and counts.

    ``keep``/``linear`` (uint8[256]): groups kept, and kept groups that get linear terms; ``ngram``/
    ``skips`` (int64[256]): n and k per namespace index; ``limits`` (int64[256]): the most features a
    group keeps (-1: all; ``limited``: some index has a limit), applied after its n-grams; the interaction terms are
    terms[term_ptr[t]:term_ptr[t + 1]] in processing order. ``sidx``/``sval`` are scratch space for
    one example's groups. Returns (status, example, features written): ST_DONE, or the example at
    which to continue after growing the outputs (ST_FULL) or the scratch (ST_SCRATCH), or the
    example that expands to more than ``limit`` features (ST_TOO_MANY)."""
    gid = np.full(256, -1, np.int64)
    gorder = np.empty(256, np.int64)
    gsize = np.zeros(256, np.int64)
    gfirst = np.zeros(256, np.int64)
    gstart = np.zeros(257, np.int64)
    gend = np.zeros(257, np.int64)
    fill = np.zeros(256, np.int64)
    nt = term_ptr.shape[0] - 1
    maxlen = 1
    for t in range(nt):
        maxlen = max(maxlen, term_ptr[t + 1] - term_ptr[t])
    work = np.zeros((3, maxlen), np.int64)        # per loop level: start, end, position
    hpart = np.zeros(maxlen, np.uint64)
    vpart = np.zeros(maxlen, np.float32)
    scap = sidx.shape[0]
    nf = out_indptr[start]
    for e in range(start, n):
        s = indptr[e]
        f = indptr[e + 1]
        # 1. groups in order of first appearance; are they contiguous runs of the input?
        # (a run at a time: the features of a namespace are mostly one run)
        ng = 0
        contiguous = True
        grams = False
        q = s
        while q < f:
            g = ns[q]
            r = q + 1
            while r < f and ns[r] == g:
                r += 1
            if keep[g] != 0:
                j = gid[g]
                if j < 0:
                    j = ng
                    gid[g] = j
                    gorder[j] = g
                    gsize[j] = 0
                    gfirst[j] = q
                    ng += 1
                    if ngram[g] > 1:
                        grams = True
                else:           # a second run of the group
                    contiguous = False
                gsize[j] += r - q
            q = r
        total = 0
        if contiguous and not grams and not limited:
            # the common case: every group is one run of the parsed features, used where it is
            for j in range(ng):
                gstart[j] = gfirst[j]
                gend[j] = gfirst[j] + gsize[j]
                total += gsize[j]
            status, nf, total = _emit(idx, val, gstart, gend, gorder, gid, ng, total, linear, terms,
                                      term_ptr, permutations, mask, limit, out_idx, out_val, nf,
                                      work, hpart, vpart)
        else:
            # 2. the groups in the scratch: their base features (gathered at the end of it), each
            # followed by its n-grams
            nbase = 0
            for j in range(ng):
                nbase += gsize[j]
            tail = scap - nbase
            if tail < 0:
                _reset(gid, gorder, ng)
                return ST_SCRATCH, e, nf
            pos = tail
            for j in range(ng):
                fill[j] = pos
                pos += gsize[j]
            for q in range(s, f):
                g = ns[q]
                if keep[g] == 0:
                    continue
                j = gid[g]
                sidx[fill[j]] = idx[q]
                sval[fill[j]] = val[q]
                fill[j] += 1
            pos = 0
            src = tail
            for j in range(ng):
                gstart[j] = pos
                length = gsize[j]
                for q in range(length):       # pos <= src: copying forward never overwrites unread bases
                    sidx[pos + q] = sidx[src + q]
                    sval[pos + q] = sval[src + q]
                base = pos
                pos += length
                src += length
                g = gorder[j]
                if ngram[g] > 1 and length > 0:
                    # n-grams may fill the scratch up to the bases of the groups not copied yet
                    pos = _grams(sidx, sval, base, length, ngram[g], skips[g], pos,
                                 src if j < ng - 1 else scap, mask)
                    if pos < 0:
                        _reset(gid, gorder, ng)
                        return ST_SCRATCH, e, nf
                if limits[g] >= 0 and pos - base > limits[g]:
                    pos = limit_group(sidx, sval, base, pos, limits[g])
                gend[j] = pos
            total = pos
            status, nf, total = _emit(sidx, sval, gstart, gend, gorder, gid, ng, total, linear, terms,
                                      term_ptr, permutations, mask, limit, out_idx, out_val, nf,
                                      work, hpart, vpart)
        _reset(gid, gorder, ng)
        if status != ST_DONE:
            return status, e, out_indptr[e]
        counts[e] = total
        out_indptr[e + 1] = nf
    return ST_DONE, n, nf


@njit(cache=True, nogil=True)
def _emit(src_idx, src_val, gstart, gend, gorder, gid, ng, total, linear, terms, term_ptr,
          permutations, mask, limit, out_idx, out_val, nf, work, hpart, vpart):
    """Write one example's linear terms (step 3) and interactions (step 4) from its groups
    src[gstart[j]:gend[j]] to out_* from ``nf``. Returns (status, new nf, the example's feature
    count): ST_FULL when the outputs are full (nf is then the example's first position), ST_TOO_MANY
    past the limit."""
    row = nf
    cap = out_idx.shape[0]
    for j in range(ng):
        if linear[gorder[j]] == 0:
            continue
        if nf + gend[j] - gstart[j] > cap:
            return ST_FULL, row, total
        for q in range(gstart[j], gend[j]):
            out_idx[nf] = src_idx[q]
            out_val[nf] = src_val[q]
            nf += 1
    lo = work[0]
    hi = work[1]
    at = work[2]
    for t in range(term_ptr.shape[0] - 1):
        a = term_ptr[t]
        m = term_ptr[t + 1] - a
        present = True
        for l in range(m):
            j = gid[terms[a + l]]
            if j < 0 or gend[j] == gstart[j]:
                present = False
                break
            lo[l] = gstart[j]
            hi[l] = gend[j]
        if not present:
            continue
        if m == 2:          # the common -q: two plain loops, the limit and the room checked once
            same = not permutations and terms[a] == terms[a + 1]
            n0 = hi[0] - lo[0]
            n1 = hi[1] - lo[1]
            k = n0 * (n0 + 1) // 2 if same else n0 * n1      # i <= j within one namespace
            if total + k > limit:
                return ST_TOO_MANY, nf, total
            if nf + k > cap:
                return ST_FULL, row, total
            # unsigned positions: no negative-index wrap-around code in the inner loop
            end1 = np.uint64(hi[1])
            first = np.uint64(lo[1])
            o = np.uint64(nf)
            for i in range(np.uint64(lo[0]), np.uint64(hi[0])):
                h1 = FNV * np.uint64(src_idx[i])
                v1 = src_val[i]
                if same:
                    first = i
                for q in range(first, end1):
                    out_idx[o] = np.uint32((h1 ^ np.uint64(src_idx[q])) & mask)
                    out_val[o] = np.float32(v1 * src_val[q])
                    o += np.uint64(1)
            nf += k
            total += k
            continue
        level = 0
        at[0] = lo[0]
        while level >= 0:
            if at[level] >= hi[level]:
                level -= 1
                if level >= 0:
                    at[level] += 1
                continue
            q = at[level]
            if level == 0:
                hpart[0] = np.uint64(src_idx[q])
                vpart[0] = src_val[q]
            else:
                hpart[level] = (FNV * hpart[level - 1]) ^ np.uint64(src_idx[q])
                vpart[level] = np.float32(vpart[level - 1] * src_val[q])
            if level == m - 1:
                if total >= limit:
                    return ST_TOO_MANY, nf, total
                if nf >= cap:
                    return ST_FULL, row, total
                out_idx[nf] = np.uint32(hpart[level] & mask)
                out_val[nf] = vpart[level]
                nf += 1
                total += 1
                at[level] += 1
            else:
                level += 1
                if not permutations and terms[a + level] == terms[a + level - 1]:
                    at[level] = at[level - 1]        # self-interaction: i <= j
                else:
                    at[level] = lo[level]
    if total > limit:
        return ST_TOO_MANY, nf, total
    return ST_DONE, nf, total


@njit(cache=True, nogil=True)
def lowrank_groups(indptr, ns, idx, val, n, group, keep, m, out_ptr, out_idx, out_val):
    """The features of the low-rank namespaces (``streamlearn.features.lowrank``) of examples 0..n-1 of a
    parsed block, gathered by namespace: ``group`` (int64[256]) is the group of each namespace index (-1:
    none), ``m`` the number of groups, ``keep`` the namespaces --ignore/--keep leave. Example e's features
    of group j, in stored order, go to out_*[out_ptr[e*m + j]:out_ptr[e*m + j + 1]] (out_ptr: n*m + 1
    entries, out_idx/out_val as large as the block's features). One pass over each example's features
    counts them by group, a second places them. Returns the number placed."""
    count = np.zeros(max(m, 1), np.int64)
    pos = 0
    out_ptr[0] = 0
    for e in range(n):
        s = indptr[e]
        f = indptr[e + 1]
        for j in range(m):
            count[j] = 0
        for q in range(s, f):
            g = group[ns[q]]
            if g >= 0 and keep[ns[q]] != 0:
                count[g] += 1
        for j in range(m):
            out_ptr[e * m + j] = pos
            pos += count[j]
            count[j] = out_ptr[e * m + j]
        out_ptr[(e + 1) * m] = pos
        for q in range(s, f):
            g = group[ns[q]]
            if g >= 0 and keep[ns[q]] != 0:
                out_idx[count[g]] = idx[q]
                out_val[count[g]] = val[q]
                count[g] += 1
    return pos


@njit(cache=True, nogil=True, inline="always")
def _reset(gid, gorder, ng):
    for j in range(ng):
        gid[gorder[j]] = -1


class Expander:
    """Expands parsed blocks (which must carry ``ns``) as configured; see ``expand_block``.

    ``terms`` are the interaction terms in processing order (tuples of namespace indices), or, when
    some contain the wildcard ':', ``wildcard`` is a function of the set of namespace indices seen
    so far returning that list: it is called again whenever the set grows, at the example that grows
    it (VW recomputes the expansion then). A block is therefore expanded in segments that start at
    such examples: until an eligible namespace is seen the list is empty and even the fixed terms
    generate nothing, so an example must not use namespaces that only later examples bring."""

    def __init__(self, mask: int, keep, linear, ngram, skips, terms=(), permutations=False,
                 wildcard=None, limit: int | None = None, limits=None, lowrank=None):
        self.mask = np.uint64(mask)
        #: --lrq/--lrqfa (``streamlearn.features.lowrank.LowRank``): each block also carries the features
        #: of its namespaces by group (``lowrank_groups``), for the low-rank loop
        self.lowrank = lowrank
        if lowrank is not None:
            self.lr_group = np.full(256, -1, np.int64)
            for j, b in enumerate(lowrank.namespaces):
                self.lr_group[b] = j
        self.keep = np.asarray(keep, np.uint8)
        self.linear = np.asarray(linear, np.uint8)
        self.ngram = np.asarray(ngram, np.int64)
        self.skips = np.asarray(skips, np.int64)
        self.permutations = bool(permutations)
        self.limit = default_example_features() if limit is None else int(limit)
        self.limit_given = limit is not None
        self.limits = np.full(256, -1, np.int64) if limits is None else np.asarray(limits, np.int64)
        self.limited = bool((self.limits >= 0).any())
        self.wildcard = wildcard
        #: the namespace indices a wildcard may stand for: printable ASCII, not ignored
        self.eligible = np.zeros(256, np.bool_)
        self.eligible[0x20:0x7F] = self.keep[0x20:0x7F] != 0
        self.seen: set[int] = set()
        self._set_terms(list(terms) if wildcard is None else wildcard(self.seen))
        self.sidx = np.empty(1 << 12, np.uint32)
        self.sval = np.empty(1 << 12, np.float32)

    def _set_terms(self, terms) -> None:
        """The terms as one flat array and the offsets of each term in it."""
        self.term_ptr = np.cumsum([0] + [len(t) for t in terms], dtype=np.int64)
        self.terms = np.array([b for term in terms for b in term], np.int64)

    def _segment(self, block, start: int) -> int:
        """Grow the set of namespaces seen (printable ASCII, not ignored) with example ``start``'s, and
        the terms with it; the first later example that brings a namespace not seen yet (``block.n``
        if none): examples ``start`` up to it expand with the same terms."""
        indptr, ns = block.indptr, block.ns
        a, b = int(indptr[start]), int(indptr[start + 1])
        eligible = self.eligible.copy()
        eligible[list(self.seen)] = False
        new = {int(g) for g in np.unique(ns[a:b]) if eligible[g]}
        if new:
            self.seen |= new
            self._set_terms(self.wildcard(self.seen))
            eligible[list(new)] = False
        later = np.flatnonzero(eligible[ns[b:int(indptr[block.n])]])
        return block.n if not later.size else int(np.searchsorted(indptr, b + later[0], side="right")) - 1

    def expand(self, block, out):
        """The expanded block, in the arrays of ``out`` (an ``ExpandedOutputs``)."""
        n = block.n
        out.reserve(n, int(block.indptr[n]) * 2 + 16)
        out.indptr[0] = 0
        start = 0
        stop = n if self.wildcard is None or n == 0 else self._segment(block, 0)
        while True:
            status, e, nf = expand_block(block.indptr, block.idx, block.val, block.ns, stop, start,
                                         self.keep, self.linear, self.ngram, self.skips, self.terms,
                                         self.term_ptr, self.permutations, self.mask, self.limit,
                                         out.indptr, out.idx, out.val, out.counts, self.sidx, self.sval,
                                         self.limits, self.limited)
            if status == ST_DONE:
                if stop == n:
                    break
                start = stop
                stop = self._segment(block, start)
                continue
            if status == ST_FULL:
                out.grow_features(max(2 * out.idx.shape[0], nf + 1024), nf)
            elif status == ST_SCRATCH:
                size = 2 * self.sidx.shape[0]
                self.sidx = np.empty(size, np.uint32)
                self.sval = np.empty(size, np.float32)
            else:
                raise ExpansionError(block.source, int(block.lines[e]), self.limit, self.limit_given)
            start = e
        lowrank = None if self.lowrank is None else self._lowrank(block)
        faults, fault_text = block.faults, block.fault_text
        if nf and _max_exponent(out.val[:nf]) == _EXP_MASK:     # an infinite product (rare)
            faults, fault_text = product_faults(out.indptr[:n + 1], out.val[:nf], block.labels, faults,
                                                fault_text)
        return ParsedBlock(block.source, block.labels, block.weights, block.bases, block.lines,
                           out.indptr[:n + 1], out.idx[:nf], out.val[:nf], block.tag_buf,
                           block.tag_s, block.tag_e, faults, fault_text,
                           counts=out.counts[:n], costs=block.costs, lowrank=lowrank)

    def _lowrank(self, block) -> tuple:
        """(ptr, idx, val, pairs) of a block's low-rank groups (new arrays: they live as long as the block)."""
        n = block.n
        m = len(self.lowrank.namespaces)
        total = int(block.indptr[n] - block.indptr[0])
        ptr = np.empty(n * m + 1, np.int64)
        idx = np.empty(total, np.uint32)
        val = np.empty(total, np.float32)
        used = lowrank_groups(block.indptr, block.ns, block.idx, block.val, n, self.lr_group, self.keep, m,
                              ptr, idx, val)
        return ptr, idx[:used], val[:used], self.lowrank.table


_EXP_MASK = np.uint32(0x7F800000)     # float32 exponent bits: all set for inf and NaN


@njit(cache=True, nogil=True)
def _max_exponent(val):
    """The largest exponent field (bits, in place) of a float32 array: ``_EXP_MASK`` when some value
    is infinite or NaN. An integer max, which the compiler vectorises: one cheap pass per block."""
    bits = val.view(np.uint32)
    m = np.uint32(0)
    for i in range(bits.shape[0]):
        b = bits[i] & _EXP_MASK
        if b > m:
            m = b
    return m


def product_faults(indptr, val, labels, faults, fault_text):
    """Interaction products that overflowed float32 (the parsed values are finite, so only a product
    can be infinite): each example holding one becomes a fault of its line, ``E_PRODUCT_RANGE``, as a
    fault in the label part does -- the example is predicted, not learned (its label is set to NaN and
    the infinite values to 0, so its prediction stays finite). An example that already has a fault
    keeps that one (one fault per line). Returns the block's faults and their texts, in example order."""
    bad = ~np.isfinite(val)
    val[bad] = 0.0
    exs = np.unique(np.searchsorted(indptr, np.flatnonzero(bad), side="right") - 1)
    labels[exs] = np.nan
    have = set(faults[:, 0].tolist())
    rows = [list(r) for r in faults.tolist()]
    texts = list(fault_text)
    for ex in exs.tolist():
        if ex not in have:
            rows.append([ex, E_PRODUCT_RANGE, 0, 0])
            texts.append(b"")
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    return (np.array([rows[i] for i in order], np.int64).reshape(-1, 4), [texts[i] for i in order])


class ExpansionError(InputError):
    """An example expands to more features than the limit (raised as an InputError by callers)."""

    def __init__(self, source: str, line: int, limit: int, given: bool = True):
        why = "" if given else (f", the default from the memory: an eighth of the RAM at {BYTES_PER_FEATURE} "
                                f"bytes a feature")
        super().__init__(f"{source} line {line}: the feature interactions would produce more than "
                         f"{limit:,} features for this example (--max-example-features {limit}{why}); raise "
                         f"--max-example-features or use fewer or narrower -q/--cubic/--interactions terms")


class ExpandedOutputs:
    """Reusable output arrays of expanded blocks, grown as needed."""

    def __init__(self):
        self.line_cap = -1
        self.indptr = self.counts = None
        self.idx = np.empty(0, np.uint32)
        self.val = np.empty(0, np.float32)

    def reserve(self, nlines: int, nfeatures: int) -> None:
        if nlines > self.line_cap:
            cap = max(nlines, int(self.line_cap * 1.25))
            self.indptr = np.empty(cap + 1, np.int64)
            self.counts = np.empty(cap, np.int64)
            self.line_cap = cap
        if nfeatures > self.idx.shape[0]:
            self.grow_features(nfeatures, 0)

    def grow_features(self, size: int, keep: int) -> None:
        idx = np.empty(size, np.uint32)
        val = np.empty(size, np.float32)
        idx[:keep] = self.idx[:keep]
        val[:keep] = self.val[:keep]
        self.idx, self.val = idx, val


def make_expander(spec, mask: int, lowrank=None, limit: int | None = None) -> Expander:
    """The Expander for a ``streamlearn.features.expansion.FeatureSpec`` (None: no expansion, with
    ``lowrank``'s groups only). The constant (index 128) is never dropped (VW adds it after --ignore/--keep)
    and never n-grammed. ``limit``: --max-example-features (None: its memory-based default)."""
    if spec is None:
        from streamlearn.features.expansion import FeatureSpec
        spec = FeatureSpec.from_options()
    keep = 1 - np.array(spec.ignore_mask, np.uint8)
    keep[128] = 1
    linear = 1 - np.array(spec.ignore_linear_mask, np.uint8)
    ngram = np.array(spec.ngram_table, np.int64)
    ngram[128] = 0
    skips = np.array(spec.skip_table, np.int64)
    wildcard = spec.expand_terms if spec.wildcards else None
    return Expander(mask, keep, linear, ngram, skips, spec.terms, spec.permutations, wildcard,
                    limit=limit, limits=np.array(spec.limit_table, np.int64), lowrank=lowrank)
