"""Curator review in a real browser: Debian's Chromium, headless, driven by Selenium through
chromedriver, on a version built against the sandbox.

A curator names herself on the first page, opens the version, filters by an audit finding,
opens an instance, regrades an antecedent, marks the brief leaking, rewrites another brief
(first too short and naming its target's title: kept as a draft, the rules it breaks shown; then
one that keeps the rules, re-audited at once), moves with the keys and rejects an instance; a
second session, named otherwise, accepts one; the ``reviews`` rows say exactly that; ``inspire build
--apply-reviews`` then writes a new version with those decisions, and ``inspire audit`` fails
the instance a curator marked. A ``<script>`` planted in a brief and an abstract shows as text.

With ``INSPIRE_SCREENSHOTS=docs`` the run writes docs/review-version.png and
docs/review-instance.png (docs/review.md's screenshots); without it, they go to a temporary folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from inspire_build import local_server, pipeline, warehouse
from inspire_build.config import Settings
from inspire_build.review.app import create_app
from inspire_build.review.curation import Curation, brief_rules
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox import world
from inspire_build.sources import make_client
from tests.conftest import PROJECT_ROOT, run_inspire

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
# Read at import: each test's environment is cleared of INSPIRE_* variables.
SCREENSHOTS = os.environ.get("INSPIRE_SCREENSHOTS")
PLANTED = "<script>window.__planted = 'ran'</script>"
# The sandbox stops once the version is built, so the re-audits of a rewritten brief search
# sources that no longer answer: every retry is still made, at once rather than after the
# default backoff (0.5 s doubling, about 30 s a request, which made most of this test's time).
QUICK_RETRIES = {"http_backoff_s": 0.001, "http_backoff_cap_s": 0.01}


@dataclasses.dataclass
class Served:
    """A built version under review: its warehouse, the review server and what was planted."""

    path: Path
    con: duckdb.DuckDBPyConnection
    settings: Settings
    version: str
    base: str
    instances: list[str]  # by instance ID, as the version page lists them
    planted: str  # the instance whose brief and abstract hold a <script>
    partial: str  # the instance whose mechanism finding is partial
    stack: ExitStack

    def stop(self) -> None:
        """Stop the server and close the warehouse, so another process may write it."""
        self.stack.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(
            "the browser tests need Debian's chromium and chromium-driver (/usr/bin/chromium, "
            "/usr/bin/chromedriver); `make setup` installs them with apt-get where it can"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the dev extra)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--disable-gpu"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    path = tmp_path_factory.mktemp("review") / "w.duckdb"
    generated = world.generate(world.WorldConfig(seed=5, papers=800))
    with sandbox.running(generated, sandbox.SandboxConfig(time_scale=1000)) as base:
        settings = sandbox.settings_for(base, warehouse=path, llm_backend="rules", **QUICK_RETRIES)
        with warehouse.open_warehouse(path) as con:
            version = pipeline.build_split(con, make_client(settings, con), settings, "eval", 12)
    stack = ExitStack()
    con = stack.enter_context(warehouse.open_warehouse(path))
    ids = [i for (i,) in con.execute(
        "SELECT instance_id FROM instances WHERE version_id = ? ORDER BY 1", [version["version_id"]]
    ).fetchall()]  # fmt: skip
    assert len(ids) >= 5, version["counts"]
    planted, partial = ids[0], ids[1]
    # Untrusted text: a <script> in a brief and in its target's abstract.
    con.execute(
        "UPDATE instances SET brief = ? || brief WHERE instance_id = ?", [PLANTED + " ", planted]
    )
    con.execute(
        "UPDATE targets SET abstract = ? || abstract WHERE paper_id = "
        "(SELECT target_id FROM instances WHERE instance_id = ?)",
        [PLANTED + " ", planted],
    )
    # A finding to filter by: the build's rules backend passed every brief outright.
    con.execute(
        "UPDATE version_findings SET level = 'partial' WHERE instance_id = ? "
        "AND \"check\" = 'mechanism'",
        [partial],
    )
    review = Curation(con, settings, version["version_id"])
    url = stack.enter_context(local_server.in_thread(create_app(review), 0, "the review server"))
    yield Served(path, con, settings, version["version_id"], url, ids, planted, partial, stack)
    stack.close()


def _shots(tmp_path: Path) -> Path:
    folder = PROJECT_ROOT / SCREENSHOTS if SCREENSHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _screenshot(driver: Any, path: Path, height: int) -> None:
    driver.set_window_size(1280, height)
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 1000)
    assert path.stat().st_size > 10_000


def _submit(driver: Any, form: Any) -> None:
    """Submit ``form`` with its button, and wait for the page it leads to."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    button = form.find_element("css selector", "button[type=submit]")
    button.click()
    WebDriverWait(driver, 10).until(lambda _: _gone(button, expected_conditions))


