"""`inspire ids normalize`, run as a real process: one typed ID per line, JSON lines, and a junk
ID as one error line with exit 2."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import run_inspire


def inspire(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_inspire(*args, env=env, timeout=120)


ACCEPTANCE_IDS = [
    "https://arxiv.org/abs/2310.00826v2",
    "10.48550/arXiv.2310.00826",
    "W4385245566",
    "https://doi.org/10.1145/3383583.3398584",
    "CorpusId:49313245",
]


def test_ids_normalize_prints_one_typed_id_per_line() -> None:
    result = inspire("ids", "normalize", *ACCEPTANCE_IDS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "arxiv:2310.00826",
        "arxiv:2310.00826",
        "openalex:W4385245566",
        "doi:10.1145/3383583.3398584",
        "corpusid:49313245",
    ]


def test_ids_normalize_json_lines() -> None:
    result = inspire("ids", "normalize", "--json", *ACCEPTANCE_IDS)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["scheme"], r["value"]) for r in records] == [
        ("arxiv", "2310.00826"),
        ("arxiv", "2310.00826"),
        ("openalex", "W4385245566"),
        ("doi", "10.1145/3383583.3398584"),
        ("corpusid", "49313245"),
    ]


def test_junk_id_is_a_one_line_error_with_exit_2() -> None:
    result = inspire("ids", "normalize", "W1", "not-an-id")
    assert result.returncode == 2
    assert result.stdout.splitlines() == ["openalex:W1"]
    assert result.stderr.strip().splitlines() == [
        "error: not a paper identifier: 'not-an-id' (expected an arXiv ID, DOI, OpenAlex W-id, "
        "S2 paperId or CorpusId:N)"
    ]
    assert "Traceback" not in result.stderr
