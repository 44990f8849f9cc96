"""Batch mode for the LLM steps: the OpenAI Batch API (half price, up to 50,000 requests).

:func:`run_in_batches` runs a step repeatedly. In each pass, the LLM client answers what its log
holds and defers every other request; the deferred requests go out as one Batch API job, and
its answers are written to the log; the next pass gets further. It ends when a pass defers
nothing. Jobs are recorded in ``llm_batches``, so a run killed while waiting resumes the same
job instead of paying for a second one. A request a job fails to answer is then asked
directly, with the usual repair retry.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import time
from collections.abc import Callable
from typing import TypeVar

import duckdb
import pydantic

from inspire_build import warehouse
from inspire_build.errors import LLMError
from inspire_build.llm import LLM, api_error, failure
from inspire_build.tables import llm_log

Result = TypeVar("Result")
FINAL = ("completed", "failed", "expired", "cancelled")


def run_in_batches(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    step: Callable[[], Result],
    *,
    poll_s: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
    say: Callable[[str], None] = lambda _: None,
) -> Result:
    """Run ``step`` until it needs no answer that the log lacks."""
    llm.collecting = True
    try:
        for round_number in range(1, 1000):
            llm.pending.clear()
            result = step()
            if not llm.pending:
                return result
            say(f"batch round {round_number}: {len(llm.pending)} request(s)")
            try:
                _submit_and_wait(llm, con, poll_s, sleep, say)
            except api_error() as error:  # the Batch API's own calls: redacted, typed
                raise failure(error, llm.redactor, "the Batch API call") from error
        raise LLMError("batch mode did not converge")
    finally:
        llm.collecting = False


def _submit_and_wait(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    poll_s: float,
    sleep: Callable[[float], None],
    say: Callable[[str], None],
) -> None:
    pending = dict(llm.pending)
    keys = sorted(pending)
    client = llm.client()
    batch_id = _resumable(con, keys)
    if batch_id is None:
        lines = [
            json.dumps(
                {
                    "custom_id": key,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": pending[key][0],
                }
            )
            for key in keys
        ]
        upload = client.files.create(
            file=("requests.jsonl", io.BytesIO("\n".join(lines).encode())), purpose="batch"
        )
        job = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        batch_id = job.id
        _save(con, batch_id, job.status, upload.id, None, keys, finished=False)
    else:
        say(f"resuming batch {batch_id}")
    started = time.perf_counter()
    while True:
        job = client.batches.retrieve(batch_id)
        _save(
            con,
            batch_id,
            job.status,
            job.input_file_id,
            job.output_file_id,
            keys,
            finished=job.status in FINAL,
        )
        if job.status in FINAL:
            break
        sleep(poll_s)
    if job.status != "completed" or not job.output_file_id:
        raise LLMError(f"batch {batch_id} ended {job.status}")
    latency = (time.perf_counter() - started) * 1000 / max(1, len(keys))
    answered = set()
    for line in client.files.content(job.output_file_id).content.decode().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        key = item.get("custom_id")
        response = item.get("response") or {}
        if key not in pending or response.get("status_code") != 200:
            continue
        body = response.get("body") or {}
        message = (body.get("choices") or [{}])[0].get("message") or {}
        _, model, prompt_name, input_hash = pending[key]
        try:
            answer = model.model_validate_json(message.get("content") or "")
        except pydantic.ValidationError:
            continue  # asked again directly, with the repair retry
        usage = body.get("usage") or {}
        llm.record(
            key,
            answer,
            prompt_name,
            input_hash,
            (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            latency,
            batch=True,
        )
        answered.add(key)
    llm.direct.update(set(keys) - answered)
    say(f"batch {batch_id}: {len(answered)} of {len(keys)} answered")


def _resumable(con: duckdb.DuckDBPyConnection, keys: list[str]) -> str | None:
    return llm_log.open_batch(con, keys, FINAL)


def _save(
    con: duckdb.DuckDBPyConnection,
    batch_id: str,
    status: str,
    input_file_id: str,
    output_file_id: str | None,
    keys: list[str],
    *,
    finished: bool,
) -> None:
    existing = llm_log.submitted_at(con, batch_id)
    now = dt.datetime.now(dt.UTC)
    warehouse.upsert(
        con,
        "llm_batches",
        [
            {
                "batch_id": batch_id,
                "status": status,
                "input_file_id": input_file_id,
                "output_file_id": output_file_id,
                "requests": len(keys),
                "call_keys": keys,
                "submitted_at": existing or now,
                "finished_at": now if finished else None,
            }
        ],
        ["batch_id"],
    )
