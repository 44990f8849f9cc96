"""Lineage and the LLM steps on Dask workers (``runner = "dask"``; the ``dask`` extra:
prefect-dask).

A worker resolves a chunk of targets and returns its records, and the flow process alone
writes them: DuckDB lets no other process open a warehouse that one is writing. So the worker
reads the responses already stored, the crosswalk and the bulk tables from a read-only copy the
flow makes before sending the chunks (``tables/reading_copy.py``), and returns the responses it
fetched with the chunk's lineage. The sources' rate limits hold across the workers: each call
takes its slot from a limiter the workers share through the Dask scheduler. Once lineage is
complete, a worker runs a chunk's LLM steps from a second copy (inputs, indexed papers, the
call log) and returns each target's records (:func:`steps_records`); the calls in flight are
bounded over the cluster by a Dask semaphore (:class:`SharedSlots`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.http import HeldResponses, HttpClient, Limits
from inspire_build.tables import reading_copy

if TYPE_CHECKING:
    from inspire_build.gold import Records

HOST = "127.0.0.1"  # a LocalCluster listens on the loopback only
PORTS_PER_WORKER = 3  # its nanny, the worker, the worker's HTTP server


def require() -> None:
    """Refuse the Dask runner, in one line, where its extra is not installed."""
    try:
        import distributed  # noqa: F401
        import prefect_dask  # noqa: F401
    except ImportError:
        raise InputError(
            "runner 'dask' needs the dask extra: pip install 'inspire-build[dask]'"
        ) from None


def worker_ports(settings: Settings, index: int) -> tuple[int, int, int]:
    """Worker ``index``'s nanny, worker and HTTP ports, from ``dask_worker_port`` on."""
    first = settings.dask_worker_port + PORTS_PER_WORKER * index
    return first, first + 1, first + 2


def cluster_spec(settings: Settings) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A LocalCluster's scheduler and workers, every port pinned (Dask's own LocalCluster
    gives workers random ports): the options of ``distributed.SpecCluster``."""
    from distributed import Nanny, Scheduler

    scheduler = {
        "cls": Scheduler,
        "options": {
            "host": HOST,
            "port": settings.dask_scheduler_port,
            "dashboard_address": f"{HOST}:{settings.dask_dashboard_port}",
        },
    }
    workers = {}
    for index in range(settings.dask_workers):
        nanny, worker, http = worker_ports(settings, index)
        workers[f"worker-{index}"] = {
            "cls": Nanny,
            "options": {
                "host": HOST,
                "port": nanny,
                "worker_port": worker,
                "dashboard_address": f"{HOST}:{http}",
                "nthreads": 1,
            },
        }
    return scheduler, workers


@contextlib.contextmanager
def scheduler(settings: Settings, say: Callable[[str], None]) -> Iterator[str]:
    """The address of the Dask scheduler a build's tasks go to: ``dask_address``, else a
    LocalCluster's, every port pinned, closed on the way out."""
    require()
    if settings.dask_address:
        _refuse_in_clear(settings.dask_address)
        yield settings.dask_address
        return
    from distributed import SpecCluster

    scheduler, workers = cluster_spec(settings)
    with SpecCluster(scheduler=scheduler, workers=workers, silence_logs=40) as cluster:
        say(f"a LocalCluster of {len(workers)} workers at {cluster.scheduler_address}")
        yield cluster.scheduler_address


class Workers:
    """The cluster's workers: a build's task runs on one of them as a plain call through the
    Dask ``client`` (``driver.Hooks.workers``), or through ``send`` (the flow's, as a Prefect
    task run on Prefect's Dask task runner)."""

    def __init__(self, client: Any, send: Callable[..., Any] | None = None) -> None:
        self.client, self.send = client, send

    @property
    def count(self) -> int:
        return max(1, len(self.client.scheduler_info()["workers"]))

    def submit(
        self, name: str, label: str, step: Callable[..., Any], parameters: dict[str, Any]
    ) -> Any:
        """``step(**parameters)`` (the task ``name``; ``label`` names this run) on a worker: a
        future."""
        if self.send is not None:
            return self.send(name, label, step, parameters)
        key = f"{label.replace(' ', '-')}-{uuid.uuid4().hex}"
        return self.client.submit(step, **parameters, key=key, pure=False)


@contextlib.contextmanager
def client(settings: Settings, say: Callable[[str], None]) -> Iterator[Workers]:
    """The workers at :func:`scheduler`'s address, through a Dask client of this process."""
    with scheduler(settings, say) as address:
        from distributed import Client

        with Client(address) as dask_client:
            yield Workers(dask_client)


def _refuse_in_clear(address: str) -> None:
    """A task's parameters carry the private side through the scheduler: the targets, the
    build's settings with its API keys, and the cutoff offsets (keyed by the instance key). A
    scheduler on another network is refused unless it is a ``tls://`` one."""
    if not _private(address):
        raise InputError(
            f"the Dask scheduler {address} is neither on this machine or a private network nor "
            "a tls:// address: the build's tasks would carry its targets and keys to it in the "
            "clear; use a tls:// address (Dask's TLS settings)"
        )


