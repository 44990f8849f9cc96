"""Reading recorded cassettes: an entry of another shape, or a path that is no file or folder,
is one InputError naming the file (and the entry), never a traceback or a silent nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inspire_build.errors import InputError
from inspire_build.snapshot import cassette_files, read_cassette

ENTRY = """interactions:
- request: {method: GET, uri: "https://api.openalex.org/works/W1"}
  response: {status: {code: 200}, headers: {}, body: {string: "{}"}}
version: 1
"""


def test_a_cassette_is_read_and_a_misshapen_entry_is_named(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(ENTRY, encoding="utf-8")
    [read] = read_cassette(good)
    assert (read.method, read.url, read.status, read.body) == (
        "GET", "https://api.openalex.org/works/W1", 200, b"{}"
    )  # fmt: skip
    for text, said in (
        ("interactions:\n- request: 5\n  response: 6\n", "no attribute 'get'"),
        (ENTRY.replace("code: 200", 'code: "abc"'), "invalid literal for int()"),
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=f"bad.yaml: interaction 1 is not a recorded .*{said}"):
            list(read_cassette(bad))
    fixture = tmp_path / "feed.json"
    fixture.write_text('{"url": "u", "status_code": "x", "body": "b"}', encoding="utf-8")
    with pytest.raises(InputError, match="feed.json: not an arxiv.py fixture"):
        list(read_cassette(fixture))


def test_a_device_or_a_fifo_is_neither_a_file_nor_a_folder(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for path in (Path("/dev/zero"), tmp_path / "fifo"):
        with pytest.raises(InputError, match="neither a file nor a folder"):
            cassette_files([path])
    with pytest.raises(InputError, match="no such file or folder"):
        cassette_files([tmp_path / "nope"])
