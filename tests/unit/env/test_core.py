"""The search environment: its filter, budget and log; corpus merging; the baselines' pure parts;
the local backend on an in-memory warehouse; the tool sessions behind the HTTP and MCP servers."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inspire_build.cutoff import SourceDate
from inspire_build.env import agents, audit, corpus, limits, run, store
from inspire_build.env.backends import LocalBackend
from inspire_build.env.core import SearchEnv, Status, Task, Verdict, Work, clean_ranking, verdict
from inspire_build.env.limits import OutOfBounds
from inspire_build.env.server import (
    AlreadySubmitted,
    NoSession,
    SessionTaken,
    ToolSessions,
    UnknownInstance,
    WrongToken,
)
from inspire_build.evaluation import inputs
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import DatePrecision, Source

CUTOFF = dt.date(2024, 6, 1)
DAY = dt.timedelta(days=1)


class FakeBackend:
    """Returns fixed works for every query; reads by paper_id."""

    name = "fake"

    def __init__(self, works: list[Work]) -> None:
        self.works = works
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        self.queries.append((query, k))
        return self.works[:k]

    def read(self, paper_id: str) -> Work | None:
        return next((w for w in self.works if w.paper_id == paper_id or paper_id in w.ids), None)


def _task(withheld: set[str] | None = None) -> Task:
    return Task("i1", "We need sparse retrieval. It must scale.", CUTOFF, frozenset(withheld or ()))


def test_verdict_needs_a_date_strictly_before_the_cutoff_and_never_shows_the_target() -> None:
    task = _task({"arxiv:2405.00001", "doi:10.1/t"})
    assert verdict(Work("a", CUTOFF - DAY), task) is Verdict.SHOWN
    assert verdict(Work("a", CUTOFF), task) is Verdict.LATE  # on the cutoff is too late
    assert verdict(Work("a", None), task) is Verdict.UNDATED
    assert verdict(Work("arxiv:2405.00001", dt.date(2020, 1, 1)), task) is Verdict.TARGET
    alias = Work("openalex:W9", dt.date(2020, 1, 1), ids=frozenset({"doi:10.1/t"}))
    assert verdict(alias, task) is Verdict.TARGET


def test_search_filters_logs_and_refuses_past_the_budget_without_raising() -> None:
    works = [
        Work("a", CUTOFF - DAY, title="A", year=2024, score=3.0),
        Work("late", CUTOFF, score=2.5),
        Work("undated", None, score=2.0),
        Work("target", dt.date(2019, 1, 1), score=1.5),
        Work("b", dt.date(2019, 1, 1), score=1.0),
    ]
    ticks = iter([0.0, 0.25, 1.0, 1.5])
    env = SearchEnv(_task({"target"}), 2, FakeBackend(works), clock=lambda: next(ticks))
    first = env.search("sparse retrieval", 10)
    assert first.status is Status.OK and not first.budget_exhausted
    assert [f.paper_id for f in first.results] == ["a", "b"]
    assert first.budget_left == 1
    assert env.read("late").status is Status.NOT_AVAILABLE
    refused = env.search("more", 10)
    assert refused.budget_exhausted and refused.results == () and refused.budget_left == 0
    assert env.read("a").status is Status.BUDGET_EXHAUSTED
    assert [s.tool for s in env.steps] == ["search", "read"]  # refused calls are not logged
    assert env.steps[0].latency_ms == 250.0 and env.steps[1].latency_ms == 500.0
    assert dict(env.steps[0].verdicts) == {
        Verdict.SHOWN: 2,
        Verdict.LATE: 1,
        Verdict.UNDATED: 1,
        Verdict.TARGET: 1,
    }
    assert env.trajectory_line() == {
        "instance_id": "i1",
        "steps": [
            {
                "tool": "search",
                "query": "sparse retrieval",
                "k": 10,
                "exposed": ["a", "b"],
                "latency_ms": 250.0,
            },
            {"tool": "read", "query": "late", "k": None, "exposed": [], "latency_ms": 500.0},
        ],
        "scores_revealed": False,
    }


def test_reading_the_target_answers_exactly_as_reading_an_unknown_id() -> None:
    works = [Work("t", dt.date(2019, 1, 1), ids=frozenset({"doi:10.1/t"}), title="T")]
    env = SearchEnv(_task({"doi:10.1/t"}), 5, FakeBackend(works))
    answers = [env.read(i) for i in ("t", "nothing-like-it", "doi:10.1/t")]
    assert [(a.status, a.paper) for a in answers] == [(Status.NOT_AVAILABLE, None)] * 3


def test_submit_is_final_and_cleans_the_ranking() -> None:
    env = SearchEnv(_task(), 1, FakeBackend([]))
    assert env.submit([" a ", "b", "a", "", "c"]).ranking == ("a", "b", "c")
    assert env.submit(["z"]).status is Status.SUBMITTED
    assert env.search("x").status is Status.SUBMITTED
    assert env.run_line() == {"instance_id": "i1", "ranking": ["a", "b", "c"]}
    assert clean_ranking([str(i) for i in range(150)]) == tuple(str(i) for i in range(100))
    # one paper in two spellings takes one place, under its first
    twice = [" arxiv:1210.0002 ", "ARXIV:1210.0002", "https://arxiv.org/abs/1210.0002v2", "W1"]
    assert clean_ranking(twice) == ("arxiv:1210.0002", "W1")


def test_the_files_written_are_the_formats_inspire_eval_reads(tmp_path: Path) -> None:
    env = SearchEnv(_task(), 3, FakeBackend([Work("arxiv:1706.03762", dt.date(2017, 6, 12))]))
    agents.Bm25BriefAgent().run(env)
    run.write_jsonl(tmp_path / "run.jsonl", [env.run_line()])
    run.write_jsonl(tmp_path / "traj.jsonl", [env.trajectory_line()])
    normalise = inputs.normaliser()
    assert inputs.read_run(tmp_path / "run.jsonl", normalise) == {"i1": ["arxiv:1706.03762"]}
    paths = inputs.read_trajectories(tmp_path / "traj.jsonl", normalise)
    assert paths["i1"].steps == (("arxiv:1706.03762",),)


# --- the baselines' pure parts ------------------------------------------------------------------


def test_rrf_by_hand() -> None:
    # a: 1/61; b: 1/62 + 1/61; c: 1/62
    assert agents.rrf([(["a", "b"], 1.0), (["b", "c"], 1.0)]) == ["b", "a", "c"]
    # weights: a 2/61 beats b 1/61 + ... none; a duplicate in one list counts once
    assert agents.rrf([(["a", "a"], 2.0), (["b"], 1.0)]) == ["a", "b"]
    assert agents.rrf([(["x"], 1.0), (["y"], 1.0)]) == ["x", "y"]  # ties: first seen


def test_keyphrases_by_hand() -> None:
    text = "We study sparse retrieval indexes under memory limits. Sparse retrieval must scale."
    assert agents.candidate_phrases(text) == [
        "study sparse retrieval",
        "memory limits",
        "sparse retrieval",
        "scale",
    ]
    # sparse retrieval occurs twice; ties go to the longer phrase, then the first seen
    assert agents.keyphrases(text, limit=3) == [
        agents.Keyphrase("sparse retrieval", 1.0),
        agents.Keyphrase("study sparse retrieval", 1.0),
        agents.Keyphrase("memory limits", 1.0),
    ]
    assert agents.sentences(text) == [
        "We study sparse retrieval indexes under memory limits.",
        "Sparse retrieval must scale.",
    ]


def test_query_plan_takes_any_scorer_and_its_weights() -> None:
    def learned(brief: str) -> list[agents.Keyphrase]:
        return [agents.Keyphrase("scale", 0.5), agents.Keyphrase("ignored", 0.0)]

    assert agents.query_plan("One. Two.", learned) == [("One.", 1.0), ("Two.", 1.0), ("scale", 0.5)]


def test_multi_query_stops_at_the_budget_and_submits_the_fused_top_ten() -> None:
    works = [Work(f"p{i}", dt.date(2020, 1, 1)) for i in range(30)]
    backend = FakeBackend(works)
    env = SearchEnv(Task("i", "One. Two. Three. Four.", CUTOFF), 3, backend)
    agents.MultiQueryAgent().run(env)
    assert [q for q, _ in backend.queries] == ["One.", "Two.", "Three."]
    assert env.submitted == tuple(f"p{i}" for i in range(10))
    with pytest.raises(Exception, match="known agents: bm25-brief, multi-query"):
        agents.make_agent("nope")


# --- the corpus ---------------------------------------------------------------------------------


def _record(ids: list[PaperId], day: dt.date, title: str, **kw: object) -> corpus.CorpusRecord:
    date = SourceDate(Source.OPENALEX, day, DatePrecision(kw.get("precision", "day")))
    return corpus.CorpusRecord(tuple(ids), title, kw.get("abstract"), day.year, (), (date,))  # type: ignore[arg-type]


def test_merge_joins_twins_by_a_shared_id_or_the_crosswalk_and_keeps_the_earliest_date() -> None:
    preprint = _record(
        [PaperId(Scheme.ARXIV, "2001.00001"), PaperId(Scheme.OPENALEX, "W1")],
        dt.date(2020, 1, 5),
        "Preprint",
        abstract="text",
    )
    published = _record(
        [PaperId(Scheme.DOI, "10.1/pub"), PaperId(Scheme.ARXIV, "2001.00001")],
        dt.date(2020, 9, 1),
        "Published",
    )
    known_twin = _record([PaperId(Scheme.OPENALEX, "W7")], dt.date(2021, 3, 3), "Known")
    year_only = _record(
        [PaperId(Scheme.OPENALEX, "W20")], dt.date(2019, 1, 1), "Y", precision="year"
    )
    crosswalk = {PaperId(Scheme.OPENALEX, "W7"): "arxiv:2001.00001"}
    works = corpus.merge([preprint, published, known_twin, year_only], crosswalk, {})
    assert [(w.paper_id, w.records) for w in works] == [
        ("arxiv:2001.00001", 3),
        ("openalex:W20", 1),
    ]
    merged = works[0]
    assert merged.title == "Preprint"  # the record with an abstract speaks for the work
    assert merged.first_public is not None and merged.first_public.date == dt.date(2020, 1, 5)
    rows, id_rows = corpus.rows(works, "test", dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert rows[1]["public_by"] == dt.date(2019, 12, 31)  # a year-only date counts from its end
    assert len(id_rows) == 5


def test_a_snapshot_line_is_a_work_with_an_openalex_id_or_a_value_error() -> None:
    line = (
        '{"id": "https://openalex.org/W42", "title": "Sparse retrieval", '
        '"publication_date": "2021-03-04", "publication_year": 2021}'
    )
    paper = corpus.snapshot_work(line)
    assert (paper.ids.openalex, paper.title, paper.publication_date) == (
        "W42",
        "Sparse retrieval",
        dt.date(2021, 3, 4),
    )
    for bad, reason in (
        ('{"id": "https://openalex.org/W1", "tit', "Unterminated string"),
        ("[1, 2]", "a JSON list, not an object"),
        ("null", "a JSON NoneType, not an object"),
        ('{"title": "No ID"}', "no OpenAlex id"),
        ('{"id": 5, "title": "A number for an ID"}', "no OpenAlex id (id: int, not str)"),
    ):
        with pytest.raises(ValueError, match=reason.replace("(", r"\(").replace(")", r"\)")):
            corpus.snapshot_work(bad)


def test_read_snapshot_names_the_file_and_line(tmp_path: Path) -> None:
    import gzip

    from inspire_build.errors import InputError

    good = '{"id": "https://openalex.org/W1", "title": "One"}'
    plain = tmp_path / "works.jsonl"
    plain.write_text(f"{good}\n\n{good}\n[]\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"works.jsonl:4: not an OpenAlex work \(a JSON list"):
        list(corpus.read_snapshot(plain))
    packed = gzip.compress(f"{good}\n{good}\n".encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[: len(packed) - 12])  # the stream ends before its trailer
    with pytest.raises(InputError, match=r"cut.jsonl.gz:\d+: cannot read the file"):
        list(corpus.read_snapshot(cut))
    whole = tmp_path / "whole.jsonl.gz"
    whole.write_bytes(packed)
    assert [p.ids.openalex for p in corpus.read_snapshot(whole)] == ["W1", "W1"]
    odd = tmp_path / "odd.jsonl"
    odd.write_text(f'{good}\n{{"id": "W2", "title": 5, "publication_date": "soon"}}\n')
    noted: list[tuple[int, object]] = []
    kept = list(corpus.read_snapshot(odd, lambda *seen: noted.append(seen)))
    assert [p.title for p in kept] == ["One", None]  # kept, and said: not repaired unnoticed
    assert noted == [(2, ("publication_date: 'soon' is not a date", "title: int, not str"))]
    fifo = tmp_path / "works.fifo"
    os.mkfifo(fifo)  # read, it would wait for a writer for ever
    with pytest.raises(InputError, match=r"works.fifo: a named pipe \(FIFO\), not a regular"):
        list(corpus.read_snapshot(fifo))
    with pytest.raises(InputError, match="/dev/zero: a character device"):
        list(corpus.read_snapshot(Path("/dev/zero")))


# --- the local backend and the target's aliases, on a warehouse ---------------------------------


@pytest.fixture
def built(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A target with a published twin the warehouse knows, which a defective record dates
    *before* the cutoff; two antecedent-like works; one work after the cutoff."""
    con.execute(
        "INSERT INTO papers (paper_id, title, first_public_date, first_public_source, "
        "date_precision, sources, updated_at) VALUES "
        "('arxiv:2409.00001', 'Sharded sparse retrieval', DATE '2024-09-01', 'arxiv', 'day', "
        "['openalex'], now())"
    )
    con.execute(
        "INSERT INTO paper_ids VALUES ('arxiv', '2409.00001', 'arxiv:2409.00001', 'arxiv'), "
        "('doi', '10.9/twin', 'arxiv:2409.00001', 's2')"
    )
    con.execute(
        "INSERT INTO instances (version_id, instance_id, target_id, brief_id, brief, cutoff_date, "
        "n_antecedents) VALUES ('v1', 'i1', 'arxiv:2409.00001', 'b1', "
        "'Sparse retrieval indexes must scale to sharded memory.', DATE '2024-06-01', 2)"
    )
    records = [
        _record(
            [PaperId(Scheme.ARXIV, "2409.00001")], dt.date(2024, 9, 1), "Sharded sparse retrieval"
        ),
        # the twin: another OpenAlex record, wrongly dated early, known only through its DOI
        _record(
            [PaperId(Scheme.OPENALEX, "W55"), PaperId(Scheme.DOI, "10.9/twin")],
            dt.date(2023, 1, 1),
            "Sharded sparse retrieval (journal version)",
            abstract="sparse retrieval sharded memory indexes",
        ),
        _record([PaperId(Scheme.OPENALEX, "W1")], dt.date(2020, 1, 1), "Sparse retrieval indexes"),
        _record([PaperId(Scheme.OPENALEX, "W2")], dt.date(2021, 1, 1), "Memory for sparse models"),
        _record([PaperId(Scheme.OPENALEX, "W3")], dt.date(2024, 7, 1), "Sparse retrieval at scale"),
        corpus.CorpusRecord(
            (PaperId(Scheme.OPENALEX, "W4"),), "Undated sparse notes", None, None, (), ()
        ),
    ]
    size = store.write_corpus(con, records, "test")
    assert (size.records, size.works, size.known_papers, size.undated) == (6, 5, 1, 1)
    return con


