"""The restructuring's measuring tools (tools/): the structure report reads the source, and the golden
outputs cover every learner."""

import importlib.util
from pathlib import Path

from streamlearn.config import ALGO_NAMES

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def load(name):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_structure_report_finds_the_config_and_the_cycles_it_knows():
    text = load("structure").report()
    assert "`streamlearn.config.TrainConfig`" in text
    assert "## Import cycles" in text and "## Largest functions" in text


def test_the_package_has_no_import_cycle():
    """Imports inside functions count: a module imported from inside a function still depends on its
    importer being importable first (issue 26 removed the last three cycles)."""
    structure = load("structure")
    graph, _ = structure.imports(structure.modules())
    assert structure.cycles(graph) == []


def test_structure_finds_a_cycle():
    structure = load("structure")
    assert structure.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert structure.cycles({"a": {"b"}, "b": set()}) == []


def test_golden_runs_cover_every_learner(tmp_path):
    cases = list(load("golden").cases(tmp_path))
    algos = {opts[opts.index("--algo") + 1] if "--algo" in opts else "sgd" for _, _, _, opts in cases}
    assert set(ALGO_NAMES) <= algos, set(ALGO_NAMES) - algos
    assert "softmax-l1" in {name for name, _, _, _ in cases}
