"""Serve the deployments: build-split/train and /eval, audit-split/default, evaluate/default.

``make serve`` starts a Prefect server and then this process; afterwards
``prefect deployment run build-split/eval`` works from any shell.
"""

from __future__ import annotations

from typing import cast

from prefect import serve
from prefect.deployments.runner import RunnerDeployment

from flows.audit import audit_split
from flows.build_split import build_split
from flows.evaluate import evaluate
from inspire_build.prefect_runtime import one_line_errors_in_prefect_console


def main() -> None:
    one_line_errors_in_prefect_console()
    # to_deployment is typed as sync-or-async; called outside an event loop it is sync.
    deployments = [
        cast(RunnerDeployment, build_split.to_deployment(name=name, parameters={"split": name}))
        for name in ("train", "eval")
    ]
    deployments.append(cast(RunnerDeployment, audit_split.to_deployment(name="default")))
    deployments.append(cast(RunnerDeployment, evaluate.to_deployment(name="default")))
    serve(*deployments)


if __name__ == "__main__":
    main()
