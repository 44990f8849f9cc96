"""Secrets: with fake keys and a fake contact email set for every build of this suite, a scan of
every warehouse, log, export and Prefect log the suite produced finds none of them.

Named to run last in this folder, so that it scans what the other reliability tests left.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb
import httpx

from .conftest import FAKE_SECRETS, INSTANCE_KEY, Suite


def found_in_warehouse(path: Path, secrets: Iterable[str]) -> list[str]:
    """``table: secret`` for every secret that appears anywhere in the warehouse's rows."""
    con = duckdb.connect(str(path), read_only=True)
    hits = []
    tables = [
        name
        for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'"
        ).fetchall()
    ]
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        for row in con.execute(f"SELECT * FROM {quoted}").fetchall():  # noqa: S608 (catalog name)
            text = " ".join(
                v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row
            )
            hits += [f"{table}: {s}" for s in secrets if s in text]
    con.close()
    return sorted(set(hits))


def found_in_files(folders: Iterable[Path], secrets: Iterable[str]) -> list[str]:
    hits = []
    for folder in folders:
        files = (
            [folder] if folder.is_file() else sorted(p for p in folder.rglob("*") if p.is_file())
        )
        for file in files:
            data = file.read_bytes()
            hits += [f"{file}: {s}" for s in secrets if s.encode() in data]
    return hits


def test_no_secret_in_any_warehouse_log_or_export(
    suite: Suite, prefect_api: str, reference_export: list[str]
) -> None:
    secrets = list(FAKE_SECRETS.values())
    assert suite.warehouses and suite.logs and suite.exports
    for warehouse in suite.warehouses:
        assert found_in_warehouse(warehouse, secrets) == [], warehouse
    assert found_in_files(suite.logs + suite.exports, secrets) == []
    prefect_logs = httpx.post(prefect_api + "/logs/filter", json={"limit": 200}).text
    assert prefect_logs.startswith("[") and len(prefect_logs) > 2  # the builds' logs are there
    assert [s for s in secrets if s in prefect_logs] == []


def test_the_instance_key_is_only_in_the_warehouses_private_key_table(
    suite: Suite, prefect_api: str, reference_export: list[str]
) -> None:
    for warehouse in suite.warehouses:
        found = found_in_warehouse(warehouse, [INSTANCE_KEY])
        assert found in ([], [f"instance_key: {INSTANCE_KEY}"]), warehouse
    assert found_in_files(suite.logs + suite.exports, [INSTANCE_KEY]) == []
    prefect_logs = httpx.post(prefect_api + "/logs/filter", json={"limit": 200}).text
    assert INSTANCE_KEY not in prefect_logs


def test_the_scans_find_a_planted_secret(suite: Suite, reference_export: list[str]) -> None:
    secret = FAKE_SECRETS["INSPIRE_S2_API_KEY"]
    planted = suite.root / "planted-secret.duckdb"
    con = duckdb.connect(str(planted))
    con.execute("CREATE TABLE raw_http (body BLOB)")
    con.execute("INSERT INTO raw_http VALUES (?)", [f"x-api-key: {secret}".encode()])
    con.close()
    assert found_in_warehouse(planted, [secret]) == [f"raw_http: {secret}"]
    log = suite.root / "planted-secret.log"
    log.write_text(f"GET /paper?key={secret}\n")
    assert found_in_files([log], [secret]) == [f"{log}: {secret}"]
