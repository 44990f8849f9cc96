"""The Redactor: every known secret replaced, in text, bytes and parsed answers."""

from __future__ import annotations

from inspire_build.redaction import REDACTED, Redactor


def test_every_string_of_a_parsed_answer_is_redacted_and_the_rest_kept() -> None:
    redactor = Redactor(["sk-abc", "", "me@example.org"])
    answer = {
        "content": "key sk-abc",
        "tool_calls": [{"arguments": '{"q": "sk-abc me@example.org"}', "index": 0}],
        "refusal": None,
    }
    assert redactor.value(answer) == {
        "content": f"key {REDACTED}",
        "tool_calls": [{"arguments": f'{{"q": "{REDACTED} {REDACTED}"}}', "index": 0}],
        "refusal": None,
    }
    assert redactor.text("no secret") == "no secret"
    assert redactor.data(b"x sk-abc") == f"x {REDACTED}".encode()


def test_a_secret_is_redacted_as_a_url_carries_it_too() -> None:
    """An endpoint that echoes its query string echoes the contact email percent-encoded."""
    redactor = Redactor(["op+ops@secret-mail.org"])
    for echoed in ("op+ops@secret-mail.org", "op%2Bops%40secret-mail.org"):
        assert redactor.text(f"mailto={echoed}&page=2") == "mailto=REDACTED&page=2"
    assert redactor.data(b"?mailto=op%2Bops%40secret-mail.org") == b"?mailto=REDACTED"