def test_the_target_is_never_returned_or_read_under_any_of_its_ids(
    built: duckdb.DuckDBPyConnection,
) -> None:
    (task,) = store.load_tasks(built, "v1")
    assert {"arxiv:2409.00001", "doi:10.9/twin", "openalex:W55"} <= task.withheld
    backend = LocalBackend(built)
    env = SearchEnv(task, 50, backend)
    for query in ("sharded sparse retrieval", "journal version", "memory indexes", task.brief):
        result = env.search(query, 100)
        assert task.withheld.isdisjoint(f.paper_id for f in result.results)
    shown = {f.paper_id for f in env.search("sparse retrieval memory", 100).results}
    assert shown == {"openalex:W1", "openalex:W2"}  # W3 is after the cutoff
    for alias in ("arxiv:2409.00001", "10.9/twin", "W55", "https://arxiv.org/abs/2409.00001v2"):
        assert env.read(alias).status is Status.NOT_AVAILABLE
    assert (
        env.read("W1").paper is not None
        and env.read("W1").paper.title == "Sparse retrieval indexes"
    )  # type: ignore[union-attr]


def test_no_records_leave_the_corpus_as_it_was(built: duckdb.DuckDBPyConnection) -> None:
    from inspire_build.errors import InputError

    with pytest.raises(InputError, match="no works from the snapshot source: the corpus is left"):
        store.write_corpus(built, [], "snapshot")
    assert store.corpus_size(built) == 5


