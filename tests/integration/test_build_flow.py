"""The build-split and audit-split flows through the CLI, against a sandbox: a version with its
instances, grades and findings; an audit that passes and prints the attacks on the boundary; an
export that passes its leak scan; a rerun that makes no call and exports the same bytes; and
published cutoffs that are the exact ones moved by the key's offsets, kept by a rebuild at
jitter 0 (one published cutoff per target)."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from inspire_build import boundary, exports
from inspire_build.cutoff import cutoff_date
from inspire_build.sandbox import server, world
from tests.conftest import run_inspire

KEY = bytes(range(32))


def test_build_audit_export_and_an_identical_rerun(tmp_path: Path, prefect_api: str) -> None:
    generated = world.generate(world.WorldConfig(seed=13, papers=1000))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        env = {
            **os.environ,
            "INSPIRE_WAREHOUSE": str(tmp_path / "w.duckdb"),
            "PREFECT_HOME": str(tmp_path / "prefect"),
            "PREFECT_API_URL": prefect_api,  # the session's server: no temporary one per call
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            **{
                line.split("=", 1)[0]: line.split("=", 1)[1]
                for line in server.env_lines(base, time_scale=1000)
            },
            "INSPIRE_LLM_BACKEND": "rules",
            "INSPIRE_INSTANCE_KEY": KEY.hex(),
            # A 1,000-paper world has a handful of papers per cutoff window, so the window
            # attack wins there (tests/unit/test_exports.py tests its verdict); this test is
            # about the flows, so the audit's verdict here rests on the leakage checks.
            "INSPIRE_WINDOW_ATTACK_MAX_TOP1": "1.0",
            "INSPIRE_MIN_ANONYMITY": "1",
        }

        def inspire(*args: str) -> subprocess.CompletedProcess[str]:
            result = run_inspire(*args, env=env, timeout=600)
            assert result.returncode == 0, result.stderr[-3000:]
            return result

        built = inspire("build", "--split", "eval", "--limit", "24")
        assert built.stdout.startswith("eval-")
        audited = inspire("audit", "eval")
        report = audited.stderr + audited.stdout
        assert "audit passed" in report and "boundary of eval-" in report
        assert "hash attack: 0 instance ID(s) recovered" in report
        assert "anonymity sets (of those, selectable by the card's criteria): min" in report
        # the verdict comes first, and the export reads it: no --force needed
        assert re.search(r"audit of eval-\w+: passed\n", report)
        first = inspire("export", "--split", "eval", "--out", str(tmp_path / "first")).stdout
        con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
        raw_before = con.execute("SELECT count(*) FROM raw_http").fetchone()
        llm_before = con.execute("SELECT count(*) FROM llm_calls").fetchone()
        counts = con.execute(
            "SELECT (SELECT count(*) FROM instances), (SELECT count(*) FROM qrels), "
            "(SELECT count(*) FROM grades), (SELECT count(*) FROM audit_findings)"
        ).fetchone()
        # A split is a window on first public dates: a target OpenAlex dates in 2025 whose
        # arXiv preprint is older is excluded, saying so; every instance's target is inside.
        targets = con.execute(
            "SELECT status, reason, first_public_date FROM targets WHERE split = 'eval' "
            "AND reason NOT LIKE 'over the split%'"
        ).fetchall()
        con.close()
        assert counts is not None and counts[0] >= 6 and all(n > 0 for n in counts)
        assert len(targets) == 24
        accepted = [day for status, _, day in targets if status == "accepted"]
        assert len(accepted) == counts[0]
        assert all(dt.date(2025, 1, 1) <= day <= dt.date(2026, 12, 31) for day in accepted)
        early = [r for status, r, day in targets if day and day < dt.date(2025, 1, 1)]
        assert early and all(status_reason_is_window(r) for r in early)
        stats_before = _network_calls(base)
        inspire("build", "--split", "eval", "--limit", "24")
        assert _network_calls(base) == stats_before  # no HTTP call on the rerun
        second = inspire(
            "export", "--force", "--split", "eval", "--out", str(tmp_path / "second")
        ).stdout
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM raw_http").fetchone() == raw_before
    assert con.execute("SELECT count(*) FROM llm_calls").fetchone() == llm_before
    versions = con.execute("SELECT count(*) FROM split_versions").fetchone()
    con.close()
    assert versions == (1,)  # the same config is the same version
    hashes_first = [
        line for line in first.splitlines() if "  public/" in line or "  private/" in line
    ]
    hashes_second = [
        line for line in second.splitlines() if "  public/" in line or "  private/" in line
    ]
    assert hashes_first and hashes_first == hashes_second
    public = (tmp_path / "first" / "public" / "instances.jsonl").read_text()
    assert "openalex" not in public and "arxiv:" not in public
    # The jitter-0 rebuild searches each brief in a new window: auto mode, on a sandbox again.
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as again:
        urls = dict(line.split("=", 1) for line in server.env_lines(again, time_scale=1000))
        assert_cutoffs_are_keyed(tmp_path / "w.duckdb", {**env, **urls})


def assert_cutoffs_are_keyed(path: Path, env: dict[str, str]) -> None:
    """Each published cutoff is the exact one less the key's offset for its target, and the
    references were judged against it; a rebuild at jitter 0 publishes the same cutoffs, and
    says why the setting did not apply."""
    con = duckdb.connect(str(path), read_only=True)
    rows = con.execute(
        "SELECT i.target_id, i.cutoff_date, t.first_public_date FROM eval_latest i "
        "JOIN targets t ON t.paper_id = i.target_id AND t.split = 'eval'"
    ).fetchall()
    late = con.execute(
        'SELECT count(*) FROM "references" r JOIN eval_latest i USING (target_id) '
        "WHERE r.status = 'eligible' AND r.paper_id IN (SELECT paper_id FROM papers "
        "WHERE first_public_date >= i.cutoff_date)"
    ).fetchone()
    con.close()
    assert rows and late == (0,)
    offsets = [boundary.cutoff_offset(KEY, t, 30) for t, _, _ in rows]
    assert [c for _, c, _ in rows] == [
        boundary.published_cutoff(day, o) for (_, _, day), o in zip(rows, offsets, strict=True)
    ]
    assert any(c != cutoff_date(day) for _, c, day in rows)  # jitter 30 moved some
    rebuilt = subprocess.run(
        [sys.executable, "-m", "inspire_build", "build", "--split", "eval", "--limit", "24"],
        env={**env, "INSPIRE_CUTOFF_JITTER_DAYS": "0", "INSPIRE_SOURCE_MODE": "auto"},
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    assert "INSPIRE_CUTOFF_JITTER_DAYS=0 did not apply" in rebuilt.stdout
    con = duckdb.connect(str(path), read_only=True)
    kept = con.execute(
        "SELECT i.target_id, i.cutoff_date, t.first_public_date FROM eval_latest i "
        "JOIN targets t ON t.paper_id = i.target_id AND t.split = 'eval'"
    ).fetchall()
    con.close()
    assert sorted(kept) == sorted(rows)


def status_reason_is_window(reason: str) -> bool:
    return "before the split's window 2025-01-01 to 2026-12-31" in reason


def _network_calls(base: str) -> int:
    import httpx

    counts = httpx.get(base + "/_sandbox/stats").json()["counts"]
    return sum(v for k, v in counts.items() if not k.startswith("fault"))


def test_a_public_file_naming_a_target_fails_the_export(tmp_path: Path) -> None:
    con = duckdb.connect(":memory:")
    from inspire_build import warehouse

    warehouse.migrate(con)
    con.execute(
        "INSERT INTO papers (paper_id, title, sources, updated_at) VALUES "
        "('arxiv:2501.00001', 'A Very Distinctive Title About Sharded Retrieval Indexes',"
        " ['openalex'], now())"
    )
    con.execute("INSERT INTO paper_ids VALUES ('arxiv', '2501.00001', 'arxiv:2501.00001', 'x')")
    con.execute(
        "INSERT INTO instances VALUES ('v1', 'abc', 'arxiv:2501.00001', 'b', "
        "'We need a very distinctive title about sharded retrieval indexes.', "
        "DATE '2024-10-01', 0)"
    )
    public = tmp_path / "public"
    public.mkdir()
    (public / "instances.jsonl").write_text(
        '{"brief": "a very distinctive title about sharded retrieval indexes"}\n'
    )
    with pytest.raises(exports.ExportLeak, match="names a target"):
        exports.leak_scan(con, "v1", public)
