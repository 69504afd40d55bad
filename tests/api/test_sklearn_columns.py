"""The scikit-learn estimators and X's columns (issue 29): ``bits=None`` chooses enough bits for the
columns, a ``bits`` that folds columns together warns with the count of columns sharing a weight,
``coef_`` shows each weight of the model once (checked against a slow per-column reference), and
``sample_weight`` is an importance weight as the declared expected failures say."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.utils.estimator_checks import (check_sample_weight_equivalence_on_dense_data,  # noqa: E402
                                            check_sample_weight_equivalence_on_sparse_data)

from support.helpers import cli  # noqa: E402
from streamlearn import estimators  # noqa: E402
from streamlearn.estimators import (EXPECTED_FAILED_CHECKS, HashCollisionWarning, SparseLinearClassifier,  # noqa: E402
                                    SparseLinearRegressor, expected_failed_checks)
from streamlearn.features.hashing import CONSTANT_RAW_INDEX, feature_index  # noqa: E402


# ---------------------------------------------------------------------- slow references

def slots_reference(n_columns, bits, classes=0, hash="strings", column_offset=0):
    """{column: [its slot of each class]}: VW's index of the LIBSVM feature j + column_offset in the
    default namespace, class k of index h at (h*W + k) mod 2^bits (W the power of two >= K)."""
    width = 1
    while width < classes:
        width *= 2
    mask = (1 << bits) - 1
    out = {}
    for j in range(n_columns):
        h = feature_index(" ", str(j + column_offset), bits, 0, hash)
        out[j] = [(h * width + k) & mask for k in range(max(classes, 1))]
    return out


def shared_reference(slots):
    """How many columns have a slot that another column has too."""
    owners = {}
    for j, ss in slots.items():
        for s in ss:
            owners.setdefault(s, set()).add(j)
    return sum(1 for j, ss in slots.items() if any(len(owners[s]) > 1 for s in ss))


def coef_reference(est, n_columns):
    """coef_ by its definition: each non-zero weight once, at the lowest column holding its slot,
    never at a column on a constant's slot (that weight is intercept_)."""
    cfg = est.engine_.cfg
    classes = cfg.classes
    slots = slots_reference(n_columns, cfg.bits, classes, cfg.hash, est.column_offset)
    weights = dict(zip(*(a.tolist() for a in (est.weights_.indices, est.weights_.data))))
    width = cfg.class_width
    const = CONSTANT_RAW_INDEX & ((1 << cfg.bits) - 1)
    const_slots = set() if cfg.noconstant else {(const * width + k) & ((1 << cfg.bits) - 1)
                                                for k in range(max(classes, 1))}
    out = np.zeros((max(classes, 1), n_columns))
    shown = set()
    for k in range(max(classes, 1)):
        for j in range(n_columns):
            s = slots[j][k]
            if s in const_slots or s in shown or weights.get(s, 0.0) == 0.0:
                continue
            shown.add(s)
            out[k, j] = weights[s]
    return out


