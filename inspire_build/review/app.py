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

Integrity, for several curators at once:

- The curator's name belongs to the browser session, not to the server: a session with no name
  is asked for one first (``/curator``; ``default_curator`` only fills the field). The name is
  checked (``decisions.check_curator``: not empty, at most 80 characters, no control or format
  character), kept in a cookie (percent-encoded, HttpOnly, SameSite=Strict) signed with the
  session under this process's secret, so no other session or process can hand a page a name,
  and it is escaped wherever a page shows it. A POST from a session with no name records
  nothing (403, and the name form).
- Each form carries the standing decision of its kind its page showed (``based_on``); one that
  another decision has replaced since is refused with 409 and the page as it stands now, the
  newer decision named at the top (a rewritten brief's text kept in the editor).
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
from inspire_build.local_server import MAX_BODY_BYTES, BodyLimit, refuse_foreign_hosts
from inspire_build.review import curation as curation_module
from inspire_build.review import decisions
from inspire_build.review.curation import Curation, Stale, UnknownInstance

MAX_BODY = MAX_BODY_BYTES  # 1 MB
COOKIE = "inspire_review_session"
NAME_COOKIE = "inspire_review_curator"  # the session's curator: quoted name "." its HMAC
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

    def _mac(self, session: str, name: str) -> str:
        said = f"curator\0{session}\0{name}".encode()
        return hmac.new(self._secret, said, hashlib.sha256).hexdigest()

    def signed_name(self, session: str, name: str) -> str:
        """The name cookie's value: the name percent-encoded (plain ASCII, no separator a
        header could split on), then its MAC under ``session``."""
        return urllib.parse.quote(name, safe="") + "." + self._mac(session, name)

    @staticmethod
    def claimed(cookie: str | None) -> str:
        """The name a cookie claims, signed or not, when it is a valid name (to offer again
        after a restart); empty otherwise."""
        quoted, _, _ = (cookie or "").rpartition(".")
        try:
            return decisions.check_curator(urllib.parse.unquote(quoted, errors="strict"))
        except (ValueError, UnicodeDecodeError):
            return ""

    def curator(self, request: Request) -> str | None:
        """The request's curator: the name its cookie holds, if this process signed it for the
        request's session; else None (the session must name one first)."""
        session, cookie = request.cookies.get(COOKIE), request.cookies.get(NAME_COOKIE)
        name, mac = self.claimed(cookie), (cookie or "").rpartition(".")[2]
        if not session or not name:
            return None
        return name if hmac.compare_digest(self._mac(session, name), mac) else None


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
    when the request has none), the script nonce, the version and the session's curator."""

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
            curator=self.sessions.curator(request) or "",
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


def _local(target: str) -> str:
    """``target`` when it is a path on this server, else ``/``: a form's ``next`` never sends
    the browser elsewhere."""
    parts = urllib.parse.urlsplit(target)
    foreign = parts.scheme or parts.netloc or target[:1] != "/" or target[1:2] in ("/", "\\")
    unsafe = any(not c.isprintable() or c == "\\" for c in target)
    return "/" if foreign or unsafe else target


def _here(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def _form(body: bytes) -> dict[str, str]:
    """An urlencoded form body, the last value of each field."""
    parsed = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[-1] for name, values in parsed.items()}


