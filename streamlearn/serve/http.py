"""The HTTP endpoint of ``streamlearn serve`` (issue 28), on aiohttp (the ``serve`` extra).

Routes (``{name}`` picks one model of the registry; the short routes serve the default model):

* ``POST /predict``, ``POST /learn``, ``POST /models/{name}/predict``, ``POST /models/{name}/learn``:
  VW text lines (one example per line) or JSON examples in; one prediction per example out, as text
  lines or ``{"predictions": [...]}`` (the request's ``Accept``, else its ``Content-Type``).
  ``?raw=1`` asks for raw predictions. ``/predict`` never learns; ``/learn`` learns from labelled lines.
* ``POST /save``, ``POST /models/{name}/save``: a snapshot to the model's own path.
* ``GET /healthz``, ``GET /metrics`` (Prometheus text format 0.0.4).

The app depends only on the registry's interface (``Registry.get``/``names``, ``Service.chunk``/
``handle``/``save``/``stats``: a text body of plain example lines is answered by ``chunk`` in one piece,
anything else line by line by ``handle``). Calls into a service run in a thread pool (the kernels release
the GIL), so the event loop keeps answering; at most ``max_pending`` requests, and ``MAX_BYTES`` of their
bodies, are admitted at once (from before their body is read, running or waiting for a pool thread), and
the next ones get 503 at once with ``Retry-After: 1`` (back-pressure without a growing queue or memory).
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import json
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from streamlearn.errors import OptionError, StreamlearnError

try:
    from aiohttp import web
except ImportError as e:  # the CLI prints this one line
    raise OptionError("the HTTP endpoint (--http-port) needs aiohttp: pip install 'streamlearn[serve]'") from e

#: the bodies of the requests admitted at once (bytes): a request takes up to about 20 times its body while
#: it is parsed and answered, so this bounds the endpoint's memory (a few hundred MB) beside ``max_pending``
MAX_BYTES = 16 << 20
#: upper bounds (seconds) of the latency histogram's buckets: 50 us to 10 s, dense below 1 ms
LATENCY_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                   0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
#: the characters a JSON feature or namespace name cannot carry into VW text, and ``%`` (so the
#: rewriting is one-to-one): each becomes ``%XX`` (its byte in hex, upper case)
_ESCAPED = " \t\r\n\v\f:|%"
_ESCAPE_TABLE = str.maketrans({c: f"%{ord(c):02X}" for c in _ESCAPED})
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain"
_APP_KEY = web.AppKey("streamlearn_http", object)


class BadRequest(ValueError):
    """A request the server refuses with 400 and this one-line reason."""


def escape_name(name: str) -> str:
    """A JSON feature or namespace name as a VW name: whitespace, ``:``, ``|`` and ``%`` become
    ``%XX``; every other name is unchanged (so it hashes as the same name in a VW text file)."""
    return name.translate(_ESCAPE_TABLE)


def _number(value, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"{what} must be a number, not {json.dumps(value)[:40]}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadRequest(f"{what} must be finite")
    return repr(value) if isinstance(value, float) else str(value)


def _features(features, where: str) -> str:
    if not isinstance(features, dict):
        raise BadRequest(f"{where}: features must be an object of name: value")
    out = []
    for name, value in features.items():
        if isinstance(value, str):  # categorical: one feature name=value of value 1
            out.append(escape_name(f"{name}={value}"))
        elif value == 1 and not isinstance(value, bool):
            out.append(escape_name(name))
        else:
            out.append(f"{escape_name(name)}:{_number(value, f'{where}: feature {name!r}')}")
    return " ".join(out)


def example_to_line(example, index: int = 0) -> bytes:
    """One JSON example as one VW text line.

    ``{"label": 1, "weight": 2, "tag": "t", "namespace": "a", "features": {"x": 0.5, "color": "red"}}``
    becomes ``1 2 't|a x:0.5 color=red``; ``"namespaces": {"a": {...}, "b": {...}}`` gives several
    namespaces. A label may be a number or a VW label string (``"2"``, ``"1:0.5 2:1"``); names are
    escaped by :func:`escape_name`; a string value ``v`` of feature ``f`` is the feature ``f=v``."""
    where = f"example {index + 1}"
    if not isinstance(example, dict):
        raise BadRequest(f"{where} must be an object")
    unknown = set(example) - {"label", "weight", "tag", "namespace", "features", "namespaces"}
    if unknown:
        raise BadRequest(f"{where}: unknown field {sorted(unknown)[0]!r}")
    head = []
    label = example.get("label")
    if label is not None:
        if isinstance(label, str):
            if not label.strip() or any(c in label for c in "|\n\r'"):
                raise BadRequest(f"{where}: bad label {label!r}")
            head.append(label.strip())
        else:
            head.append(_number(label, f"{where}: label"))
    if "weight" in example:
        if label is None:
            raise BadRequest(f"{where}: a weight needs a label")
        head.append(_number(example["weight"], f"{where}: weight"))
    tag = example.get("tag")
    if tag is not None:
        if not isinstance(tag, str) or not tag or any(c in tag for c in _ESCAPED) or tag.startswith("save"):
            raise BadRequest(f"{where}: a tag is a non-empty string without whitespace, ':', '|', '%' "
                             "and not starting with 'save'")
        head.append("'" + tag)
    spaces = {}
    if "features" in example:
        ns = example.get("namespace") or ""
        if not isinstance(ns, str):
            raise BadRequest(f"{where}: namespace must be a string")
        spaces[ns] = example["features"]
    elif "namespace" in example:
        raise BadRequest(f"{where}: namespace without features")
    more = example.get("namespaces", {})
    if not isinstance(more, dict):
        raise BadRequest(f"{where}: namespaces must be an object of namespace: features")
    for ns, feats in more.items():
        if ns in spaces:
            raise BadRequest(f"{where}: namespace {ns!r} given twice")
        spaces[ns] = feats
    if not spaces:
        raise BadRequest(f"{where} has no features")
    body = "".join(f"|{escape_name(ns)} {_features(f, where)}" for ns, f in spaces.items())
    return (" ".join(head) + " " + body).encode()


def json_to_lines(data) -> list[bytes]:
    """``{"examples": [...]}`` or a single example object as VW text lines."""
    if isinstance(data, dict) and "examples" in data:
        if set(data) != {"examples"} or not isinstance(data["examples"], list):
            raise BadRequest('expected {"examples": [...]} or one example object')
        examples = data["examples"]
    elif isinstance(data, dict):
        examples = [data]
    else:
        raise BadRequest('expected {"examples": [...]} or one example object')
    if not examples:
        raise BadRequest("no examples")
    return [example_to_line(e, i) for i, e in enumerate(examples)]


def text_to_lines(body: bytes) -> list[bytes]:
    """The non-blank lines of a text body (``\\r\\n`` or ``\\n`` ends a line)."""
    lines = [line.rstrip(b"\r") for line in body.split(b"\n")]
    return [line for line in lines if line.strip()]


def is_save_line(line: bytes) -> bool:
    """VW's ``save``/``save_<file>`` line: a feature-less example whose tag starts with ``save``."""
    head, bar, rest = line.partition(b"|")
    tokens = head.split()
    if not tokens or not tokens[-1].lstrip(b"'").startswith(b"save"):
        return False
    if not bar:
        return True
    for segment in rest.split(b"|"):  # a segment: an optional namespace name, then features
        words = segment.split()
        if len(words) > (0 if segment[:1].isspace() or not segment else 1):
            return False
    return True


