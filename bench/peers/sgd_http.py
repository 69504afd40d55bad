"""The peer of issue 28's serving benchmark: scikit-learn's ``SGDClassifier`` behind aiohttp, answering
VW text lines -- what a Python user would otherwise deploy.

At start it trains on ``--train`` (VW text, labels -1/1 or 0/1; one pass of ``partial_fit`` over chunks of
``--chunk`` lines, logistic loss, like an online learner's one pass), the features hashed by scikit-learn's
``FeatureHasher`` into ``2**bits`` columns (``-b``, as streamlearn's and VW's), each feature named
``namespace^name`` with its value (1 when none; a namespace's ``:scale`` multiplies its values).
Then ``POST /predict`` takes VW text lines (labels, if any, ignored) and answers one line per example:
the raw score (``decision_function``, VW's default output for logistic loss), ``%.6g``, followed by the
example's tag when it has one; ``GET /healthz`` answers ``ok``.

``python -m bench.peers.sgd_http --train FILE [-b 18] --port P [--host H]``
"""

from __future__ import annotations

import argparse

from bench.peers import http_app


def parse_line(line: str) -> tuple[float | None, str | None, list[tuple[str, float]]]:
    """One VW text line: (label or None, tag or None, [(namespace^name, value), ...])."""
    head, _, rest = line.rstrip("\r\n").partition("|")
    tokens = head.split()
    label = tag = None
    if tokens and not tokens[0].startswith("'"):
        label = float(tokens[0])
    for t in tokens[1:] if label is not None else tokens:
        if t.startswith("'"):
            tag = t[1:]
    if label is not None and len(tokens) >= 3 and not tokens[-1].startswith("'"):
        tag = tokens[-1]
    pairs: list[tuple[str, float]] = []
    if "|" in line:
        for segment in rest.split("|"):
            if segment[:1] in (" ", "\t", ""):
                ns, scale, feats = " ", 1.0, segment.split()
            else:
                first, *feats = segment.split()
                ns, _, s = first.partition(":")
                scale = float(s) if s else 1.0
            for f in feats:
                name, sep, v = f.rpartition(":")
                if sep:
                    pairs.append((f"{ns}^{name}", scale * float(v)))
                else:
                    pairs.append((f"{ns}^{f}", scale))
    return label, tag, pairs


def hasher(bits: int):
    from sklearn.feature_extraction import FeatureHasher
    return FeatureHasher(n_features=2 ** bits, input_type="pair", alternate_sign=False)


def train(path: str, bits: int, chunk: int = 10_000, seed: int = 0):
    """An SGDClassifier (logistic loss) trained by one pass of partial_fit over the file."""
    import numpy as np
    from sklearn.linear_model import SGDClassifier
    h = hasher(bits)
    model = SGDClassifier(loss="log_loss", random_state=seed)
    classes = np.array([-1.0, 1.0])

    def flush(feats, labels):
        y = np.where(np.asarray(labels) > 0, 1.0, -1.0)
        model.partial_fit(h.transform(feats), y, classes=classes)

    feats, labels = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            label, _, pairs = parse_line(line)
            if label is None:
                continue
            feats.append(pairs)
            labels.append(label)
            if len(feats) >= chunk:
                flush(feats, labels)
                feats, labels = [], []
    if feats:
        flush(feats, labels)
    if not hasattr(model, "coef_"):
        raise ValueError(f"{path}: no labelled examples")
    return model, h


def predict_lines(model, h, text: str) -> str:
    """The answer to a request's body: one line per non-empty line."""
    parsed = [parse_line(line) for line in text.split("\n") if line.strip()]
    if not parsed:
        return ""
    scores = model.decision_function(h.transform([p for _, _, p in parsed]))
    return "".join(f"{s:.6g} {tag}\n" if tag else f"{s:.6g}\n" for s, (_, tag, _) in zip(scores, parsed))


def make_app(model, h):
    from aiohttp import web

    async def predict(request):
        try:
            body = predict_lines(model, h, await request.text())
        except ValueError as e:
            return web.Response(status=400, text=f"bad input: {e}\n")
        return web.Response(text=body, content_type="text/plain")

    return http_app(predict)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers.sgd_http", description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("-b", "--bits", type=int, default=18)
    ap.add_argument("--chunk", type=int, default=10_000)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    model, h = train(args.train, args.bits, args.chunk)
    from aiohttp import web
    web.run_app(make_app(model, h), host=args.host, port=args.port, print=None, access_log=None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
