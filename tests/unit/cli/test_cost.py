"""`inspire cost` over the tiny ledger of tests/unit/tables/test_llm_ledger.py (version V2: four
calls, $0.70 of which $0.40 paid by its build, one call of the unpriced model free-x)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from inspire_build import warehouse
from inspire_build.cli import app
from inspire_build.errors import InputError
from tests.conftest import new_warehouse
from tests.unit.tables.test_llm_ledger import NOW, write_ledger


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "w.duckdb"
    con = new_warehouse(file)
    write_ledger(con)
    warehouse.upsert(
        con,
        "split_versions",
        [
            {
                "version_id": "V2",
                "split": "eval",
                "config_hash": "c",
                "code_version": "v",
                "prompt_hashes": "{}",
                "models": "{}",
                "counts": "{}",
                "created_at": NOW,
            }
        ],
        ["version_id"],
    )
    con.close()
    return file


def cost(path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["cost", *args, "--warehouse", str(path)])
    return result.exit_code, result.output


def test_json_lines_per_step_then_the_total_naming_the_unpriced_model(path: Path) -> None:
    code, output = cost(path, "--version", "V2", "--json")
    assert code == 0, output
    lines = [json.loads(line) for line in output.splitlines()]
    assert [(line["step"], line["calls"], line["asked"]) for line in lines] == [
        ("brief", 2, 1),
        ("grade", 2, 1),
        ("total", 4, 2),
    ]
    assert lines[-1]["cost_usd"] == pytest.approx(0.70)
    assert lines[-1]["paid_usd"] == pytest.approx(0.40)
    assert lines[-1]["unpriced_models"] == {"free-x": 1}


def test_the_table_per_target_says_the_totals_and_what_has_no_price(path: Path) -> None:
    code, output = cost(path, "--version", "V2", "--targets")
    assert code == 0, output
    assert "T1" in output and "T2" in output
    assert (
        "4 call(s), 2 asked of the model and the rest answered from the call log; 1,000 tokens "
        "in, 100 out; cost $0.7, of which $0.4 paid for in these builds"
    ) in output
    assert (
        "cost unknown, left out of the sums: 1 call(s) of a model with no price: free-x "
        "(1 call(s)); give it a price in INSPIRE_LLM_PRICES"
    ) in output


def test_no_recorded_call_and_an_unknown_version_or_split(path: Path) -> None:
    code, output = cost(path, "--split", "train")
    assert code == 0 and "no LLM call of the train builds is in the cost ledger" in output
    for wrong in (["--version", "nope"], ["--split", "evl"]):  # refused, naming the known
        result = CliRunner().invoke(app, ["cost", *wrong, "--warehouse", str(path)])
        assert isinstance(result.exception, InputError) and result.exception.exit_code == 2


def test_every_build_counts_each_call_once(path: Path) -> None:
    code, output = cost(path, "--json")
    total = json.loads(output.splitlines()[-1])
    assert code == 0 and (total["calls"], total["asked"]) == (4, 4)
    assert total["cost_usd"] == total["paid_usd"] == pytest.approx(0.70)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT sum(paid_usd) FROM llm_ledger").fetchone() == (pytest.approx(0.70),)
    con.close()


def test_a_narrow_terminal_cuts_no_step_name_and_no_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inspire_build.cli import common

    rows = [{"step": "audit_mechanism_guess", "cost_usd": 0.0148770}, {"step": "audit_mechanism"}]
    rows[1]["cost_usd"] = 0.0082570
    monkeypatch.setattr(common.out, "width", 30)
    with common.out.capture() as captured:
        common._print_rows(rows, False, "cost", ("step",))
    shown = captured.get()
    assert "audit_mechanism_guess" in shown and "…" not in shown
    # too wide for 30 columns: one block per row, every number whole on one line (folded into
    # a column, 101 read "10 / 1"), and a NULL as a dash, not "None"
    assert "  cost_usd 0.014877" in shown.splitlines()
    rows[1]["cost_usd"] = None
    with common.out.capture() as captured:
        common._print_rows(rows, False, "cost", ("step",))
    assert "  cost_usd -" in captured.get().splitlines()


def test_stats_llm_leaves_the_unpriced_calls_out_of_its_estimate_and_says_so(path: Path) -> None:
    result = CliRunner().invoke(app, ["stats", "llm", "--warehouse", str(path)])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last == (
        "4 call(s), estimated $0.7000 for the priced; 1 of a model with no price "
        "(INSPIRE_LLM_PRICES)"
    )
