"""The serving process: its models (``Registry``), the TCP server, periodic snapshots, signals
(SIGTERM/SIGINT: final save of every model with a file, exit 0; SIGHUP: reload the model files between
two requests, connections kept), the port and pid files, and VW's background mode."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from streamlearn.errors import OptionError
from streamlearn.serve.options import ServeOptions, check
from streamlearn.serve.service import Registry, Service


def registry_of(explicit: dict, models: tuple) -> Registry:
    """The served models: the one of the options (-i/-f, "default") unless ``--model name=path`` are
    given, each then loaded from and saved to its path with the other options."""
    from streamlearn.run.session import prepare_train
    if not models:
        cfg, model = prepare_train(explicit)
        return Registry([Service(cfg, "default", model)])
    if explicit.get("initial_model") or explicit.get("final_model"):
        raise OptionError("--model name=path: the models' files are their paths; -i and -f are not taken with it")
    services = []
    for spec in models:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise OptionError(f"--model {spec!r}: expected name=path")
        given = dict(explicit, final_model=path)
        if os.path.exists(path):
            given["initial_model"] = path
        cfg, model = prepare_train(given)
        services.append(Service(cfg, name, model))
    return Registry(services)


class OrderLog:
    """Test mode (``STREAMLEARN_SERVE_ORDER_LOG=PATH``): the order a model applied its examples, written
    as the daemon goes, so that it survives a SIGKILL. ``extend`` (``Service.handle``, under the
    model's lock) appends a request's example lines, one ``write`` each; ``saved`` (``Service.save``,
    under the lock, once the snapshot is in place) appends ``#snapshot K``, K = 1, 2, ...: snapshot K is
    the model learned from the lines before that marker. With ``STREAMLEARN_SERVE_KEEP_SNAPSHOTS`` set,
    snapshot K's bytes are also written (atomically) to ``<its path>.snap-K``, before its marker."""

    def __init__(self, path: str, keep: bool = False):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_CLOEXEC", 0),
                          0o666)
        self.keep = keep
        self.snapshots = 0

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def extend(self, lines) -> None:
        data = b"".join(line + b"\n" for line in lines)
        if data:
            self._write(data)

    def saved(self, path: str, data: bytes) -> None:
        from streamlearn.io.atomic import write_atomic
        self.snapshots += 1
        if self.keep:
            write_atomic(f"{path}.snap-{self.snapshots}", [data], "snapshot copy")
        self._write(f"#snapshot {self.snapshots}\n".encode())

    def close(self) -> None:
        os.close(self.fd)


class Daemon:
    def __init__(self, registry: Registry, opts: ServeOptions):
        from streamlearn.serve.tcp import TCPServer
        self.registry, self.opts = registry, opts
        self.saved_at = {s.name: 0 for s in registry}
        self.server = TCPServer(registry, opts.port, opts.host, opts.num_children, opts.max_queue, opts.strict,
                                after=self.after_request, log=self.log)
        self.port = self.server.port
        self.reload_asked = threading.Event()
        self.http = None
        if opts.http_port is not None:     # imported only then: aiohttp is an optional extra (one-line error)
            import streamlearn.serve.http  # noqa: F401
        if opts.order_log:     # one model: PATH; several: PATH.NAME each
            several = len(registry.names()) > 1
            for s in registry:
                s.order_log = OrderLog(f"{opts.order_log}.{s.name}" if several else opts.order_log,
                                       opts.keep_snapshots)

    def log(self, text: str) -> None:
        if not self.opts.quiet:
            print(f"streamlearn serve: {text}", file=sys.stderr, flush=True)

    def after_request(self, service: Service) -> None:
        n = self.opts.save_every
        if n and service.cfg.final_model:
            seen = service.stats()["examples"]
            if seen - self.saved_at[service.name] >= n:
                self.saved_at[service.name] = seen
                service.save()

    def _snapshots(self) -> None:
        every = self.opts.save_every_seconds
        while not self.server.stopping.wait(every):
            for s in self.registry:
                if s.cfg.final_model and s.engine is not None:
                    try:
                        s.save()
                    except Exception as exc:    # a snapshot that fails is said, serving goes on
                        self.log(f"snapshot of model {s.name} failed: {exc}")

    def final_save(self) -> None:
        """Close every model (its final save; in the test mode, its order log)."""
        for s in self.registry:
            path = s.close()
            if path is not None:
                self.log(f"model {s.name} saved to {path}")
            if s.order_log is not None:
                s.order_log.close()

    def reload(self) -> None:
        for s in self.registry:
            try:
                s.reload()
                self.log(f"model {s.name} reloaded")
            except Exception as exc:
                self.log(f"reload of model {s.name} failed, the model in memory is kept: {exc}")

    def run(self) -> int:
        opts = self.opts
        stop = threading.Event()

        def on_stop(signum, frame):
            stop.set()
            self.server.stop()

        def on_hup(signum, frame):
            self.reload_asked.set()

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGHUP, on_hup)
        self.server.start()
        if opts.save_every_seconds:
            threading.Thread(target=self._snapshots, name="serve-snapshots", daemon=True).start()
        accept = threading.Thread(target=self.server.serve_forever, name="serve-accept", daemon=True)
        accept.start()
        self.log(f"serving {', '.join(self.registry.names())} on port {self.port}")
        if opts.http_port is not None:
            from streamlearn.serve.http import serve_http
            self.http = serve_http(self.registry, opts.http_host, opts.http_port, strict=opts.strict,
                                   workers=opts.http_workers, max_pending=opts.http_max_pending,
                                   after=self.after_request)
            self.log(f"HTTP on {opts.http_host}:{self.http.port}")
        while not stop.is_set():
            stop.wait(0.1)
            if self.reload_asked.is_set():
                self.reload_asked.clear()
                self.reload()
        self.server.stop()
        if self.http is not None:
            self.http.stop()
        accept.join(2)
        self.final_save()
        return 0


def _write_small(path: str, text: str) -> None:
    from streamlearn.io.atomic import write_atomic
    write_atomic(path, [text.encode()], "file")


def serve(explicit: dict, opts: ServeOptions) -> int:
    """``streamlearn serve``: load the models, listen, write the port and pid files, go to the
    background unless --foreground (VW's default), serve until SIGTERM/SIGINT."""
    check(opts)
    explicit = dict(explicit)
    explicit.setdefault("quiet", True)
    registry = registry_of(explicit, opts.models)
    daemon = Daemon(registry, opts)
    if not opts.foreground:
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() > 0:
            os._exit(0)
        os.setsid()
    if opts.pid_file:
        _write_small(opts.pid_file, f"{os.getpid()}\n")
    if opts.port_file:
        _write_small(opts.port_file, f"{daemon.port}\n")
    return daemon.run()