def text(n=400, vocabulary=3000, seed=0, classes=2):
    """Short documents: random words from a large vocabulary plus two words telling the class."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(vocabulary)])
    y = rng.integers(0, classes, n)
    docs = [" ".join([*rng.choice(words, 12), f"topic{c}", f"cue{c}"]) for c in y]
    return docs, y


def sparse_X(n, d, seed=0, density=0.05):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    y = (X @ rng.normal(size=d) > 0).astype(int)
    return X, y


# ---------------------------------------------------------------------- counting shared columns

@pytest.mark.parametrize("n_columns, bits, classes, hash, offset", [
    (300, 8, 0, "strings", 0),      # more columns than weights
    (256, 8, 0, "strings", 0),      # exactly as many: none shared
    (200, 8, 3, "strings", 0),      # W = 4 slots per row: 64 rows
    (60, 8, 3, "strings", 5),       # fits, with an offset
    (300, 10, 0, "all", 0),         # murmur of the names: random collisions
    (120, 9, 5, "all", 1),
])
def test_shared_column_count_equals_the_reference(n_columns, bits, classes, hash, offset):
    X, y = sparse_X(5 * n_columns, n_columns, density=0.02)
    if classes:
        y = np.arange(X.shape[0]) % classes
    expected = shared_reference(slots_reference(n_columns, bits, classes, hash, offset))
    est = SparseLinearClassifier(bits=bits, hash=hash, column_offset=offset)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    shown = [w for w in caught if issubclass(w.category, HashCollisionWarning)]
    assert est.n_shared_columns_ == expected and est.bits_ == bits
    if expected:
        assert len(shown) == 1
        assert f"{expected:,} of the {n_columns:,} columns of X share a weight" in str(shown[0].message)
    else:
        assert not shown
    np.testing.assert_array_equal(est.coef_.toarray(), coef_reference(est, n_columns))
    assert est.coef_.nnz + np.count_nonzero(est.intercept_) == est.n_nonzero_


def test_bits_none_picks_the_smallest_bits_without_shared_columns(monkeypatch):
    """bits=None: the CLI's 18 while the columns fit, else the smallest bits at which none share a
    weight (per class); the model is then the one of that bits given explicitly."""
    X, y = sparse_X(200, 40)
    est = SparseLinearClassifier()
    assert est.get_params()["bits"] is None and clone(est).bits is None
    assert est.fit(X, y).bits_ == 18 and est.n_shared_columns_ == 0 and est.bits is None
    # a smaller default and cap to keep the test small: 2^5 = 32 rows for 40 columns
    monkeypatch.setattr(estimators, "AUTO_BITS_MAX", 9)
    monkeypatch.setattr(estimators, "make_config", _default_bits(5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", HashCollisionWarning)
        auto = SparseLinearClassifier().fit(X, y)
        assert auto.bits_ == 6 and auto.n_shared_columns_ == 0
        y3 = np.arange(200) % 3                 # W = 4: 40 columns need 160 slots
        multi = SparseLinearClassifier().fit(X, y3)
        assert multi.bits_ == 8 and multi.n_shared_columns_ == 0
    assert auto.to_bytes() == SparseLinearClassifier(bits=6).fit(X, y).to_bytes()
    assert shared_reference(slots_reference(40, 5)) > 0 and shared_reference(slots_reference(40, 7, 3)) > 0
    # the cap reached: the largest automatic bits, with the warning
    monkeypatch.setattr(estimators, "AUTO_BITS_MAX", 7)
    with pytest.warns(HashCollisionWarning, match=r"bits=None chose the largest automatic bits, 7 .*bits=8 "
                                                  r"gives every column its own"):
        capped = SparseLinearClassifier().fit(X, y3)
    assert capped.bits_ == 7 and capped.n_shared_columns_ == shared_reference(slots_reference(40, 7, 3))


def _default_bits(bits):
    """make_config with another CLI default of bits (for small tables in tests)."""
    real = estimators.make_config

    def make_config(options, *args):
        return real({**options, "bits": options.get("bits") or bits}, *args)
    return make_config


# ---------------------------------------------------------------------- TfidfVectorizer pipelines

def test_tfidf_pipeline_with_more_columns_than_bits_warns_with_the_count():
    docs, y = text()
    pipe = make_pipeline(TfidfVectorizer(), SparseLinearClassifier(bits=10, algo="tg", l1=1e-4))
    with pytest.warns(HashCollisionWarning) as caught:
        pipe.fit(docs, y)
    est, d = pipe[-1], len(pipe[0].vocabulary_)
    assert d > 1 << 10
    expected = shared_reference(slots_reference(d, 10))
    assert est.n_shared_columns_ == expected == d        # 1,024 weights for ~2,800 columns: all shared
    need = (d - 1).bit_length()         # column j is row j: d rows needed
    assert f"{expected:,} of the {d:,} columns of X share a weight with another column: bits=10 gives 1,024 " \
           f"weights; bits={need} gives every column its own" in str(caught[0].message)
    coef = est.coef_
    assert coef.nnz + np.count_nonzero(est.intercept_) == est.n_nonzero_
    np.testing.assert_array_equal(coef.toarray(), coef_reference(est, d))
    assert coef.nnz <= 1 << 10      # never more non-zeros than the model has weights


def test_tfidf_pipeline_bits_none_gives_every_column_its_weight():
    """More columns than 2^18 (unigrams and bigrams of 5,000 documents): bits=None picks 19, no
    warning, and coef_ is the model: its non-zeros are the model's, X @ coef_ + intercept_ its scores."""
    rng = np.random.default_rng(1)
    words = np.array([f"w{i}" for i in range(20000)])
    y = rng.integers(0, 2, 5000)
    docs = [" ".join([*rng.choice(words, 60), f"cue{c}"]) for c in y]
    pipe = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), SparseLinearClassifier(algo="tg", l1=1e-5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", HashCollisionWarning)
        pipe.fit(docs, y)
    est, d = pipe[-1], len(pipe[0].vocabulary_)
    assert d > 1 << 18 and est.bits_ == 19 and est.n_shared_columns_ == 0
    coef = est.coef_
    assert coef.nnz + np.count_nonzero(est.intercept_) == est.n_nonzero_ > 1000
    X = pipe[0].transform(docs[:300])
    np.testing.assert_allclose(X @ coef.toarray()[0] + est.intercept_[0], est.decision_function(X),
                               rtol=1e-5, atol=1e-6)


def test_multiclass_coef_shows_each_weight_once():
    docs, y = text(n=300, vocabulary=600, classes=5)
    pipe = make_pipeline(TfidfVectorizer(), SparseLinearClassifier(bits=11))   # 256 rows x 8 slots
    with pytest.warns(HashCollisionWarning, match="weights per class \\(x 8 slots for 5 classes\\)"):
        pipe.fit(docs, y)
    est, d = pipe[-1], len(pipe[0].vocabulary_)
    assert est.n_shared_columns_ == shared_reference(slots_reference(d, 11, 5)) > 0
    np.testing.assert_array_equal(est.coef_.toarray(), coef_reference(est, d))
    assert est.coef_.nnz + np.count_nonzero(est.intercept_) == est.n_nonzero_


def test_a_column_on_the_constants_slot_shows_zero_and_its_weight_is_the_intercept():
    """At bits=8 the constant is row 92 (11650396 mod 256): column 92 shares its weight. coef_ shows
    it in intercept_ only (no warning: the CLI reads LIBSVM so too); with noconstant it is the column's."""
    const = CONSTANT_RAW_INDEX & 255
    X, y = sparse_X(400, 120, density=0.1)
    X = X.tolil()
    X[:, const] = 1.0
    X = X.tocsr()
    with warnings.catch_warnings():
        warnings.simplefilter("error", HashCollisionWarning)
        est = SparseLinearClassifier(bits=8).fit(X, y)
        plain = SparseLinearClassifier(bits=8, noconstant=True).fit(X, y)
    slot_weight = est.weights_[0, const]
    assert slot_weight != 0 and est.intercept_[0] == slot_weight and est.coef_[0, const] == 0
    assert est.coef_.nnz + 1 == est.n_nonzero_
    assert plain.intercept_[0] == 0 and plain.coef_[0, const] == plain.weights_[0, const] != 0
    assert plain.coef_.nnz == plain.n_nonzero_


def test_regressor_shares_the_rules():
    X, _ = sparse_X(300, 200, density=0.05)
    y = np.asarray(X.sum(axis=1)).ravel()
    with pytest.warns(HashCollisionWarning, match="200 columns of X"):
        est = SparseLinearRegressor(bits=7).fit(X, y)
    assert est.n_shared_columns_ == shared_reference(slots_reference(200, 7)) == 2 * (200 - 128)
    np.testing.assert_array_equal(est.coef_.toarray(), coef_reference(est, 200))
    assert SparseLinearRegressor().fit(X, y).bits_ == 18


def test_partial_fit_chooses_bits_on_the_first_call(monkeypatch):
    monkeypatch.setattr(estimators, "make_config", _default_bits(5))
    X, y = sparse_X(200, 40)
    est = SparseLinearClassifier()
    for s in range(0, 200, 50):
        est.partial_fit(X[s:s + 50], y[s:s + 50], classes=[0, 1])
    assert est.bits_ == 6 and est.to_bytes() == SparseLinearClassifier(bits=6).fit(X, y).to_bytes()
    with pytest.warns(HashCollisionWarning, match="16 of the 40 columns"):
        SparseLinearRegressor(bits=5).partial_fit(X[:50], y[:50].astype(float))


# ---------------------------------------------------------------------- sample_weight: an importance weight

def test_expected_failed_checks_are_the_sample_weight_checks_and_they_fail():
    """The declaration is exact: the two checks fail (an importance weight is not repetition), and
    parametrize_with_checks in tests/api/test_api.py runs every other check strictly."""
    assert set(EXPECTED_FAILED_CHECKS) == {"check_sample_weight_equivalence_on_dense_data",
                                           "check_sample_weight_equivalence_on_sparse_data"}
    assert expected_failed_checks(SparseLinearRegressor()) == EXPECTED_FAILED_CHECKS
    assert "importance weight" in EXPECTED_FAILED_CHECKS["check_sample_weight_equivalence_on_dense_data"]
    for check in (check_sample_weight_equivalence_on_dense_data, check_sample_weight_equivalence_on_sparse_data):
        with pytest.raises(AssertionError):
            check("SparseLinearClassifier", SparseLinearClassifier())


def test_sample_weight_is_the_clis_importance(tmp_path):
    """fit with sample_weight h is train on the VW lines with importance h: not the row repeated."""
    X, y = sparse_X(200, 30, density=0.2)
    X.data = np.round(X.data * 8) / 8 + 0.125       # values a float32 holds exactly (text and matrix agree)
    sw = np.where(np.arange(200) % 3 == 0, 2.0, 1.0)
    est = SparseLinearClassifier().fit(X, y, sample_weight=sw)
    lines = []
    for i in range(200):
        row = X[i]
        feats = " ".join(f"{j}:{v}" for j, v in zip(row.indices, row.data))
        lines.append(f"{1 if y[i] == 1 else -1} {sw[i]:g} | {feats}\n")
    (tmp_path / "d.vw").write_text("".join(lines))
    cli("train", "-d", tmp_path / "d.vw", "--loss", "logistic", "-f", tmp_path / "m", "--quiet")
    assert est.to_bytes() == (tmp_path / "m").read_bytes()
    twice = np.repeat(np.arange(200), sw.astype(int))
    repeated = SparseLinearClassifier().fit(X[twice], y[twice])
    assert not np.allclose(repeated.decision_function(X), est.decision_function(X))
