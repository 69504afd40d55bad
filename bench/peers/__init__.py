"""The servers issue 28's serving benchmark measures against (``python -m bench run serve``):
``echo.py`` (the client's ceiling, one per protocol) and ``sgd_http.py`` (scikit-learn's SGDClassifier
behind aiohttp, what a Python user would otherwise deploy)."""


def http_app(predict):
    """The peers' aiohttp application: ``POST /predict`` answered by ``predict(request)``, ``GET /healthz``."""
    from aiohttp import web

    async def healthz(request):
        return web.Response(text="ok\n")

    app = web.Application(client_max_size=1 << 26)
    app.router.add_post("/predict", predict)
    app.router.add_get("/healthz", healthz)
    return app
