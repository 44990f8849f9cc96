"""Prefect flows: wiring only. Every step is a thin wrapper over an ``inspire_build`` function."""

import os

from inspire_build import gc_policy
from inspire_build.flow_server import STARTUP_S

# Prefect's temporary server takes ~19 s to start on 2 cores and Prefect waits 20 s by default: a
# loaded machine would fail builds at random. Telemetry off. A deployment's run collects less too.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(STARTUP_S))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
gc_policy.collect_less()
