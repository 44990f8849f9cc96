"""Review samples on the planted version: drawn and stored, refused on bad input, reviewed through
the review app over HTTP, and reported with intervals and n in the exported card (which names no
target, note or curator) and in the audit's lines."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from inspire_build import boundary, exports
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.review import apply, sample
from inspire_build.review.app import create_app
from inspire_build.review.curation import Curation
from tests.unit.review.conftest import IA, IB, VERSION, Reviewer

KEYED = Settings(llm_backend="rules", instance_key="5a" * 32)


def _stored(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        'SELECT instance_id, "position", "month", tier, seed, requested FROM review_samples '
        'ORDER BY "position"'
    ).fetchall()


def test_a_sample_is_drawn_stratified_stored_and_replaced(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    drawn = sample.draw_sample(con, "eval", None, 1, seed=3)  # the split's latest: planted
    assert (drawn.version_id, drawn.available, len(drawn.drawn)) == (VERSION, 2, 1)
    [(iid, position, month, tier, seed, requested)] = _stored(con)
    assert (position, month, seed, requested) == (1, "2025-06", 3, 1)
    assert tier == {IA: 2, IB: 3}[str(iid)]  # its highest gold tier
    again = sample.draw_sample(con, "eval", VERSION, 5, seed=3)  # more than it has: all
    assert again.strata == {"2025-06 T2": 1, "2025-06 T3": 1}
    assert {str(r[0]) for r in _stored(con)} == {IA, IB} and len(_stored(con)) == 2
    assert str(_stored(con)[0][0]) == str(iid)  # the same seed: the same order


@pytest.mark.parametrize(
    ("split", "version", "n", "said"),
    [
        ("eval", VERSION, 0, "--n must be at least 1, not 0"),
        ("eval", "eval-x", 2, "unknown version 'eval-x'"),
        ("train", VERSION, 2, "is of split 'eval', not 'train'"),
        ("train", None, 2, "split 'train' has no version yet"),
    ],
)
def test_bad_input_is_refused_and_stores_nothing(
    con: duckdb.DuckDBPyConnection, planted: str, split: str, version: str, n: int, said: str
) -> None:
    with pytest.raises(InputError, match=re.escape(said)):
        sample.draw_sample(con, split, version, n)
    assert _stored(con) == []


def _review_over_http(con: duckdb.DuckDBPyConnection) -> None:
    """Ada regrades A's tier-0 p3 to T2 and accepts A; she accepts B and marks its brief
    leaking: (curator, model) tiers (1, 1), (2, 2), (2, 0), (3, 3)."""
    ada = Reviewer(create_app(Curation(con, KEYED, VERSION), allowed_hosts=("testserver",)))
    posts = [
        (IA, "grade", {"paper_id": "p3", "tier": "2", "role": "baseline", "note": "reused"}),
        (IA, "accept", {}),
        (IB, "accept", {}),
        (IB, "leak", {"leaking": "true", "note": "the ranking setting names it"}),
    ]
    for iid, action, form in posts:
        done = ada.post(iid, action, form)
        assert done.status_code == 303, done.text


def _section(card: str) -> str:
    return card[card.index("## Curator agreement") : card.index("## Information boundary")]


def test_a_reviewed_sample_puts_agreement_with_intervals_and_n_in_the_card(
    con: duckdb.DuckDBPyConnection, planted: str, tmp_path: Path
) -> None:
    sample.draw_sample(con, "eval", VERSION, 2, seed=0)
    exports.export(con, KEYED, "eval", VERSION, tmp_path / "before", force=True)
    before = _section((tmp_path / "before" / "dataset_card.md").read_text(encoding="utf-8"))
    assert "No sampled instance has been reviewed yet" in before
    _review_over_http(con)
    exports.export(con, KEYED, "eval", VERSION, tmp_path / "export", force=True)
    section = _section((tmp_path / "export" / "dataset_card.md").read_text(encoding="utf-8"))
    assert f"seeded sample of 2 instances of `{VERSION}` (seed 0)" in section
    assert "| sampled instances reviewed | 2 of 2 |" in section
    kappa = "| tiers, quadratic-weighted kappa | 0.500 (95% CI 0.000 to 1.000; n = 4 references"
    assert kappa + " of 2 instances) |" in section
    assert "| tiers, exact agreement | 75.0% (95% CI 66.7% to 100.0%; n = 4 references" in section
    assert "| briefs marked leaking | 1 of 2: 50.0% (95% CI 0.0% to 100.0%; n = 2 instances) |" in (
        section
    )
    assert "| instances rejected | 0 of 2: 0.0% (95% CI 0.0% to 0.0%; n = 2 instances) |" in section
    # the competitor reads the section: no target, instance, note or curator
    needles = exports.leak_needles(con, VERSION)
    assert needles and boundary.found_in(needles, boundary.normal_text(section)) == []
    for private in (IA, IB, "ada", "reused", "names it", "tA", "tB", "p3"):
        assert private not in section

    made = apply.apply_reviews(con, KEYED, "eval")["version_id"]  # reports its base's sample
    exports.export(con, KEYED, "eval", made, tmp_path / "applied", force=True)
    applied = _section((tmp_path / "applied" / "dataset_card.md").read_text(encoding="utf-8"))
    assert applied == section
    # The reviewed version's tiers are the curators': sampled, every regrade would "agree"
    # (a user saw kappa 0.88 become 1.00). Refused by name; the default samples its base.
    with pytest.raises(InputError, match=f"applies curators' reviews.*sample {VERSION}"):
        sample.draw_sample(con, "eval", made, 2)
    assert sample.draw_sample(con, "eval", None, 2).version_id == VERSION


def test_no_sample_is_said_plainly_and_the_audit_prints_the_figures(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    assert sample.agreement_of(con, VERSION) is None
    assert sample.report_lines(con, VERSION) == [
        f"curator agreement of {VERSION}: no review sample (`inspire review sample`)"
    ]
    sample.draw_sample(con, "eval", VERSION, 2)
    assert sample.report_lines(con, VERSION)[1] == (
        "  no sampled instance reviewed yet (`inspire review serve`)"
    )
    _review_over_http(con)
    lines = sample.report_lines(con, VERSION)
    assert lines[0].startswith(f"curator agreement over the sample of {VERSION} (seed 0, 2 ")
    assert "  tiers, exact agreement: 75.0% (95% CI 66.7% to 100.0%; n = 4 references of 2 " in (
        "\n".join(lines)
    )
