"""config.py: defaults, the environment, split merging, and secrets kept out of repr()."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pydantic
import pytest

from inspire_build.config import DEFAULT_WAREHOUSE, Settings
from inspire_build.errors import InputError


def test_defaults() -> None:
    settings = Settings()
    assert settings.warehouse == Path("warehouse") / "inspire.duckdb" == DEFAULT_WAREHOUSE
    assert settings.llm_backend == "rules"
    assert settings.source_mode == "auto"
    assert settings.split("train").start == dt.date(2023, 1, 1)
    assert settings.split("train").end == dt.date(2024, 12, 31)
    assert settings.split("eval").start == dt.date(2025, 1, 1)
    assert settings.split("eval").end == dt.date(2026, 12, 31)
    assert settings.split("eval").fields == ("Computer Science",)


def test_environment_is_read_with_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPIRE_WAREHOUSE", "/tmp/elsewhere.duckdb")
    monkeypatch.setenv("INSPIRE_LLM_BACKEND", "openai")
    monkeypatch.setenv("INSPIRE_OPENALEX_RPS", "50")
    monkeypatch.setenv("INSPIRE_S2_URL", "http://127.0.0.1:9999/graph/v1")
    settings = Settings()
    assert str(settings.warehouse) == "/tmp/elsewhere.duckdb"
    assert settings.llm_backend == "openai"
    assert settings.openalex_rps == 50
    assert settings.s2_url == "http://127.0.0.1:9999/graph/v1"


def test_partial_split_settings_merge_over_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPIRE_SPLITS__EVAL__LIMIT", "50")
    monkeypatch.setenv("INSPIRE_SPLITS__EVAL__FIELDS", '["Computer Science", "Mathematics"]')
    monkeypatch.setenv("INSPIRE_SPLITS__DEV__START", "2022-01-01")
    monkeypatch.setenv("INSPIRE_SPLITS__DEV__END", "2022-06-30")
    settings = Settings()
    assert settings.split("eval").limit == 50
    assert settings.split("eval").start == dt.date(2025, 1, 1)  # kept from the default
    assert settings.split("eval").fields == ("Computer Science", "Mathematics")
    assert settings.split("train").limit is None
    assert settings.split("dev").end == dt.date(2022, 6, 30)


def test_unknown_split_names_the_known_ones() -> None:
    with pytest.raises(InputError, match="known splits: train, eval"):
        Settings().split("test")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("INSPIRE_LLM_BACKEND", "anthropic"),
        ("INSPIRE_SOURCE_MODE", "sometimes"),
        ("INSPIRE_OPENALEX_RPS", "500"),  # OpenAlex allows 100/s
        ("INSPIRE_CONCURRENCY", "0"),
        ("INSPIRE_SPLITS__EVAL__END", "2024-01-01"),  # ends before it starts
        ("INSPIRE_LLM_PRICES", '{"m": [-1, -1]}'),  # a negative cost would grow a budget
        ("INSPIRE_LLM_PRICES", '{"m": [0.15, "inf"]}'),
        ("INSPIRE_LLM_MODEL", ""),  # a plan then printed "LLM calls ()"
    ],
)
def test_bad_values_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(pydantic.ValidationError):
        Settings()


def test_secrets_never_appear_in_repr_or_str(monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {
        "INSPIRE_OPENALEX_API_KEY": "oa-secret-123",
        "INSPIRE_S2_API_KEY": "s2-secret-456",
        "INSPIRE_LLM_API_KEY": "sk-secret-789",
        "INSPIRE_CONTACT_EMAIL": "someone@example.org",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    shown = repr(settings) + str(settings) + repr(settings.model_dump())
    for value in secrets.values():
        assert value not in shown
    assert settings.openalex_api_key is not None
    assert settings.openalex_api_key.get_secret_value() == "oa-secret-123"
    assert settings.contact_email is not None
    assert settings.contact_email.get_secret_value() == "someone@example.org"


@pytest.mark.parametrize("key", ["sk-SECR\u00c9T123", "sk-abc\n", " sk-abc", "sk a"])
@pytest.mark.parametrize("name", ["INSPIRE_LLM_API_KEY", "INSPIRE_S2_API_KEY"])
def test_a_key_no_header_can_carry_is_refused_without_its_value(
    monkeypatch: pytest.MonkeyPatch, name: str, key: str
) -> None:
    monkeypatch.setenv(name, key)
    with pytest.raises(pydantic.ValidationError) as caught:
        Settings()
    said = "; ".join(e["msg"] for e in caught.value.errors())
    assert "printable ASCII with no space" in said and key.strip() not in said


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(pydantic.ValidationError):
        settings.llm_model = "other"  # type: ignore[misc]


def test_parameters_override_the_settings_and_are_validated(tmp_path: Path) -> None:
    base = Settings()
    assert base.overridden("eval") is base  # nothing given: the same settings
    built = base.overridden("eval", limit=3, llm_backend="rules", warehouse=str(tmp_path / "w"))
    assert (
        built.split("eval").limit == 3 and built.split("train").limit == base.split("train").limit
    )
    assert built.llm_backend == "rules" and built.warehouse == tmp_path / "w"
    assert base.overridden(llm_concurrency=16).llm_concurrency == 16
    with pytest.raises(pydantic.ValidationError):
        base.overridden(concurrency=-2)
    with pytest.raises(pydantic.ValidationError):
        base.overridden(llm_concurrency=1000)  # over its 256
    with pytest.raises(InputError, match="unknown split 'evl'"):
        base.overridden("evl", limit=3)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("INSPIRE_SPLITS__EVAL__FIELDS", "Computer"),  # a nested setting that takes a list
        ("INSPIRE_LLM_PRICES", "gpt-4o: 2.5"),  # a top-level one that takes an object
    ],
)
def test_a_value_that_is_not_its_settings_json_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    from inspire_build.config import get_settings

    monkeypatch.setenv(name, value)
    monkeypatch.setenv("INSPIRE_SPLITS__EVAL__LIMIT", "5")  # a sibling that is fine
    with pytest.raises(InputError) as refused:
        get_settings()
    message = str(refused.value)
    assert message.startswith(f"invalid configuration: {name}={value!r} is not the JSON")
    assert "INSPIRE_SPLITS__EVAL__LIMIT" not in message and "\n" not in message
