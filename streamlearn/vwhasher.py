"""``VWHasher``: dicts or token lists to a CSR matrix with VW's feature indices (needs scikit-learn).

Stateless, like ``sklearn.feature_extraction.FeatureHasher``: a row is

* a dict ``{namespace: {feature: value}}`` or ``{namespace: [features]}`` (value 1 each),
* with ``namespace`` given, a dict ``{feature: value}``, or
* a list of tokens (features of value 1) in ``namespace`` (the default namespace ``" "`` when None),

and feature f of namespace ns goes to column ``streamlearn.features.hashing.feature_index(ns, f, bits, hash_seed,
hash)`` of an (n, 2^bits) CSR matrix. Entries keep the order of the features (the order of a VW line);
a feature given twice in a row is summed into one entry; there is no constant column (the estimator
adds it, as the CLI does).

``make_pipeline(VWHasher(bits=18, namespace="w"), SparseLinearClassifier(bits=18))`` then learns what
``streamlearn train -b 18`` learns on the lines ``label |w tokens`` (without repeated tokens): the
estimator maps column j to the weight row of LIBSVM's feature j, which is row j with ``hash_seed=0``.
With another ``hash_seed`` the estimator's rows are ``(j + h) & mask``, h the seeded hash of the default
namespace, and the equality does not hold (``SparseLinearClassifier(hash_seed=0)`` with any hasher seed
keeps column j at row j).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from streamlearn.features.hashing import feature_index


class VWHasher(TransformerMixin, BaseEstimator):
    """Rows of dicts or token lists to CSR with VW's indices (module docstring)."""

    def __init__(self, bits: int = 18, hash_seed: int = 0, hash: str = "strings", namespace=None):
        self.bits = bits
        self.hash_seed = hash_seed
        self.hash = hash
        self.namespace = namespace

    def fit(self, X=None, y=None):
        self._check()
        return self

    def _check(self):
        from streamlearn.features.hashing import HASH_MODES
        if not isinstance(self.bits, (int, np.integer)) or not 1 <= int(self.bits) <= 32:
            raise ValueError(f"bits must be an integer in 1..32, not {self.bits!r}")
        if self.hash not in HASH_MODES:
            raise ValueError(f"hash must be one of {', '.join(sorted(HASH_MODES))}, not {self.hash!r}")

    def _items(self, row):
        """(namespace, feature, value) of a row, in order."""
        default = " " if self.namespace is None else self.namespace
        if isinstance(row, str):
            row = row.split()
        if isinstance(row, dict):
            nested = self.namespace is None or any(isinstance(v, (dict, list, tuple, set, frozenset))
                                                   for v in row.values())
            if nested:
                for ns, feats in row.items():
                    ns = " " if ns in (None, "") else ns
                    if isinstance(feats, dict):
                        for f, v in feats.items():
                            yield ns, f, v
                    else:
                        for f in feats:
                            yield ns, f, 1.0
            else:
                for f, v in row.items():
                    yield default, f, v
        else:
            for f in row:
                yield default, f, 1.0

    def transform(self, X):
        import scipy.sparse as sp
        self._check()
        bits, seed, mode = int(self.bits), int(self.hash_seed), self.hash
        cache: dict = {}
        indptr = [0]
        indices: list[int] = []
        data: list[float] = []
        for row in X:
            pos: dict[int, int] = {}
            for ns, f, v in self._items(row):
                key = (ns, f)
                j = cache.get(key)
                if j is None:
                    j = cache[key] = feature_index(str(ns), str(f), bits, seed, mode)
                v = float(np.float32(v))
                if j in pos:
                    data[pos[j]] += v
                else:
                    pos[j] = len(indices)
                    indices.append(j)
                    data.append(v)
            indptr.append(len(indices))
        n = len(indptr) - 1
        return sp.csr_matrix((np.asarray(data, np.float64), np.asarray(indices, np.int64),
                              np.asarray(indptr, np.int64)), shape=(n, 1 << bits))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.requires_fit = False
        return tags
