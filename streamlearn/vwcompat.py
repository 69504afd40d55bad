"""``streamlearn-vw``: VW's whole command line, as ``vw`` takes it (issue 27).

A script that calls ``vw ARGS`` can call ``streamlearn-vw ARGS`` instead: the run is ``streamlearn
train ARGS`` (training by default, ``-t`` to only test, ``-d FILE`` or stdin), with what differs in
VW's grammar handled here, once, before the train command parses the line:

* a bare word that is no option's value is a data file (``vw train.dat`` reads it, as ``-d train.dat``);
* ``--version`` prints the version, ``-h``/``--help`` train's help under this name;
* ``--daemon`` (VW's serving) runs ``streamlearn serve`` with the other options (``--port``,
  ``--port_file``, ``--pid_file``, ``--num_children``, ``--foreground``, ``-t``, ``-i``, ``-f``, ...):
  serve's own are declared once, VW's spellings among their flags (``streamlearn.serve.options``).

Everything else (VW's spellings of options, their values) is ``streamlearn train``'s own.
"""

from __future__ import annotations

import sys

import click

from streamlearn._version import __version__



def _takes_value(command: click.Command) -> dict:
    """Each flag of ``command`` (``-b``, ``--bits``, ...) -> whether it takes a value."""
    out = {}
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        takes = not (param.is_flag or param.count)
        for flag in (*param.opts, *param.secondary_opts):
            out[flag] = takes
    return out


def translate(args: list[str], command: click.Command) -> list[str]:
    """VW's arguments as ``streamlearn train``'s: each bare word that is no option's value becomes
    ``-d WORD``."""
    takes = _takes_value(command)
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":                       # the rest are data files
            out += [x for f in args[i + 1:] for x in ("-d", f)]
            break
        name = a.split("=", 1)[0]
        if a.startswith("--") or (a.startswith("-") and len(a) > 1 and not _number(a)):
            out.append(a)
            short_glued = not a.startswith("--") and len(a) > 2 and a[:2] in takes   # -b18
            if "=" not in a and not short_glued and takes.get(name, False) and i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
        else:
            out += ["-d", a]
        i += 1
    return out


def _number(a: str) -> bool:
    try:
        float(a)
    except ValueError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    """The ``streamlearn-vw`` console script."""
    from streamlearn.__main__ import process_defaults
    process_defaults()
    args = list(sys.argv[1:] if argv is None else argv)
    if "--version" in args:
        click.echo(f"streamlearn-vw {__version__} (VW 9.11.9's command line)")
        return
    name = "train"
    if "--daemon" in args:      # VW's serving: streamlearn serve with the other options
        name = "serve"
        args = [a for a in args if a != "--daemon"]
        _listen_early(args)
    from streamlearn.cli import main as cli_main
    command = cli_main.commands[name]
    if "-h" in args or "--help" in args:
        args = ["--help"]
    else:
        try:
            args = translate(args, command)
        except click.UsageError as exc:
            click.echo(f"Error: {exc.message}", err=True)
            sys.exit(2)
    cli_main.main([name, *args], prog_name="streamlearn-vw",
                  standalone_mode=True) if argv is not None else _as_process(cli_main, [name, *args])


#: the flags and defaults of the daemon's address (serve's ``port`` and ``host``) as ``_listen_early``
#: reads them, before anything is imported: importing their declarations (``streamlearn.serve.options``)
#: would take numpy first, about 0.1 s before the port listens (a test keeps the two the same)
EARLY_ADDRESS = {"port": (("--port",), 26542), "host": (("--host",), "127.0.0.1")}


def _listen_early(args: list[str]) -> None:
    """Listen on the daemon's port before the models load (``streamlearn.serve.listen_early``)."""
    from streamlearn.serve import listen_early
    value = {name: str(default) for name, (_, default) in EARLY_ADDRESS.items()}
    for i, a in enumerate(args):
        for name, (flags, _) in EARLY_ADDRESS.items():
            for flag in flags:
                if a == flag and i + 1 < len(args):
                    value[name] = args[i + 1]
                elif a.startswith(flag + "="):
                    value[name] = a.split("=", 1)[1]
    port = value["port"]
    if port.isdigit() and 0 < int(port) < 65536:
        listen_early(value["host"], int(port))


def _as_process(cli_main, args: list[str]) -> None:
    """Run as the process's command line (the fast exit of ``streamlearn``'s own script)."""
    sys.argv = ["streamlearn-vw", *args]
    cli_main.main(prog_name="streamlearn-vw")


if __name__ == "__main__":
    main()
