"""Prefect flows: wiring only. Every step is a thin wrapper over an ``inspire_build`` function."""

import os

# A temporary Prefect server takes about 19 s to start on a 2-core machine, and Prefect waits
# 20 s by default: a loaded machine would fail builds at random. Telemetry stays off.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
