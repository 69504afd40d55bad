"""VW's ``--interact ab`` (interact.cc), compiled: the features of namespace a become their
element-wise products with those of namespace b, and b's features are dropped.

Each of the two namespaces must start with an anchor feature of value 1; a feature's position is its
index's offset from its namespace's anchor, ``(index - anchor) & mask``. Walking both namespaces in
stored order, the features at equal offsets are multiplied (a's index, the float32 product of the
values); the anchor's product comes first. An example lacking either namespace or an anchor of value
1 is left as it is (VW logs an error); the walk stops at the first offset smaller than the one before
it on either side (VW: "interact features are out of order"), keeping the products so far. The
products take the place of a's features, the other features keep their order, and the reports count
the example's features as parsed (VW restores ``num_features``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import njit

#: per-example outcome of ``interact_block``
IA_DONE = 0          # a's features are the products
IA_MISSING = 1       # a namespace is absent: the example is unchanged
IA_ANCHOR_A = 2      # a's first feature has a value other than 1: unchanged
IA_ANCHOR_B = 3      # b's first feature likewise
IA_ORDER = 4         # the walk stopped at a feature out of order (the products before it are kept)


@njit(cache=True, nogil=True)
def interact_block(indptr, idx, val, ns, n, n1, n2, mask, out_indptr, out_idx, out_val, out_ns, counts,
                   status):
    """Examples 0..n-1 of a parsed block (CSR with namespace indices ``ns``) with namespaces n1 and
    n2 interacted, into the ``out_*`` arrays (as large as the input's); ``counts``: each example's
    parsed feature count; ``status``: each example's ``IA_*`` outcome."""
    pos = 0
    p1 = np.empty(64, np.int64)
    p2 = np.empty(64, np.int64)
    for e in range(n):
        a, b = indptr[e], indptr[e + 1]
        counts[e] = b - a
        out_indptr[e] = pos
        if b - a > p1.shape[0]:
            p1 = np.empty(2 * (b - a), np.int64)
            p2 = np.empty(2 * (b - a), np.int64)
        k1 = 0
        k2 = 0
        for j in range(a, b):
            if ns[j] == n1:
                p1[k1] = j
                k1 += 1
            elif ns[j] == n2:
                p2[k2] = j
                k2 += 1
        st = IA_DONE
        if k1 == 0 or k2 == 0:
            st = IA_MISSING
        elif val[p1[0]] != 1.0:
            st = IA_ANCHOR_A
        elif val[p2[0]] != 1.0:
            st = IA_ANCHOR_B
        if st != IA_DONE:
            for j in range(a, b):
                out_idx[pos] = idx[j]
                out_val[pos] = val[j]
                out_ns[pos] = ns[j]
                pos += 1
            status[e] = st
            out_indptr[e + 1] = pos
            continue
        for j in range(a, b):
            if ns[j] == n2:
                continue
            if ns[j] != n1:
                out_idx[pos] = idx[j]
                out_val[pos] = val[j]
                out_ns[pos] = ns[j]
                pos += 1
                continue
            if j != p1[0]:
                continue
            # the products, where a's features were
            base1 = np.int64(idx[p1[0]]) & mask
            base2 = np.int64(idx[p2[0]]) & mask
            out_idx[pos] = idx[p1[0]]
            out_val[pos] = val[p1[0]] * val[p2[0]]
            out_ns[pos] = n1
            pos += 1
            i1 = 1
            i2 = 1
            prev1 = 0
            prev2 = 0
            while i1 < k1 and i2 < k2:
                c1 = ((np.int64(idx[p1[i1]]) & mask) - base1) & mask
                c2 = ((np.int64(idx[p2[i2]]) & mask) - base2) & mask
                if c1 < prev1 or c2 < prev2:
                    st = IA_ORDER
                    break
                if c1 == c2:
                    out_idx[pos] = idx[p1[i1]]
                    out_val[pos] = val[p1[i1]] * val[p2[i2]]
                    out_ns[pos] = n1
                    pos += 1
                    i1 += 1
                    i2 += 1
                elif c1 < c2:
                    i1 += 1
                else:
                    i2 += 1
                prev1 = c1
                prev2 = c2
        status[e] = st
        out_indptr[e + 1] = pos
    out_indptr[n] = pos
    return pos


def interact(block, pair: bytes, mask: int):
    """The block with --interact ``pair`` applied (its ``ns`` needed), and each example's outcome."""
    n = block.n
    nf = int(block.indptr[n]) if n else 0
    out_indptr = np.empty(n + 1, np.int64)
    out_idx = np.empty(nf, np.uint32)
    out_val = np.empty(nf, np.float32)
    out_ns = np.empty(nf, np.uint8)
    counts = np.empty(n, np.int64)
    status = np.zeros(n, np.int8)
    out_indptr[0] = 0
    m = interact_block(block.indptr, block.idx, block.val, block.ns, n, pair[0], pair[1], mask, out_indptr,
                       out_idx, out_val, out_ns, counts, status)
    parsed = block.counts if block.counts is not None else counts
    return replace(block, indptr=out_indptr, idx=out_idx[:m], val=out_val[:m], ns=out_ns[:m],
                   counts=parsed), status
