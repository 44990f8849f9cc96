"""Secret values never leave the process: every message, log line and stored body that may
echo one (a third-party error that quotes the request, a URL with a key) passes a Redactor."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

from inspire_build.config import Settings

REDACTED = "REDACTED"


class Redactor:
    """Replaces known secret values (keys, the contact email) wherever text leaves the process."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # as sent and as a URL carries it: an endpoint that echoes its query string echoes
        # the contact email as op%40example.org
        spelled = {form for s in secrets if s for form in (s, quote(s, safe=""), quote_plus(s))}
        self._secrets = sorted(spelled, key=len, reverse=True)

    @classmethod
    def for_settings(cls, settings: Settings) -> Redactor:
        """A redactor for every secret the settings hold: the API keys, the contact email and
        the instance key."""
        held = (
            settings.openalex_api_key,
            settings.s2_api_key,
            settings.llm_api_key,
            settings.contact_email,
            settings.instance_key,
        )
        return cls(s.get_secret_value() for s in held if s is not None)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, REDACTED)
        return value

    def value(self, value: Any) -> Any:
        """``value`` with every string in it, in lists and dicts too, redacted: an endpoint's
        parsed answer, which a proxy may have made to echo the key."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value

    def data(self, value: bytes) -> bytes:
        for secret in self._secrets:
            value = value.replace(secret.encode(), REDACTED.encode())
        return value
