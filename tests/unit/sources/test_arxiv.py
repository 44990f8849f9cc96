"""sources/arxiv.py: at most 100 IDs a request against a local server, a feed that stays
unreadable costs only its bad ID, and feeds read into the arxiv client's own records."""

from __future__ import annotations

import datetime as dt

import arxiv as arxiv_client
import pytest

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


# --- parsing: the arxiv client's own records, read from the tree check_body parsed ---------------

_FEED = b"""<?xml version='1.0' encoding='UTF-8'?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <entry>
    <id>http://arxiv.org/abs/2301.00002v3</id>
    <title>A title
      on two lines</title>
    <updated>2023-03-01T02:30:00+05:00</updated>
    <published>2022-12-31T21:00:00-05:00</published>
    <link href="https://arxiv.org/pdf/2301.00002v3" rel="related" title="pdf"/>
    <summary>  An abstract.  </summary>
    <category term="cs.IR" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
    <arxiv:primary_category term="cs.IR"/>
    <arxiv:doi>10.1000/xyz</arxiv:doi>
    <author><name>Ada Abe</name><arxiv:affiliation>Somewhere</arxiv:affiliation></author>
    <author><name>Bo Bell</name></author>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/2301.00003v1</id>
    <title>Naive times</title>
    <updated>2023-01-02T23:59:59</updated>
    <published>2023-01-02T23:59:59</published>
  </entry>
  <entry>
    <id>https://arxiv.org/api/errors#incorrect_id_format_for_abc</id>
    <title>Error</title>
    <updated>2026-04-12T22:59:06Z</updated>
    <summary>incorrect id format for abc</summary>
  </entry>
</feed>
"""


def test_feed_entries_become_arxiv_results_in_utc() -> None:
    results = arxiv.read_results(arxiv.check_body(_FEED))
    assert all(isinstance(r, arxiv_client.Result) for r in results)
    assert [r.get_short_id() for r in results] == ["2301.00002v3", "2301.00003v1"]  # no error
    first = results[0]
    # 21:00 at -05:00 on 31 December is 02:00 UTC on 1 January; 02:30 at +05:00 the day before.
    assert first.published == dt.datetime(2023, 1, 1, 2, 0, tzinfo=dt.UTC)
    assert first.updated == dt.datetime(2023, 2, 28, 21, 30, tzinfo=dt.UTC)
    assert first.title == "A title on two lines" and first.primary_category == "cs.IR"
    assert [(a.name, a.affiliation) for a in first.authors] == [
        ("Ada Abe", ["Somewhere"]),
        ("Bo Bell", []),
    ]
    assert first.pdf_url == "https://arxiv.org/pdf/2301.00002v3"
    assert results[1].published == dt.datetime(2023, 1, 2, 23, 59, 59, tzinfo=dt.UTC)


def test_parse_feed_dates_versions_by_their_utc_day() -> None:
    papers = arxiv.parse_feed(_FEED)
    assert [p.ids.arxiv for p in papers] == ["2301.00002", "2301.00003"]
    first = papers[0]
    assert (first.publication_date, first.year) == (dt.date(2023, 1, 1), 2023)
    assert [(v.version, v.date) for v in first.versions or ()] == [
        (1, dt.date(2023, 1, 1)),
        (3, dt.date(2023, 2, 28)),
    ]
    assert (first.title, first.abstract, first.ids.doi) == (
        "A title on two lines",
        "  An abstract.  ",
        "10.1000/xyz",
    )
    assert first.fields == ("cs.IR", "cs.CL") and first.authors == ("Ada Abe", "Bo Bell")
    assert [(v.version, v.date) for v in papers[1].versions or ()] == [(1, dt.date(2023, 1, 2))]
    # The tree check_body read is parsed as the bytes are.
    assert arxiv.parse_feed(arxiv.check_body(_FEED)) == papers


def test_a_truncated_feed_raises_instead_of_losing_its_tail() -> None:
    with pytest.raises(ValueError, match="malformed Atom feed"):
        arxiv.parse_feed(_FEED[: len(_FEED) // 2])
    with pytest.raises(ValueError):  # not a timestamp: as the arxiv client, it raises
        arxiv.parse_feed(_FEED.replace(b"2023-01-02T23:59:59</pub", b"January 2023</pub"))
