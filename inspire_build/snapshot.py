"""Recorded responses in and out of the raw response store.

``import_cassettes`` reads what other tools recorded and files each interaction under the same
resource key a live request would get (the source's codec describes both), so a build can
replay them. Accepted layouts:

- vcrpy, old: ``interactions[].response.content`` + ``status_code``;
- vcrpy, new: ``interactions[].response.body.string`` + ``status.code``;
- R ``vcr``: ``http_interactions[]`` with ``body.string`` and ``status`` (a number or a map);
- arxiv.py fixtures: one JSON object ``{url, status_code, body}``, the body stored latin-1
  decoded (it is re-encoded to latin-1 to get the original bytes back).

Nothing is dropped silently: an interaction that cannot be filed (unknown host, transient
status, unreadable entry) is counted with its reason in the report.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import email.utils
import gzip
import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import duckdb
import yaml

from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.http import (
    ResponseStore,
    SourceCodec,
    configured_base_urls,
    redact_headers,
    redact_url,
    store_row,
)
from inspire_build.redaction import Redactor
from inspire_build.tables import raw

CASSETTE_SUFFIXES = (".yaml", ".yml", ".json")


def cassette_files(paths: list[Path]) -> list[Path]:
    """Named files as given; folders walked for ``.yaml``, ``.yml`` and ``.json`` files."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise InputError(f"no such file or folder: {', '.join(missing)}")
    found = set()
    for path in paths:
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            found.update(f for f in path.rglob("*") if f.suffix in CASSETTE_SUFFIXES)
        else:  # a device or a FIFO: no recording, and reading it would not end
            raise InputError(f"{path}: neither a file nor a folder")
    return sorted(found)


@dataclasses.dataclass(frozen=True)
class Interaction:
    method: str
    url: str
    request_body: bytes | None
    status: int
    headers: Mapping[str, str]
    body: bytes
    recorded_at: dt.datetime | None


@dataclasses.dataclass
class ImportReport:
    files: int = 0
    interactions: int = 0
    imported: int = 0
    skipped: Counter[str] = dataclasses.field(default_factory=Counter)
    rejected_files: list[str] = dataclasses.field(default_factory=list)
    by_source: Counter[str] = dataclasses.field(default_factory=Counter)


def _text_or_bytes(value: Any) -> bytes:
    """A cassette body in any of its spellings -> the decompressed bytes."""
    if value is None:
        return b""
    if isinstance(value, Mapping):
        if value.get("encoding") == "base64" or "base64_string" in value:
            return _decompress(base64.b64decode(value.get("base64_string") or value["string"]))
        return _text_or_bytes(value.get("string"))
    data = value if isinstance(value, bytes) else str(value).encode()
    return _decompress(data)


def _decompress(data: bytes) -> bytes:
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _headers(raw: Any) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    flat = {}
    for key, value in raw.items():
        flat[str(key)] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return flat


def _status(response: Mapping[str, Any]) -> int:
    status = response.get("status", response.get("status_code"))
    if isinstance(status, Mapping):
        status = status.get("code", status.get("status_code"))
    if status is None:
        raise ValueError("no status")
    return int(status)


def _recorded_at(entry: Mapping[str, Any], headers: Mapping[str, str]) -> dt.datetime | None:
    value = entry.get("recorded_at")
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
        except ValueError:
            pass
    date = next((v for k, v in headers.items() if k.lower() == "date"), None)
    if date:
        try:
            return email.utils.parsedate_to_datetime(date)
        except (TypeError, ValueError):
            return None
    return None


