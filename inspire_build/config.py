"""One Settings object. The environment is read here, once, and nowhere else.

Every variable has the prefix ``INSPIRE_``; nested split settings use ``__``
(``INSPIRE_SPLITS__EVAL__LIMIT=50``) and are merged over the defaults below.
API keys and the contact email are ``SecretStr``, so printing, dumping or
logging a Settings object never shows a secret.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from inspire_build.errors import InputError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_WAREHOUSE = Path("warehouse") / "inspire.duckdb"  # relative to where a command runs

LlmBackend = Literal["openai", "rules"]
SourceMode = Literal["live", "replay", "auto"]
# USD per million tokens: a negative or infinite price would make every cost and budget wrong.
Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class SplitConfig(BaseModel):
    """Which targets a split draws from: a window on their first public date, fields, sizes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: dt.date  # the first day of the window on the targets' first public date
    end: dt.date  # its last day
    fields: tuple[str, ...] = ("Computer Science",)  # OpenAlex fields a target is in
    min_references: int = Field(default=10, ge=0)  # a candidate lists at least this many
    limit: int | None = Field(default=None, gt=0)  # the most candidates selected (None: all)
    # Build until this many instances are accepted, walking the candidates in their seeded,
    # month-stratified order (instances.Walk); None: every selected candidate.
    instances: int | None = Field(default=None, gt=0)
    sample_seed: int = 0  # with a limit: the seed of the month-stratified sample of targets

    @model_validator(mode="after")
    def _window_is_ordered(self) -> SplitConfig:
        if self.end < self.start:
            raise ValueError(f"split window ends ({self.end}) before it starts ({self.start})")
        return self


DEFAULT_SPLITS: dict[str, dict[str, Any]] = {
    "train": {"start": "2023-01-01", "end": "2024-12-31"},
    "eval": {"start": "2025-01-01", "end": "2026-12-31"},
}


# The rules backend's model name: its answers change only with this version.
RULES_MODEL = "rules-v1"


# Targets whose LLM steps are in progress per LLM slot (the openai backend): a target has one
# or two calls ready at a time, so with only as many targets as slots, slots sit idle while
# targets wait between calls. HTTP's pool makes room for each one's search check.
LLM_TARGETS_PER_SLOT = 4