def prediction_value(line: bytes):
    """A prediction line in JSON: a number when it is one number, else its text."""
    text = line.decode("utf-8", "replace")
    try:
        return float(text)
    except ValueError:
        return text


class Histogram:
    """A Prometheus histogram: cumulative counts of observations at most each bound, their sum."""

    def __init__(self, bounds=LATENCY_BUCKETS):
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound (+Inf only)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def cumulative(self):
        """(le, count) pairs, ``+Inf`` last."""
        total, out = 0, []
        for bound, count in zip(self.bounds + (math.inf,), self.counts):
            total += count
            out.append(("+Inf" if bound == math.inf else repr(bound), total))
        return out


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels) -> str:
    return "{" + ",".join(f'{k}="{_escape_label(str(v))}"' for k, v in labels.items()) + "}"


def _fmt(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class _State:
    """What the handlers share: the registry, the pool, admission and the HTTP metrics (touched only
    from the event loop's thread, so no lock)."""

    def __init__(self, registry, strict, workers, max_pending, default, after=None, max_body=16 << 20,
                 max_bytes=MAX_BYTES):
        self.registry = registry
        self.after = after      # after(service), on the pool thread after each request (periodic snapshots)
        self.strict = strict
        self.default = default
        self.workers = workers
        self.max_pending = max_pending
        self.pool = None
        self.pending = 0
        self.max_body = max_body
        self.max_bytes = max_bytes
        self.pending_bytes = 0  # the bodies (Content-Length, else max_body) of the requests in flight
        self.requests = {}      # (endpoint, status) -> count
        self.latency = {}       # endpoint -> Histogram
        self.rejected = 0       # 503s of back-pressure

    def model(self, request):
        name = request.match_info.get("name")
        if name is None:
            name = self.default
            if name is None:
                names = self.registry.names()
                if len(names) != 1:
                    raise web.HTTPNotFound(text=f"{len(names)} models: use /models/{{name}}/...\n")
                name = names[0]
        try:
            return self.registry.get(name)
        except KeyError:
            raise web.HTTPNotFound(text=f"unknown model {name!r}\n") from None

    def admit(self, size: int = 0) -> None:
        """Count a request in flight (before its body is read), or answer 503 at once: at most
        ``max_pending`` requests and ``max_bytes`` of their bodies (a request alone is always admitted)."""
        if self.pending >= self.max_pending or (self.pending and self.pending_bytes + size > self.max_bytes):
            self.rejected += 1
            raise web.HTTPServiceUnavailable(text="busy: too many requests in flight, retry\n",
                                             headers={"Retry-After": "1"})
        self.pending += 1
        self.pending_bytes += size

    def release(self, size: int = 0) -> None:
        self.pending -= 1
        self.pending_bytes -= size

    async def run(self, fn, *args):
        """``fn(*args)`` on a pool thread (the request admitted)."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, functools.partial(fn, *args))

    async def call(self, fn, *args):
        """``fn(*args)`` on a pool thread, if admitted (else 503)."""
        self.admit()
        try:
            return await self.run(fn, *args)
        finally:
            self.release()


def _wants_json(request, body_is_json: bool) -> bool:
    accept = request.headers.get("Accept", "")
    if JSON_TYPE in accept:
        return True
    if TEXT_TYPE in accept:
        return False
    return body_is_json


def _fail(status, reason: str, as_json: bool) -> web.Response:
    reason = " ".join(reason.split())  # one line
    if as_json:
        return web.json_response({"error": reason}, status=status)
    return web.Response(status=status, text=reason + "\n")


async def _examples(request, learn: bool) -> web.StreamResponse:
    state = request.app[_APP_KEY]
    service = state.model(request)
    size = request.content_length if request.content_length is not None else state.max_body
    state.admit(size)   # before the body is read: the bodies held at once are bounded
    try:
        return await _answer(request, state, service, learn)
    finally:
        state.release(size)


async def _answer(request, state, service, learn: bool) -> web.StreamResponse:
    body_is_json = request.content_type == JSON_TYPE
    as_json = _wants_json(request, body_is_json)
    raw = request.query.get("raw", "0").lower() in ("1", "true", "yes")
    body = await request.read()
    if not (body_is_json or as_json or raw) and b"save" not in body and body.strip():
        # the fast path: plain example lines answered as one chunk (None: some line needs the general path)
        try:
            got = await state.run(_chunk, state, service, body if body.endswith(b"\n") else body + b"\n", learn)
        except StreamlearnError as e:
            return _fail(400, str(e), as_json)
        if got is not None:
            return web.Response(body=got, content_type=TEXT_TYPE)
    try:
        if body_is_json:
            try:
                data = json.loads(body)
            except (UnicodeDecodeError, ValueError) as e:
                raise BadRequest(f"invalid JSON: {e}") from None
            lines = json_to_lines(data)
        else:
            lines = text_to_lines(body)
            if not lines:
                raise BadRequest("no example lines")
    except BadRequest as e:
        return _fail(400, str(e), as_json)
    refused = {i for i, line in enumerate(lines) if is_save_line(line)}
    kept = [line for i, line in enumerate(lines) if i not in refused]
    try:
        out = await state.run(_handle, state, service, kept, learn, raw) if kept else []
    except StreamlearnError as e:
        return _fail(400, str(e), as_json)
    if len(out) != len(kept):
        return _fail(500, f"the model answered {len(out)} lines for {len(kept)}", as_json)
    answers = iter(out)
    results = [b"error: save lines are refused over HTTP (POST /save)" if i in refused else next(answers)
               for i in range(len(lines))]
    errors = [(i, r[len(b"error:"):].strip().decode("utf-8", "replace"))
              for i, r in enumerate(results) if r.startswith(b"error:")]
    if errors and (state.strict or len(errors) == len(results)):
        i, reason = errors[0]
        more = f" ({len(errors)} bad lines)" if len(errors) > 1 else ""
        done = len(results) - len(errors)
        rest = f"; the {done} other lines were applied" if done else ""
        return _fail(400, f"line {i + 1}: {reason}{more}{rest}", as_json)
    if as_json:
        payload = {"predictions": [None if r.startswith(b"error:") else prediction_value(r) for r in results]}
        if errors:
            payload["errors"] = [{"line": i + 1, "error": reason} for i, reason in errors]
        return web.json_response(payload)
    return web.Response(body=b"".join(r + b"\n" for r in results), content_type=TEXT_TYPE)


async def predict(request):
    return await _examples(request, False)


async def learn(request):
    return await _examples(request, True)


async def save(request):
    state = request.app[_APP_KEY]
    service = state.model(request)
    try:
        path = await state.call(service.save)
    except StreamlearnError as e:
        return _fail(500, str(e), _wants_json(request, False))
    if _wants_json(request, False):
        return web.json_response({"saved": path})
    return web.Response(text=f"saved {path}\n")


async def healthz(request):
    state = request.app[_APP_KEY]
    names = state.registry.names()
    if _wants_json(request, False):
        return web.json_response({"status": "ok", "models": names})
    return web.Response(text="ok\n")


def metrics_text(state, now: float | None = None) -> str:
    """The Prometheus text exposition of the models' counters and the HTTP server's."""
    now = time.time() if now is None else now
    out = []

    def family(name, kind, help_text, samples):
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(f"{name}{labels} {_fmt(value)}" for labels, value in samples)

    stats = [(name, state.registry.get(name).stats()) for name in state.registry.names()]
    per_model = [
        ("streamlearn_examples_total", "counter", "Examples the model has answered.", "examples"),
        ("streamlearn_learned_total", "counter", "Examples the model has learned from.", "learned"),
        ("streamlearn_loss_sum", "counter", "Sum of the (weighted) progressive loss.", "loss_sum"),
        ("streamlearn_weighted_examples_total", "counter", "Sum of the importance weights of the labelled "
         "examples.", "weighted"),
        ("streamlearn_model_requests_total", "counter", "Requests the model has handled (all protocols).",
         "requests"),
        ("streamlearn_errors_total", "counter", "Bad example lines (all protocols).", "errors"),
    ]
    for metric, kind, help_text, key in per_model:
        family(metric, kind, help_text, [(_labels(model=n), s.get(key, 0)) for n, s in stats])
    family("streamlearn_average_loss", "gauge", "Progressive loss over the weighted labelled examples.",
           [(_labels(model=n), s["loss_sum"] / s["weighted"] if s.get("weighted") else math.nan)
            for n, s in stats])
    family("streamlearn_model_age_seconds", "gauge", "Seconds since the model was loaded.",
           [(_labels(model=n), now - s["model_loaded_at"]) for n, s in stats])
    family("streamlearn_last_snapshot_age_seconds", "gauge", "Seconds since the last snapshot (absent: none "
           "yet).", [(_labels(model=n), now - s["last_save_at"]) for n, s in stats
                     if s.get("last_save_at") is not None])
    family("streamlearn_http_requests_total", "counter", "HTTP requests by endpoint and status.",
           [(_labels(endpoint=e, status=c), v) for (e, c), v in sorted(state.requests.items())])
    family("streamlearn_http_rejected_total", "counter", "HTTP requests refused with 503 (back-pressure).",
           [("", state.rejected)])
    family("streamlearn_http_in_flight", "gauge", "HTTP requests admitted and not finished.",
           [("", state.pending)])
    name = "streamlearn_http_request_duration_seconds"
    out.append(f"# HELP {name} HTTP request latency by endpoint.")
    out.append(f"# TYPE {name} histogram")
    for endpoint, hist in sorted(state.latency.items()):
        for le, count in hist.cumulative():
            out.append(f"{name}_bucket{_labels(endpoint=endpoint, le=le)} {count}")
        out.append(f"{name}_sum{_labels(endpoint=endpoint)} {_fmt(hist.sum)}")
        out.append(f"{name}_count{_labels(endpoint=endpoint)} {sum(hist.counts)}")
    return "\n".join(out) + "\n"


async def metrics(request):
    state = request.app[_APP_KEY]
    return web.Response(body=metrics_text(state).encode(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


@web.middleware
async def _measure(request, handler):
    """Counts every request by endpoint (its route, so the label set stays bounded) and status, and
    its latency; turns unexpected errors into a one-line 500 (the server stays up)."""
    state = request.app[_APP_KEY]
    start = time.perf_counter()
    route = request.match_info.route.resource
    endpoint = route.canonical if route is not None else "unmatched"
    try:
        response = await handler(request)
        status = response.status
    except web.HTTPException as e:
        status = e.status
        raise
    except asyncio.CancelledError:
        status = 499  # the client went away
        raise
    except Exception as e:  # noqa: BLE001 - a bug or a failing service must not take the server down
        status = 500
        response = _fail(500, f"internal error: {type(e).__name__}: {e}", False)
    finally:
        state.requests[endpoint, status] = state.requests.get((endpoint, status), 0) + 1
        state.latency.setdefault(endpoint, Histogram()).observe(time.perf_counter() - start)
    return response


def _chunk(state, service, data, learn):
    """``service.chunk`` (plain example lines), then the daemon's ``after``, both on the pool thread."""
    out = service.chunk(data, learn)
    if out is not None and state.after is not None:
        state.after(service)
    return out


def _handle(state, service, lines, learn, raw):
    """``service.handle``, then the daemon's ``after`` (``--save-every``), both on the pool thread."""
    out = service.handle(lines, learn, raw)
    if state.after is not None:
        state.after(service)
    return out


def make_app(registry, *, strict: bool = False, workers: int | None = None, max_pending: int = 256,
             max_body: int = 16 << 20, default: str | None = None, after=None,
             max_bytes: int = MAX_BYTES) -> web.Application:
    """The aiohttp application serving ``registry``.

    ``strict``: a request with a bad example line is answered 400 (else 200 with the error in that
    line's place; 400 when every line is bad). ``workers``: threads calling the services (default:
    4). ``max_pending``: requests admitted at once (running or waiting for a thread); more get 503.
    ``max_body``: largest request body in bytes (413 above). ``max_bytes``: the bodies of the requests
    admitted at once, in bytes (Content-Length, else ``max_body``; more get 503). ``default``: the model of the short
    routes (default: the registry's only model). ``after(service)``: called after each request
    (``streamlearn serve --save-every``)."""
    if max_pending < 1:
        raise ValueError("max_pending must be at least 1")
    state = _State(registry, strict, workers or 4, max_pending, default, after, max_body, max_bytes)
    app = web.Application(middlewares=[_measure], client_max_size=max_body)
    app[_APP_KEY] = state

    async def start_pool(app):
        state.pool = ThreadPoolExecutor(max_workers=state.workers, thread_name_prefix="streamlearn-http")

    async def stop_pool(app):
        state.pool.shutdown(wait=True)

    app.on_startup.append(start_pool)
    app.on_cleanup.append(stop_pool)
    app.router.add_post("/predict", predict)
    app.router.add_post("/learn", learn)
    app.router.add_post("/save", save)
    app.router.add_post("/models/{name}/predict", predict)
    app.router.add_post("/models/{name}/learn", learn)
    app.router.add_post("/models/{name}/save", save)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app


async def start_http(registry, host: str, port: int, **options) -> web.AppRunner:
    """Starts serving on the running event loop; returns the runner (``await runner.cleanup()`` stops)."""
    runner = web.AppRunner(make_app(registry, **options), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


def run_http(registry, host: str = "127.0.0.1", port: int = 8080, **options) -> None:
    """Serves until SIGINT/SIGTERM (blocking, in this thread)."""
    web.run_app(make_app(registry, **options), host=host, port=port, print=None, access_log=None)


class HttpServer:
    """An HTTP endpoint served by a thread of its own (its own event loop): what ``streamlearn serve
    --http-port`` starts next to the TCP protocol. ``port`` is the bound port (useful with port 0)."""

    def __init__(self, registry, host: str, port: int, **options):
        self._loop = asyncio.new_event_loop()
        self._runner = None
        self._error = None
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self._loop)
            try:
                self._runner = self._loop.run_until_complete(start_http(registry, host, port, **options))
            except BaseException as e:  # noqa: BLE001 - reported to the starting thread
                self._error = e
                self._loop.close()
                started.set()
                return
            started.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="streamlearn-http", daemon=True)
        self._thread.start()
        started.wait()
        if self._error is not None:
            self._thread.join()
            raise StreamlearnError(f"cannot serve HTTP on {host}:{port}: {self._error}") from self._error
        self.port = self._runner.addresses[0][1]

    def stop(self) -> None:
        """Stops accepting, lets the requests in flight finish, joins the thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()


def serve_http(registry, host: str, port: int, **options) -> HttpServer:
    """Starts the HTTP endpoint in a background thread and returns once it listens
    (``streamlearn serve --http-port``); ``.stop()`` ends it. Options: those of :func:`make_app`."""
    return HttpServer(registry, host, port, **options)
