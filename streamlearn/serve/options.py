"""``streamlearn serve``'s own options (issue 28), each declared once as an ``Option``.

From ``SERVE_OPTIONS`` come serve's click options and their ``--help`` section "Serving"
(``streamlearn.cli``), the fields of ``ServeOptions`` (with the run's ``--strict`` and ``--quiet`` and
the test mode's order log) and ``check``. A serve option's ``check`` is (value) -> None or the reason
the value is invalid, as the message says it after "--flag VALUE: " (``--port 70000: a port is 0 (any
free port) to 65535``); a value of None (an option not given that has no default) is not checked.
Flags are ours first, VW's after (``--port-file``, ``--port_file``): ``streamlearn-vw --daemon``
takes them through serve's command line.

Imports no kernels and not aiohttp (the CLI imports it before numba's caches are set up).
"""

from __future__ import annotations

import os
from dataclasses import field, make_dataclass

from streamlearn.errors import OptionError
from streamlearn.options import Option

SERVING = "Serving"
#: the test mode: the lines learned, in the order applied, are written to this file at exit
#: test mode: keep each snapshot as <path>.snap-K (with the order log)
KEEP_SNAPSHOTS_ENV = "STREAMLEARN_SERVE_KEEP_SNAPSHOTS"
ORDER_LOG_ENV = "STREAMLEARN_SERVE_ORDER_LOG"


def _port(value) -> str | None:
    return None if 0 <= value <= 65535 else "a port is 0 (any free port) to 65535"


def _at_least_one(value) -> str | None:
    return None if value >= 1 else "at least 1"


def _examples(value) -> str | None:
    return None if value >= 1 else "at least 1 example"


def _seconds(value) -> str | None:
    return None if value > 0 else "a positive number of seconds"


def _s(name, flags, kind, default=None, help="", **kw) -> Option:
    return Option(name, tuple(flags), kind, default, help, section=SERVING, **kw)


#: serve's own options, in the order of ``serve --help``
SERVE_OPTIONS = (
    _s("port", ("--port",), "int", 26542, check=_port, help="TCP port to listen on (0: any free port)."),
    _s("host", ("--host",), "text", "127.0.0.1", help="Address to listen on."),
    _s("port_file", ("--port-file", "--port_file"), "text", None, metavar="PATH",
       help="Write the port listened on here."),
    _s("pid_file", ("--pid-file", "--pid_file"), "text", None, metavar="PATH",
       help="Write the daemon's process id here."),
    _s("num_children", ("--num-children", "--num_children"), "int", 10, check=_at_least_one,
       help="Connections served at once (worker threads; VW's forked children)."),
    _s("foreground", ("--foreground",), "flag", False, help="Stay in the foreground (default: background)."),
    _s("save_every", ("--save-every",), "int", None, metavar="N", check=_examples,
       help="Snapshot each model (to its -f file) every N examples."),
    _s("save_every_seconds", ("--save-every-seconds",), "float", None, metavar="S", check=_seconds,
       help="Snapshot each model (to its -f file) every S seconds."),
    _s("models", ("--model",), "multi", (), metavar="NAME=PATH",
       help="Serve the model of PATH as NAME (repeatable); a connection names it in a first line 'model: NAME'."),
    _s("max_queue", ("--max-queue",), "int", 64, metavar="N", check=_at_least_one,
       help="Accepted connections waiting for a worker; beyond, new clients wait."),
    _s("http_port", ("--http-port",), "int", None, metavar="PORT", check=_port,
       help="Also answer HTTP on this port (POST /predict, /learn, /save; GET /healthz, /metrics); "
            "needs aiohttp: pip install 'streamlearn[serve]'."),
    _s("http_host", ("--http-host",), "text", "127.0.0.1", help="The address the HTTP endpoint listens on."),
    _s("http_workers", ("--http-workers",), "int", 4, metavar="N", check=_at_least_one,
       help="Threads calling the models for HTTP requests."),
    _s("http_max_pending", ("--http-max-pending",), "int", 256, metavar="N", check=_at_least_one,
       help="HTTP requests admitted at once (running or waiting for a thread); more are answered 503."),
)
SERVE_OPTION = {o.name: o for o in SERVE_OPTIONS}


#: a serving process's options: one field per declared option, then what the run's options and the
#: environment give (``--strict``, ``--quiet``; the test mode's order log) and ``extra`` (free)
ServeOptions = make_dataclass(
    "ServeOptions",
    [(o.name, o.annotation, o.default) for o in SERVE_OPTIONS]
    + [("strict", "bool", False), ("quiet", "bool", False), ("order_log", "str | None", None),
       # test mode: with an order log, also keep a copy of each snapshot (``daemon.OrderLog``)
       ("keep_snapshots", "bool", field(default_factory=lambda: bool(os.environ.get(KEEP_SNAPSHOTS_ENV)))),
       ("extra", "dict", field(default_factory=dict))])
ServeOptions.__module__ = __name__
ServeOptions.__doc__ = "The serving options (``SERVE_OPTIONS``); ``check`` validates them."


def check(opts) -> None:
    """Raise ``OptionError`` at the first declared option whose value its ``check`` refuses."""
    for o in SERVE_OPTIONS:
        value = getattr(opts, o.name)
        if o.check is None or value is None:
            continue
        why = o.check(value)
        if why is not None:
            raise OptionError(f"{o.spelling} {value}: {why}")


def serve_options(values: dict, environ=None) -> "ServeOptions":
    """The checked ``ServeOptions`` of a command line's values: serve's own (those absent take their
    defaults), the run's ``--strict`` and ``--quiet``, and the order log of ``STREAMLEARN_SERVE_ORDER_LOG``."""
    environ = os.environ if environ is None else environ
    own = {o.name: tuple(values[o.name]) if o.kind == "multi" else values[o.name]
           for o in SERVE_OPTIONS if o.name in values}
    opts = ServeOptions(**own, strict=bool(values.get("strict")), quiet=bool(values.get("quiet")),
                        order_log=environ.get(ORDER_LOG_ENV) or None)
    check(opts)
    return opts