class Settings(BaseSettings):
    """Everything configurable. Field ``x`` is read from ``INSPIRE_X``."""

    model_config = SettingsConfigDict(
        env_prefix="INSPIRE_",
        env_nested_delimiter="__",
        frozen=True,
        extra="ignore",
    )

    # Storage
    warehouse: Path = DEFAULT_WAREHOUSE  # the DuckDB file every command reads and writes

    # Credentials and politeness. Never logged, never stored (see http.py's redaction).
    openalex_api_key: SecretStr | None = None  # OpenAlex's (required since 2026-02)
    s2_api_key: SecretStr | None = None  # Semantic Scholar's: a higher rate than anonymous
    llm_api_key: SecretStr | None = None  # the OpenAI-compatible endpoint's
    contact_email: SecretStr | None = None  # sent as OpenAlex's mailto (its polite pool)

    # LLM
    llm_backend: LlmBackend = "rules"  # openai: an endpoint; rules: offline, deterministic
    llm_base_url: str | None = None  # an OpenAI-compatible endpoint (unset: OpenAI's)
    llm_model: str = Field(default="gpt-4o-mini", min_length=1)  # asked for every step
    llm_timeout_s: float = Field(default=120.0, gt=0)  # one call's, before the client retries
    llm_max_retries: int = Field(default=3, ge=0, le=10)  # the client's retries of a failed call
    # Sampling and the system prompt, sent only when set; each is in the call key and the
    # version hash, so a change asks the model again and makes a new version.
    llm_temperature: float | None = Field(default=None, ge=0, le=2)
    llm_seed: int | None = None  # the sampling seed the endpoint is asked for
    llm_system_prompt: str | None = None  # a system message before every prompt
    # json_schema: strict structured outputs; json_object: a JSON object, the schema stated in
    # the prompt and checked here, for servers without json_schema (docs/operations.md).
    llm_response_format: Literal["json_schema", "json_object"] = "json_schema"
    # The most LLM calls in flight over all targets (LLM_TARGETS_PER_SLOT per slot are in
    # progress at once), a target's grading parts included (the openai backend; the rules
    # backend calls nothing and runs one target at a time).
    llm_concurrency: int = Field(default=8, ge=1, le=256)
    # The provider's limits, requests and tokens per minute (None: none); calls are paced
    # under them, and a 429 waits as the server asks, up to llm_rate_wait_max_s per call.
    llm_rpm: int | None = Field(default=None, ge=1)
    llm_tpm: int | None = Field(default=None, ge=1)  # tokens per minute: see INSPIRE_LLM_RPM
    llm_rate_wait_max_s: float = Field(default=600.0, ge=0)
    # USD per million tokens (input, output), for the cost estimate in llm_calls.
    llm_prices: dict[str, tuple[Price, Price]] = Field(
        default_factory=lambda: {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00)}
    )
    # A Batch API answer costs this share of llm_prices (OpenAI's batch discount is 50%).
    llm_batch_price_factor: float = Field(default=0.5, ge=0, le=1)
    # The most a build may spend on LLM calls, in USD (None: no cap): a call that would pass
    # it is not made; the build stops with what it did kept in the call log (exit 1).
    llm_budget_usd: float | None = Field(default=None, ge=0)
    brief_attempts: int = Field(default=3, ge=1, le=10)  # drafts a target's brief may take
    # A long bibliography is graded in parts, each prompt (rubric, target, its references) at
    # most this many tokens by grading.estimate_tokens.
    grade_part_tokens: int = Field(default=6000, ge=1000)
    # Each reference is graded this many times, each reading in an order of its own; where the
    # readings split, one more reading decides by majority (grading.grade_references).
    grade_readings: int = Field(default=2, ge=1, le=5)
    # What the grade prompt shows of each reference: "full" (title, abstract, contexts, intents,
    # influence) or "none" (its index only): the validity bench's proof that a grader reads
    # the evidence, since with none it can only guess (grading.withheld).
    grade_evidence: Literal["full", "none"] = "full"
    audit_retrieval_k: int = Field(default=10, ge=1)  # the target in bm25's top k leaks
    # The target in the top k leaks only when its bm25 score stands this far above the first
    # paper outside the top k (see audit.retrieval_verdict).
    audit_retrieval_margin: float = Field(default=0.1, ge=0)
    # Where the retrieval check ranks the target: among every paper of the warehouse ("corpus"),
    # or, as the audit's bm25 attacker does, among the papers its published cutoff's window
    # holds ("window"; the top k, but at most audit_search_share of them, fails).
    audit_retrieval_scope: Literal["corpus", "window"] = "corpus"
    # The search identity check fails a brief whose target OpenAlex ranks in this top k among
    # the works its published cutoff allows (one search per brief, a page of k + 1).
    audit_search_k: int = Field(default=10, ge=1, le=99)
    # ... but at most this share of the works it ranked (at least the first place): in a sparse
    # corpus (the sandbox's) a top 10 is no evidence; in OpenAlex's, k governs.
    audit_search_share: float = Field(default=0.02, gt=0, le=1)

    # The information boundary (SPEC §9). The instance key keys instance IDs and cutoff offsets;
    # unset, each warehouse generates its own once. Set it (64 hex digits, from
    # `inspire key export`) to rebuild byte-identical exports in another warehouse.
    instance_key: SecretStr | None = None  # 64 hex digits; unset: the warehouse's own
    # A published cutoff is moved earlier by a secret offset of 0..this many days; 0 gives the
    # paper's exact cutoff (the target's first public date minus three months).
    cutoff_jitter_days: int = Field(default=30, ge=0, le=366)
    # The audit fails when its strongest attacker ranks more than this share of targets first
    # (boundary.judge), or a window's anonymity set (the papers in it the card's selection
    # criteria would select) holds fewer than min_anonymity.
    window_attack_max_top1: float = Field(default=0.05, ge=0, le=1)
    min_anonymity: int = Field(default=20, ge=1)
    # Leave out, before any LLM call, a target whose published cutoff's window holds fewer than
    # min_anonymity candidates (outcome thin_window), rather than publish what the audit would
    # fail. At arXiv's density no window is that thin; in a small sandbox world most are.
    exclude_thin_windows: bool = False

    # Evaluation: the largest run, trajectories or qrels file read (MiB); a larger one is an error.
    eval_max_input_mb: int = Field(default=256, ge=1)

    # Sources: where requests go, and whether the raw response store may be bypassed.
    source_mode: SourceMode = "auto"  # auto: the store first; live: ask; replay: the store only
    openalex_url: str = "https://api.openalex.org"  # a sandbox's for offline builds
    s2_url: str = "https://api.semanticscholar.org/graph/v1"  # Semantic Scholar's Graph API
    arxiv_url: str = "https://export.arxiv.org/api/query"  # arXiv's query API

    # Rate limits (per host) and concurrency
    openalex_rps: float = Field(default=10.0, gt=0, le=100)  # OpenAlex allows 100 per second
    s2_rps: float = Field(default=1.0, gt=0)  # S2's rate for a key is 1 per second
    arxiv_interval_s: float = Field(default=3.0, ge=0)  # arXiv asks 3 s between requests
    http_timeout_s: float = Field(default=30.0, gt=0)  # one request's
    http_max_retries: int = Field(default=6, ge=0, le=20)  # on 429, 5xx, timeouts, bad bodies
    http_backoff_s: float = Field(default=0.5, ge=0)  # the first retry's wait; then doubled
    http_backoff_cap_s: float = Field(default=30.0, ge=0)  # the longest wait between retries
    http_max_wait_s: float = Field(default=120.0, ge=0)  # a longer Retry-After gives up
    concurrency: int = Field(default=4, ge=1, le=64)  # HTTP requests in flight, all hosts
    # Targets whose lineage is resolved together: a chunk's references are fetched in shared
    # batch requests, and its targets' LLM steps start while the next chunk's lineage is
    # fetched (with the openai backend, chunks grow up to it: pipeline.lineage_chunks). The
    # split does not depend on the size (tests/integration/test_chunking.py).
    chunk_size: int = Field(default=20, ge=1)
    # Read records, reference lists and candidates from the bulk tables (`inspire snapshot
    # ingest`) before asking the APIs, when they hold any files.
    bulk: bool = True
    # Where lineage's chunks run: in this process ("local"), or on Dask workers ("dask"; the
    # `dask` extra): a cluster at `dask_address`, else a LocalCluster of `dask_workers`
    # processes on these ports (the scheduler's and dashboard's are Dask's defaults; worker i
    # takes three from `dask_worker_port` + 3i: its nanny, itself, its HTTP server).
    runner: Literal["local", "dask"] = "local"
    dask_address: str | None = None
    dask_workers: int = Field(default=2, ge=1, le=64)
    dask_scheduler_port: int = Field(default=8786, ge=1, le=65535)  # see INSPIRE_RUNNER
    dask_dashboard_port: int = Field(default=8787, ge=1, le=65535)  # see INSPIRE_RUNNER
    dask_worker_port: int = Field(default=8788, ge=1, le=65535)

    # Curator review: the name `inspire review serve` offers each new browser session (--curator
    # wins); each decision records the name its own session gave.
    curator: str | None = None

    # Splits
    splits: dict[str, SplitConfig] = Field(default_factory=dict)  # each split's window and size

    @model_validator(mode="before")
    @classmethod
    def _merge_split_defaults(cls, data: Any) -> Any:
        """Merge partial split settings (e.g. only ``limit``) over the default windows."""
        if not isinstance(data, dict):
            return data
        given = data.get("splits") or {}
        if not isinstance(given, dict):
            return data
        merged = {name: dict(values) for name, values in DEFAULT_SPLITS.items()}
        for name, values in given.items():
            override = values.model_dump() if isinstance(values, BaseModel) else dict(values)
            merged[name] = {**merged.get(name, {}), **override}
        return {**data, "splits": merged}

    @field_validator("openalex_api_key", "s2_api_key", "llm_api_key")
    @classmethod
    def _key_fits_a_header(cls, key: SecretStr | None) -> SecretStr | None:
        """A key travels in an HTTP header or query, which carry printable ASCII only: a
        non-ASCII letter failed deep in httpx, and a space or newline (a key pasted with its
        line end) as a connection error that hid the cause. The message never holds the value."""
        if key is not None and not re.fullmatch(r"[!-~]*", key.get_secret_value()):
            raise ValueError(
                "an API key is printable ASCII with no space, tab or line end; check the "
                "variable for a pasted line end or a look-alike letter"
            )
        return key

    @field_validator("instance_key")
    @classmethod
    def _key_is_hex(cls, key: SecretStr | None) -> SecretStr | None:
        """Checked with the rest of the settings, before a command creates or starts anything
        (boundary.parse_key reads it); the message never holds the value."""
        if key is not None and not re.fullmatch(
            r"[0-9a-f]{64}", key.get_secret_value().strip().lower()
        ):
            raise ValueError("an instance key is 64 hex digits (as `inspire key export` prints it)")
        return key

    @property
    def model_name(self) -> str:
        """The model a build's calls are logged, priced and hashed under: the rules backend's
        version, else ``llm_model``."""
        return RULES_MODEL if self.llm_backend == "rules" else self.llm_model

    def split(self, name: str) -> SplitConfig:
        """The named split's config, or a clear error listing the known names (in their
        configured order: the defaults, then any added by the environment)."""
        try:
            return self.splits[name]
        except KeyError:
            known = ", ".join(self.splits)
            raise InputError(f"unknown split {name!r}; known splits: {known}") from None

    def overridden(
        self,
        split: str | None = None,
        *,
        limit: int | None = None,
        instances: int | None = None,
        llm_backend: str | None = None,
        source_mode: str | None = None,
        concurrency: int | None = None,
        llm_concurrency: int | None = None,
        warehouse: str | Path | None = None,
        chunk_size: int | None = None,
        runner: str | None = None,
        dask_address: str | None = None,
        llm_budget_usd: float | None = None,
    ) -> Settings:
        """These settings with a flow's or a command's parameters over them (None: unchanged);
        ``limit`` and ``instances`` apply to ``split``. Validated as the environment's values
        are."""
        update: dict[str, Any] = {
            key: value
            for key, value in (
                ("warehouse", warehouse),
                ("llm_backend", llm_backend),
                ("source_mode", source_mode),
                ("concurrency", concurrency),
                ("llm_concurrency", llm_concurrency),
                ("chunk_size", chunk_size),
                ("runner", runner),
                ("dask_address", dask_address),
                ("llm_budget_usd", llm_budget_usd),
            )
            if value is not None and value != ""
        }
        sizes = {k: v for k, v in (("limit", limit), ("instances", instances)) if v}
        if sizes and split:
            splits = dict(self.splits)
            splits[split] = self.split(split).model_copy(update=sizes)
            update["splits"] = splits
        return Settings.model_validate({**self.model_dump(), **update}) if update else self


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use. A variable that is
    not the JSON its setting takes is an :class:`InputError` naming it."""
    try:
        return Settings()
    except SettingsError as error:
        raise InputError(unreadable(error, os.environ)) from None


def unreadable(error: SettingsError, environ: Mapping[str, str]) -> str:
    """What pydantic-settings could not parse, in one line naming the variable: it says only
    the field (``splits``), and its cause holds the value it tried as JSON."""
    cause = error.__cause__
    value = cause.doc if isinstance(cause, json.JSONDecodeError) else None
    field = re.search(r'field "(\w+)"', str(error))
    prefix = f"INSPIRE_{field.group(1)}".upper() if field else "INSPIRE_"
    names = sorted(
        name
        for name, given in environ.items()
        if name.upper().startswith(prefix) and (value is None or given == value)
    )
    named = " or ".join(names) or prefix
    if value is None:
        return f"invalid configuration: {named} cannot be read ({cause or error})"
    return (
        f"invalid configuration: {named}={value!r} is not the JSON this setting takes ({cause}); "
        """write a list such as '["Computer Science"]' or an object such as '{"k": [1, 2]}'"""
    )