def _gone(element: Any, expected_conditions: Any) -> bool:
    """Whether ``element`` left the page. Chromium may answer a node of the page being left
    with "does not belong to the document" rather than a stale element: gone as well."""
    from selenium.common.exceptions import WebDriverException

    try:
        return bool(expected_conditions.staleness_of(element)(None))
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            return True
        raise


def _name(driver: Any, base: str, name: str) -> None:
    """Name this browser session's curator on the name form."""
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/curator")
    box = driver.find_element(By.ID, "curator-name")
    box.clear()
    box.send_keys(name)
    _submit(driver, driver.find_element(By.ID, "name-form"))


GOOD = (
    "Systems that must answer many kinds of request under changing conditions face a familiar "
    "tension between speed and care. A quick answer can be wrong when the situation shifts, while "
    "a careful one can arrive too late to matter. Existing approaches tend to fix one setting "
    "in advance and hope that the conditions they were tuned for will hold, which they rarely "
    "do for long. When the inputs drift, quality drops quietly and nobody notices until the "
    "damage is done. The open question is how such a system could notice for itself that its "
    "assumptions no longer hold, and adjust its behaviour without a person stepping in, while "
    "never doing worse on the cases it already handled well. A solution should cope with sudden "
    "as well as gradual change, explain what it changed and why, and stay cheap enough to run "
    "all the time on ordinary hardware."
)


