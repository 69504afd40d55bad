"""Python API inputs (issue 24): X, y and sample_weight are checked before any kernel call, with
scikit-learn's exception types and wording, and without needing scikit-learn (streamlearn.api).

Decisions pinned here: a sparse X's index arrays are checked before SciPy or a kernel reads through
them (column or row indices inside the matrix, an indptr of n + 1 non-decreasing entries from 0);
values must be numeric, finite and within float32's range (the learner stores float32: the CLI's rule
for text); y and sample_weight must have one entry per row, be finite (y within float32's range) and
sample_weight non-negative.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.api import check_sample_weight, check_targets, check_X, csr_block, make_config

pytest.importorskip("sklearn")
from streamlearn.estimators import SparseLinearClassifier, SparseLinearRegressor  # noqa: E402

Y3 = np.array([1.0, -1.0, 1.0])


def csr(indices, indptr=(0, 1, 2, 3), data=(1.0, 2.0, 3.0), shape=(3, 4)):
    return sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=shape)


def bad_csr_negative():
    return csr([0, -1, 3])


def bad_csr_wide():
    return csr([0, 1, 4])


def bad_csc_rows():
    return sp.csc_matrix((np.array([1.0, 2.0, 3.0]), np.array([0, 1, 7]), np.array([0, 1, 2, 3, 3])), shape=(3, 4))


def bad_coo_cols():
    X = sp.coo_matrix((np.array([1.0, 2.0, 3.0]), (np.array([0, 1, 2]), np.array([0, 1, 2]))), shape=(3, 4))
    X.col[1] = -3
    return X


def bad_indptr():
    X = csr([0, 1, 2])
    X.indptr = np.array([0, 2, 1, 3], X.indptr.dtype)
    return X


def short_indptr():
    X = csr([0, 1, 2])
    X.indptr = X.indptr[:3]
    return X


MATRIX_CASES = [
    (bad_csr_negative, "Input X has column indices out of range: -1 is not in [0, 4)."),
    (bad_csr_wide, "Input X has column indices out of range: 4 is not in [0, 4)."),
    (bad_csc_rows, "Input X has row indices out of range: 7 is not in [0, 3)."),
    (bad_coo_cols, "Input X has column indices out of range: -3 is not in [0, 4)."),
    (bad_indptr, "Input X has an invalid index pointer (indptr): it must start at 0, never decrease, and end at "
                 "most at the number of stored values (3)."),
    (short_indptr, "Input X has an index pointer (indptr) of 3 entries; expected 4 (one more than its 3 rows)."),
    (lambda: sp.csr_matrix(np.array([[1e39, 0.0], [1.0, 2.0], [3.0, 4.0]])),
     "Input X contains infinity or a value too large for dtype('float32')."),
    (lambda: sp.csr_matrix(np.array([[np.nan, 0.0], [1.0, 2.0], [3.0, 4.0]])), "Input X contains NaN."),
    (lambda: sp.csr_matrix(np.array([[-np.inf, 0.0], [1.0, 2.0], [3.0, 4.0]])),
     "Input X contains infinity or a value too large for dtype('float64')."),
    (lambda: np.array([[1e39, 0.0], [1.0, 2.0], [3.0, 4.0]]),
     "Input X contains infinity or a value too large for dtype('float32')."),
    # a sum of duplicate COO entries that only overflows float32 once summed
    (lambda: sp.coo_matrix((np.array([3e38, 3e38, 1.0]), (np.array([0, 0, 1]), np.array([0, 0, 1]))), shape=(3, 2)),
     "Input X contains infinity or a value too large for dtype('float32')."),
    (lambda: np.array([[1 + 1j, 0], [0, 1], [1, 1]]), "Complex data not supported"),
]


@pytest.mark.parametrize("make, message", MATRIX_CASES)
def test_check_X_messages(make, message):
    with pytest.raises(ValueError) as err:
        check_X(make())
    assert str(err.value) == message


@pytest.mark.parametrize("make, message", MATRIX_CASES)
@pytest.mark.parametrize("estimator", [SparseLinearRegressor, SparseLinearClassifier])
def test_estimators_refuse_bad_matrices(make, message, estimator):
    """Before any kernel call: fit, partial_fit and (on a fitted model) predict; the first two used to
    accept a negative or out-of-shape column index silently (it hashed to some other weight)."""
    with pytest.raises(ValueError, match="^" + message.split(":")[0].split("(")[0].rstrip(". ")):
        estimator().fit(make(), Y3)
    model = estimator().fit(np.eye(3, 4), Y3)
    with pytest.raises(ValueError):
        model.partial_fit(make(), Y3)
    with pytest.raises(ValueError):
        model.predict(make())


def test_csr_block_checks_its_inputs():
    cfg = make_config({})
    with pytest.raises(ValueError, match=r"^Input X has column indices out of range: -1 is not in \[0, 4\)\.$"):
        csr_block(bad_csr_negative(), None, None, cfg)
    with pytest.raises(ValueError, match=r"^Found input variables with inconsistent numbers of samples: \[3, 2\]$"):
        csr_block(csr([0, 1, 2]), [1.0, 2.0], None, cfg)
    block = csr_block(np.array([[1.0, 0.0], [0.0, 2.0]]), [1.0, 2.0], 0.5, cfg, first_row=10)
    assert block.n == 2 and list(block.lines) == [11, 12] and list(block.weights) == [0.5, 0.5]


@pytest.mark.parametrize("y, message", [
    ([1.0, 2.0], "Found input variables with inconsistent numbers of samples: [3, 2]"),
    ([1.0, np.nan, 2.0], "Input y contains NaN."),
    ([1.0, np.inf, 2.0], "Input y contains infinity or a value too large for dtype('float64')."),
    ([1.0, 1e39, 2.0], "Input y contains infinity or a value too large for dtype('float32')."),
    ([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], "y should be a 1d array, got an array of shape (3, 2) instead."),
])
def test_targets(y, message):
    with pytest.raises(ValueError) as err:
        check_targets(y, 3)
    assert str(err.value) == message
    with pytest.raises(ValueError, match="inconsistent|NaN|infinity|1d array"):
        SparseLinearRegressor().fit(np.eye(3, 2), y)


@pytest.mark.parametrize("sw, message", [
    ([1.0, 1.0], "sample_weight.shape == (2,), expected (3,)!"),
    ([1.0, -1.0, 1.0], "Negative values in data passed to `sample_weight`."),
    ([1.0, np.nan, 1.0], "Input sample_weight contains NaN."),
    ([1.0, np.inf, 1.0], "Input sample_weight contains infinity or a value too large for dtype('float64')."),
    ([[1.0], [1.0], [1.0], [1.0]], "Sample weights must be 1D array or scalar"),
])
def test_sample_weight(sw, message):
    with pytest.raises(ValueError) as err:
        check_sample_weight(sw, 3)
    assert str(err.value) == message
    for estimator in (SparseLinearRegressor, SparseLinearClassifier):
        with pytest.raises(ValueError) as err:
            estimator().fit(np.eye(3, 2), Y3, sample_weight=sw)
        assert str(err.value) == message


def test_valid_inputs_are_unchanged():
    """Checked inputs train exactly as before: CSR, CSC, COO and dense give one model; a scalar
    sample_weight is that weight for every row."""
    rng = np.random.default_rng(0)
    dense = np.where(rng.random((40, 6)) < 0.4, rng.normal(size=(40, 6)), 0.0)
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    ref = SparseLinearRegressor().fit(sp.csr_matrix(dense), y).weights_.toarray()
    for X in (sp.csc_matrix(dense), sp.coo_matrix(dense), dense):
        assert np.array_equal(SparseLinearRegressor().fit(X, y).weights_.toarray(), ref)
    a = SparseLinearRegressor().fit(dense, y, sample_weight=2.0).weights_.toarray()
    b = SparseLinearRegressor().fit(dense, y, sample_weight=np.full(40, 2.0)).weights_.toarray()
    assert np.array_equal(a, b)


def test_checks_need_no_sklearn():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "import numpy as np, scipy.sparse as sp\n"
            "from streamlearn.api import check_X\n"
            "X = sp.csr_matrix((np.ones(1), np.array([-2]), np.array([0, 1])), shape=(1, 3))\n"
            "try:\n    check_X(X)\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "Input X has column indices out of range: -2 is not in [0, 3).", out.stderr


@pytest.mark.parametrize("kw, message", [
    (dict(y=float("inf")), "Input y contains infinity or a value too large for dtype('float64')."),
    (dict(y=1e39), "Input y contains infinity or a value too large for dtype('float32')."),
    (dict(y=float("nan")), "Input y contains NaN."),
    (dict(y=1.0, weight=-1.0), "Negative values in data passed to `weights`."),
    (dict(y=1.0, weight=float("nan")), "Input weights contains NaN."),
])
def test_online_model_labels_and_weights(kw, message):
    """streamlearn.Model: a y or weight given in Python follows the CLI's rules for a label and an
    importance (finite, within float32, non-negative), checked before the kernel; the model is untouched."""
    from streamlearn import Model
    m = Model()
    with pytest.raises(ValueError) as err:
        m.learn_one("| a b", **kw)
    assert str(err.value) == message
    assert m.weights() == {}


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e39, -3.5e38])
def test_online_dict_values(value):
    from streamlearn import Model
    with pytest.raises(ValueError) as err:
        Model().learn_one({"a": {"x": value}}, y=1.0)
    assert str(err.value) == (f"namespace 'a', feature 'x': value {value!r} is not a finite number within "
                              f"float32's range (+-3.4e38)")


def _matrix_strategy():
    vals = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e39, -3.5e38, 3e38, 0.0, 1.0]))
    return st.tuples(
        st.lists(st.integers(-3, 6), min_size=0, max_size=8),          # indices
        st.lists(vals, min_size=0, max_size=8),                         # data
        st.lists(st.integers(-1, 9), min_size=1, max_size=5),           # indptr
        st.sampled_from(["csr", "csc"]),
    )


@settings(max_examples=60, deadline=None)
@given(parts=_matrix_strategy())
def test_any_matrix_is_refused_or_trains_finite(parts):
    """Arbitrary (often inconsistent) compressed-matrix arrays: a ValueError, or a fitted model whose
    weights are all finite; never another exception, never a signal."""
    indices, data, indptr, fmt = parts
    n = max(len(indptr) - 1, 0)
    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    shape = (n, 4) if fmt == "csr" else (4, n)
    try:
        X = cls((np.array(data, np.float64), np.array(indices, np.int64), np.array(indptr, np.int64)), shape=shape)
    except (ValueError, TypeError, IndexError):
        return          # SciPy refused to build it
    rows = X.shape[0]
    y = np.where(np.arange(rows) % 2 == 0, 1.0, -1.0)
    try:
        model = SparseLinearRegressor(bits=10).fit(X, y)
    except ValueError:
        return
    assert np.all(np.isfinite(model.weights_.data))
