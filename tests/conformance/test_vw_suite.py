"""VW's own test suite (``../shared/data/vw/suite``, issue 27): every test whose options ``streamlearn
train`` accepts (with those of the tests it depends on) is run from the suite's ``test/`` folder, its
dependencies first, and every output it names is compared with VW's reference by VW's rule
(``support.vwsuite``: the ``average loss`` of stderr, the rest token by token at VW CI's epsilon 1e-3).

The tests that fail today are listed below with why (the issue's list of what is left to do); this test
fails when one of them starts to pass (take it off the list) or another one fails. The whole report:
``python tests/support/vwsuite.py``.
"""

from support import vwsuite

#: test id -> why it fails today (issue 27's work list)
KNOWN_FAILURES = {
    # readable models and --invert_hash files lack VW's save_resume block (the weights agree)
    294: "save_resume block", 295: "save_resume block", 296: "save_resume block", 386: "save_resume block", 494: "save_resume block",
    495: "save_resume block", 513: "save_resume block",
    334: "invert_hash of a model read with -i / predict-only names", 335: "the same", 336: "the same",
    # --audit's lines with -c --passes 2 (VW audits every pass)
    204: "audit over passes",
    # --no_stdin is taken; 387's readable model lacks the save_resume block, 390's -i is a VW model file
    387: "save_resume block", 390: "VW model file",
    # --preserve_performance_counters is taken; a streamlearn model holds no progress counters to resume
    96: "progress counters in the model (VW's save_resume)",
    # --interact: predictions and weights agree; the readable model's header is streamlearn's
    293: "readable model header",
    # --feature_mask's tests use test 30's mask model (and 32 continues 31's predict-only model with -i,
    # where streamlearn restores t and the normalizer that VW restarts)
    31: "depends on test 30", 32: "depends on tests 30 and 31; -i of a predict-only model",
    # --l1 alone picks ftrl, --l1 --l2 fobos elastic: VW runs its own L1 (and L2)
    30: "bare --l1 picks ftrl, VW's own L1 expected",
    680: "--l1 --l2 picks fobos elastic, VW's own L1 and L2 expected",
    # labels: VW takes hinge's and logistic's labels as given, streamlearn maps them to -1/+1
    531: "hinge labels", 578: "hinge labels", 725: "logistic labels",
    # VW model files given to -i
    272: "VW model file",
    # labels "1:1", "2:0": VW reads the numeric prefix, streamlearn makes them unlabeled (a documented
    # deviation); --audit over the cached pass is VW's (tests/conformance/test_vw_readable.py)
    204: "labels 1:1 read as unlabeled",
    # readable models and --invert_hash files lack VW's save_resume block (the weights agree)
    294: "save_resume block", 296: "save_resume block", 386: "save_resume block", 494: "save_resume block",
    495: "save_resume block", 513: "save_resume block",
    334: "invert_hash of a model read with -i / predict-only names", 335: "the same", 336: "the same",
    # --audit's lines with -c --passes 2 (VW audits every pass)
    204: "audit over passes",
    # --csoaa --audit: streamlearn prints VW 9.11.9's own numbers (0.15803@4), the reference an older VW's
    # (0.158008@4), and tokens with '@' compare exactly; VW 9.11.9 fails this test the same way
    530: "reference from another VW build (VW 9.11.9 fails it too)",
    # --oaa --named_labels over numeric labels (every name unknown: class 0): VW predicts the example whose
    # label 0 decides 0-indexing as 1-indexed with plain class output (its predict runs before its learn
    # decides); streamlearn predicts it 0-indexed, as VW does with --probabilities (tests 359, 360)
    647: "the deciding example's class under auto indexing (plain --oaa output)",
}


def test_vw_suite(tmp_path_factory):
    test = vwsuite.extract_all(tmp_path_factory.mktemp("vwsuite"))
    results, keeps_out = vwsuite.run_suite(test)
    failed = {cid for cid, why in results.items() if why}
    text = vwsuite.report(results, keeps_out)
    assert len(results) >= 107, text
    assert len(results) >= 102, text
    assert len(results) >= 93, text
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
