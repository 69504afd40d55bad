"""VW's daemon protocol over TCP: newline-delimited examples on a connection, one prediction line
back per example (a bad line: ``error: <reason>``, the connection stays up; with ``--strict`` that
connection is closed after the error line). ``save`` and ``save_<file>`` lines write the model. A
first line ``model: NAME`` routes the connection to a model of the registry.

Connections are accepted by one thread into a bounded queue (``--max-queue``) served by
``--num-children`` worker threads: when every worker is busy and the queue is full, the accept loop
waits, so a flood of clients waits in the kernel's listen backlog instead of growing memory.
"""

from __future__ import annotations

import queue
import select
import socket
import threading

from streamlearn.errors import StreamlearnError
from streamlearn.serve.service import save_command

#: bytes read from a connection at a time; the complete lines read are one request
CHUNK = 1 << 18
#: the longest line taken (bytes, 1 MiB); a longer one gets an error line and its connection is closed.
#: It bounds what a connection holds: a partial line of at most MAX_LINE + CHUNK bytes (and its copies
#: while it is split into lines), so the daemon's buffers are a few times that per worker (--num-children)
MAX_LINE = 1 << 20
#: the listen backlog: connections the kernel completes and holds (their first bytes in its buffers, not
#: the daemon's memory) beyond the workers and --max-queue, served in turn; beyond it the kernel drops
#: their handshake and clients retry with TCP's backoff (seconds), so it is large (capped by
#: net.core.somaxconn)
BACKLOG = socket.SOMAXCONN


