"""VW's own test suite (``../shared/data/vw/suite``, issue 27): every test whose options ``streamlearn
train`` accepts (with those of the tests it depends on) is run from the suite's ``test/`` folder, its
dependencies first, and every output it names is compared with VW's reference by VW's rule
(``support.vwsuite``: the ``average loss`` of stderr, the rest token by token at VW CI's epsilon 1e-3).

The tests that fail today are listed below with why (the issue's list of what is left to do); this test
fails when one of them starts to pass (take it off the list) or another one fails. The whole report:
``python tests/support/vwsuite.py``.
"""

from support import vwsuite

#: test id -> why it fails: only deliberate deviations from VW (docs/vw.md), at most 3 (issue 27)
KNOWN_FAILURES = {
    # labels "1:1", "2:0": VW silently reads the numeric prefix (the rest is lost); streamlearn makes such an
    # example unlabeled with a warning. --audit over the cached pass is VW's (tests/conformance/test_vw_readable.py)
    204: "labels 1:1 are unlabeled (a deliberate deviation)",
    # -t -i of 410's --nn --lrqfa model (trained with --loss_function logistic): the predictions are VW's, but
    # VW forgets a model's loss and reports the squared loss, streamlearn the model's (docs/vw.md: -i takes
    # every option not given from the model)
    411: "-i keeps the model's loss (a deliberate deviation)",
    412: "-i keeps the model's loss (a deliberate deviation)",
}


def test_vw_suite(tmp_path_factory):
    test = vwsuite.extract_all(tmp_path_factory.mktemp("vwsuite"))
    results, keeps_out = vwsuite.run_suite(test)
    failed = {cid for cid, why in results.items() if why}
    text = vwsuite.report(results, keeps_out)
    assert len(results) >= 204, text
    assert failed - set(KNOWN_FAILURES) == set(), "newly failing:\n" + text
    assert set(KNOWN_FAILURES) - failed == set(), "passing now, take them off KNOWN_FAILURES:\n" + text


def test_the_rule_is_vws():
    """VW's fuzzy rule: within 1e-3 absolutely, or relatively beyond 1; tags exactly; console
    diagnostics on stdout are not outputs."""
    assert vwsuite.fuzzy_equal("0.1234", "0.1236")
    assert not vwsuite.fuzzy_equal("0.1234", "0.1254")
    assert vwsuite.fuzzy_equal("1000.4", "1000")
    assert vwsuite.compare_output("p.predict", "1 tag\n", "1.0002 tag\n") is None
    assert vwsuite.compare_output("p.predict", "1 tag\n", "1 other\n") is not None
    assert vwsuite.compare_output("a", "x:0.0540415@4\n", "x:0.0540374@4\n") is None     # '@' splits
    assert vwsuite.compare_output("a", "1 2\n3\n", "1\n2 3\n") is not None              # line by line
    assert vwsuite.compare_output("a", "0.5-0.7\n", "0.5003-0.7\n") is None               # a range
    assert vwsuite.compare_output("stdout", "", "[warning] something\n") is None
    assert vwsuite.compare_output("stderr", "average loss = 0.5\n", "average loss = 0.5004 h\n") is None
    assert vwsuite.compare_output("stderr", "average loss = 0.5\n", "average loss = 0.6\n") is not None
