"""The search environment: its filter, budget and log; corpus merging; the baselines' pure parts;
the local backend on an in-memory warehouse; the tool sessions behind the HTTP and MCP servers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from inspire_build.cutoff import SourceDate
from inspire_build.env import agents, audit, corpus, run, store
from inspire_build.env.backends import LocalBackend
from inspire_build.env.core import SearchEnv, Status, Task, Verdict, Work, clean_ranking, verdict
from inspire_build.env.server import NoSession, ToolSessions, UnknownInstance
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
        "INSERT INTO instances VALUES ('v1', 'i1', 'arxiv:2409.00001', 'b1', "
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
    ]
    size = store.write_corpus(con, records, "test")
    assert (size.records, size.works, size.known_papers) == (5, 4, 1)
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


def test_tool_sessions_one_instance_at_a_time(built: duckdb.DuckDBPyConnection) -> None:
    finished: list[store.Session] = []
    tasks = store.load_tasks(built, "v1")
    sessions = ToolSessions(tasks, lambda t: SearchEnv(t, 2, LocalBackend(built)), finished.append)
    with pytest.raises(NoSession):
        sessions.search("x")
    with pytest.raises(UnknownInstance):
        sessions.start("nope")
    assert sessions.instances() == [
        {"instance_id": "i1", "brief": tasks[0].brief, "cutoff": "2024-06-01"}
    ]
    sessions.start("i1")
    sessions.start("i1")  # the open session ends, abandoned
    found = sessions.search("sparse retrieval", 5)
    assert found["status"] == "ok" and found["budget_left"] == 1
    answer = sessions.submit([r["paper_id"] for r in found["results"]])
    assert answer["status"] == "ok" and answer["calls"] == 1
    assert [s.env.submitted is None for s in finished] == [True, False]
    with pytest.raises(NoSession):
        sessions.read("W1")


def test_the_mcp_server_exposes_the_same_tools(built: duckdb.DuckDBPyConnection) -> None:
    import json

    import anyio

    from inspire_build.env.mcp_server import create_mcp

    finished: list[store.Session] = []
    tasks = store.load_tasks(built, "v1")
    mcp = create_mcp(
        ToolSessions(tasks, lambda t: SearchEnv(t, 2, LocalBackend(built)), finished.append)
    )

    async def call(name: str, arguments: dict[str, object]) -> dict[str, object]:
        blocks = await mcp.call_tool(name, arguments)
        content = blocks[0] if isinstance(blocks, tuple) else blocks
        first = content[0] if isinstance(content, list | tuple) else content
        return dict(json.loads(first.text))  # type: ignore[union-attr]

    async def session() -> list[dict[str, object]]:
        tools = {tool.name for tool in await mcp.list_tools()}
        assert tools == {"instances", "start", "search", "read", "submit"}
        opened = await call("start", {"instance_id": "i1"})
        found = await call("search", {"query": "sparse retrieval", "k": 5})
        submitted = await call("submit", {"ranking": ["openalex:W1"]})
        return [opened, found, submitted]

    opened, found, submitted = anyio.run(session)
    assert opened["budget"] == 2 and found["status"] == "ok"
    assert submitted["ranking"] == ["openalex:W1"]
    assert [s.env.submitted for s in finished] == [("openalex:W1",)]
