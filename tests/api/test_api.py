"""The scikit-learn estimators (streamlearn.estimators): scikit-learn's conformance checks, and
equality with the CLI (fit == train byte for byte, chunked partial_fit == fit, predictions both ways)."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")

from sklearn.datasets import dump_svmlight_file, make_classification, make_regression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from support.helpers import cli  # noqa: E402
from streamlearn.estimators import SparseLinearClassifier, SparseLinearRegressor, expected_failed_checks  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------- scikit-learn's checks

#: one instance per learner, and the regressor with the squared and the quantile loss (the suite's
#: time is bounded, and every check runs ~64 times per instance: the learners' other losses and
#: options are covered by the equality tests below). eg is checked as a classifier only: its weights
#: live on a scaled simplex, and one pass at any rate tried stays at R^2 ~ 0 on
#: check_regressors_train's data, far below its 0.5.
CHECKED = [
    SparseLinearClassifier(),
    SparseLinearClassifier(algo="tg", l1=1e-4),
    SparseLinearClassifier(algo="fobos", l1=1e-4),
    SparseLinearClassifier(algo="l1ball", radius=10.0),
    SparseLinearClassifier(algo="eg", radius=10.0),
    SparseLinearClassifier(algo="smidas"),
    SparseLinearClassifier(algo="rounding", threshold=1e-3),
    SparseLinearClassifier(algo="subgradient", l1=1e-4),
    SparseLinearClassifier(algo="ftrl"),
    SparseLinearClassifier(algo="gravity", l1=1e-4),
    SparseLinearClassifier(algo="pegasos", l2=1e-3),
    SparseLinearClassifier(loss="softmax"),
    SparseLinearRegressor(),
    SparseLinearRegressor(loss="quantile"),
]


#: the two checks scikit-learn expects to fail for its SGDClassifier (sample_weight is an importance
#: weight), declared by the package (``streamlearn.estimators.EXPECTED_FAILED_CHECKS``); strict: a check
#: declared so that passed would fail the test
@parametrize_with_checks(CHECKED, expected_failed_checks=expected_failed_checks, xfail_strict=True)
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_binary_only_learners_say_so():
    X, y = make_classification(60, 5, n_informative=3, n_classes=3, random_state=0)
    for algo, extra in (("eg", dict(radius=10.0)), ("smidas", {}), ("l1ball", dict(radius=10.0))):
        est = SparseLinearClassifier(algo=algo, **extra)
        assert not est.__sklearn_tags__().classifier_tags.multi_class
        with pytest.raises(ValueError, match=f"Only binary classification is supported by --algo {algo}"):
            est.fit(X, y)
    assert SparseLinearClassifier(algo="tg", l1=1e-4).__sklearn_tags__().classifier_tags.multi_class


# ---------------------------------------------------------------------- data

def sparse_classification(n=300, d=40, classes=2, seed=0):
    X, y = make_classification(n, d, n_informative=8, n_classes=classes, n_clusters_per_class=1, random_state=seed)
    X[np.abs(X) < 0.8] = 0.0            # sparse rows, some all-zero columns values
    return sp.csr_matrix(X), y


def write_libsvm(path, X, y):
    dump_svmlight_file(X, y, str(path), zero_based=True)
    return path


def cli_model(tmp_path, X, y, *opts):
    data = write_libsvm(tmp_path / "d.libsvm", X, y)
    cli("train", "-d", data, "-f", tmp_path / "cli.model", "--quiet", *opts)
    return (tmp_path / "cli.model").read_bytes()


# ---------------------------------------------------------------------- fit == the CLI

def test_passes_and_objective_equal_the_clis(tmp_path):
    """``passes`` with ``objective=True``: the model of ``train --passes 3 --holdout-off`` and its
    ``--objective`` line after every pass (value and data accesses)."""
    X, y = sparse_classification()
    est = SparseLinearClassifier(algo="tg", l1=1e-3, passes=3, objective=True).fit(X, y)
    labels = np.where(y == est.classes_[1], 1, -1)
    data = write_libsvm(tmp_path / "d.libsvm", X, labels)
    res = cli("train", "-d", data, "-f", tmp_path / "cli.model", "--loss", "logistic", "--algo", "tg",
              "--l1", "1e-3", "--passes", 3, "--holdout-off", "--objective", "--quiet")
    assert est.to_bytes() == (tmp_path / "cli.model").read_bytes()
    shown = re.findall(r"objective after pass \d+ \(training examples\): (\S+) .*data accesses = (\d+)",
                       res.output)
    assert len(shown) == 3 and len(est.objective_) == 3
    for (value, accesses), got in zip(shown, est.objective_):
        assert f"{got['objective']:.12g}" == value and got["accesses"] == int(accesses)
    assert est.objective_[2]["objective"] < est.objective_[0]["objective"]


@pytest.mark.parametrize("params, opts", [
    ({}, ["--loss", "logistic"]),
    (dict(algo="tg", l1=1e-3), ["--loss", "logistic", "--algo", "tg", "--l1", "1e-3"]),
    (dict(algo="fobos", reg="elastic", l1=1e-3, l2=1e-3),
     ["--loss", "logistic", "--algo", "fobos", "--reg", "elastic", "--l1", "1e-3", "--l2", "1e-3"]),
    (dict(algo="ftrl", l1=1e-3), ["--loss", "logistic", "--algo", "ftrl", "--l1", "1e-3"]),
    (dict(algo="l1ball", radius=5.0), ["--loss", "logistic", "--algo", "l1ball", "--radius", "5"]),
    (dict(algo="smidas", l1=1e-3), ["--loss", "logistic", "--algo", "smidas", "--l1", "1e-3"]),
    (dict(loss="hinge", bits=12), ["--loss", "hinge", "-b", "12"]),
])
def test_fit_equals_cli_byte_for_byte(tmp_path, params, opts):
    X, y = sparse_classification()
    est = SparseLinearClassifier(**params).fit(X, y)
    labels = np.where(y == est.classes_[1], 1, -1)
    assert est.to_bytes() == cli_model(tmp_path, X, labels, *opts)


def test_oaa_fit_equals_cli(tmp_path):
    X, y = sparse_classification(classes=3)
    est = SparseLinearClassifier(algo="tg", l1=1e-3).fit(X, y + 5)       # classes 5, 6, 7 -> labels 1, 2, 3
    assert est.to_bytes() == cli_model(tmp_path, X, y + 1, "--loss", "logistic", "--oaa", "3", "--algo", "tg",
                                       "--l1", "1e-3")
    assert est.coef_.shape == (3, X.shape[1]) and est.intercept_.shape == (3,)


def test_regressor_fit_equals_cli(tmp_path):
    X, y = make_regression(200, 30, n_informative=10, noise=0.5, random_state=1)
    X[np.abs(X) < 0.7] = 0.0
    X = sp.csr_matrix(X)
    # labels with few digits: the CLI's number parser reads 17-digit decimals (dump_svmlight_file's %.16g)
    # up to an ulp away from Python's correctly rounded float(), and min/max label are in the model
    y = np.round(y / np.abs(y).max(), 4)
    for params, opts in (({}, []), (dict(loss="quantile", quantile_tau=0.3), ["--loss", "quantile",
                                                                            "--quantile-tau", "0.3"])):
        est = SparseLinearRegressor(**params).fit(X, y)
        assert est.to_bytes() == cli_model(tmp_path, X, y, *opts)


# ---------------------------------------------------------------------- partial_fit == fit

@pytest.mark.parametrize("cls, params, classes", [
    (SparseLinearClassifier, dict(algo="tg", l1=1e-3), 2),
    (SparseLinearClassifier, dict(algo="fobos", l1=1e-3, batch_size=4), 2),
    (SparseLinearClassifier, dict(algo="ftrl", l1=1e-3), 3),
    (SparseLinearRegressor, dict(algo="l1ball", radius=5.0), 0),
])
def test_chunked_partial_fit_equals_fit(cls, params, classes):
    X, y = sparse_classification(classes=max(classes, 2))
    if not classes:
        y = y.astype(float) - 0.5
    whole = cls(**params).fit(X, y)
    for cuts in ([1, 2, 50, 137], [150], list(range(7, 300, 7))):
        est = cls(**params)
        for a, b in zip([0] + cuts, cuts + [X.shape[0]]):
            if classes:
                est.partial_fit(X[a:b], y[a:b], classes=np.unique(y))
            else:
                est.partial_fit(X[a:b], y[a:b])
            if a == 0:
                est.predict(X[:5])          # reading the model in between changes nothing
        f = est.decision_function if classes else est.predict
        g = whole.decision_function if classes else whole.predict
        np.testing.assert_allclose(f(X), g(X), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(est.coef_.toarray(), whole.coef_.toarray(), rtol=1e-12, atol=1e-12)
        assert est.n_nonzero_ == whole.n_nonzero_


# ---------------------------------------------------------------------- predictions, CLI <-> Python

def read_numbers(path):
    return np.array([float(line.split()[0]) for line in Path(path).read_text().splitlines()])


def test_cli_predicts_what_python_predicts(tmp_path):
    X, y = sparse_classification()
    est = SparseLinearClassifier(algo="tg", l1=1e-3).fit(X, y)
    est.save(tmp_path / "m.model")
    data = write_libsvm(tmp_path / "t.libsvm", X, np.where(y == 1, 1, -1))
    cli("predict", "-i", tmp_path / "m.model", "-d", data, "-p", tmp_path / "raw", "--quiet")
    np.testing.assert_allclose(read_numbers(tmp_path / "raw"), est.decision_function(X), rtol=1e-5, atol=1e-6)
    cli("predict", "-i", tmp_path / "m.model", "-d", data, "-p", tmp_path / "p", "--link", "logistic", "--quiet")
    np.testing.assert_allclose(read_numbers(tmp_path / "p"), est.predict_proba(X)[:, 1], rtol=1e-5, atol=1e-6)
    again = SparseLinearClassifier.load(tmp_path / "m.model")
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))
    # a model file holds the labels -1/+1, not the class names: a loaded binary model's classes_ are [-1, 1]
    np.testing.assert_array_equal(again.predict(X), np.where(est.predict(X) == est.classes_[1], 1, -1))


def test_cli_predicts_the_classes_of_a_multiclass_model(tmp_path):
    X, y = sparse_classification(classes=3)
    est = SparseLinearClassifier(algo="ftrl", l1=1e-4).fit(X, y)
    est.save(tmp_path / "m.model")
    data = write_libsvm(tmp_path / "t.libsvm", X, y + 1)
    cli("predict", "-i", tmp_path / "m.model", "-d", data, "-p", tmp_path / "c", "--quiet")
    np.testing.assert_array_equal(read_numbers(tmp_path / "c").astype(int) - 1, est.predict(X))
    cli("predict", "-i", tmp_path / "m.model", "-d", data, "-p", tmp_path / "p", "--probabilities", "--quiet")
    probs = np.array([[float(t.split(":")[1]) for t in line.split()[:3]]
                      for line in (tmp_path / "p").read_text().splitlines()])
    np.testing.assert_allclose(probs, est.predict_proba(X), rtol=1e-4, atol=1e-6)


def test_python_predicts_what_a_cli_model_predicts(tmp_path):
    X, y = sparse_classification()
    labels = np.where(y == 1, 1, -1)
    cli_model(tmp_path, X, labels, "--loss", "logistic", "--algo", "fobos", "--l1", "1e-3")
    cli("predict", "-i", tmp_path / "cli.model", "-d", tmp_path / "d.libsvm", "-p", tmp_path / "q", "--quiet")
    est = SparseLinearClassifier.load(tmp_path / "cli.model")
    assert est.algo == "fobos" and list(est.classes_) == [-1, 1]
    np.testing.assert_allclose(est.decision_function(X), read_numbers(tmp_path / "q"), rtol=1e-5, atol=1e-6)
    assert est.to_bytes() == (tmp_path / "cli.model").read_bytes()


def test_pickle_and_grid_search():
    X, y = sparse_classification(n=200)
    grid = GridSearchCV(SparseLinearClassifier(algo="tg"), {"l1": [1e-4, 1e-3, 1e-2]}, cv=3, n_jobs=2).fit(X, y)
    best = pickle.loads(pickle.dumps(grid.best_estimator_))
    np.testing.assert_array_equal(best.decision_function(X), grid.best_estimator_.decision_function(X))
    assert best.get_params() == grid.best_estimator_.get_params()
    best.partial_fit(X[:10], y[:10])           # unpickled: learning goes on
    assert grid.best_params_["l1"] in (1e-4, 1e-3, 1e-2)


# ---------------------------------------------------------------------- validation

def test_errors_are_the_clis_texts():
    X, y = sparse_classification(n=20)
    with pytest.raises(ValueError, match=r"--loss must be one of .*\(got nope\)"):
        SparseLinearClassifier(loss="nope").fit(X, y)
    with pytest.raises(ValueError, match=re.escape("--l1 must be a finite number >= 0 (got -1)")):
        SparseLinearClassifier(algo="tg", l1=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="classes must be passed on the first call to partial_fit"):
        SparseLinearClassifier().partial_fit(X, y)
    with pytest.raises(ValueError, match="y contains labels not in classes_"):
        SparseLinearClassifier().partial_fit(X, y, classes=[0, 1]).partial_fit(X, y + 7)


def test_import_streamlearn_is_light():
    code = ("import sys, streamlearn; "
            "print(any(m == 'sklearn' or m.startswith('sklearn.') for m in sys.modules), 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------------- README and docs/ examples

def python_blocks(page):
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


#: README.md and every page under docs/ with Python blocks; each page's blocks run in order in one namespace
DOC_PAGES = [page for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))] if python_blocks(page)]


def test_doc_pages_with_python_found():
    names = {str(page.relative_to(ROOT)) for page in DOC_PAGES}
    assert {"README.md", "docs/python.md", "docs/batch.md", "docs/distributed.md"} <= names
    assert sum(len(python_blocks(page)) for page in DOC_PAGES) >= 12


#: pages whose examples need an optional extra (skipped without it)
DOC_NEEDS = {"docs/river.md": ("river", "pandas")}


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_doc_python_examples_run(page, tmp_path, monkeypatch):
    for module in DOC_NEEDS.get(str(page.relative_to(ROOT)), ()):
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    namespace = {}
    for block in python_blocks(page):
        exec(compile(block, str(page.relative_to(ROOT)), "exec"), namespace)
