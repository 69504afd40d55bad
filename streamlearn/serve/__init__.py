"""``streamlearn serve`` (issue 28): one process serving models over VW's daemon protocol (``tcp.py``)
and HTTP (``http.py``, an optional extra: ``pip install streamlearn[serve]``); the served model and its
learner (``service.py``); the process's life: signals, snapshots (``daemon.py``).

``listen_early`` opens the listening socket at the very start of ``streamlearn-vw --daemon`` (before
the learners are imported and the models loaded, about a second): clients that connect meanwhile
wait in the listen backlog, as VW's, which listens at once, lets them. Kept light: no imports."""

import socket

#: (host, port) -> a listening socket opened before the models were loaded
_EARLY: dict = {}


def listen_early(host: str, port: int) -> None:
    """Listen on (host, port) now; the TCP server takes the socket over. Failures are left to it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(128)
    except OSError:
        s.close()
        return
    _EARLY[(host, port)] = s


def take_early(host: str, port: int):
    return _EARLY.pop((host, port), None)
