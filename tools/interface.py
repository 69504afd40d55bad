"""The option interface, recorded and compared (issue 26): what a restructuring of the option
declarations must leave as it is.

It records every ``streamlearn train`` and ``predict`` command-line parameter (flags, type, default,
help, metavar, ...), ``streamlearn serve``'s own (and the order of all of serve's), the serving options'
fields and defaults (``ServeOptions``), the run configuration's fields and defaults, the model file's option keys in
their order, the values a model written before an option existed takes, how messages spell each
option, the scikit-learn estimators' parameters and what a Dask run refuses.

    .venv/bin/python tools/interface.py --write tools/interface.json    # record
    .venv/bin/python tools/interface.py --check tools/interface.json    # compare; exit 1 on a difference

The order of the command-line parameters (the order of ``--help``) is recorded separately from the
parameters, so a change of order shows as such.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _value(v):
    """A JSON-able form of a default (tuples as lists, inf/None as text)."""
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return repr(v)
    if isinstance(v, (tuple, list, frozenset)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _value(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def _param(p) -> dict:
    import click
    kind = p.type
    out = {"opts": list(p.opts), "secondary": list(getattr(p, "secondary_opts", [])),
           "type": getattr(kind, "name", repr(kind)), "default": _value(p.default),
           "flag": bool(getattr(p, "is_flag", False)), "multiple": bool(p.multiple),
           "metavar": p.metavar, "hidden": bool(getattr(p, "hidden", False)),
           "help": getattr(p, "help", None), "required": bool(p.required)}
    if isinstance(kind, click.Choice):
        out["choices"] = list(kind.choices)
    return out


def record() -> dict:
    from streamlearn import cli, config, dask as _unused  # noqa: F401  (dask's table)
    from streamlearn import estimators
    from streamlearn.dask import UNSUPPORTED

    out = {}
    for name in ("train", "predict"):
        cmd = cli.main.commands[name]
        params = [p for p in cmd.params if p.name != "help"]
        out[f"{name}.order"] = [p.name for p in params]
        out[f"{name}.params"] = {p.name: _param(p) for p in params}
    serve = [p for p in cli.main.commands["serve"].params if p.name != "help"]
    out["serve.order"] = [p.name for p in serve]
    out["serve.params"] = {p.name: _param(p) for p in serve if p.name not in out["train.params"]}
    from streamlearn.serve.daemon import ServeOptions
    out["ServeOptions"] = {f.name: _value(f.default) if f.default is not dataclasses.MISSING else "<factory>"
                           for f in dataclasses.fields(ServeOptions)}
    fields = {}
    for f in dataclasses.fields(config.TrainConfig):
        if f.default is not dataclasses.MISSING:
            fields[f.name] = _value(f.default)
        else:
            fields[f.name] = "<factory>"
    out["TrainConfig"] = fields
    out["MODEL_OPTIONS"] = list(config.MODEL_OPTIONS)
    out["HASHING_OPTIONS"] = list(config.HASHING_OPTIONS)
    out["FEATURE_OPTIONS"] = list(config.FEATURE_OPTIONS)
    out["LEGACY_MODEL_OPTIONS"] = _value(config.LEGACY_MODEL_OPTIONS)
    out["FLAG"] = dict(config.FLAG)
    import inspect
    for cls in (estimators.SparseLinearClassifier, estimators.SparseLinearRegressor):
        sig = inspect.signature(cls.__init__)
        out[f"{cls.__name__}.params"] = {k: _value(p.default) for k, p in sig.parameters.items() if k != "self"}
    out["estimators.OPTIONS"] = sorted(estimators.OPTIONS)
    out["dask.UNSUPPORTED"] = dict(UNSUPPORTED)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="JSON")
    group.add_argument("--check", metavar="JSON")
    args = ap.parse_args(argv)
    now = record()
    if args.write:
        Path(args.write).write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"recorded {sum(len(v) if hasattr(v, '__len__') else 1 for v in now.values())} entries in "
              f"{len(now)} tables to {args.write}")
        return 0
    then = json.loads(Path(args.check).read_text())
    now = json.loads(json.dumps(now))
    bad = 0
    for table in sorted(set(then) | set(now)):
        a, b = then.get(table), now.get(table)
        if a == b:
            continue
        bad += 1
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if key not in a or key not in b or a[key] != b[key]:
                    print(f"{table}[{key}]: recorded {a.get(key, '(absent)')!r}\n"
                          f"{' ' * len(table)}  now      {b.get(key, '(absent)')!r}")
        else:
            print(f"{table}: recorded {a!r}\n{' ' * len(table)}  now      {b!r}")
    print(f"{len(then) - bad} of {len(then)} tables as recorded" if bad else f"all {len(then)} tables as recorded")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
