"""Writing an output file without harming what is already there.

Policy, by what the target path is when the write starts (``os.stat``, following symbolic links):

* absent, or a regular file: the bytes go to a temporary file in the target's directory, which is
  flushed, ``fsync``-ed and renamed over the target; the directory is then ``fsync``-ed. A reader sees
  the old file or the complete new one, never a part. An existing file keeps its permission bits.
* a symbolic link: the file it points to is replaced that way (the temporary file goes next to it);
  the link itself stays.
* a character device or a FIFO (``/dev/null``, ``/dev/stdout``, a named pipe): written
  through, in place, never renamed over, so ``-f /dev/null`` stays the "no model" it is in a shell,
  even as root. (A FIFO blocks until someone reads it, as a shell redirection does.) Outputs that
  must be read back (the cache) refuse such targets instead (``special=False``).
* a block device (a disk: ``-f /dev/sda`` as root would overwrite it), a directory, a socket or
  anything else: refused with one line.

Temporary files are named after their target, ``.<name>.<pid>.<random><suffix>`` (``suffix``
``.part``, ``.cache`` for caches), and hold an ``flock`` while they are written. After a write to a
target succeeds, temporary files of that target left by a run that was killed (their process is gone
and their lock free) are removed; nothing else is ever removed.

Every OS error (a full disk, a file-size limit, no permission, a missing directory, ...) becomes one
``StreamlearnError`` line (the class the caller gives) naming the output and the path and giving the
system's reason.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile

try:
    import fcntl as _fcntl
except ImportError:     # Windows: no locks; stale files are recognised by their process id only
    _fcntl = None

from streamlearn.errors import StreamlearnError

#: what ``tempfile.mkstemp`` puts between prefix and suffix (8 of these characters)
_RANDOM = r"[a-z0-9_]{8}"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def reason(exc: OSError) -> str:
    """The system's words for an OS error (``strerror``), else its text."""
    return exc.strerror or str(exc) or exc.__class__.__name__


def write_through(f, data, error) -> None:
    """``f.write(data)``; an OSError becomes ``error(exc)`` (the one-line message of the file), except a
    broken pipe, which goes up as it is (the CLI ends quietly when its reader is gone)."""
    try:
        f.write(data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise error(exc) from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def stale_pattern(name: str, suffix: str) -> re.Pattern:
    """The names of this module's temporary files for a target called ``name``."""
    return re.compile(r"\." + re.escape(name) + r"\.([0-9]+)\." + _RANDOM + re.escape(suffix) + r"\Z")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True     # someone else's process, or not a pid we can ask about: leave its file
    except OSError:
        return True
    return True


def remove_stale(target: str, suffix: str = ".part") -> list[str]:
    """Remove the temporary files of ``target`` (the real path of a regular target) left by killed
    runs: our exact naming pattern, a regular file, its process gone and its lock free. Returns the
    paths removed. Never raises."""
    directory, name = os.path.split(os.path.abspath(target))
    pattern = stale_pattern(name, suffix)
    removed = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    for entry in names:
        m = pattern.match(entry)
        if m is None or _alive(int(m.group(1))):
            continue
        path = os.path.join(directory, entry)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            if _fcntl is not None:
                try:
                    _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
                except OSError:
                    continue        # a live writer (perhaps in another pid namespace) holds it
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
        finally:
            os.close(fd)
    return removed


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass        # some file systems cannot sync a directory; the rename itself is done
    finally:
        os.close(fd)


def check_target(path: str, what: str = "", error: type = StreamlearnError, special: bool = True) -> None:
    """Refuse, before any work is done, a target that ``OutputFile`` would refuse when the output is
    written (a directory, a socket, a block device, a device or FIFO where ``special`` is False, a
    missing directory), with the same one line: a long training run does not end by losing its
    result to a typo in an output path."""
    name = f"{what} {path}" if what else path
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is None:
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise error(f"cannot write {name}: directory {directory} does not exist")
        return
    if stat.S_ISREG(st.st_mode):
        return
    if special and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        return
    raise error(f"cannot write {name}: it is {_kind(st.st_mode)}")


class OutputFile:
    """An output being written (module docstring): ``write`` bytes, then ``commit`` (or ``discard``).

    ``what`` names the output in messages ("model", "cache", ...); ``error`` is the StreamlearnError
    subclass raised; ``special=False`` refuses devices and FIFOs instead of writing through them."""

    def __init__(self, path: str, what: str = "", error: type = StreamlearnError, suffix: str = ".part",
                 special: bool = True):
        self.path = path
        self.what = what
        self.error = error
        self.suffix = suffix
        self.tmp = None
        self.f = None
        self._lock_fd = None
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                raise self._error(exc) from None
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            if special and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
                try:
                    fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
                    self.f = os.fdopen(fd, "wb")
                except OSError as exc:
                    raise self._error(exc) from None
                return
            raise self.error(f"cannot write {self._name()}: it is {_kind(st.st_mode)}")
        # a regular file, or none yet: replace the real file (through symbolic links) atomically
        self.target = os.path.realpath(path) if os.path.islink(path) else path
        directory, name = os.path.split(os.path.abspath(self.target))
        self.directory = directory
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", suffix=suffix, dir=directory)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise self.error(f"cannot write {self._name()}: directory {directory} does not exist") from None
            raise self._error(exc) from None
        try:
            if _fcntl is not None:
                try:
                    _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
                except OSError:
                    pass
            os.fchmod(fd, (st.st_mode & 0o7777) if st is not None else (0o666 & ~_umask()))
            self.f = os.fdopen(fd, "wb")
        except OSError as exc:
            os.close(fd)
            self._unlink_tmp()
            raise self._error(exc) from None

    def _name(self) -> str:
        return f"{self.what} {self.path}" if self.what else self.path

    def _error(self, exc: OSError) -> StreamlearnError:
        return self.error(f"cannot write {self._name()}: {reason(exc)}")

    def write(self, data) -> None:
        write_through(self.f, data, self._error)

    def commit(self) -> None:
        """Finish: flush and sync, rename into place (a regular target), remove stale temporary files."""
        f = self.f
        try:
            f.flush()
            if self.tmp is not None:
                os.fsync(f.fileno())
        except BrokenPipeError:
            self.discard()
            raise
        except OSError as exc:
            self.discard()
            raise self._error(exc) from None
        if self.tmp is None:        # written through (a device or a FIFO)
            try:
                f.close()
            except BrokenPipeError:
                raise
            except OSError as exc:
                raise self._error(exc) from None
            return
        try:
            os.replace(self.tmp, self.target)
        except OSError as exc:
            self.discard()
            raise self._error(exc) from None
        self.tmp = None
        try:
            f.close()   # closing releases the lock, after the rename
        except OSError:
            pass        # flushed and synced above: the file in place is complete
        _fsync_directory(self.directory)
        remove_stale(self.target, self.suffix)

    def discard(self) -> None:
        """Abandon the write: the target is untouched (a device or FIFO keeps what was written)."""
        try:
            if self.f is not None:
                self.f.close()
        except OSError:
            pass
        finally:
            self._unlink_tmp()

    def _unlink_tmp(self) -> None:
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None


def write_atomic(path: str, chunks, what: str = "", error: type = StreamlearnError) -> None:
    """Write byte chunks (any iterable, consumed once) to ``path`` by the policy of the module
    docstring; one ``error`` line on failure, the target untouched."""
    out = OutputFile(path, what, error)
    try:
        for chunk in chunks:
            out.write(chunk)
    except BaseException:
        out.discard()
        raise
    out.commit()
