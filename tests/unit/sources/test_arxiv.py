"""sources/arxiv.py: at most 100 IDs a request against a local server, and a feed that stays
unreadable costs only its bad ID."""

from __future__ import annotations

from inspire_build import warehouse
from inspire_build.http import HttpClient
from inspire_build.sandbox import server, world
from inspire_build.sources import CODECS, arxiv, make_client
from tests.localserver import LocalServer, Reply, Seen
from tests.unit.test_http import settings_for


def test_arxiv_lookups_take_at_most_100_ids_per_request() -> None:
    def feed(seen: Seen) -> Reply:
        return Reply(
            200,
            b"<feed xmlns='http://www.w3.org/2005/Atom'/>",
            {"Content-Type": "application/atom+xml"},
        )

    server = LocalServer(feed)
    wanted = [f"2301.{i:05d}" for i in range(1, 251)]
    with server.running():
        client = HttpClient(settings_for(server), CODECS, None, mode="live")
        found = arxiv.fetch_records(client, wanted)
    sizes = [len(dict(s.query)["id_list"].split(",")) for s in server.seen]
    assert sizes == [100, 100, 50]
    assert found == dict.fromkeys(wanted)  # none found, every one reported


def test_an_unreadable_arxiv_feed_is_halved_down_to_the_bad_id() -> None:
    generated = world.generate(world.WorldConfig(seed=3, papers=600, hostile=True))
    bad = next(r.arxiv for r in generated.records if r.hostile == "malformed_json")
    good = [r.arxiv for r in generated.records if r.arxiv and not r.hostile][:7]
    assert bad
    # arXiv's limit scaled far past the client's pace, so every request counted is answered.
    with server.running(generated, server.SandboxConfig(time_scale=100_000)) as base:
        settings = server.settings_for(base, http_backoff_s=0.001, http_max_retries=1)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        failed: dict[str, str] = {}
        found = arxiv.fetch_records(client, [*good[:3], bad, *good[3:]], failed)
        requests = client.stats["arxiv"].network
    assert [i for i, paper in found.items() if paper is None] == [bad]
    assert list(failed) == [bad] and "stays malformed" in failed[bad]
    # 8 IDs: the whole feed, then halves 4+4, 2+2, 1+1 on the bad side; each unreadable
    # answer is asked twice (one retry) before it counts as unreadable.
    assert requests == 2 + (2 + 1) + (2 + 1) + (2 + 1)