def test_the_local_backends_cutoff_violation_rate_is_zero(built: duckdb.DuckDBPyConnection) -> None:
    tasks = store.load_tasks(built, "v1")
    row = audit.audit_backend(LocalBackend(built), tasks, k=10)
    assert row.returned > 0 and row.queries == 1  # the brief is its one sentence: one query
    assert (row.late, row.undated, row.violation_rate) == (0, 0, 0.0)
    # the defective twin slips past the date filter: the environment still withholds it
    assert row.target >= 1


def test_sessions_are_logged_in_the_warehouse(built: duckdb.DuckDBPyConnection) -> None:
    tasks = store.load_tasks(built, "v1")
    sessions = run.run_agent(
        agents.MultiQueryAgent(), tasks, lambda t: SearchEnv(t, 4, LocalBackend(built)), "v1"
    )
    store.write_sessions(built, sessions)
    store.write_sessions(built, sessions)  # a rewrite replaces its own steps
    assert built.execute("SELECT status, calls FROM env_sessions").fetchall() == [("submitted", 4)]
    assert built.execute("SELECT count(*) FROM env_steps").fetchone() == (4,)  # the budget


# --- the tool server's sessions: tokens, one budget per (run, instance), bounds ----------------


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (limits.k, 0, "k is out of bounds; it must be from 1 to 100"),
        (limits.k, -37, "k is out of bounds"),
        (limits.k, 7777, "k is out of bounds"),
        (limits.k, True, "k must be an integer"),
        (limits.k, 2.5, "k must be an integer"),
        (limits.k, 2.0, "k must be an integer"),  # a JSON number that is not an integer
        (limits.k, "10", "k must be an integer"),
        (limits.query, "", "query is empty"),
        (limits.query, " \n\t ", "query is empty"),
        (limits.query, "\u200b\u200c\u200d\u2060\ufeff\u3000 \t", "query is empty"),
        (limits.query, "q" * 4001, "query is too long; at most 4,000 characters"),
        (limits.query, 7, "query must be a string"),
        (limits.paper_id, "W" * 201, "paper_id is too long; at most 200 characters"),
        (limits.paper_id, "  ", "paper_id is empty"),
        (limits.paper_id, "\ufeff\u200b", "paper_id is empty"),
        (
            limits.ranking,
            ["a"] * 1001,
            "ranking holds too many IDs; a submission holds at most 1,000",
        ),
        (limits.ranking, ["a", "b" * 201], "ranking[2] is too long; an ID has at most 200"),
        (limits.ranking, ["a", 3], "ranking[2] is not a string"),
        (limits.ranking, "a", "ranking must be a list"),
        (limits.token, "t" * 201, "token is too long"),
    ],
)
def test_limits_refuse_out_of_bounds_values_naming_the_bound_not_the_value(
    check: object, value: object, message: str
) -> None:
    with pytest.raises(OutOfBounds, match=re.escape(message)) as refused:
        check(value)  # type: ignore[operator]
    said = str(refused.value)
    assert len(said) < 120  # the value itself is never echoed, nor its length
    for echo in ("37", "7777", "2.0", "2.5", "True", "4001", "4,001", "201", "1001", "1,001"):
        assert echo not in said


