"""Faults: a build against a sandbox failing 10% of its requests (every fault kind) exports the
same bytes as the fault-free build."""

from __future__ import annotations

import httpx

from inspire_build.sandbox import server

from .conftest import Suite


def test_a_build_under_ten_percent_faults_exports_the_same_bytes(
    suite: Suite, reference_export: list[str]
) -> None:
    # The dice are per request number; with seed 568 all five kinds fall within the first 17
    # requests, so even this small build meets every one of them.
    config = server.SandboxConfig(time_scale=1000, fault_rate=0.10, seed=568)
    with server.running(suite.world, config) as base:
        env = suite.env("faults", base)
        suite.build(env, "build-faults")
        counts = httpx.get(base + "/_sandbox/stats").json()["counts"]
    injected = {k.removeprefix("fault "): v for k, v in counts.items() if k.startswith("fault ")}
    assert set(injected) == set(server.FAULT_KINDS), injected  # every kind was survived
    assert suite.export(env, "faults") == reference_export
