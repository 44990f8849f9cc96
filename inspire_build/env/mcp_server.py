"""The MCP server (stdio): the tool server's search, read and submit as MCP tools.

Same rules as the HTTP API (one instance at a time, budgets, logged trajectories): both are
shells over :class:`inspire_build.env.server.ToolSessions`.
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP

from inspire_build.env.server import ToolSessions


def create_mcp(sessions: ToolSessions) -> FastMCP:
    mcp = FastMCP(
        "inspire-search",
        instructions=(
            "A literature-search benchmark. Call instances, then start(instance_id); search and "
            "read within the budget for works public before the cutoff that answer the brief; "
            "finish with submit(ranking), best first."
        ),
    )

    @mcp.tool()
    def instances() -> list[dict[str, Any]]:
        """Every instance: its ID, research brief and cutoff date."""
        return sessions.instances()

    @mcp.tool()
    def start(instance_id: str) -> dict[str, Any]:
        """Open one instance (ending any open one); returns its brief, cutoff and budget."""
        return sessions.start(instance_id, "mcp")

    @mcp.tool()
    def search(query: str, k: int = 10) -> dict[str, Any]:
        """Full-text search; at most k (1-100) works public before the cutoff. Costs one call."""
        return sessions.search(query, k)

    @mcp.tool()
    def read(paper_id: str) -> dict[str, Any]:
        """A work's title, abstract, year and authors. Costs one call."""
        return sessions.read(paper_id)

    @mcp.tool()
    def submit(ranking: list[str]) -> dict[str, Any]:
        """Submit the final ranking of paper IDs, best first; ends the instance."""
        return sessions.submit(ranking)

    return mcp