def test_limits_pass_values_in_bounds() -> None:
    assert [limits.k(1), limits.k(100)] == [1, 100]
    assert limits.query("  sparse retrieval ") == "sparse retrieval"
    assert limits.query("q" * 4000) == "q" * 4000
    assert limits.query("\u200b\u3000sparse\u200bretrieval\ufeff ") == "sparse\u200bretrieval"
    assert limits.paper_id("W" * 200) == "W" * 200
    assert limits.ranking(["a"] * 1000) == ["a"] * 1000
    assert limits.token(None) is None and limits.token("  ") is None
    assert limits.token("\u200b\u2060") is None


def _sessions(con: duckdb.DuckDBPyConnection, budget: int = 2, **kw: object) -> ToolSessions:
    return ToolSessions(
        store.load_tasks(con, "v1"),
        LocalBackend(con),
        con,
        budget=budget,
        version="v1",
        **kw,  # type: ignore[arg-type]
    )


def _second_instance(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "INSERT INTO instances (version_id, instance_id, target_id, brief_id, brief, cutoff_date, "
        "n_antecedents) VALUES ('v1', 'i2', 'openalex:W3', 'b2', 'Memory for sparse models.', "
        "DATE '2024-06-01', 1)"
    )


def _steps(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        "SELECT s.instance_id, t.step, t.tool, t.query FROM env_steps t "
        "JOIN env_sessions s USING (session_id) ORDER BY s.instance_id, t.step"
    ).fetchall()


