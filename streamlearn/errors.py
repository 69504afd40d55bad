"""Exceptions raised by the library; the CLI turns each into a one-line message and exit status 1."""


class StreamlearnError(Exception):
    """Base class: the message is complete and user-facing (one line, no traceback)."""


class InputError(StreamlearnError):
    """Unreadable input or (with --strict) a malformed line: names the file and line."""


class ModelError(StreamlearnError):
    """A model file that is missing, truncated, corrupt, foreign or in conflict with the options."""


class OptionError(StreamlearnError):
    """A bad option value or a conflict between options."""
