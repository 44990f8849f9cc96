"""Prefect flows: wiring only. Every step is a thin wrapper over an ``inspire_build`` function."""

import os

from inspire_build.flow_server import STARTUP_S

# A temporary Prefect server takes about 19 s to start on a 2-core machine, and Prefect waits
# 20 s by default: a loaded machine would fail builds at random. Telemetry stays off.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(STARTUP_S))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
