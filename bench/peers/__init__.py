"""The servers issue 28's serving benchmark measures against (``python -m bench run serve``):
``echo.py`` (the client's ceiling, one per protocol) and ``sgd_http.py`` (scikit-learn's SGDClassifier
behind aiohttp, what a Python user would otherwise deploy)."""