class TCPServer:
    def __init__(self, registry, port: int = 26542, host: str = "127.0.0.1", num_children: int = 10,
                 max_queue: int = 64, strict: bool = False, after=None, log=None):
        self.registry = registry
        self.strict = strict
        self.after = after or (lambda service: None)     # called after each request (periodic snapshots)
        self.log = log or (lambda text: None)
        from streamlearn.serve import take_early
        self.sock = take_early(host, port) if port else None
        if self.sock is None:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.sock.bind((host, port))
            except OSError as exc:
                self.sock.close()
                raise StreamlearnError(f"serve: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.sock.listen(max(BACKLOG, max_queue))     # again on an early socket: Linux takes the new backlog
        self.port = self.sock.getsockname()[1]
        self.queue: queue.Queue = queue.Queue(maxsize=max(1, max_queue))
        self.num_children = max(1, num_children)
        self.stopping = threading.Event()
        self.workers: list[threading.Thread] = []

    # ------------------------------------------------------------------ the loops
    def start(self) -> None:
        for k in range(self.num_children):
            t = threading.Thread(target=self._worker, name=f"serve-{k}", daemon=True)
            t.start()
            self.workers.append(t)

    def serve_forever(self) -> None:
        """Accept connections until ``stop`` (a blocking put: back-pressure when the queue is full)."""
        self.sock.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                if self.stopping.is_set():
                    break
                continue
            conn.settimeout(None)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while not self.stopping.is_set():
                try:
                    self.queue.put(conn, timeout=0.2)
                    break
                except queue.Full:
                    continue
            else:
                conn.close()

    def stop(self) -> None:
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass

    def _worker(self) -> None:
        while not self.stopping.is_set():
            try:
                conn = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self.serve_connection(conn)
            except OSError:
                pass
            except Exception as exc:    # a request the model refused, or a bug: that connection only
                self.log(f"connection closed: {type(exc).__name__}: {exc}")
                try:
                    conn.sendall(f"error: {exc}\n".encode("utf-8", "replace"))
                except OSError:
                    pass
            finally:
                try:
                    conn.close()
                except OSError:
                    pass

    # ------------------------------------------------------------------ one connection
    def serve_connection(self, conn) -> None:
        """Read the connection's requests and answer them in order. A client that waits for each answer
        before its next request is served on this thread alone (the lowest latency); once a client is
        seen streaming (its next bytes already there before an answer is sent), its next request is read
        and parsed on a second thread while the model answers the last (``pipelined``: as ``streamlearn
        predict`` reads its input), so that it keeps two cores busy."""
        from streamlearn.run.stream import pipelined
        requests = self._requests(conn)
        for item in requests:
            out, close = self._answer(item)
            streaming = not close and _waiting(conn)
            if out:
                conn.sendall(out)
            if close:
                requests.close()
                return
            if streaming:
                break
        else:
            return
        for item in pipelined(requests):
            out, close = self._answer(item)
            if out:
                conn.sendall(out)
            if close:
                try:        # the reading thread waits in recv: end it before the reader is closed
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return

    def _answer(self, item) -> tuple[bytes, bool]:
        """The answer to one request (``_requests``'s item) and whether the connection closes after it."""
        kind, service, payload, block = item
        if kind == "close":           # a message, then the connection closes
            return payload, True
        if kind == "chunk":
            got = service.chunk(payload, block=block)
            self.after(service)
            if got is not None:
                return got, False
            payload = payload.split(b"\n")[:-1]
        out, close = self.request(service, payload)
        return (b"\n".join(out) + b"\n" if out else b""), close

    def _requests(self, conn):
        """The connection's requests, as it sends them: ("chunk", service, bytes of complete lines,
        block parsed ahead or None/False), ("lines", service, lines, None) for lines with a save
        command, or ("close", None, message, None)."""
        names = self.registry.names()
        service = self.registry.get("default") if "default" in names else (
            self.registry.get(names[0]) if len(names) == 1 else None)
        first = True
        pending = b""
        while True:
            data = conn.recv(CHUNK)
            if not data:
                body, pending = (pending + b"\n" if pending.strip() else b""), b""
            else:
                pending += data
                cut = pending.rfind(b"\n")
                if cut < 0:
                    if len(pending) > MAX_LINE:
                        yield "close", None, f"error: a line longer than {MAX_LINE} bytes\n".encode(), None
                        return
                    continue
                body, pending = pending[:cut + 1], pending[cut + 1:]
            if first and body:
                head, _, rest = body.partition(b"\n")
                if head.strip().startswith(b"model:"):
                    name = head.strip()[6:].strip().decode("utf-8", "replace")
                    body = rest
                    try:
                        service = self.registry.get(name)
                    except KeyError:
                        yield "close", None, f"error: no model named {name!r}\n".encode(), None
                        return
                first = False
            if body:
                if service is None:
                    yield ("close", None, b"error: several models are served; name one with a first line "
                           b"'model: NAME'\n", None)
                    return
                if b"save" in body and any(save_command(ln.rstrip(b"\r")) is not None for ln in body.split(b"\n")):
                    yield "lines", service, body.split(b"\n")[:-1], None
                else:
                    yield "chunk", service, body, service.parse_chunk(body)
            if not data:
                return

    def request(self, service, lines: list[bytes]) -> tuple[list[bytes], bool]:
        """The output lines of a request's lines (save commands done in order) and whether the
        connection closes (--strict after a bad line)."""
        out: list[bytes] = []
        run: list[bytes] = []

        def flush() -> bool:
            if not run:
                return False
            got = service.handle(run, strict=self.strict)
            run.clear()
            self.after(service)
            for line in got:
                out.append(line)
                if self.strict and line.startswith(b"error: "):
                    return True
            return False

        for line in lines:
            line = line.rstrip(b"\r")
            if not line.strip():
                continue
            target = save_command(line)
            if target is None:
                run.append(line)
                continue
            if flush():
                return out[:_first_error(out) + 1], True
            try:
                path = service.save(target or None)
                self.log(f"model {service.name} saved to {path}")
            except (StreamlearnError, OSError) as exc:
                out.append(f"error: {exc}".encode())
                if self.strict:
                    return out, True
        if flush():
            return out[:_first_error(out) + 1], True
        return out, False


def _waiting(conn) -> bool:
    """Bytes (or the end) already there to read on the connection."""
    return bool(select.select([conn], [], [], 0)[0])


def _first_error(out: list[bytes]) -> int:
    return next(i for i, line in enumerate(out) if line.startswith(b"error: "))