def test_each_session_is_bound_to_its_token_and_one_client_holds_several(
    built: duckdb.DuckDBPyConnection,
) -> None:
    _second_instance(built)
    sessions = _sessions(built)
    with pytest.raises(UnknownInstance):
        sessions.start("nope")
    first, second = sessions.start("i1"), sessions.start("i2")
    assert first["token"] != second["token"] and len(first["token"]) >= 40
    assert (first["budget"], first["budget_left"], first["resumed"]) == (2, 2, False)
    assert sessions.search(first["token"], "sparse retrieval", 5)["budget_left"] == 1
    assert sessions.search(second["token"], "memory", 5)["budget_left"] == 1  # both stay open
    with pytest.raises(NoSession):
        sessions.search(None, "sparse retrieval")
    with pytest.raises(WrongToken, match="unknown session token"):
        sessions.read("forged-" + first["token"], "W1")
    with pytest.raises(WrongToken, match="not for that instance"):
        sessions.read(second["token"], "W1", instance_id="i1")
    with pytest.raises(WrongToken):
        sessions.submit(second["token"], ["openalex:W1"], instance_id="i1")
    assert sessions.read(first["token"], "W1", instance_id="i1")["budget_left"] == 0
    # refused calls were charged nothing and logged nothing
    assert _steps(built) == [
        ("i1", 1, "search", "sparse retrieval"),
        ("i1", 2, "read", "W1"),
        ("i2", 1, "search", "memory"),
    ]
    stored = built.execute(
        "SELECT instance_id, status, calls, token_sha256, finished_at FROM env_sessions "
        "ORDER BY instance_id"
    ).fetchall()
    assert [row[:3] for row in stored] == [("i1", "open", 2), ("i2", "open", 1)]
    assert all(row[3] and row[3] not in (first["token"], second["token"]) for row in stored)
    assert [row[4] for row in stored] == [None, None]


