"""``streamlearn serve``'s options declared once (issue 28, streamlearn/serve/options.py): each declared
option is in ``serve --help`` (section "Serving"), a field of ``ServeOptions`` with its default, and
checked with its message; the command line builds the ``ServeOptions`` the daemon gets (the daemon
itself replaced by a recorder: nothing listens here)."""

import dataclasses
import re

import pytest
from click.testing import CliRunner

from streamlearn import config, vwcompat
from streamlearn.cli import main
from streamlearn.errors import OptionError
from streamlearn.serve import daemon
from streamlearn.serve.options import ORDER_LOG_ENV, SERVE_OPTION, SERVE_OPTIONS, ServeOptions, check

#: values the declared checks of a number may refuse (each checked option must refuse one of them)
CANDIDATES = {"int": (0, -1, 70000), "float": (0.0, -1.0, float("nan"))}


@pytest.fixture
def served(monkeypatch):
    """``streamlearn serve ARGS`` in process, the daemon replaced: -> (exit code, output, [(explicit, opts)])."""
    calls = []
    monkeypatch.setattr(daemon, "serve", lambda explicit, opts: calls.append((explicit, opts)) or 0)
    monkeypatch.delenv(ORDER_LOG_ENV, raising=False)

    def run(*args):
        res = CliRunner().invoke(main, ["serve", *map(str, args)])
        return res.exit_code, res.output, calls
    return run


def _section(text: str, title: str) -> str:
    """The rows of one --help section, hyphenated line breaks and whitespace undone."""
    body = text.split(f"\n{title}:\n", 1)[1].split("\n\n", 1)[0]
    return " ".join(re.sub(r"-\n\s*", "-", body).split())


def _refused(o):
    return next((v for v in CANDIDATES.get(o.kind, ()) if o.check(v) is not None), None)


def test_each_declared_option_is_in_help_in_serve_options_and_checked(served):
    code, text, _ = served("--help")
    assert code == 0
    serving = _section(text, "Serving")
    defaults = {f.name: f.default for f in dataclasses.fields(ServeOptions)}
    for o in SERVE_OPTIONS:
        assert o.section == "Serving"
        assert all(flag in serving for flag in o.flags), o.name
        assert " ".join(o.help.split()) in serving, o.name
        assert defaults[o.name] == o.default, o.name
        assert getattr(ServeOptions(), o.name) == o.default
        if o.kind in ("int", "float"):         # a number can be out of range: every one has its check
            assert o.check is not None, o.name
        if o.check is None:
            continue
        if o.default is not None:
            assert o.check(o.default) is None, o.name
            check(ServeOptions())
        bad = _refused(o)
        assert bad is not None, o.name
        message = f"{o.spelling} {bad}: {o.check(bad)}"
        with pytest.raises(OptionError) as err:
            check(ServeOptions(**{o.name: bad}))
        assert str(err.value) == message
        # the command line: one line, exit 1, before any model is loaded (the daemon is not reached)
        code, out, calls = served(o.flags[-1], bad)
        assert (code, out, calls) == (1, f"Error: {message}\n", []), o.name


def test_serve_takes_its_declared_options_and_trains():
    """serve's parameters are its declared options, then train's: none written by hand."""
    names = [p.name for p in main.commands["serve"].params if p.name != "help"]
    assert names == [o.name for o in SERVE_OPTIONS] + [o.name for o in config.OPTIONS]
    assert not {o.name for o in SERVE_OPTIONS} & {o.name for o in config.OPTIONS}


@pytest.mark.parametrize("args, message", [
    (["--port", 70000], "--port 70000: a port is 0 (any free port) to 65535"),
    (["--port", -1], "--port -1: a port is 0 (any free port) to 65535"),
    (["--num_children", 0], "--num-children 0: at least 1"),
    (["--max-queue", 0], "--max-queue 0: at least 1"),
    (["--http-port", 65536], "--http-port 65536: a port is 0 (any free port) to 65535"),
    (["--http-workers", 0], "--http-workers 0: at least 1"),
    (["--http-max-pending", -3], "--http-max-pending -3: at least 1"),
    (["--save-every", 0], "--save-every 0: at least 1 example"),
    (["--save-every-seconds", 0], "--save-every-seconds 0.0: a positive number of seconds"),
    (["--save-every-seconds", -2.5], "--save-every-seconds -2.5: a positive number of seconds"),
])
def test_messages(served, args, message):
    code, out, calls = served(*args)
    assert (code, out, calls) == (1, f"Error: {message}\n", [])


def test_the_command_line_gives_the_daemon_its_options(served, monkeypatch):
    code, out, calls = served("--port", 0, "--num_children", 3, "--model", "a=x.model", "--model", "b=y.model",
                              "--http-port", 8080, "--save-every-seconds", 2, "--port_file", "p", "--foreground",
                              "--strict", "--quiet", "-b", 20)
    assert code == 0, out
    explicit, opts = calls[0]
    assert opts == ServeOptions(port=0, num_children=3, models=("a=x.model", "b=y.model"), http_port=8080,
                                save_every_seconds=2.0, port_file="p", foreground=True, strict=True, quiet=True)
    assert explicit == {"bits": 20, "strict": True, "quiet": True, "sources": (), "no_stdin": True}
    # nothing given: the declared defaults; the test mode's order log from the environment
    monkeypatch.setenv(ORDER_LOG_ENV, "/tmp/order.vw")
    code, out, calls = served()
    assert code == 0, out
    assert calls[1] == ({"sources": (), "no_stdin": True}, ServeOptions(order_log="/tmp/order.vw"))


def test_vw_daemon_spellings_are_the_declarations():
    """``streamlearn-vw --daemon`` takes VW's spellings through serve's declared flags; its early listen
    reads the port and host as they are declared."""
    flags = {f for o in SERVE_OPTIONS for f in o.flags}
    assert {"--port", "--port_file", "--pid_file", "--num_children", "--foreground"} <= flags
    for name, (early_flags, default) in vwcompat.EARLY_ADDRESS.items():
        assert early_flags == SERVE_OPTION[name].flags and default == SERVE_OPTION[name].default
