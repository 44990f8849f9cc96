"""The bounds on every tool call: one pure validation path for the HTTP and MCP servers.

Both servers are shells over :class:`inspire_build.env.server.ToolSessions`, which passes each
argument through these functions before it touches a session. A value out of bounds raises
:class:`OutOfBounds` with a message that names the bound, never the value itself (a 5 MB query
is not echoed, nor logged, and neither is its length). A refused call is charged nothing: no
budget, no step.

Text is trimmed of whitespace (ideographic space U+3000 included) and of the zero-width
characters U+200B-U+200D, U+2060 and U+FEFF; what is blank after that is refused as empty.

HTTP request bodies are bounded too (``MAX_BODY_BYTES``), before any JSON is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from inspire_build.errors import InputError

MAX_K = 100
DEFAULT_K = 10
MAX_QUERY_CHARS = 4_000  # a whole brief (120-250 words) fits: bm25-brief searches with it
MAX_ID_CHARS = 200  # a paper ID read or submitted, an instance ID, a token, an agent name
MAX_SUBMITTED_IDS = 1_000
MAX_BODY_BYTES = 1_000_000  # 1 MB
# Invisible at either end of a text: Unicode whitespace (\s, U+3000 included) and the
# zero-width space, non-joiner, joiner, word joiner and BOM, which \s does not match.
_BLANK = r"[\s\u200b-\u200d\u2060\ufeff]"
_EDGES = re.compile(f"^{_BLANK}+|{_BLANK}+$")


class OutOfBounds(InputError):
    """A tool call's argument outside the environment's bounds; the call is charged nothing."""


def k(value: object) -> int:
    """The number of results asked for: a JSON integer from 1 to ``MAX_K`` (not a boolean, a
    float such as 2.0, nor a string such as "10")."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OutOfBounds(f"k must be an integer from 1 to {MAX_K}")
    if not 1 <= value <= MAX_K:
        raise OutOfBounds(f"k is out of bounds; it must be from 1 to {MAX_K}")
    return value


def query(value: object) -> str:
    """A search query: text of at most ``MAX_QUERY_CHARS`` characters, not blank once trimmed
    (see the module's note). Trimmed."""
    return _text(value, "query", MAX_QUERY_CHARS)


def paper_id(value: object, what: str = "paper_id") -> str:
    """A paper ID to read: not blank, at most ``MAX_ID_CHARS`` characters. Stripped."""
    return _text(value, what, MAX_ID_CHARS)


def instance_id(value: object) -> str:
    return _text(value, "instance_id", MAX_ID_CHARS)


def agent(value: object) -> str:
    return _text(value, "agent", MAX_ID_CHARS)


def token(value: object) -> str | None:
    """A session token, or None when the call carries none (``None`` or blank)."""
    if value is None or (isinstance(value, str) and not trim(value)):
        return None
    return _text(value, "token", MAX_ID_CHARS)


def ranking(value: object) -> list[str]:
    """A submission: a list of at most ``MAX_SUBMITTED_IDS`` IDs, each a string of at most
    ``MAX_ID_CHARS`` characters. Blanks and duplicates are allowed here; ``clean_ranking``
    drops them."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise OutOfBounds("ranking must be a list of paper IDs")
    if len(value) > MAX_SUBMITTED_IDS:
        raise OutOfBounds(
            f"ranking holds too many IDs; a submission holds at most {MAX_SUBMITTED_IDS:,}"
        )
    for position, item in enumerate(value, 1):
        if not isinstance(item, str):
            raise OutOfBounds(f"ranking[{position}] is not a string")
        if len(item) > MAX_ID_CHARS:
            raise OutOfBounds(f"ranking[{position}] is too long; an ID has at most {MAX_ID_CHARS}")
    return list(value)


def trim(text: str) -> str:
    """``text`` without whitespace or zero-width characters at either end."""
    return _EDGES.sub("", text)


def _text(value: object, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise OutOfBounds(f"{what} must be a string")
    if len(value) > limit:
        raise OutOfBounds(f"{what} is too long; at most {limit:,} characters are allowed")
    trimmed = trim(value)
    if not trimmed:
        raise OutOfBounds(f"{what} is empty")
    return trimmed