def test_a_second_start_resumes_with_the_token_and_never_resets_the_budget(
    built: duckdb.DuckDBPyConnection,
) -> None:
    _second_instance(built)
    sessions = _sessions(built)
    opened = sessions.start("i1")
    sessions.search(opened["token"], "sparse retrieval", 5)
    with pytest.raises(SessionTaken, match="another session"):
        sessions.start("i1")
    other = sessions.start("i2")
    with pytest.raises(SessionTaken):
        sessions.start("i1", token=other["token"])
    resumed = sessions.start("i1", token=opened["token"])
    assert (resumed["budget_left"], resumed["resumed"], resumed["token"]) == (
        1,
        True,
        opened["token"],
    )
    answer = sessions.submit(opened["token"], [" openalex:W1", "openalex:W1", "openalex:W2"])
    assert answer == {
        "status": "ok",
        "instance_id": "i1",
        "ranking": ["openalex:W1", "openalex:W2"],
        "calls": 1,
    }  # no scores: they are never returned
    again = sessions.submit(opened["token"], ["openalex:W9"])
    assert again["status"] == "submitted" and again["ranking"] == answer["ranking"]
    assert sessions.search(opened["token"], "more")["status"] == "submitted"
    with pytest.raises(AlreadySubmitted):
        sessions.start("i1", token=opened["token"])
    assert built.execute(
        "SELECT status, ranking, calls, finished_at IS NOT NULL FROM env_sessions "
        "WHERE instance_id = 'i1'"
    ).fetchall() == [("submitted", ["openalex:W1", "openalex:W2"], 1, True)]


def test_a_restarted_server_resumes_open_sessions_from_the_warehouse(
    built: duckdb.DuckDBPyConnection,
) -> None:
    before = _sessions(built, budget=3)
    opened = before.start("i1")
    before.search(opened["token"], "sparse retrieval", 5)
    before.read(opened["token"], "W1")
    after = _sessions(built, budget=50)  # a new server, even with another budget
    assert after.search(opened["token"], "memory", 5)["budget_left"] == 0  # 3 - 2 - 1
    assert after.search(opened["token"], "again")["status"] == "budget_exhausted"
    with pytest.raises(SessionTaken):
        after.start("i1")
    assert after.start("i1", token=opened["token"])["budget_left"] == 0
    other_run = _sessions(built, budget=3, run_name="another run")
    with pytest.raises(WrongToken):  # a token belongs to its run
        other_run.search(opened["token"], "x")
    assert other_run.start("i1")["budget_left"] == 3  # another run has its own budget
    assert [step[2] for step in _steps(built)] == ["search", "read", "search"]


def test_out_of_bounds_calls_are_refused_and_charged_nothing(
    built: duckdb.DuckDBPyConnection,
) -> None:
    sessions = _sessions(built)
    token = sessions.start("i1")["token"]
    refused = [
        lambda: sessions.search(token, "sparse", 0),
        lambda: sessions.search(token, "sparse", -3),
        lambda: sessions.search(token, "sparse", 1000),
        lambda: sessions.search(token, ""),
        lambda: sessions.search(token, "q" * 5000),
        lambda: sessions.search(token, "\u200b\u3000\ufeff \u2060\u200c\u200d"),
        lambda: sessions.search(token, "sparse", True),
        lambda: sessions.search(token, "sparse", "10"),
        lambda: sessions.search(token, "sparse", 2.0),
        lambda: sessions.read(token, "W" * 201),
        lambda: sessions.submit(token, ["W1"] * 1001),
        lambda: sessions.start("i" * 201),
    ]
    for call in refused:
        with pytest.raises(OutOfBounds):
            call()
    assert sessions.start("i1", token=token)["budget_left"] == 2
    assert _steps(built) == []


def test_the_debug_mode_is_recorded_on_every_session_it_touches(
    built: duckdb.DuckDBPyConnection,
) -> None:
    _second_instance(built)
    lines: list[dict[str, object]] = []
    fair = _sessions(built, on_submit=lambda env, shown: lines.append(env.trajectory_line(shown)))
    untouched, touched = fair.start("i2"), fair.start("i1")
    fair.search(touched["token"], "sparse retrieval", 5)

    def judge(env: SearchEnv) -> dict[str, float | None]:
        return {"ndcg@10": 0.5}

    debugging = _sessions(
        built, judge=judge, on_submit=lambda env, shown: lines.append(env.trajectory_line(shown))
    )
    answer = debugging.submit(touched["token"], ["openalex:W1"])
    assert answer["scores"] == {"ndcg@10": 0.5}
    assert [line["scores_revealed"] for line in lines] == [True]
    assert len(lines[0]["steps"]) == 1  # type: ignore[arg-type]
    revealed = built.execute(
        "SELECT instance_id, scores_revealed FROM env_sessions ORDER BY instance_id"
    ).fetchall()
    assert revealed == [("i1", True), ("i2", False)]
    assert "scores" not in fair.submit(untouched["token"], [])


