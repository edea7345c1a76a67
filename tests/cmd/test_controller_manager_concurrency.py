"""`kubeplane controller-manager`'s --concurrent-*-syncs flags: upstream's names and defaults,
the EndpointSlice controllers' bounds, and each value reaching the workers its controller starts."""
from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from kubeplane.cmd.controller_manager import (CONCURRENCY_FLAGS, ControllerManagerOptions, add_parser,
                                              concurrency_options, run_controllers)
from kubeplane.cmd.flags import ArgumentParser
from kubeplane.testing.fake import FakeClientset


def parse(*argv: str) -> Any:
    parser = ArgumentParser(prog="kubeplane")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["controller-manager", "--kubeconfig", "kc", *argv])


UPSTREAM_DEFAULTS = {
    "concurrent-deployment-syncs": 5, "concurrent-replicaset-syncs": 5, "concurrent-rc-syncs": 5,
    "concurrent-statefulset-syncs": 5, "concurrent-daemonset-syncs": 2, "concurrent-job-syncs": 5,
    "concurrent-cron-job-syncs": 5, "concurrent-endpoint-syncs": 5, "concurrent-service-endpoint-syncs": 5,
    "mirroring-concurrent-service-endpoint-syncs": 5, "concurrent-gc-syncs": 20, "concurrent-namespace-syncs": 10,
    "concurrent-resource-quota-syncs": 5, "concurrent-serviceaccount-token-syncs": 5,
    "concurrent-ttl-after-finished-syncs": 5, "concurrent-horizontal-pod-autoscaler-syncs": 5,
    "concurrent-validating-admission-policy-status-syncs": 5,
}


def test_flags_have_upstreams_names_and_defaults() -> None:
    assert {flag: default for flag, _, default, _ in CONCURRENCY_FLAGS} == UPSTREAM_DEFAULTS
    options = ControllerManagerOptions(**concurrency_options(parse()))
    assert options == ControllerManagerOptions()           # the flags' defaults are the options' defaults


def test_a_flag_sets_its_controllers_option() -> None:
    got = concurrency_options(parse("--concurrent-daemonset-syncs", "7", "--concurrent-job-syncs=9",
                                    "--concurrent-service-endpoint-syncs", "50"))
    assert (got["daemonset_workers"], got["job_workers"], got["endpoint_slice_workers"]) == (7, 9, 50)


@pytest.mark.parametrize("flag,value,message", [
    ("--concurrent-service-endpoint-syncs", "0", "concurrent-service-endpoint-syncs must not be less than 1, but got 0"),
    ("--concurrent-service-endpoint-syncs", "51",
     "concurrent-service-endpoint-syncs must not be more than 50, but got 51"),
    ("--mirroring-concurrent-service-endpoint-syncs", "-1",
     "mirroring-concurrent-service-endpoint-syncs must not be less than 1, but got -1"),
])
def test_the_endpoint_slice_bounds_are_one_line(flag: str, value: str, message: str) -> None:
    res = subprocess.run([sys.executable, "-m", "kubeplane", "controller-manager", "--kubeconfig", "kc", flag, value],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert message in res.stderr.splitlines()[-1]


async def test_each_value_reaches_the_workers_its_controller_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_controllers hands each controller its option (the controllers' run() recorded)."""
    from kubeplane.controller.cronjob import ControllerV2
    from kubeplane.controller.daemon import DaemonSetsController
    from kubeplane.controller.endpoint import EndpointsController
    from kubeplane.controller.endpointslice import EndpointSliceController
    from kubeplane.controller.endpointslicemirroring import EndpointSliceMirroringController
    from kubeplane.controller.job import JobController
    from kubeplane.controller.podautoscaler.horizontal import HorizontalController
    from kubeplane.controller.replication import ReplicationManager
    from kubeplane.controller.statefulset import StatefulSetController
    from kubeplane.controller.ttlafterfinished import TTLAfterFinishedController
    classes = {"cron": ControllerV2, "daemon": DaemonSetsController, "endpoints": EndpointsController,
               "slices": EndpointSliceController, "mirroring": EndpointSliceMirroringController, "job": JobController,
               "hpa": HorizontalController, "rc": ReplicationManager, "sts": StatefulSetController,
               "ttl": TTLAfterFinishedController}
    seen: dict[str, int] = {}
    everyone = asyncio.Event()
    for name, cls in classes.items():
        async def run(self: Any, workers: int = -1, name: str = name) -> None:
            seen[name] = workers
            if len(seen) == len(classes):
                everyone.set()
        monkeypatch.setattr(cls, "run", run)
    options = ControllerManagerOptions(cron_job_workers=11, daemonset_workers=12, endpoint_workers=13,
                                       endpoint_slice_workers=14, mirroring_workers=15, job_workers=16, hpa_workers=17,
                                       rc_workers=18, statefulset_workers=19, ttl_after_finished_workers=20)
    fake = await FakeClientset.new()
    task = asyncio.create_task(run_controllers(fake, options=options))
    try:
        await asyncio.wait_for(everyone.wait(), 30)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await fake.close()
    assert seen == {"cron": 11, "daemon": 12, "endpoints": 13, "slices": 14, "mirroring": 15, "job": 16, "hpa": 17,
                    "rc": 18, "sts": 19, "ttl": 20}
