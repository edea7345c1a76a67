"""successPolicy: upstream's TestMatchSuccessPolicy table (success_policy_test.go) and the
sync outcome (SuccessCriteriaMet, the remaining pods deleted, Complete once they are gone)."""
from __future__ import annotations

import pytest

from kubeplane.api.types import batch_v1
from kubeplane.controller.job.indexed_job_utils import parse_indexes_from_string
from kubeplane.controller.job.success_policy import match_success_policy

from job_testutil import conditions, new_fixture, new_job, new_pod

R = batch_v1.SuccessPolicyRule


def pol(*rules: R) -> batch_v1.SuccessPolicy:
    return batch_v1.SuccessPolicy(rules=list(rules))


@pytest.mark.parametrize("policy,completions,succeeded,want", [
    pytest.param(None, 10, "0-2", ("", False), id="no-policy"),
    pytest.param(pol(R(succeeded_indexes="0-2")), 10, "", ("", False), id="nothing-succeeded"),
    pytest.param(pol(R(succeeded_indexes="0-2")), 10, "0-2", ("Matched rules at index 0", True),
                 id="indexes-all-succeeded"),
    pytest.param(pol(R(succeeded_indexes="0-2")), 10, "0,2", ("", False), id="indexes-one-missing"),
    pytest.param(pol(R(succeeded_indexes="0-4", succeeded_count=3)), 10, "1-2,4-6",
                 ("Matched rules at index 0", True), id="count-of-indexes-met"),
    pytest.param(pol(R(succeeded_indexes="0-4", succeeded_count=4)), 10, "1-2,4-6", ("", False),
                 id="count-of-indexes-not-met"),
    pytest.param(pol(R(succeeded_count=2)), 10, "5,9", ("Matched rules at index 0", True), id="count-only"),
    pytest.param(pol(R(succeeded_count=3)), 10, "5,9", ("", False), id="count-only-not-met"),
    pytest.param(pol(R(succeeded_indexes="7"), R(succeeded_count=1)), 10, "3",
                 ("Matched rules at index 1", True), id="second-rule"),
    pytest.param(pol(R(succeeded_indexes="a-b"), R(succeeded_indexes="3")), 10, "3",
                 ("Matched rules at index 1", True), id="malformed-rule-skipped"),
    pytest.param(pol(R(succeeded_indexes="12-14")), 10, "0-9", ("", False), id="rule-beyond-completions"),
])
def test_match_success_policy(policy, completions, succeeded, want) -> None:
    assert match_success_policy(policy, completions, parse_indexes_from_string(succeeded, completions)) == want


async def test_success_policy_met_deletes_the_rest_then_completes() -> None:
    f = await new_fixture()
    job = new_job(3, 3, 6, "Indexed", success_policy=pol(R(succeeded_indexes="0")))
    f.add_job(job)
    f.add_pods(new_pod(job, "Succeeded", index="0"), new_pod(job, "Running", index="1", name="r1"),
               new_pod(job, "Pending", index="2", name="p2"))
    assert await f.sync(job) is None
    met = ("SuccessCriteriaMet", "True", "SuccessPolicy", "Matched rules at index 0")
    assert conditions(f.actual) == [met]
    assert sorted(f.pod_control.delete_pod_name) == ["p2", "r1"] and f.actual.status.terminating == 2
    assert f.actual.status.completed_indexes == "0" and f.actual.status.succeeded == 1
    # the deleted pods are gone: Complete, with the success policy's reason and message
    f2 = await new_fixture()
    job2 = f.actual.deep_copy()
    f2.add_job(job2)
    assert await f2.sync(job2) is None
    assert conditions(f2.actual) == [met, ("Complete", "True", "SuccessPolicy", "Matched rules at index 0")]
    assert f2.actual.status.completion_time is not None
    assert f2.recorder.events == ["Normal Completed Job completed"]
