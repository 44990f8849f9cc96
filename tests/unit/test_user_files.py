"""Files a user hands a command: regular files only, read in chunks up to a cap, one-line
errors naming the path."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inspire_build import user_files
from inspire_build.errors import InputError


def refused(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_files_and_directories_are_one_line_errors(tmp_path: Path) -> None:
    refused(lambda: user_files.read_bytes(tmp_path / "nope", 10), "nope: no such file")
    refused(lambda: user_files.read_bytes(tmp_path, 10), "is a directory, not a file")


def test_the_size_cap_counts_bytes(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 10)
    assert user_files.read_bytes(tmp_path / "f", 10) == b"x" * 10
    refused(lambda: user_files.read_bytes(tmp_path / "f", 9), "INSPIRE_EVAL_MAX_INPUT_MB")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused_before_it_is_read() -> None:
    started = time.monotonic()
    refused(
        lambda: user_files.read_bytes(Path("/dev/zero"), 4 * user_files.MIB),
        "/dev/zero: a character device, not a regular file",
    )
    assert time.monotonic() - started < 5


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    refused(lambda: user_files.read_bytes(fifo, 10), "run.jsonl: a named pipe (FIFO), not a")
    assert time.monotonic() - started < 5


def test_a_link_to_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert user_files.read_bytes(tmp_path / "link", 10) == b"x"


def test_text_is_utf8_without_nul_bytes_and_its_cap_names_its_setting(tmp_path: Path) -> None:
    path = tmp_path / "brief.txt"
    path.write_bytes("a brief, caf\u00e9\n".encode())
    assert user_files.read_text(path, 100, "X_MB") == "a brief, caf\u00e9\n"
    path.write_bytes(b"abc\x00def")
    refused(lambda: user_files.read_text(path, 100, "X_MB"), "brief.txt: holds a NUL byte")
    path.write_bytes(b"caf\xe9")
    refused(lambda: user_files.read_text(path, 100, "X_MB"), "brief.txt: not UTF-8 text (byte 4)")
    refused(lambda: user_files.read_text(path, 2, "X_MB"), "MiB cap on an input file (X_MB)")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_open_regular_refuses_a_device_a_fifo_and_a_directory(tmp_path: Path) -> None:
    refused(lambda: user_files.open_regular(Path("/dev/zero")), "a character device")
    os.mkfifo(tmp_path / "fifo")
    refused(lambda: user_files.open_regular(tmp_path / "fifo"), "a named pipe (FIFO)")
    refused(lambda: user_files.open_regular(tmp_path), "is a directory, not a file")
    refused(lambda: user_files.open_regular(tmp_path / "nope"), "nope: no such file")


def test_the_cap_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspire_build.config import get_settings

    assert user_files.max_input_bytes() == 256 * user_files.MIB
    monkeypatch.setenv("INSPIRE_EVAL_MAX_INPUT_MB", "3")
    get_settings.cache_clear()
    assert user_files.max_input_bytes() == 3 * user_files.MIB
