"""Files a user hands a command (runs, qrels, a brief's text, a snapshot, a session file, a
policy): regular files only. A FIFO would wait for a writer and a device such as ``/dev/zero``
never ends, so both are refused before they are read; whole files are read in chunks up to a
cap. Every problem is an ``InputError`` naming the path."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from inspire_build.config import get_settings
from inspire_build.errors import InputError

MIB = 1 << 20
_CHUNK = MIB

_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def max_input_bytes() -> int:
    """The configured cap on one input file, in bytes (``INSPIRE_EVAL_MAX_INPUT_MB``)."""
    return get_settings().eval_max_input_mb * MIB


def read_bytes(path: Path, max_bytes: int, cap_setting: str = "INSPIRE_EVAL_MAX_INPUT_MB") -> bytes:
    """The file's bytes, read in chunks; more than ``max_bytes`` is an error naming
    ``cap_setting``, and so is a path that is not a regular file, refused before it is opened."""
    chunks, size = [], 0
    with _translated(path), open_regular(path) as stream:
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise InputError(
                    f"{path}: larger than the {max_bytes / MIB:g} MiB cap on an input file "
                    f"({cap_setting})"
                )
            chunks.append(chunk)
    return b"".join(chunks)


def read_text(
    path: Path, max_bytes: int | None = None, cap_setting: str = "INSPIRE_EVAL_MAX_INPUT_MB"
) -> str:
    """A UTF-8 text file (:func:`read_bytes`, under the configured cap unless ``max_bytes``);
    bytes that are not UTF-8, or a NUL byte (binary data), are an error naming the path."""
    cap = max_input_bytes() if max_bytes is None else max_bytes
    data = read_bytes(path, cap, cap_setting)
    if b"\0" in data:
        raise InputError(f"{path}: holds a NUL byte: binary data, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text (byte {error.start + 1})") from None


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, once its status says it is a regular file. It is opened
    without blocking and checked again, in case the path was replaced in between."""
    with _translated(path):
        _require_regular(path, os.stat(path))
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        _require_regular(path, os.fstat(descriptor))
    except (InputError, OSError):
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def _require_regular(path: Path, status: os.stat_result) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise InputError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(status.st_mode):
        kind = _KINDS.get(stat.S_IFMT(status.st_mode), "not a regular file")
        raise InputError(f"{path}: {kind}, not a regular file; write the input to a file first")


@contextlib.contextmanager
def _translated(path: Path) -> Iterator[None]:
    """The OS's errors on ``path`` as one ``InputError`` line."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