class CountingConnection:
    """A DuckDB connection that records every statement run through ``execute``."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.statements = con, list[str]()

    def execute(self, sql: str, params: object = None) -> duckdb.DuckDBPyConnection:
        self.statements.append(sql)
        return self.con.execute(sql, params)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self.con, name)


def test_a_refused_read_does_the_same_backend_work_whether_the_id_exists_or_not(
    built: duckdb.DuckDBPyConnection,
) -> None:
    counting = CountingConnection(built)
    (task,) = store.load_tasks(built, "v1")
    env = SearchEnv(task, 100, LocalBackend(counting))  # type: ignore[arg-type]
    refused = {
        "withheld": "arxiv:2409.00001",
        "withheld alias": "10.9/twin",
        "withheld twin": "W55",
        "late": "W3",
        "undated": "W4",
        "unknown": "W987654",
        "not an ID": "no such thing",
    }
    work = {}
    for kind, paper_id in refused.items():
        counting.statements.clear()
        result = env.read(paper_id)
        assert (result.status, result.paper) == (Status.NOT_AVAILABLE, None), kind
        work[kind] = list(counting.statements)
    counting.statements.clear()
    assert env.read("W1").status is Status.OK
    shown = counting.statements
    assert len(shown) == 3 and all(statements == shown for statements in work.values()), work
    assert {(s.tool, s.exposed) for s in env.steps[:-1]} == {("read", ())}


def test_the_mcp_server_serves_one_session_with_the_agents_three_tools_only(
    built: duckdb.DuckDBPyConnection,
) -> None:
    import json

    import anyio
    from mcp.server.fastmcp.exceptions import ToolError

    from inspire_build.env.mcp_server import create_mcp

    _second_instance(built)
    sessions = _sessions(built)
    token = sessions.start("i1")["token"]
    other = sessions.start("i2")["token"]
    mcp = create_mcp(sessions, token)
    assert mcp.instructions is not None
    assert "Sparse retrieval indexes must scale" in mcp.instructions
    assert "2024-06-01" in mcp.instructions and token not in mcp.instructions

    async def call(name: str, arguments: dict[str, object]) -> dict[str, object]:
        blocks = await mcp.call_tool(name, arguments)
        content = blocks[0] if isinstance(blocks, tuple) else blocks
        first = content[0] if isinstance(content, list | tuple) else content
        return dict(json.loads(first.text))  # type: ignore[union-attr]

    async def session() -> list[dict[str, object]]:
        tools = {tool.name: tool for tool in await mcp.list_tools()}
        assert set(tools) == {"search", "read", "submit"}  # no instances, no start
        assert tools["search"].inputSchema["properties"]["k"]["type"] == "integer"
        for name in ("start", "instances", "x" * 300):
            with pytest.raises(ToolError, match="no such tool") as refused:
                await call(name, {"instance_id": "i2"})
            assert "x" * 300 not in str(refused.value)
        for k in (0, -37, 7777, True, "10", 2.0):
            with pytest.raises(ToolError) as refused:
                await call("search", {"query": "sparse retrieval", "k": k})
            said = str(refused.value)  # one of two fixed texts: no value can be in it
            assert said.endswith(("k is out of bounds; it must be from 1 to 100",
                                  "k must be an integer from 1 to 100")), said  # fmt: skip
        with pytest.raises(ToolError, match="query is empty"):
            await call("search", {"query": "\u200b\u3000\ufeff"})
        with pytest.raises(ToolError, match="malformed call of search: query") as refused:
            await call("search", {"query": 98765})
        assert "98765" not in str(refused.value)
        # a token or instance passed as an argument is no argument of these tools: ignored
        found = await call("search", {"query": "sparse retrieval", "k": 5, "token": other})
        submitted = await call("submit", {"ranking": ["openalex:W1"], "instance_id": "i2"})
        return [found, submitted]

    found, submitted = anyio.run(session)
    assert found["status"] == "ok" and found["budget_left"] == 1
    assert submitted["instance_id"] == "i1" and submitted["ranking"] == ["openalex:W1"]
    assert "scores" not in submitted
    assert _steps(built) == [("i1", 1, "search", "sparse retrieval")]  # i2 spent nothing
    assert sessions.start("i2", token=other)["budget_left"] == 2


def test_an_agent_in_process_holds_one_sessions_tools_and_the_operator_ends_it(
    built: duckdb.DuckDBPyConnection,
) -> None:
    from inspire_build.env.server import SessionTools

    _second_instance(built)
    sessions = _sessions(built, budget=3)
    token = sessions.start("i1", "bm25-brief")["token"]
    tools = SessionTools(sessions, token)
    assert (tools.brief, tools.cutoff) == (
        "Sparse retrieval indexes must scale to sharded memory.",
        dt.date(2024, 6, 1),
    )
    assert not any(hasattr(tools, name) for name in ("start", "instances", "tasks", "finish"))
    assert tools.read("W55").status is Status.NOT_AVAILABLE  # the target's twin
    assert tools.read("W3").status is Status.NOT_AVAILABLE  # after the cutoff
    ended = sessions.finish(token)  # the agent returned without submitting
    assert ended.steps and ended.run_line() == {"instance_id": "i1", "ranking": []}
    assert tools.search("sparse").status is Status.SUBMITTED  # final: nothing more is charged
    with pytest.raises(AlreadySubmitted):
        sessions.start("i1", token=token)
    assert built.execute(
        "SELECT instance_id, status, calls, finished_at IS NOT NULL FROM env_sessions"
    ).fetchall() == [("i1", "abandoned", 2, True)]


def test_agent_runs_take_the_operators_path_one_logged_session_per_instance(
    built: duckdb.DuckDBPyConnection,
) -> None:
    _second_instance(built)
    sessions = _sessions(built, budget=4, run_name="multi-query-test")
    envs = run.run_operated(agents.MultiQueryAgent(), sessions)
    assert [env.task.instance_id for env in envs] == ["i1", "i2"]
    assert all(env.submitted is not None and len(env.steps) <= 4 for env in envs)
    rows = built.execute(
        "SELECT instance_id, agent, run_name, status, calls, token_sha256 IS NOT NULL "
        "FROM env_sessions ORDER BY instance_id"
    ).fetchall()
    assert rows == [
        ("i1", "multi-query", "multi-query-test", "submitted", len(envs[0].steps), True),
        ("i2", "multi-query", "multi-query-test", "submitted", len(envs[1].steps), True),
    ]
    steps = built.execute("SELECT count(*) FROM env_steps").fetchone()
    assert steps == (len(envs[0].steps) + len(envs[1].steps),)


def _http(sessions: ToolSessions, key: str) -> Any:
    from fastapi.testclient import TestClient

    from inspire_build.env.server import create_app

    return TestClient(create_app(sessions, key, allowed_hosts=("testserver",)))


def test_over_http_only_the_operator_key_lists_and_starts(
    built: duckdb.DuckDBPyConnection,
) -> None:
    from inspire_build.env.server import new_operator_key

    key = new_operator_key()
    http = _http(_sessions(built), key)
    operator = {"Authorization": f"Bearer {key}"}
    assert http.get("/instances").status_code == 401
    assert http.post("/start", json={"instance_id": "i1"}).status_code == 401
    token = http.post("/start", json={"instance_id": "i1"}, headers=operator).json()["token"]
    as_agent = {"Authorization": f"Bearer {token}"}
    for call in (
        lambda: http.get("/instances", headers=as_agent),
        lambda: http.post("/start", json={"instance_id": "i1", "token": token}, headers=as_agent),
        lambda: http.get("/instances", headers={"Authorization": f"Bearer {key}x"}),
    ):
        refused = call()
        assert refused.status_code == 403 and token not in refused.text and key not in refused.text
    assert [i["instance_id"] for i in http.get("/instances", headers=operator).json()] == ["i1"]
    found = http.post("/search", json={"token": token, "query": "sparse", "k": 5}).json()
    assert found["budget_left"] == 1
    foreign = http.get("/instances", headers={**operator, "Host": "evil.example"})
    assert foreign.status_code == 400


def test_a_tool_server_needs_an_operator_key_worth_the_name(
    built: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(ValueError, match="at least 32"):
        _http(_sessions(built), "short")


def test_an_mcp_servers_session_is_kept_in_a_0600_file_and_resumed_from_it(
    built: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    from inspire_build.env.server import hold_session, session_file

    kept = session_file(tmp_path / "w.duckdb", "default", "i1")
    assert kept.parent == tmp_path / "w.duckdb.sessions"
    token = hold_session(_sessions(built), "i1", "mcp", kept)
    assert kept.read_text().strip() == token and kept.stat().st_mode & 0o777 == 0o600
    sessions = _sessions(built)
    sessions.search(token, "sparse retrieval", 5)
    assert hold_session(_sessions(built), "i1", "mcp", kept) == token  # resumed, not reopened
    assert _sessions(built).about(token)["budget_left"] == 1
    stale = tmp_path / "stale.token"
    stale.write_text("a-token-of-another-run\n")
    other_run = _sessions(built, run_name="another run")
    fresh = hold_session(other_run, "i1", "mcp", stale)
    assert fresh != token and stale.read_text().strip() == fresh  # the new token is kept
    from inspire_build.errors import InputError

    binary = tmp_path / "binary.token"
    binary.write_bytes(b"\xff\xfe\x00")
    for path, said in ((tmp_path, "is a directory"), (binary, "holds a NUL byte")):
        with pytest.raises(InputError, match=said):
            hold_session(_sessions(built, run_name="a third run"), "i1", "mcp", path)