def _private(address: str) -> bool:
    """Whether ``address`` is a TLS one, or on a loopback or private network; a name counts by
    the addresses it resolves to (a name that does not resolve is left for Dask to refuse)."""
    parts = urllib.parse.urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme == "tls":
        return True
    host = parts.hostname or ""
    try:
        return ipaddress.ip_address(host).is_private
    except ValueError:
        pass
    try:
        resolved = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return True
    return all(ipaddress.ip_address(ip.split("%")[0]).is_private for ip in resolved)


class SharedRate:
    """Spaces calls ``interval_s`` apart across every worker: the next free slot is a Dask
    variable, read and moved under a Dask lock (both held by the scheduler). Slots are wall
    clock times, so workers on several machines need synchronised clocks (NTP). Made in a
    task's thread: the lineage's other threads have no Dask worker of their own to find."""

    def __init__(self, name: str, interval_s: float, sleep: Callable[[float], None]) -> None:
        from distributed import Lock, Variable

        self.interval_s, self._sleep = interval_s, sleep
        scheduler, loop, client = _scheduler()
        self._lock = Lock(f"inspire-rate-{name}", scheduler_rpc=scheduler, loop=loop)
        self._free = Variable(f"inspire-rate-{name}", client=client)

    def acquire(self) -> float:
        """Wait for this call's slot; returns it (a wall-clock time)."""
        with self._lock:
            try:
                free = float(self._free.get(timeout=0))
            except TimeoutError:  # the build's first call to this source
                free = 0.0
            now = time.time()
            slot = max(now, free)
            self._free.set(slot + self.interval_s)
        if slot > now:
            self._sleep(slot - now)
        return slot

    def sent(self) -> None:
        """A request leaves now: no other worker's slot comes sooner than an interval after."""
        with self._lock:
            try:
                free = float(self._free.get(timeout=0))
            except TimeoutError:
                free = 0.0
            self._free.set(max(free, time.time() + self.interval_s))


def _scheduler() -> tuple[Any, Any, Any]:
    """This worker's (else this client's) scheduler connection, event loop and client."""
    from distributed import get_client, get_worker

    client = get_client()
    try:
        worker = get_worker()
    except ValueError:  # not in a worker: the client's own
        return client.scheduler, client.loop, client
    return worker.scheduler, worker.loop, client


class SharedLimits(Limits):
    """Each source's limiter and calls-in-flight guard, shared by the cluster's workers."""

    def rate(self, name: str, interval_s: float, sleep: Callable[[float], None]) -> Any:
        return SharedRate(name, interval_s, sleep)

    def in_flight(self, name: str, most: int) -> Any:
        from distributed import Semaphore

        scheduler, loop, _ = _scheduler()
        return Semaphore(
            max_leases=most, name=f"inspire-in-flight-{name}", scheduler_rpc=scheduler, loop=loop
        )


class SharedSlots:
    """At most ``size`` chat calls in flight over every worker: a Dask semaphore on the
    scheduler (``llm_concurrency`` holds for the whole cluster, as for one process). Urgency is
    kept within a worker only. Made in a task's thread, as :class:`SharedRate` is."""

    def __init__(self, size: int) -> None:
        from distributed import Semaphore

        scheduler, loop, _ = _scheduler()
        self._leases = Semaphore(
            max_leases=size, name="inspire-llm-slots", scheduler_rpc=scheduler, loop=loop
        )

    @contextlib.contextmanager
    def held(self, urgency: tuple[int, ...] = ()) -> Iterator[None]:
        with self._leases:
            yield


def steps_records(
    settings: Settings, copy: Path, targets: Sequence[str], first_rank: int, workers: int
) -> list[Records]:
    """The LLM steps of ``targets`` (the ``first_rank``-th on of the build's) in this worker,
    reading the build's read-only ``copy`` made once lineage was complete; returns each
    target's :class:`gold.Records` for the flow process to write. The calls in flight are
    bounded over the cluster; the provider's ``llm_rpm`` and ``llm_tpm`` are split evenly
    between the ``workers``."""
    from inspire_build import gold
    from inspire_build.pacing import Pacer
    from inspire_build.sources import CODECS

    rpm, tpm = settings.llm_rpm, settings.llm_tpm
    share = Pacer.per_minute(
        max(1, rpm // workers) if rpm else None, max(1, tpm // workers) if tpm else None
    )
    con = opened(copy)
    try:
        slots = SharedSlots(settings.llm_concurrency)
        llm = gold.make_llm(settings, con, slots=slots, limiter=share)
        # the search checks' responses come back in each target's records, for the flow to write
        client = HttpClient(settings, CODECS, HeldResponses(con), limits=SharedLimits())
        with gold.Steps(llm, con, settings, first_rank, client=client) as steps:
            steps.corpus_complete(index=False)  # the copy holds every paper, indexed
            return [future.result() for future in steps.submit(targets)]
    finally:
        con.close()


def opened(copy: Path) -> Any:
    """The build's reading copy, or a clear error where this worker cannot see it."""
    if not copy.exists():
        raise InputError(
            f"this Dask worker cannot see the build's reading copy {copy}: workers on other "
            "machines need the warehouse's folder at the same path (a shared volume)"
        )
    return reading_copy.open_copy(copy)
