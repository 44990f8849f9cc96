"""evaluate.py with a qrels file: IDs in any scheme are mapped through a warehouse's crosswalk
when one is at hand; without one, a run whose paper IDs match no judged document of their
instance is refused (or, with --allow-unjudged, scored as it is), never scored 0 silently.

The warehouse is tests/unit/test_exports.py's: one version keyed as a build keys it, with the
crosswalk rows a lineage step writes for two antecedents."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from inspire_build import warehouse
from inspire_build.errors import InputError
from inspire_build.evaluation.evaluate import (
    entry_check,
    evaluate,
    require_judged_ids,
    unjudged_instances,
)
from tests.conftest import run_inspire
from tests.unit.test_exports import Built, build

# Two antecedents of every instance, T3 and T1, each known in every scheme.
ANTECEDENTS = {
    "arxiv:2301.00001": {
        "doi": "10.1145/3000009",
        "openalex": "W4300000009",
        "corpusid": "49313245",
        "s2": "a" * 40,
    },
    "arxiv:2302.00002": {
        "doi": "10.1145/3000010",
        "openalex": "W4300000010",
        "corpusid": "49313246",
        "s2": "b" * 40,
    },
}
# How an agent would write them: each scheme as the IDs are usually spelled.
SPELLINGS = {
    "doi": lambda value: f"https://doi.org/{value.upper()}",
    "openalex": lambda value: f"https://openalex.org/{value}",
    "corpusid": lambda value: f"CorpusId:{value}",
}


@pytest.fixture
def built(tmp_path: Path) -> Built:
    made = build(tmp_path)
    con = warehouse.connect(made.path)
    for paper_id, known in ANTECEDENTS.items():
        con.execute(
            "INSERT INTO paper_ids VALUES ('arxiv', ?, ?, 'arxiv')", [paper_id[6:], paper_id]
        )
        for scheme, value in known.items():
            con.execute(
                "INSERT INTO paper_ids VALUES (?, ?, ?, 'openalex')", [scheme, value, paper_id]
            )
    con.close()
    return made


@pytest.fixture
def qrels(tmp_path: Path, built: Built) -> Path:
    """The qrels as an export writes them: instance, 0, paper ID, tier."""
    lines = [
        f"{instance} 0 {paper} {tier}\n"
        for instance in built.ids.values()
        for paper, tier in zip(ANTECEDENTS, (3, 1), strict=True)
    ]
    path = tmp_path / "qrels.trec"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def perfect_run(tmp_path: Path, built: Built, scheme: str) -> Path:
    """Every instance's antecedents in tier order, written in ``scheme``."""
    spell = SPELLINGS[scheme]
    ranking = [spell(known[scheme]) for known in ANTECEDENTS.values()]
    path = tmp_path / f"{scheme}.jsonl"
    lines = [json.dumps({"instance_id": i, "ranking": ranking}) for i in built.ids.values()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- in process --------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", list(SPELLINGS))
def test_a_perfect_run_in_another_scheme_scores_1_through_the_crosswalk(
    tmp_path: Path, built: Built, qrels: Path, scheme: str
) -> None:
    run = perfect_run(tmp_path, built, scheme)
    scores = evaluate(run, qrels=qrels, warehouse_path=built.path, samples=10)
    assert len(scores.per_instance) == 2
    for metric in ("ndcg@10", "recall@10", "mrr", "anyhit@10"):
        assert scores.aggregate[metric] == pytest.approx(1.0), metric
    assert scores.unknown_ids == 0


@pytest.mark.parametrize("scheme", list(SPELLINGS))
def test_without_a_warehouse_it_is_refused_or_scored_as_it_is(
    tmp_path: Path, built: Built, qrels: Path, scheme: str
) -> None:
    run = perfect_run(tmp_path, built, scheme)
    with pytest.raises(InputError) as refused:
        evaluate(run, qrels=qrels, samples=10)
    # the first line's first ID: a scheme the qrels (arXiv IDs) never use, and nothing maps it
    assert str(refused.value).startswith(f"{run}:1: ")
    assert f"is a {scheme} ID, a scheme no judged document has" in str(refused.value)
    assert "--allow-unjudged" in str(refused.value) and "\n" not in str(refused.value)
    scores = evaluate(run, qrels=qrels, samples=10, allow_unjudged=True)
    assert scores.aggregate["ndcg@10"] == 0.0
    assert scores.unknown_ids == 4  # two unjudged IDs in each of two instances


def test_a_qrels_file_in_another_scheme_is_mapped_too(
    tmp_path: Path, built: Built, qrels: Path
) -> None:
    as_dois = qrels.read_text().replace("arxiv:2301.00001", "doi:10.1145/3000009")
    qrels.write_text(as_dois, encoding="utf-8")
    run = perfect_run(tmp_path, built, "openalex")
    scores = evaluate(run, qrels=qrels, warehouse_path=built.path, samples=10)
    assert scores.aggregate["ndcg@10"] == pytest.approx(1.0)


def test_trajectories_in_another_scheme_are_mapped_through_the_crosswalk(
    tmp_path: Path, built: Built, qrels: Path
) -> None:
    run = tmp_path / "arxiv.jsonl"
    ids = list(built.ids.values())
    run.write_text(json.dumps({"instance_id": ids[0], "ranking": ["arxiv:2301.00001"]}) + "\n")
    steps = [{"tool": "search", "exposed": ["W4300000009", "W4300000010"]}]
    paths = tmp_path / "t.jsonl"
    paths.write_text(json.dumps({"instance_id": ids[0], "steps": steps}) + "\n")
    scores = evaluate(run, qrels=qrels, trajectories=paths, warehouse_path=built.path, samples=10)
    # ids[0] exposed both antecedents (1.0); ids[1] has no trajectory (0.0).
    assert scores.aggregate["exposed_gain"] == pytest.approx(0.5)
    # Unmapped, ids[0] exposed only what its run submitted, the T3: 3 / (3 + 1/log2 3), halved.
    with pytest.raises(InputError, match="t.jsonl:1: 'W4300000009' is a openalex ID"):
        evaluate(run, qrels=qrels, trajectories=paths, samples=10)
    unmapped = evaluate(run, qrels=qrels, trajectories=paths, samples=10, allow_unjudged=True)
    assert unmapped.aggregate["exposed_gain"] == pytest.approx(3 / (3 + 1 / math.log2(3)) / 2)


def test_an_id_only_the_search_corpus_knows_scores_as_the_environment_resolves_it(
    tmp_path: Path, built: Built, qrels: Path
) -> None:
    """The environment resolves a published version's DOI through ``corpus_ids``; the scorer
    maps it the same way, so an agent's answer in that spelling is the antecedent it names."""
    con = warehouse.connect(built.path)
    con.execute("INSERT INTO corpus_ids VALUES ('doi', '10.5555/published.1', 'arxiv:2301.00001')")
    con.close()
    run = tmp_path / "published.jsonl"
    lines = [
        json.dumps({"instance_id": i, "ranking": ["https://doi.org/10.5555/published.1"]})
        for i in built.ids.values()
    ]
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    scores = evaluate(run, qrels=qrels, warehouse_path=built.path, samples=10)
    assert scores.aggregate["mrr"] == pytest.approx(1.0) and scores.unknown_ids == 0


@pytest.mark.parametrize("entry", [250000278, "arXiv 1602.00002", "CorpusID 49313245"])
def test_an_entry_of_no_id_scheme_is_refused_with_its_line_even_with_a_warehouse(
    tmp_path: Path, built: Built, qrels: Path, entry: object
) -> None:
    first, second = built.ids.values()
    run = tmp_path / "bare.jsonl"
    run.write_text(
        json.dumps({"instance_id": first, "ranking": ["arxiv:2301.00001"]})
        + "\n"
        + json.dumps({"instance_id": second, "ranking": ["arxiv:2302.00002", entry]})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as refused:
        evaluate(run, qrels=qrels, warehouse_path=built.path, samples=10)
    assert str(refused.value).startswith(f"{run}:2: {str(entry)!r} is no paper ID of any scheme")
    allowed = evaluate(run, qrels=qrels, warehouse_path=built.path, samples=10, allow_unjudged=True)
    assert allowed.unknown_ids == 1


# --- the pure check ----------------------------------------------------------------------------


def test_entry_check_refuses_what_could_never_match() -> None:
    judged = {"i1": {"arxiv:2301.00001": 3, "doi:10.1145/3000009": 0}}
    mapped, unmapped = entry_check(judged, mapped=True), entry_check(judged, mapped=False)
    assert mapped is not None and unmapped is not None
    for check in (mapped, unmapped):
        assert check("arxiv:2301.00001") is None and check("doi:10.1145/3000009") is None
        assert check("arxiv:1901.00009") is None  # a paper, just not an antecedent
        assert "no paper ID of any scheme" in (check("250000278") or "")
    assert mapped("openalex:W123") is None  # the crosswalk had its chance to map it
    assert "is a openalex ID" in (unmapped("openalex:W123") or "")
    # qrels that name documents of another collection: nothing is checked
    assert entry_check({"q1": {"doc12": 1}}, mapped=False) is None


JUDGED = {"i1": {"a": 3, "b": 0}, "i2": {"c": 1}, "i3": {"d": 2}}


def test_unjudged_instances_counts_only_judged_instances_with_ids() -> None:
    # i1 matches b (graded 0: still a judged document); i2 matches nothing; i3 has no ID;
    # zz is no instance of the qrels.
    submitted = {"i1": ["x", "b"], "i2": ["a"], "i3": [], "zz": ["a"]}
    assert unjudged_instances(JUDGED, submitted) == (2, 1)
    assert unjudged_instances(JUDGED, {"i2": ["a"], "i3": ["c"]}) == (2, 2)
    assert unjudged_instances(JUDGED, {"i3": []}) == (0, 0)


def test_one_matching_instance_is_enough_and_none_is_refused() -> None:
    require_judged_ids(JUDGED, {"i1": ["a"], "i2": ["x"], "i3": ["y"]}, "run r", "qrels q")
    require_judged_ids(JUDGED, {"i3": []}, "run r", "qrels q")  # nothing submitted: scores 0
    with pytest.raises(InputError, match=r"in run r is .* in qrels q \(2 instance\(s\) with IDs"):
        require_judged_ids(JUDGED, {"i1": ["x"], "i2": ["a"]}, "run r", "qrels q")


# --- the command -------------------------------------------------------------------------------


def inspire(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("INSPIRE_")}
    return run_inspire("eval", "--bootstrap", "10", *args, env=environment, cwd=cwd)


def test_the_command_maps_ids_through_the_named_or_the_default_warehouse(
    tmp_path: Path, built: Built, qrels: Path
) -> None:
    run = perfect_run(tmp_path, built, "corpusid")
    named = inspire("--json", "--qrels", qrels, "--run", run, "--warehouse", built.path,
                    cwd=tmp_path)  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert json.loads(named.stdout)["aggregate"]["ndcg@10"] == pytest.approx(1.0)

    here = tmp_path / "project"
    (here / "warehouse").mkdir(parents=True)
    shutil.copy(built.path, here / "warehouse" / "inspire.duckdb")
    default = inspire("--json", "--qrels", qrels, "--run", run, cwd=here)
    assert default.returncode == 0, default.stderr
    assert json.loads(default.stdout)["aggregate"]["ndcg@10"] == pytest.approx(1.0)

    missing = inspire("--qrels", qrels, "--run", run, "--warehouse", tmp_path / "no.duckdb",
                      cwd=tmp_path)  # fmt: skip
    assert missing.returncode == 1
    assert missing.stderr.startswith(f"error: no warehouse at {tmp_path / 'no.duckdb'}")


def test_the_command_refuses_without_a_warehouse_unless_allowed(
    tmp_path: Path, built: Built, qrels: Path
) -> None:
    run = perfect_run(tmp_path, built, "doi")
    refused = inspire("--qrels", qrels, "--run", run, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"error: {run}:1: 'https://doi.org/10.1145/3000009' is a doi ID")
    allowed = inspire("--json", "--qrels", qrels, "--run", run, "--allow-unjudged", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    shown = json.loads(allowed.stdout)
    assert shown["aggregate"]["ndcg@10"] == 0.0 and shown["unknown_paper_ids"] == 4
    compared = inspire("--qrels", qrels, "compare", run, run, cwd=tmp_path)
    assert compared.returncode == 2 and "crosswalk maps it" in compared.stderr


def test_ids_of_the_qrels_scheme_matching_nothing_are_refused_as_a_whole(
    tmp_path: Path, built: Built, qrels: Path
) -> None:
    """IDs of the qrels' own scheme that match no judged document anywhere: a run for another
    benchmark, or made up; scored, every metric would be 0."""
    run = tmp_path / "other.jsonl"
    lines = [
        json.dumps({"instance_id": i, "ranking": ["arxiv:1901.00001"]}) for i in built.ids.values()
    ]
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"\(2 instance\(s\) with IDs, none matching\)"):
        evaluate(run, qrels=qrels, samples=10)
