"""``streamlearn serve``: one process serving models over VW's daemon protocol (``tcp.py``); the
served model and its learner (``service.py``); the process's life: signals, snapshots (``daemon.py``)."""
