"""The MCP server (stdio): the tool server's search, read and submit as MCP tools.

Same rules as the HTTP API (a token per session, one budget and one submission per instance,
the bounds of ``limits.py``, logged trajectories): both are shells over
:class:`inspire_build.env.server.ToolSessions`. A refused call comes back as a tool error
(``isError``) with its reason, and is charged nothing.
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP

from inspire_build.env import limits
from inspire_build.env.server import ToolSessions


def create_mcp(sessions: ToolSessions) -> FastMCP:
    mcp = FastMCP(
        "inspire-search",
        instructions=(
            "A literature-search benchmark. Call instances, then start(instance_id), which "
            "returns a session token; pass that token to every search, read and submit. Search "
            "and read within the budget for works public before the cutoff that answer the "
            "brief; finish with submit(token, ranking), best first. Each instance has one "
            "budget and one final submission: start again with your token to resume."
        ),
    )

    @mcp.tool()
    def instances() -> list[dict[str, Any]]:
        """Every instance: its ID, research brief and cutoff date."""
        return sessions.instances()

    @mcp.tool()
    def start(instance_id: str, token: str | None = None) -> dict[str, Any]:
        """Open an instance: its brief, cutoff, budget, budget_left and a session token for
        every later call. With the token of its open session, resumes it unchanged."""
        return sessions.start(instance_id, "mcp", token)

    @mcp.tool()
    def search(
        token: str, query: str, k: int = limits.DEFAULT_K, instance_id: str | None = None
    ) -> dict[str, Any]:
        """Full-text search: at most k (1-100) works public before the cutoff. The query is
        1-1,000 characters. Costs one call."""
        return sessions.search(token, query, k, instance_id)

    @mcp.tool()
    def read(token: str, paper_id: str, instance_id: str | None = None) -> dict[str, Any]:
        """A work's title, abstract, year and authors (an ID of at most 200 characters).
        Costs one call."""
        return sessions.read(token, paper_id, instance_id)

    @mcp.tool()
    def submit(token: str, ranking: list[str], instance_id: str | None = None) -> dict[str, Any]:
        """Submit the final ranking of paper IDs, best first (at most 1,000 IDs, 100 kept);
        ends the session. It is final: a second submit changes nothing."""
        return sessions.submit(token, ranking, instance_id)

    return mcp
