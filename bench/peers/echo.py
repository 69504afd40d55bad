"""Echo servers of the two serving protocols: the load client's ceiling (no model, no parsing).

* ``--protocol tcp``: VW's daemon protocol over asyncio streams; every line received is sent back as its
  answer line.
* ``--protocol http``: aiohttp; ``POST /predict`` answers its body (``text/plain``), ``GET /healthz`` ``ok``.

``python -m bench.peers.echo --protocol tcp|http --port P [--host H]``
"""

from __future__ import annotations

import argparse
import asyncio

from bench.peers import http_app as peer_app


async def _echo_lines(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    pending = b""
    try:
        while chunk := await reader.read(1 << 16):
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            if cut:
                writer.write(pending[:cut])
                pending = pending[cut:]
                await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def serve_tcp(host: str, port: int) -> None:
    server = await asyncio.start_server(_echo_lines, host, port, limit=1 << 24)
    async with server:
        await server.serve_forever()


def http_app():
    from aiohttp import web

    async def predict(request):
        return web.Response(body=await request.read(), content_type="text/plain")

    return peer_app(predict)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers.echo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", choices=("tcp", "http"), required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    if args.protocol == "tcp":
        try:
            asyncio.run(serve_tcp(args.host, args.port))
        except KeyboardInterrupt:
            pass
    else:
        from aiohttp import web
        web.run_app(http_app(), host=args.host, port=args.port, print=None, access_log=None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
