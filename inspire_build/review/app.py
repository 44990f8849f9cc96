"""The review pages: a FastAPI app over one :class:`Curation`, rendered on the server with Jinja
(autoescaped: briefs, abstracts and rationales are untrusted text), with no build step.

Safety, for a tool that holds a warehouse open:

- ``create_app`` binds nothing; ``inspire review serve`` binds 127.0.0.1 unless told otherwise.
- Every state-changing request is a POST that must carry the session's CSRF token: the first
  page sets a random session cookie (HttpOnly, SameSite=Strict), and each form carries an HMAC
  of it under a secret made when the app starts. A POST without both, or with a token of
  another session, is refused (403) and records nothing.
- A body over ``max_body`` bytes (1 MB) is refused (413) before it is read whole.
- A request must name this machine in its Host header (``allowed_hosts``: 127.0.0.1,
  localhost, ::1), so a web page that rebinds its own name to 127.0.0.1 cannot read the pages
  (400); a server bound to another address allows any.
- Every page is sent with a Content-Security-Policy that runs only the page's own inline
  script (a per-response nonce), so even text that escaped escaping could not run.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from inspire_build.errors import InputError
from inspire_build.local_server import LOOPBACK as LOOPBACK  # re-exported: cli/review uses it
from inspire_build.local_server import refuse_foreign_hosts
from inspire_build.review import curation as curation_module
from inspire_build.review import decisions
from inspire_build.review.curation import Curation, UnknownInstance

MAX_BODY = 1_000_000  # 1 MB
COOKIE = "inspire_review_session"
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("inspire_build.review", "templates"),
    autoescape=True,  # every {{ value }} is HTML-escaped
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
TEMPLATES.filters["describe"] = decisions.describe  # a review, in one line of its history


class Sessions:
    """Session cookies and their CSRF tokens: a token is the HMAC of its session under a secret
    this process made, so no other session's (or process's) token passes."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    @staticmethod
    def new() -> str:
        return secrets.token_urlsafe(32)

    def token(self, session: str) -> str:
        return hmac.new(self._secret, session.encode(), hashlib.sha256).hexdigest()

    def valid(self, session: str | None, token: str | None) -> bool:
        if not session or not token:
            return False
        return hmac.compare_digest(self.token(session), token)


def _filters(values: Mapping[str, str]) -> tuple[str, str]:
    state, finding = values.get("state", ""), values.get("finding", "")
    curation_module.check_filters(state, finding)
    return state, finding


def _query(state: str, finding: str, **more: object) -> str:
    given = {"state": state, "finding": finding, **more}
    kept = {k: v for k, v in given.items() if v not in ("", None)}
    return "?" + urllib.parse.urlencode(kept) if kept else ""


class Pages:
    """Renders a template with what every page needs: the session's CSRF token (a new session
    when the request has none), the script nonce, the version and the curator."""

    def __init__(self, curation: Curation, sessions: Sessions) -> None:
        self.curation, self.sessions = curation, sessions

    def __call__(
        self, request: Request, name: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        session = request.cookies.get(COOKIE) or self.sessions.new()
        nonce = secrets.token_urlsafe(16)
        html = TEMPLATES.get_template(name).render(
            csrf=self.sessions.token(session),
            nonce=nonce,
            version=self.curation.header,
            curator=self.curation.curator,
            **values,
        )
        response = HTMLResponse(html, status_code=status)
        response.set_cookie(COOKIE, session, httponly=True, samesite="strict")
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
            "img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response


def _form(body: bytes) -> dict[str, str]:
    """An urlencoded form body, the last value of each field."""
    parsed = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[-1] for name, values in parsed.items()}


def create_app(
    curation: Curation, max_body: int = MAX_BODY, allowed_hosts: Sequence[str] = LOOPBACK
) -> FastAPI:
    """The review app of one version. Its handlers are ``async`` and so run one at a time on the
    server's event loop: the warehouse connection is never used from two threads at once."""
    from inspire_build.env.server import BodyLimit  # the tool server's 413, reused as is

    app = FastAPI(title="inspire review", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, limit=max_body)
    refuse_foreign_hosts(app, allowed_hosts)
    sessions = Sessions()
    render = Pages(curation, sessions)

    @app.exception_handler(InputError)
    async def refused(request: Request, error: InputError) -> Response:
        status = 404 if isinstance(error, UnknownInstance) else 400
        return render(request, "error.html", status, message=str(error))

    @app.get("/", response_class=HTMLResponse)
    async def version_page(request: Request) -> Response:
        state, finding = _filters(request.query_params)
        rows = curation.rows()
        return render(
            request,
            "version.html",
            rows=[r for r in rows if r.shown(state, finding)],
            progress=curation_module.progress(rows),
            state=state,
            finding=finding,
            states=curation_module.STATES,
            checks=curation_module.CHECKS,
            outcomes=curation_module.OUTCOMES,
            boundary=curation.boundary(),
            applied=curation.applied(),
            query=_query(state, finding),
        )

    @app.get("/i/{instance_id}", response_class=HTMLResponse)
    async def instance_page(request: Request, instance_id: str) -> Response:
        state, finding = _filters(request.query_params)
        page = curation.page(instance_id)
        previous, following = curation.neighbours(instance_id, state, finding)
        done = request.query_params.get("done", "")
        return render(
            request,
            "instance.html",
            **page,
            previous=previous,
            following=following,
            query=_query(state, finding),
            state=state,
            finding=finding,
            roles=curation_module.ROLES,
            done=done if done.isdigit() else "",
        )

    @app.post("/i/{instance_id}/{action}")
    async def decide(request: Request, instance_id: str, action: str) -> Response:
        form = _form(await request.body())
        if not sessions.valid(request.cookies.get(COOKIE), form.get("csrf")):
            why = (
                "refused: this request carries no valid token of this review session (reload "
                "the page and try again)"
            )
            return render(request, "error.html", 403, message=why)
        state, finding = _filters(form)
        review_id = curation.record(instance_id, action, form)
        where = f"/i/{instance_id}" + _query(state, finding, done=review_id)
        return RedirectResponse(where, status_code=303)

    return app
