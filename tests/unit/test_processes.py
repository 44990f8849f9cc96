"""A server in a child process lives no longer than its parent: stopped at the parent's exit,
and sent SIGTERM by the kernel when the parent dies without exiting (SIGKILL, os._exit)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspire_build import processes
from inspire_build.errors import InspireError

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_server_that_answers_is_handed_back_and_stops() -> None:
    server = processes.start_server(SLEEPER, os.environ, lambda: True, 5, "never")
    assert server.poll() is None
    processes.stop(server)
    assert server.returncode is not None


def test_a_server_that_exits_or_never_answers_fails_in_one_line() -> None:
    with pytest.raises(InspireError, match="^it exited$"):
        processes.start_server(
            [sys.executable, "-c", ""], os.environ, lambda: False, 30, "it exited"
        )
    with pytest.raises(InspireError, match="^too slow$"):
        processes.start_server(SLEEPER, os.environ, lambda: False, 0, "too slow")


PARENT = """
import os, sys
from inspire_build import processes
server = processes.start_server(sys.argv[1:], os.environ, lambda: True, 5, "never")
print(server.pid, flush=True)
os._exit(0)  # no atexit handler runs: only the kernel's signal ends the child
"""


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_ends_when_its_parent_dies_without_exiting() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PARENT, *SLEEPER], capture_output=True, text=True, timeout=60
    )
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Running, neither gone nor a zombie waiting for init to reap it."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
