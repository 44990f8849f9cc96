"""The MCP server (stdio) for ONE session: its tools are the agent's search, read and submit.

The operator (the harness) starts ``inspire env mcp --instance ID``: the process opens that
instance's session, or resumes it with the token it keeps (:func:`server.hold_session`), and
serves it alone. The agent at the other end of the pipe holds that session and nothing else:
there is no tool to list instances or start a session, no tool takes a token or an instance,
so nothing it can call reaches another instance, cutoff or budget.

Same rules as the HTTP API (one budget and one submission per instance, the bounds of
``limits.py``, logged trajectories): both are shells over
:class:`inspire_build.env.server.ToolSessions`. A refused call comes back as a tool error
(``isError``) with its reason, names the argument and not its value, and is charged nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ContentBlock
from pydantic import ValidationError, WithJsonSchema

from inspire_build.env import limits
from inspire_build.env.server import ToolSessions

# k reaches limits.k as sent, so that true, "10" and 2.0 are refused rather than coerced.
K = Annotated[
    object,
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": limits.MAX_K, "default": 10}),
]


class _Quiet(FastMCP):
    """FastMCP whose refusals name the argument, never the value sent (pydantic's message
    quotes the input, and an unknown tool's quotes its name)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> Sequence[ContentBlock] | dict[str, Any]:
        known = [tool.name for tool in await self.list_tools()]
        if name not in known:
            raise ToolError(f"no such tool; this session's tools are {', '.join(known)}")
        try:
            return await super().call_tool(name, arguments)
        except ToolError as error:
            cause = error.__cause__
            if not isinstance(cause, ValidationError):
                raise
            fields = "; ".join(
                f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in cause.errors()
            )
            raise ToolError(f"malformed call of {name}: {fields}") from None


def instructions(about: dict[str, Any]) -> str:
    return (
        "A literature-search benchmark: one instance, one session. Search and read for works "
        "public before the cutoff that answer the brief, within the budget of tool calls; "
        "finish with submit(ranking), best first. The submission is final.\n"
        f"Brief: {about['brief']}\nCutoff: {about['cutoff']}\n"
        f"Budget: {about['budget']} calls, {about['budget_left']} left."
    )


def create_mcp(sessions: ToolSessions, token: str) -> FastMCP:
    """The MCP server of the one session that ``token`` names (opened by the operator)."""
    mcp = _Quiet("inspire-search", instructions=instructions(sessions.about(token)))

    @mcp.tool()
    def search(query: str, k: K = limits.DEFAULT_K) -> dict[str, Any]:
        """Full-text search: at most k (an integer, 1-100) works public before the cutoff. The
        query is 1-4,000 characters. Costs one call."""
        return sessions.search(token, query, k)

    @mcp.tool()
    def read(paper_id: str) -> dict[str, Any]:
        """A work's title, abstract, year and authors (an ID of at most 200 characters).
        Costs one call."""
        return sessions.read(token, paper_id)

    @mcp.tool()
    def submit(ranking: list[str]) -> dict[str, Any]:
        """Submit the final ranking of paper IDs, best first (at most 1,000 IDs, 100 kept);
        ends the session. It is final: a second submit changes nothing."""
        return sessions.submit(token, ranking)

    return mcp
