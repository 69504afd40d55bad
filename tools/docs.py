"""The learner tables of the docs, generated from the learners' specs (issue 26).

README.md's table of learners (between ``<!-- learners:begin -->`` and ``<!-- learners:end -->``),
docs/learners.md's index (between the same markers) and each learner page's options table
(docs/learners/<name>.md, between ``<!-- options:begin -->`` and ``<!-- options:end -->``) are
written from ``streamlearn.learners.SPECS`` and the options' declarations: a new learner or option
appears in them by itself.

    .venv/bin/python tools/docs.py --write     # rewrite the generated parts
    .venv/bin/python tools/docs.py --check     # exit 1 when a generated part is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _default(option, spec):
    from streamlearn.config import _fmt
    if option.name in spec.defaults:
        return _fmt(spec.defaults[option.name])
    value = option.default_value() if not callable(option.default) else None
    if option.kind in ("flag", "switch") and option.cli_default is None:
        return "see meaning"
    if option.kind in ("flag", "switch"):
        return "on" if value else "off"
    if value is None or value == ():
        return "none"
    return _fmt(value)


def learner_table(prefix: str, oaa: bool = False) -> str:
    """One row per learner: its page, what it is, its paper (and whether it takes ``--oaa K``)."""
    from streamlearn.learners import SPECS
    head = "| learner | what it is | paper |" + (" `--oaa K` |" if oaa else "")
    rows = [head, "|---" * head.count(" |") + "|"]
    for s in SPECS:
        row = f"| [{s.name}]({prefix}{s.name}.md) | {s.summary} | {s.paper or '-'} |"
        if oaa:
            row += " its own classes |" if s.joint else (" yes |" if s.one_against_all else " no |")
        rows.append(row)
    return "\n".join(rows)


def options_table(spec) -> str:
    """A learner's options: its own and the shared ones it takes, with its defaults."""
    from streamlearn.config import OPTION
    names = [o.name for o in spec.declares if not o.config] + list(spec.options)
    if not names:
        return "This learner takes no options of its own (the update rule's, `-l`, `--power-t`, ... apply)."
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for name in names:
        o = OPTION[name]
        flags = ", ".join(f"`{f}`" for f in o.flags)
        rows.append(f"| {flags} | {_default(o, spec)} | {o.help.replace('|', '&#124;')} |")
    return "\n".join(rows)


def _replace(text: str, tag: str, body: str, where: str) -> str:
    pattern = re.compile(rf"(<!-- {tag}:begin -->\n).*?(<!-- {tag}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{where}: no <!-- {tag}:begin --> ... <!-- {tag}:end --> markers")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def generated() -> dict:
    """path -> the file's text with its generated parts up to date."""
    from streamlearn.learners import SPECS
    out = {}
    readme = REPO / "README.md"
    out[readme] = _replace(readme.read_text(), "learners", learner_table("docs/learners/"), "README.md")
    index = REPO / "docs" / "learners.md"
    out[index] = _replace(index.read_text(), "learners", learner_table("learners/", oaa=True), "docs/learners.md")
    for spec in SPECS:
        page = REPO / "docs" / "learners" / f"{spec.name}.md"
        if not page.exists():
            raise SystemExit(f"learner {spec.name} has no page {page.relative_to(REPO)}")
        out[page] = _replace(page.read_text(), "options", options_table(spec), str(page.relative_to(REPO)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    stale = [p for p, text in generated().items() if p.read_text() != text]
    if args.write:
        for p in stale:
            p.write_text(generated()[p])
        print(f"{len(stale)} files updated")
        return 0
    for p in stale:
        print(f"out of date: {p.relative_to(REPO)} (run tools/docs.py --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