class Handlers:
    """The app's answers, one method per route, over one :class:`Curation` (bound by
    :func:`create_app`)."""

    def __init__(self, curation: Curation, sessions: Sessions, offered: str) -> None:
        self.curation, self.sessions, self.offered = curation, sessions, offered
        self.render = Pages(curation, sessions)

    def ask(self, request: Request, follow: str, status: int = 200, message: str = "") -> Response:
        """The name form; once named, the session goes on to ``follow``."""
        now = self.sessions.curator(request)
        claimed = now or self.sessions.claimed(request.cookies.get(NAME_COOKIE))
        return self.render(
            request, "name.html", status, next=_local(follow), offered=claimed or self.offered,
            message=message,
        )  # fmt: skip

    def instance_view(
        self, request: Request, instance_id: str, state: str, finding: str, status: int = 200,
        **more: Any,
    ) -> Response:  # fmt: skip
        page = self.curation.page(instance_id)
        previous, following = self.curation.neighbours(instance_id, state, finding)
        return self.render(
            request,
            "instance.html",
            status,
            **page,
            previous=previous,
            following=following,
            query=_query(state, finding),
            state=state,
            finding=finding,
            roles=curation_module.ROLES,
            **{"done": "", "conflict": None, "typed": None, **more},
        )

    async def refused(self, request: Request, error: Exception) -> Response:
        status = 404 if isinstance(error, UnknownInstance) else 400
        return self.render(request, "error.html", status, message=str(error))

    async def version_page(self, request: Request) -> Response:
        state, finding = _filters(request.query_params)
        if self.sessions.curator(request) is None:
            return self.ask(request, _here(request))
        rows = self.curation.rows()
        return self.render(
            request,
            "version.html",
            rows=[r for r in rows if r.shown(state, finding)],
            progress=curation_module.progress(rows),
            state=state,
            finding=finding,
            states=curation_module.STATES,
            checks=curation_module.CHECKS,
            outcomes=curation_module.OUTCOMES,
            boundary=self.curation.boundary(),
            applied=self.curation.applied(),
            query=_query(state, finding),
        )

    async def instance_page(self, request: Request, instance_id: str) -> Response:
        state, finding = _filters(request.query_params)
        self.curation.instance(instance_id)  # an unknown instance is a 404, named or not
        if self.sessions.curator(request) is None:
            return self.ask(request, _here(request))
        done = request.query_params.get("done", "")
        return self.instance_view(
            request, instance_id, state, finding, done=done if done.isdigit() else ""
        )

    async def name_page(self, request: Request) -> Response:
        return self.ask(request, request.query_params.get("next", "/"))

    async def name_session(self, request: Request) -> Response:
        """Name the session's curator (the form of :meth:`ask`), then go on."""
        form = _form(await request.body())
        session = request.cookies.get(COOKIE)
        if session is None or not self.sessions.valid(session, form.get("csrf")):
            return self.render(request, "error.html", 403, message=_NO_TOKEN)
        follow = _local(form.get("next", "/"))
        try:
            name = decisions.check_curator(form.get("curator", ""))
        except ValueError as error:
            return self.ask(request, follow, 400, message=str(error))
        response = RedirectResponse(follow, status_code=303)
        signed = self.sessions.signed_name(session, name)
        response.set_cookie(NAME_COOKIE, signed, httponly=True, samesite="strict")
        return response

    async def decide(self, request: Request, instance_id: str, action: str) -> Response:
        """Record one decision of the session's curator; a stale form gets 409 and the page."""
        form = _form(await request.body())
        if not self.sessions.valid(request.cookies.get(COOKIE), form.get("csrf")):
            return self.render(request, "error.html", 403, message=_NO_TOKEN)
        state, finding = _filters(form)
        curator = self.sessions.curator(request)
        if curator is None:
            why = "who is reviewing? Give your name, then take the decision again"
            return self.ask(request, f"/i/{instance_id}" + _query(state, finding), 403, why)
        try:
            review_id = self.curation.record(instance_id, action, form, curator)
        except Stale as stale:
            typed = form.get("text") if action == decisions.Action.BRIEF.value else None
            conflict = {"message": str(stale), "review": stale.newer}
            return self.instance_view(
                request, instance_id, state, finding, 409, conflict=conflict, typed=typed
            )
        where = f"/i/{instance_id}" + _query(state, finding, done=review_id)
        return RedirectResponse(where, status_code=303)


_NO_TOKEN = (
    "refused: this request carries no valid token of this review session (reload the page and "
    "try again)"
)


def create_app(
    curation: Curation,
    max_body: int = MAX_BODY,
    allowed_hosts: Sequence[str] = LOOPBACK,
    default_curator: str = "",
) -> FastAPI:
    """The review app of one version. Its handlers are ``async`` and so run one at a time on the
    server's event loop: the warehouse connection is never used from two threads at once, and
    a decision's check against the standing one and its write are never interleaved.
    ``default_curator`` is only offered on the name form of each new session."""
    try:
        offered = decisions.check_curator(default_curator) if default_curator.strip() else ""
    except ValueError as error:
        raise InputError(f"the default curator: {error}") from None
    app = FastAPI(title="inspire review", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, limit=max_body)
    refuse_foreign_hosts(app, allowed_hosts)
    answer = Handlers(curation, Sessions(), offered)
    app.add_exception_handler(InputError, answer.refused)
    app.get("/", response_class=HTMLResponse)(answer.version_page)
    app.get("/i/{instance_id}", response_class=HTMLResponse)(answer.instance_page)
    app.get("/curator", response_class=HTMLResponse)(answer.name_page)
    app.post("/curator")(answer.name_session)
    app.post("/i/{instance_id}/{action}")(answer.decide)
    return app