def _at(driver: Any, base: str, instance_id: str) -> None:
    """Wait until the browser shows ``instance_id``'s page (a key's navigation may lag)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(expected_conditions.url_contains(f"{base}/i/{instance_id}"))


def test_a_planted_script_shows_as_text_and_never_runs(browser: Any, served: Served) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{served.base}/i/{served.planted}")
    assert browser.find_element(By.ID, "name-form")  # a new session names its curator first
    browser.find_element(By.ID, "curator-name").send_keys("ada")
    _submit(browser, browser.find_element(By.ID, "name-form"))
    _at(browser, served.base, served.planted)  # and goes on where it was going
    brief = browser.find_element(By.ID, "brief")
    assert brief.text.startswith(PLANTED)  # shown as the characters it is
    assert browser.execute_script("return window.__planted") is None  # and never run
    abstract = browser.find_element(By.ID, "target-abstract")
    assert not abstract.is_displayed()  # the private panel is closed by default
    browser.find_element(By.CSS_SELECTOR, "#private summary").click()
    assert abstract.is_displayed() and abstract.text.startswith(PLANTED)
    assert browser.execute_script("return window.__planted") is None
    cookie = {c["name"]: c["value"] for c in browser.get_cookies()}
    refused = httpx.post(f"{served.base}/i/{served.planted}/reject", data={"reason": "x"},
                         cookies=cookie)  # fmt: skip
    assert refused.status_code == 403  # the session's cookie, but not its token
    big = httpx.post(f"{served.base}/i/{served.planted}/brief", cookies=cookie,
                     content=b"text=" + b"x" * 1_000_001)  # fmt: skip
    assert big.status_code == 413
    assert served.con.execute("SELECT count(*) FROM reviews").fetchone() == (0,)


def test_a_curator_session_then_apply_reviews_and_audit(
    browser: Any, served: Served, tmp_path: Path, prefect_api: str
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    shots = _shots(tmp_path)
    _name(browser, served.base, "ada")
    browser.get(served.base + "/")
    assert served.version in browser.title
    assert browser.find_element(By.ID, "curator").text == "ada"
    rows = browser.find_elements(By.CSS_SELECTOR, "#instances tbody tr[data-instance]")
    assert [r.get_attribute("data-instance") for r in rows] == served.instances
    # filter by an audit finding
    Select(browser.find_element(By.ID, "filter-finding")).select_by_value("mechanism:partial")
    _submit(browser, browser.find_element(By.ID, "filters"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#instances tbody tr[data-instance]")
    assert [r.get_attribute("data-instance") for r in rows] == [served.partial]
    # open the instance; regrade a T1 antecedent to T3
    rows[0].find_element(By.TAG_NAME, "a").click()
    _at(browser, served.base, served.partial)
    t1 = browser.find_element(By.CSS_SELECTOR, "#tier-1 .ref")
    paper = t1.get_attribute("data-paper")
    form = t1.find_element(By.CSS_SELECTOR, "form.regrade")
    Select(form.find_element(By.NAME, "tier")).select_by_value("3")
    form.find_element(By.NAME, "note").send_keys("the method rests on it")
    _submit(browser, form)
    assert browser.find_element(By.ID, "done").text == "Recorded review #1."
    assert browser.find_element(By.CSS_SELECTOR, f'#tier-1 .ref[data-paper="{paper}"] .corrected')
    # mark the brief leaking
    browser.find_element(By.ID, "leak-note-input").send_keys("the mechanism is spelled out")
    _submit(browser, browser.find_element(By.ID, "leak-form"))
    assert browser.find_element(By.ID, "leak-badge").text == "marked leaking"
    # rewrite a brief, too short and naming its title: kept as a draft, its broken rules shown
    browser.get(f"{served.base}/i/{served.instances[3]}")
    title, target = served.con.execute(
        "SELECT t.title, t.paper_id FROM instances i JOIN targets t ON t.paper_id = i.target_id "
        "WHERE i.instance_id = ?",
        [served.instances[3]],
    ).fetchone() or ("", "")
    assert title
    draft = f"How can we do better than {title} on this problem, for every kind of input?"
    box = browser.find_element(By.ID, "brief-text")
    box.clear()
    box.send_keys(draft)
    _submit(browser, browser.find_element(By.ID, "brief-form"))
    rules = browser.find_element(By.ID, "draft-rules").text
    assert rules.startswith("length: ") and "; lexical: contains: " in rules
    assert browser.find_element(By.ID, "done").text.startswith("Kept review #3 as a draft")
    assert browser.find_elements(By.CSS_SELECTOR, "#edited-brief mark.term")
    _screenshot(browser, shots / "review-instance.png", 2000)
    # then one that keeps the rules: re-audited at once, its findings shown
    assert brief_rules(served.con, target, GOOD) == []
    edited = GOOD
    box = browser.find_element(By.ID, "brief-text")
    box.clear()
    box.send_keys(edited)
    _submit(browser, browser.find_element(By.ID, "brief-form"))
    lexical = browser.find_element(By.CSS_SELECTOR, '#edited-findings tr[data-check="lexical"]')
    assert "passed" in lexical.text
    # keys: k to the previous instance, j back, then r and a reason to reject it
    browser.find_element(By.TAG_NAME, "body").send_keys("k")
    _at(browser, served.base, served.instances[2])
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    _at(browser, served.base, served.instances[3])
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    _at(browser, served.base, served.instances[4])
    browser.find_element(By.TAG_NAME, "body").send_keys("r")
    reason = browser.switch_to.active_element
    assert reason.get_attribute("id") == "reject-reason"
    old = browser.find_element(By.ID, "review-state")
    reason.send_keys("not a computer-science problem", Keys.ENTER)
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(expected_conditions.staleness_of(old))
    assert browser.find_element(By.ID, "review-state").text == "rejected"
    # another curator, in her own session: a to accept the next one
    browser.delete_all_cookies()
    _name(browser, served.base, "bo")
    browser.get(f"{served.base}/i/{served.instances[4]}")
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    _at(browser, served.base, served.instances[5])
    old = browser.find_element(By.ID, "review-state")
    browser.find_element(By.TAG_NAME, "body").send_keys("a")
    WebDriverWait(browser, 10).until(expected_conditions.staleness_of(old))
    assert browser.find_element(By.ID, "review-state").text == "accepted"
    assert browser.find_element(By.ID, "curator").text == "bo"
    browser.get(served.base + "/")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("j")
    body.send_keys("j")  # the list's second row
    body.send_keys("o")
    _at(browser, served.base, served.instances[1])
    browser.get(served.base + "/")
    assert browser.find_element(By.ID, "count-reviewed").text == f"4 / {len(served.instances)}"
    assert browser.find_element(By.ID, "count-rejected").text == "1"
    assert browser.find_element(By.ID, "count-corrected").text == "2"
    _screenshot(browser, shots / "review-version.png", 1000)

    # the reviews rows
    rows = served.con.execute(
        'SELECT instance_id, paper_id, action, curator, "before", "after" FROM reviews '
        "ORDER BY review_id"
    ).fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (served.partial, paper, "grade", "ada"),
        (served.partial, None, "leak", "ada"),
        (served.instances[3], None, "brief", "ada"),  # the draft
        (served.instances[3], None, "brief", "ada"),
        (served.instances[4], None, "reject", "ada"),
        (served.instances[5], None, "accept", "bo"),
    ]
    assert json.loads(rows[0][4])["tier"] == 1
    assert json.loads(rows[0][5]) == {"tier": 3, "role": json.loads(rows[0][4])["role"],
                                      "note": "the method rests on it"}  # fmt: skip
    assert json.loads(rows[2][5])["text"] == draft and json.loads(rows[3][5])["text"] == edited
    assert json.loads(rows[4][5]) == {"reason": "not a computer-science problem"}
    targets = dict(served.con.execute(
        "SELECT instance_id, target_id FROM instances WHERE version_id = ?", [served.version]
    ).fetchall())  # fmt: skip
    served.stop()

    # decisions make a version
    env = {
        **os.environ,
        "INSPIRE_WAREHOUSE": str(served.path),
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_API_URL": prefect_api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "INSPIRE_LLM_BACKEND": "rules",
        # a small world: the audit's verdict rests on the checks, not the window attack
        "INSPIRE_WINDOW_ATTACK_MAX_TOP1": "1.0",
        **{f"INSPIRE_{name.upper()}": str(value) for name, value in QUICK_RETRIES.items()},
    }
    built = run_inspire("build", "--split", "eval", "--apply-reviews", env=env, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    made = built.stdout.split(":")[0]
    assert made.startswith("eval-") and made != served.version
    con = duckdb.connect(str(served.path), read_only=True)
    try:
        kept = _check_reviewed_version(con, served, made, targets, paper, edited)
    finally:
        con.close()
    # the audit fails the instance a curator marked, and the rewritten brief (not searched)
    audited = run_inspire("audit", "eval", env=env, timeout=300)
    report = audited.stdout + audited.stderr
    assert audited.returncode == 1, report[-3000:]
    marked = kept[targets[served.partial]]
    assert (
        f"FAILED {marked}: curator: marked leaking by ada: the mechanism is spelled out" in report
    )
    rewritten = [line for line in report.splitlines()
                 if f"FAILED {kept[targets[served.instances[3]]]}: " in line]  # fmt: skip
    assert rewritten and "lexical" not in rewritten[0]  # the draft never reached a version
    # The curator's rewritten brief was never searched while the sandbox served, and nothing
    # answers a search now (the sources are unset): its search check is reported as not run,
    # which is no pass.
    assert "search: not run: the search for works first public from" in report
    assert "audit FAILED for 3 instance(s)" in report


def _check_reviewed_version(
    con: duckdb.DuckDBPyConnection,
    served: Served,
    made: str,
    targets: dict[str, str],
    paper: str,
    edited: str,
) -> dict[str, str]:
    """Check the version ``--apply-reviews`` made; returns its instance IDs by target."""
    old = len(served.instances)
    count = con.execute("SELECT count(*) FROM instances WHERE version_id = ?", [made]).fetchone()
    assert count == (old - 1,)  # one rejected
    kept = dict(con.execute(
        "SELECT target_id, instance_id FROM instances WHERE version_id = ?", [made]
    ).fetchall())  # fmt: skip
    assert targets[served.instances[4]] not in kept
    tier = con.execute(
        "SELECT tier FROM qrels WHERE version_id = ? AND instance_id = ? AND paper_id = ?",
        [made, kept[targets[served.partial]], paper],
    ).fetchone()
    assert tier == (3,)
    brief = con.execute(
        "SELECT brief FROM instances WHERE version_id = ? AND target_id = ?",
        [made, targets[served.instances[3]]],
    ).fetchone()
    assert brief == (edited,)
    old_tier = con.execute(
        "SELECT tier FROM qrels WHERE version_id = ? AND instance_id = ? AND paper_id = ?",
        [served.version, served.partial, paper],
    ).fetchone()
    assert old_tier == (1,)  # the old version stays as it was
    figures = con.execute(
        "SELECT reviews->'figures' FROM split_versions WHERE version_id = ?", [made]
    ).fetchone()
    assert figures is not None
    assert json.loads(figures[0]) == {
        "reviewed": 4, "accepted": 1, "rejected": 1, "corrected": 2, "tier_changes": 1,
        "role_changes": 0, "briefs_edited": 1, "marked_leaking": 1, "emptied": 0,
    }  # fmt: skip
    return {str(t): str(i) for t, i in kept.items()}
