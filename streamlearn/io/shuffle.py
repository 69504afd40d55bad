"""``--shuffle``: the passes after the first visit the cached examples in a seeded random order, the
papers' uniform sampling of examples for multi-pass runs (Shalev-Shwartz & Tewari 2009, Algorithm 3,
"sample i uniformly at random"; here without replacement, one permutation per pass).

The examples are held in memory (CSR) for the shuffled passes. Held-out examples keep their
positions (only the positions that are trained on are permuted), so the holdout set and its loss are
the same every pass."""

from __future__ import annotations

import numpy as np

from streamlearn.io.blocks import ParsedBlock

BLOCK_EXAMPLES = 1 << 16


class ShuffledExamples:
    """All examples of the cached blocks, to be served in a new order every pass."""

    def __init__(self, blocks, source: str):
        parts = {k: [] for k in ("labels", "weights", "bases", "lines", "idx", "val", "tag_s", "tag_e",
                                 "lengths")}
        tags = []
        tag_len = 0
        for b in blocks:
            for k in ("labels", "weights", "bases", "lines", "idx", "val"):
                parts[k].append(getattr(b, k).copy())
            parts["lengths"].append(np.diff(b.indptr))
            parts["tag_s"].append(b.tag_s.astype(np.int64) + tag_len)
            parts["tag_e"].append(b.tag_e.astype(np.int64) + tag_len)
            tags.append(np.asarray(b.tag_buf).copy())
            tag_len += tags[-1].shape[0]
        cat = {k: (np.concatenate(v) if v else np.empty(0)) for k, v in parts.items()}
        self.source = source
        self.labels, self.weights, self.bases = cat["labels"], cat["weights"], cat["bases"]
        self.lines = cat["lines"]
        self.idx, self.val = cat["idx"], cat["val"]
        self.lengths = cat["lengths"].astype(np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.tag_s, self.tag_e = cat["tag_s"].astype(np.int64), cat["tag_e"].astype(np.int64)
        self.tag_buf = np.concatenate(tags) if tags else np.empty(0, np.uint8)
        self.n = self.labels.shape[0]

    def order(self, rng: np.random.Generator, holdout_period: int) -> np.ndarray:
        """A permutation of the examples that leaves every held-out position where it is
        (``holdout_period`` -N: the examples after the N-th are held out, --holdout-after)."""
        order = np.arange(self.n)
        if holdout_period > 0:
            train = np.flatnonzero((order + 1) % holdout_period != 0)
        elif holdout_period < 0:
            train = order[:-holdout_period]
        else:
            train = order
        order[train] = rng.permutation(train)
        return order

    def blocks(self, order: np.ndarray):
        """The examples in ``order``, as parsed blocks of up to BLOCK_EXAMPLES examples."""
        for s in range(0, order.shape[0], BLOCK_EXAMPLES):
            sel = order[s:s + BLOCK_EXAMPLES]
            lengths = self.lengths[sel]
            indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            within = np.arange(indptr[-1]) - np.repeat(indptr[:-1], lengths)
            entries = np.repeat(self.starts[sel], lengths) + within
            yield ParsedBlock(self.source, self.labels[sel], self.weights[sel], self.bases[sel],
                              self.lines[sel], indptr, self.idx[entries], self.val[entries], self.tag_buf,
                              self.tag_s[sel], self.tag_e[sel], np.zeros((0, 4), np.int64), [])