def read_cassette(path: Path) -> Iterator[Interaction]:
    """Every interaction in one recorded file, whatever its layout."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not a readable cassette (not UTF-8 text)") from error
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from error
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        reason = str(error).splitlines()[0]
        raise InputError(f"{path}: not a readable cassette ({reason})") from error
    if isinstance(data, Mapping) and {"url", "status_code", "body"} <= set(data):
        body = data["body"]
        try:
            raw = body.encode("latin-1") if isinstance(body, str) else _text_or_bytes(body)
            status = int(data["status_code"])
        except (TypeError, ValueError) as error:
            raise InputError(f"{path}: not an arxiv.py fixture ({error})") from None
        yield Interaction("GET", str(data["url"]), None, status, {}, raw, None)
        return
    entries = None
    if isinstance(data, Mapping):
        entries = data.get("interactions", data.get("http_interactions"))
    if not isinstance(entries, list):
        raise InputError(
            f"{path}: not a cassette (expected vcrpy 'interactions', R vcr 'http_interactions' "
            "or an arxiv.py {url, status_code, body} fixture)"
        )
    for number, entry in enumerate(entries, 1):
        try:
            yield _interaction(entry)
        except (AttributeError, TypeError, ValueError, KeyError) as error:
            raise InputError(
                f"{path}: interaction {number} is not a recorded request and response ({error})"
            ) from None


def _interaction(entry: Any) -> Interaction:
    """One vcrpy or R vcr entry; an entry of another shape raises what its reading meets."""
    request, response = entry.get("request") or {}, entry.get("response") or {}
    headers = _headers(response.get("headers"))
    body = response["content"] if "content" in response else response.get("body")
    request_body = _text_or_bytes(request.get("body")) or None
    return Interaction(
        method=str(request.get("method", "GET")).upper(),
        url=str(request.get("uri") or request.get("url")),
        request_body=request_body,
        status=_status(response),
        headers=headers,
        body=_text_or_bytes(body),
        recorded_at=_recorded_at(entry, headers),
    )


def _match_source(
    url: str, codecs: Mapping[str, SourceCodec], settings: Settings
) -> tuple[SourceCodec, str] | None:
    """The codec whose base URL (default or configured) prefixes ``url``, and the rest path."""
    configured = configured_base_urls(settings)
    parts = urlsplit(url)
    bare = parts.netloc + parts.path
    for codec in codecs.values():
        for base in {codec.default_base_url, configured.get(codec.name, "")} - {""}:
            base_parts = urlsplit(base.rstrip("/"))
            prefix = base_parts.netloc + base_parts.path
            if bare == prefix or bare.startswith(prefix + "/"):
                return codec, bare[len(prefix) :]
    return None


def import_cassettes(
    paths: list[Path],
    con: duckdb.DuckDBPyConnection,
    codecs: Mapping[str, SourceCodec],
    settings: Settings,
) -> ImportReport:
    """File every interaction of every cassette into ``raw_http``. Re-importing is idempotent."""
    report = ImportReport()
    redactor = Redactor.for_settings(settings)
    rows = []
    for path in paths:
        report.files += 1
        try:
            interactions = list(read_cassette(path))
        except InputError as error:
            report.rejected_files.append(str(error))
            continue
        for interaction in interactions:
            report.interactions += 1
            matched = _match_source(interaction.url, codecs, settings)
            if matched is None:
                report.skipped["not an OpenAlex, S2 or arXiv API URL"] += 1
                continue
            codec, rest = matched
            if interaction.status in codec.transient_statuses:
                report.skipped[f"transient status {interaction.status}, not a final answer"] += 1
                continue
            params = parse_qsl(urlsplit(interaction.url).query, keep_blank_values=True)
            params = [(k, v) for k, v in params if k.lower() not in ("api_key", "mailto")]
            try:
                json_body = (
                    json.loads(interaction.request_body) if interaction.request_body else None
                )
            except ValueError:
                json_body = None
            described = codec.describe(interaction.method, rest, params, json_body)
            rows.append(
                store_row(
                    codec,
                    described,
                    method=interaction.method,
                    url=redactor.text(redact_url(interaction.url)),
                    request_body=redactor.data(interaction.request_body)
                    if interaction.request_body
                    else None,
                    status=interaction.status,
                    headers=redact_headers(interaction.headers),
                    body=redactor.data(interaction.body),
                    origin=f"import:{path.name}",
                    fetched_at=interaction.recorded_at or dt.datetime.now(dt.UTC),
                )
            )
            report.by_source[codec.name] += 1
    report.imported = ResponseStore(con).save(rows)
    return report


def export_parquet(con: duckdb.DuckDBPyConnection, out: Path) -> int:
    """Write ``raw_http`` to a Parquet file atomically. Returns the row count."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    rows = raw.copy_to_parquet(con, tmp)
    os.replace(tmp, out)
    return rows


@dataclasses.dataclass(frozen=True)
class StoreStats:
    source: str
    origin: str
    responses: int
    errors: int
    complete_pages: int
    body_bytes: int


def stats(con: duckdb.DuckDBPyConnection) -> list[StoreStats]:
    return [StoreStats(*row) for row in raw.counts(con)]
