"""The ValidatingAdmissionPolicy status controller, and the type check it writes: upstream's
typechecking_test.go cases (undefined field on object, params and variables; message
expressions; no kinds to check) on the real schemas, and controller.go's reconcile (only when
the generation moved; /status written as its own field manager)."""
from __future__ import annotations

import asyncio
from typing import Any

from kubeplane.apiserver.authentication.user import APISERVER
from kubeplane.apiserver.cel import typechecking
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.cmd import identities
from kubeplane.controller.validatingadmissionpolicystatus import CONTROLLER_NAME, Controller
from kubeplane.storage import new_storage

RULES = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["CREATE"]}]


def policy(*validations: dict[str, Any], name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": RULES}, "validations": list(validations), **spec}}


def test_passed_check_has_no_warnings() -> None:
    p = policy({"expression": "object.spec.replicas <= 5"},
               {"expression": "object.spec.template.spec.containers.all(c, c.image != '')"},
               {"expression": "object.metadata.labels.app == 'x'"})         # labels: a map, any key
    assert typechecking.check(p) == []


def test_undefined_field() -> None:
    assert typechecking.check(policy({"expression": "object.spec.replicsa <= 5"})) == [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'\n"
                   " | object.spec.replicsa <= 5\n | ...........^\n"}]


def test_multiple_and_message_expressions() -> None:
    p = policy({"expression": "object.spec.replicas > 1"},
               {"expression": "oldObject.spec.template.spec.containers[0].imag == ''", "messageExpression": "'ok'"},
               {"expression": "true", "messageExpression": "'x' + object.metadata.nam"})
    assert [w["fieldRef"] for w in typechecking.check(p)] == [
        "spec.validations[1].expression", "spec.validations[2].messageExpression"]


def test_params_and_variables() -> None:
    p = policy({"expression": "params.data.x == 'a' && params.dat == 1"},
               {"expression": "variables.works && variables.nonExisting"},
               paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
               variables=[{"name": "works", "expression": "true"}])
    got = typechecking.check(p)
    assert [w["fieldRef"] for w in got] == ["spec.validations[0].expression", "spec.validations[1].expression"]
    assert "undefined field 'dat'" in got[0]["warning"] and "undefined field 'nonExisting'" in got[1]["warning"]


def test_nothing_to_check() -> None:
    """Wildcards, unknown resources and no rules: no kind, no warning (upstream: typesToCheck)."""
    bad = {"expression": "object.nope == 1"}
    assert typechecking.check(policy(bad, matchConstraints={"resourceRules": [
        {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["deployments"]}]})) == []
    assert typechecking.check(policy(bad, matchConstraints={"resourceRules": [
        {"apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}]})) == []
    assert typechecking.check({"spec": {"validations": [bad]}}) == []


async def test_controller_writes_observed_generation_and_warnings() -> None:
    api = APIServer(new_storage("memory"), options=ServerRunOptions(authorization_modes=("RBAC",)))
    await api.bootstrap()
    factory = SharedInformerFactory(Clientset(InProcessTransport(api, user=identities.KUBE_CONTROLLER_MANAGER)))
    controller_cs = Clientset(InProcessTransport(api, user=identities.controller_user(CONTROLLER_NAME)))
    c = Controller(factory.admissionregistration_v1().validatingadmissionpolicies(), controller_cs, typechecking.check)
    task = asyncio.ensure_future(c.run())
    factory.start()
    admin = Clientset(InProcessTransport(api, user=APISERVER)).admissionregistration_v1().validatingadmissionpolicies()
    try:
        await admin.create(policy({"expression": "object.spec.replicsa <= 5"}))

        async def status() -> dict[str, Any]:
            for _ in range(500):
                got = (await admin.get("p")).status
                if got is not None and got.observed_generation:
                    return {"generation": got.observed_generation,
                            "warnings": [w.field_ref for w in got.type_checking.expression_warnings or []]}
                await asyncio.sleep(0.01)
            raise AssertionError("no status")
        assert await status() == {"generation": 1, "warnings": ["spec.validations[0].expression"]}
        raw = await controller_cs.admissionregistration_v1().validatingadmissionpolicies().get("p")
        managers = {(m.manager, m.subresource) for m in raw.metadata.managed_fields or []}
        assert (CONTROLLER_NAME, "status") in managers
        await admin.patch("p", {"spec": {"validations": [{"expression": "object.spec.replicas <= 5"}]}}, "merge")
        for _ in range(500):
            got = (await admin.get("p")).status
            if got.observed_generation == 2:
                break
            await asyncio.sleep(0.01)
        assert got.observed_generation == 2 and not got.type_checking.expression_warnings
    finally:
        task.cancel()
        await factory.shutdown()
