"""Text speed: the rules backend's redaction and lineage's title matching, each beside the
implementation it replaced, in one run on the same inputs.

Run: .venv/bin/python bench/text_speed.py [--papers 2000] [--targets 60]
A sandbox world's briefs and reference lists are the inputs: every target's redaction terms
removed from its brief frame, and every reference title matched against a growing list of
titles (as ``lineage.merge`` does). The bound of each figure is the replaced implementation,
run on the same inputs; the ratio is old time / new time (higher is better). The outputs are
compared too: they must be equal. Nothing is asserted, since machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import time

import _checkout  # noqa: F401  (this checkout first on the path)

from inspire_build.briefs import redactions
from inspire_build.lineage import normalise_title, title_candidates
from inspire_build.llm_rules import FRAME, redact
from inspire_build.sandbox import world
from tests.unit.test_lineage import by_pairs  # the replaced implementations
from tests.unit.test_llm_rules import by_expression


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=2000)
    parser.add_argument("--targets", type=int, default=60)
    args = parser.parse_args()
    generated = world.generate(world.WorldConfig(seed=0, papers=args.papers))
    records = generated.records[: args.targets]
    titles = [r.title for r in generated.records]
    cases = [
        (FRAME + " " + r.abstract, redactions(r.title, r.abstract, titles[:20])) for r in records
    ]
    figures = {}
    figures.update(side_by_side("redact", cases, lambda c: redact(*c), lambda c: by_expression(*c)))
    queries = [normalise_title(t) for t in titles[: args.targets * 5]]
    pool = [normalise_title(t) for t in titles]
    matches = [(q, pool) for q in queries]
    figures.update(
        side_by_side(
            "title_match",
            matches,
            lambda m: title_candidates(*m),
            lambda m: by_pairs(m[0], list(m[1])),
        )
    )
    print(json.dumps(figures))


def side_by_side(name: str, cases: list, new, old) -> dict[str, float]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    got = [new(case) for case in cases]
    new_s = time.perf_counter() - started
    started = time.perf_counter()
    expected = [old(case) for case in cases]
    old_s = time.perf_counter() - started
    same = got == expected
    print(
        f"{name}: {len(cases)} cases in {new_s:.3f} s; the replaced implementation "
        f"{old_s:.3f} s; ratio {old_s / new_s:.1f}x; same output: {same}"
    )
    return {f"{name}_s": round(new_s, 4), f"{name}_old_s": round(old_s, 4),
            f"{name}_ratio": round(old_s / new_s, 2), f"{name}_same": same}  # fmt: skip


if __name__ == "__main__":
    main()
