"""Measure: a 1,000-replica Deployment rolled from image A to image B in-process.

FakeClientset's API server, real informers, the ReplicaSet controller and ours, pods marked
Ready by a fast helper. Figures are printed (run with -s); the test asserts the rolling
invariants at every observed step and the target: the rollout's controller work (time spent
inside sync_deployment, including its in-process API calls) <= 2 s.
"""
from __future__ import annotations

import time

from kubeplane.testing.fake import FakeClientset

from deployment_testutil import Cluster, deployment_dict

REPLICAS = 1000
MAX_SURGE, MAX_UNAVAILABLE = 250, 250          # the 25%/25% defaults of 1,000


async def test_rollout_1000_replicas() -> None:
    fake = await FakeClientset.new()
    c = Cluster(fake)
    await c.start()
    try:
        await fake.apps_v1().deployments("default").create(deployment_dict("foo", REPLICAS, image="a"))
        await c.wait_for(lambda: c.rolled_out(image="a"), timeout=120)
        violations: list[str] = []

        def check() -> None:
            total = sum(r.spec.replicas or 0 for r in c.replica_sets())
            d = c.deployment()
            available = (d.status.available_replicas or 0) if d is not None and d.status else 0
            if total > REPLICAS + MAX_SURGE:
                violations.append(f"{total} replicas planned")
            if available < REPLICAS - MAX_UNAVAILABLE:
                violations.append(f"only {available} available")
        c.observers.append(check)
        syncs0, seconds0 = c.sync_count, c.sync_seconds
        d = await fake.apps_v1().deployments("default").get("foo")
        d.spec.template.spec.containers[0].image = "b"
        t0 = time.perf_counter()
        await fake.apps_v1().deployments("default").update(d)
        await c.wait_for(lambda: c.rolled_out(image="b") and sorted(r.spec.replicas for r in c.replica_sets())
                         == [0, REPLICAS], timeout=120)
        wall = time.perf_counter() - t0
        syncs, seconds = c.sync_count - syncs0, c.sync_seconds - seconds0
        print(f"\n1,000-replica rollout A->B: wall {wall:.2f} s, deployment controller {seconds * 1000:.1f} ms "
              f"in {syncs} syncs ({syncs / seconds:.0f} syncs/s of controller time)")
        assert violations == []
        assert seconds <= 2.0
        assert syncs >= 8                          # 25% steps: at least 4 up and 4 down
    finally:
        await c.stop()
