"""Options as data (issue 26): every option is declared once (``streamlearn.options.Option``), and the
command line, the run configuration, the model file's option keys, the messages' spellings, the
estimators' parameters and Dask's refusals are generated from the declarations."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from pathlib import Path

import click
import pytest

from streamlearn import config, learners
from streamlearn.options import HEADER_ORDER, NOT_A_PARAMETER, SAME, Option

ROOT = Path(__file__).resolve().parents[2]


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_interface_is_as_recorded():
    """tools/interface.json records the command line, the configuration, the model keys and order,
    the legacy values, the spellings, the estimators' parameters and Dask's refusals. A change to any
    of them is deliberate: re-record it (tools/interface.py --write) in the commit that makes it."""
    tool = _tool("interface")
    assert tool.main(["--check", str(ROOT / "tools" / "interface.json")]) == 0


def test_every_train_parameter_comes_from_one_declaration():
    from streamlearn.cli import main
    params = {p.name: p for p in main.commands["train"].params if p.name != "help" and isinstance(p, click.Option)}
    assert list(params) == [o.name for o in config.OPTIONS]
    # besides the options, only the data files as bare words (issue 29: as VW takes them)
    assert [p.name for p in main.commands["train"].params if isinstance(p, click.Argument)] == ["data_files"]
    for o in config.OPTIONS:
        p = params[o.name]
        flags = tuple(p.opts) if o.kind != "switch" else (f"{p.opts[0]}/{p.secondary_opts[0]}",)
        assert flags == o.flags, o.name
        if o.kind != "multi":
            assert p.default == (o.default if o.cli_default is SAME else o.cli_default), o.name
        assert bool(getattr(p, "is_flag", False)) == (o.kind in ("flag", "switch")), o.name
        if o.kind == "choice":
            assert isinstance(p.type, click.Choice) and tuple(p.type.choices) == config.option_choices(o)


def test_the_configuration_has_a_field_per_option_with_its_default_and_type():
    fields = {f.name: f for f in dataclasses.fields(config.TrainConfig)}
    declared = [o for o in config.OPTIONS if o.config]
    assert [f for f in fields if f in {o.name for o in declared}] == [o.name for o in declared]
    assert set(fields) - {o.name for o in declared} == {"shard_range", "shard_window", "explicit"}
    for o in declared:
        f = fields[o.name]
        if callable(o.default):
            assert f.default_factory is o.default
        else:
            assert f.default == o.default
        assert f.type == o.annotation
    cfg = config.TrainConfig()
    assert cfg.bits == 18 and cfg.algo == "sgd" and cfg.threads >= 1


def test_the_model_file_keeps_its_option_order():
    """The header's and the readable model's option order is file format: frozen in HEADER_ORDER, which
    names exactly the options declared stored="always"."""
    always = {o.name for o in config.OPTIONS if o.stored == "always"}
    assert set(HEADER_ORDER) == always and len(HEADER_ORDER) == len(always)
    assert config.MODEL_OPTIONS == HEADER_ORDER
    cfg = config.train_config({"algo": "ftrl", "l1": 1e-3})
    assert tuple(cfg.model_options()) == HEADER_ORDER


def test_messages_spell_options_as_their_flags():
    assert config.FLAG["bits"] == "-b/--bits"
    assert config.FLAG["lam"] == "--lambda"
    assert config.FLAG["cumulative_penalty"] == "--cumulative-penalty"
    assert config.FLAG["audit"] == "-a/--audit"
    assert Option("x_y", ("--x-y", "--x_y"), "int", 1).spelling == "--x-y"


def test_every_learner_option_belongs_to_a_learner_that_declares_or_shares_it():
    for spec in learners.SPECS:
        for o in spec.declares:
            assert o.name in spec.options or not o.config
    with pytest.raises(ValueError, match="declares --zeta"):
        bad = dataclasses.replace(learners.SPECS[0], declares=(Option("zeta", ("--zeta",), "float", 1.0),))
        learners._check_registry((bad,))
    with pytest.raises(ValueError, match="share a name: sgd"):
        learners._check_registry((learners.SPECS[0], dataclasses.replace(learners.SPECS[1], name="sgd")))


def test_the_estimators_take_the_declared_parameters():
    from streamlearn.estimators import PARAMETERS, SparseLinearClassifier, SparseLinearRegressor
    declared = {o.name for o in config.OPTIONS if o.estimator is not NOT_A_PARAMETER}
    for cls in (SparseLinearClassifier, SparseLinearRegressor):
        names = set(inspect.signature(cls.__init__).parameters) - {"self"}
        assert names == declared | {"passes", "shuffle", "column_offset", "objective"} == set(PARAMETERS)
        assert set(cls().get_params()) == names
    assert "l2_ball" in declared        # the drift the hand-kept list had
    with pytest.raises(TypeError, match="unexpected parameter 'nope'"):
        SparseLinearRegressor(nope=1)


def test_dask_refuses_the_options_declared_so():
    from streamlearn.dask import UNSUPPORTED
    assert UNSUPPORTED == {o.name: o.spelling for o in config.OPTIONS if not o.dask}
    assert UNSUPPORTED["audit"] == "-a/--audit" and "final_model" not in UNSUPPORTED


def test_algo_help_names_every_learner():
    text = config.algo_help()
    for spec in learners.SPECS:
        assert f"{spec.name} ({spec.summary})" in text


def test_a_learner_flag_means_its_algo():
    assert config.train_config({"ftrl": True}).algo == "ftrl"
    with pytest.raises(Exception, match="--ftrl means --algo ftrl; it cannot be combined with --algo tg"):
        config.train_config({"ftrl": True, "algo": "tg"})


def test_the_docs_learner_tables_are_generated():
    """README's and docs/learners.md's table of learners and each learner page's options table are
    written by tools/docs.py from the specs and the declarations; a stale one fails here."""
    assert _tool("docs").main(["--check"]) == 0
