"""How often a process of ours runs the cyclic garbage collector.

Python collects its youngest generation every 700 net allocations, and an older one every tenth
time. A build allocates millions of short-lived objects (parsed payloads, rows, texts) beside a
large live heap (Prefect's modules, a selection's records) that the older collections walk:
they took 8% of a build process's CPU (bench/gc_policy.py, figures in docs/benchmarks.md).
Collecting the youngest generation every 100,000 allocations still frees every cycle, later.
Set by the ``inspire`` entry point and by the flows' processes, never on import of the package:
a program that imports it keeps its own collector settings.
"""

from __future__ import annotations

import gc

THRESHOLDS = (100_000, 50, 100)  # youngest generation's allocations, then collections of each


def collect_less() -> None:
    """This process collects at :data:`THRESHOLDS` instead of Python's (700, 10, 10)."""
    gc.set_threshold(*THRESHOLDS)
