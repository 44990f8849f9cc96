"""Curator review: `review serve`, the web pages that read, judge and correct a version's
instances (``inspire build --apply-reviews`` then writes a version with the decisions), and
`review sample`, the seeded sample whose review measures model-curator agreement."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from inspire_build import warehouse
from inspire_build.cli.common import (
    SplitOption,
    VersionOption,
    WarehouseOption,
    _Context,
    _sub_app,
    check_split,
    err,
    out,
    warehouse_of,
)

review_app = _sub_app(
    "review", "Curator review: read, judge and correct a split version's instances in a browser."
)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _hosts(host: str) -> tuple[str, ...]:
    """The Host headers the pages answer: this machine's names when bound to loopback."""
    from inspire_build.review.app import LOOPBACK

    return LOOPBACK if _loopback(host) else ("*",)


@review_app.command("serve")
def review_serve(
    ctx: typer.Context,
    split: SplitOption = "eval",
    version: VersionOption = None,
    port: Annotated[int, typer.Option(help="The port to serve on (0: a free one).")] = 8770,
    host: Annotated[
        str,
        typer.Option(
            help="The address to bind. Only 127.0.0.1 (the default) keeps the pages, which show "
            "the private side, to this machine."
        ),
    ] = "127.0.0.1",
    curator: Annotated[
        str | None,
        typer.Option(
            help="A name to offer on the name form of each new browser session (each curator "
            "names themselves in their own browser, and that name is recorded with their "
            "decisions). Default: $INSPIRE_CURATOR; with neither, the form starts empty."
        ),
    ] = None,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Serve the review pages of a split version (default: the split's latest) until Ctrl-C;
    each decision is a row of the `reviews` table, under the name its browser session gave."""
    from inspire_build import local_server, splits
    from inspire_build.review.app import create_app
    from inspire_build.review.curation import Curation

    check_split(ctx, split, version, warehouse_path)
    root: _Context = ctx.obj
    offered = (curator or root.settings.curator or "").strip()
    sock = local_server.bind(port, host)  # a busy port fails here, before the warehouse opens
    try:
        with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
            chosen = version or splits.latest_version(con, split)
            review = Curation(con, root.settings, chosen)
            served = create_app(review, allowed_hosts=_hosts(host), default_curator=offered)
            bound = sock.getsockname()
            err.print(
                f"reviewing {chosen} ({len(review.instances())} instances) on "
                f"http://{host if ':' not in host else f'[{host}]'}:{bound[1]} (Ctrl-C stops); "
                "each browser session gives its curator's name"
                + (f" (offered: {offered})" if offered else "")
            )
            if not _loopback(host):
                err.print(
                    f"warning: bound to {host}, not loopback: anyone who reaches this machine "
                    "can read the private side and record decisions"
                )
            local_server.serve_on(served, sock)
    finally:
        sock.close()


@review_app.command("sample")
def review_sample(
    ctx: typer.Context,
    n: Annotated[int, typer.Option("--n", help="How many instances to draw (at least 1).")],
    split: SplitOption = "eval",
    version: VersionOption = None,
    seed: Annotated[int, typer.Option(help="The draw's seed: the same seed, the same sample.")] = 0,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Draw a seeded sample of a split version's instances (default: the split's latest),
    stratified by the target's first public month and the instance's highest gold tier, for
    curators to review; the card and `inspire audit` then report model-curator agreement on
    it. Drawing again replaces the version's sample."""
    from inspire_build.review.sample import draw_sample

    check_split(ctx, split, version, warehouse_path)
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        drawn = draw_sample(con, split, version, n, seed)
    if drawn.requested > drawn.available:
        err.print(
            f"asked for {drawn.requested}, but {drawn.version_id} has {drawn.available} "
            "instances: all of them are sampled"
        )
    out.print(
        f"sampled {len(drawn.drawn)} of {drawn.available} instances of {drawn.version_id} "
        f"(seed {drawn.seed}), by first public month and highest gold tier:"
    )
    for stratum, count in drawn.strata.items():
        out.print(f"  {stratum}: {count}")
    for candidate in drawn.drawn:
        out.print(f"  instance {candidate.instance_id} ({candidate.stratum})")
    out.print(
        f"review them: inspire review serve --split {split} --version {drawn.version_id}, "
        "and open /i/INSTANCE_ID for each; accept, reject or regrade each one. "
        "The card (`inspire export`) and `inspire audit` then report the agreement."
    )
