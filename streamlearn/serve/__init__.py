"""Serving (issue 28): a daemon that predicts and learns online (service.py), over VW's TCP protocol
(tcp.py) and HTTP (http.py, an optional extra: ``pip install streamlearn[serve]``)."""
