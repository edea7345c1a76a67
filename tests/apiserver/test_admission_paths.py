"""The admission chain runs on every write path: create, update, patch (every type), server-side
apply, /status, /scale, pods/binding, namespaces/finalize, delete and deletecollection, with the
Attributes upstream's handlers give (operation, subresource, kind, objects, dry run); and
NamespaceLifecycle's refusals on each (upstream: plugin/pkg/admission/namespace/lifecycle)."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubeplane.apiserver.admission import Attributes, Plugin
from kubeplane.apiserver.admission.plugins.namespace_lifecycle import IMMORTAL_NAMESPACES

MERGE = "application/merge-patch+json"


class Recorder(Plugin):
    """Records what each phase sees; refuses when told to."""
    NAME = "Recorder"
    MUTATING = VALIDATING = True

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.seen: list[tuple[str, Attributes]] = []
        self.refuse: str = ""

    async def admit(self, a: Attributes) -> None:
        self.seen.append(("admit", a))
        if self.refuse == "admit":
            raise self.forbid(a)

    async def validate(self, a: Attributes) -> None:
        self.seen.append(("validate", a))
        if self.refuse == "validate":
            raise self.forbid(a)

    @staticmethod
    def forbid(a: Attributes) -> Exception:
        from kubeplane.apiserver.admission import forbidden
        return forbidden(a, "refused by the recorder")

    def calls(self) -> list[tuple[str, str, str, str, str]]:
        return [(phase, a.operation.value, a.resource, a.subresource, a.kind) for phase, a in self.seen]


@pytest.fixture
def recorder(api: Any) -> Recorder:
    rec = Recorder(api.server)
    api.server.admission.append(rec)
    return rec


async def test_update_and_every_patch_type_admit_then_validate(api: Any, recorder: Recorder) -> None:
    r = await api.create(api.CMS, api.configmap("cm"))
    assert r.status == 201
    assert recorder.calls() == [("admit", "CREATE", "configmaps", "", "ConfigMap"),
                                ("validate", "CREATE", "configmaps", "", "ConfigMap")]
    cm = r.json
    recorder.seen.clear()
    cm["data"] = {"k": "put"}
    assert (await api.call("PUT", f"{api.CMS}/cm", body=cm)).status == 200
    for content_type, body in [
        (MERGE, {"data": {"k": "merge"}}),
        ("application/strategic-merge-patch+json", {"data": {"k": "smp"}}),
        ("application/json-patch+json", [{"op": "replace", "path": "/data/k", "value": "json"}]),
        ("application/apply-patch+yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                                          "data": {"k": "apply"}}),
    ]:
        force = {"force": "true"} if "apply" in content_type else {}    # force is apply's alone (a 422 otherwise)
        r = await api.call("PATCH", f"{api.CMS}/cm", {"fieldManager": "t", **force}, body=body,
                           headers={"content-type": content_type})
        assert r.status == 200, r.json
    assert recorder.calls() == [("admit", "UPDATE", "configmaps", "", "ConfigMap"),
                                ("validate", "UPDATE", "configmaps", "", "ConfigMap")] * 5
    phase, last = recorder.seen[-1]
    assert last.obj is not None and last.obj["data"] == {"k": "apply"}
    assert last.old_obj is not None and last.old_obj["data"] == {"k": "json"}
    assert (last.namespace, last.name, last.dry_run) == ("default", "cm", False)


async def test_a_refusal_on_update_writes_nothing(api: Any, recorder: Recorder) -> None:
    assert (await api.create(api.CMS, api.configmap("cm"))).status == 201
    rv = await api.rv(f"{api.CMS}/cm")
    for phase in ("admit", "validate"):
        recorder.refuse = phase
        r = await api.call("PATCH", f"{api.CMS}/cm", body={"data": {"k": phase}}, headers={"content-type": MERGE})
        assert r.status == 403 and r.json["message"] == 'configmaps "cm" is forbidden: refused by the recorder'
        assert await api.rv(f"{api.CMS}/cm") == rv


async def test_dry_run_update_is_admitted_as_a_dry_run(api: Any, recorder: Recorder) -> None:
    assert (await api.create(api.CMS, api.configmap("cm"))).status == 201
    recorder.seen.clear()
    r = await api.call("PATCH", f"{api.CMS}/cm", {"dryRun": "All"}, body={"data": {"k": "d"}},
                       headers={"content-type": MERGE})
    assert r.status == 200
    assert [a.dry_run for _, a in recorder.seen] == [True, True]


async def test_status_scale_and_binding_are_admitted_as_subresources(api: Any, recorder: Recorder) -> None:
    assert (await api.create(api.DEPLOYS, api.deployment("web"))).status == 201
    assert (await api.create(api.PODS, api.pod("p"))).status == 201
    recorder.seen.clear()
    r = await api.call("PATCH", f"{api.DEPLOYS}/web/status", body={"status": {"replicas": 0}},
                       headers={"content-type": MERGE})
    assert r.status == 200, r.json
    r = await api.call("PATCH", f"{api.DEPLOYS}/web/scale", body={"spec": {"replicas": 3}},
                       headers={"content-type": MERGE})
    assert r.status == 200, r.json
    r = await api.create(f"{api.PODS}/p/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                                                   "target": {"kind": "Node", "name": "n1"}})
    assert r.status == 201, r.json
    assert recorder.calls() == [
        ("admit", "UPDATE", "deployments", "status", "Deployment"),
        ("validate", "UPDATE", "deployments", "status", "Deployment"),
        ("admit", "UPDATE", "deployments", "scale", "Scale"),
        ("validate", "UPDATE", "deployments", "scale", "Scale"),
        ("admit", "CREATE", "pods", "binding", "Binding"),
        ("validate", "CREATE", "pods", "binding", "Binding"),
    ]
    scale = recorder.seen[2][1]
    assert scale.obj is not None and scale.obj["spec"]["replicas"] == 3
    assert scale.old_obj is not None and scale.old_obj["spec"]["replicas"] == 1
    recorder.refuse = "validate"
    r = await api.call("PATCH", f"{api.DEPLOYS}/web/scale", body={"spec": {"replicas": 5}},
                       headers={"content-type": MERGE})
    assert r.status == 403
    assert (await api.get(f"{api.DEPLOYS}/web")).json["spec"]["replicas"] == 3


async def test_delete_admits_by_name_then_validates_the_stored_object(api: Any, recorder: Recorder) -> None:
    assert (await api.create(api.CMS, api.configmap("cm"))).status == 201
    recorder.seen.clear()
    assert (await api.call("DELETE", f"{api.CMS}/cm")).status == 200
    assert recorder.calls() == [("admit", "DELETE", "configmaps", "", "ConfigMap"),
                                ("validate", "DELETE", "configmaps", "", "ConfigMap")]
    admitted, validated = recorder.seen[0][1], recorder.seen[1][1]
    assert admitted.name == validated.name == "cm" and admitted.obj is admitted.old_obj is None
    assert validated.old_obj is not None and validated.old_obj["data"] == {"k": "v"}


async def test_deletecollection_admits_once_and_validates_each_item(api: Any, recorder: Recorder) -> None:
    for name in ("a", "b", "c"):
        assert (await api.create(api.CMS, api.configmap(name))).status == 201
    recorder.seen.clear()
    r = await api.call("DELETE", api.CMS)
    assert r.status == 200
    assert [(phase, a.operation.value, a.name) for phase, a in recorder.seen] == [
        ("admit", "DELETE", ""), ("validate", "DELETE", "a"), ("validate", "DELETE", "b"),
        ("validate", "DELETE", "c")]
    recorder.refuse = "validate"
    assert (await api.create(api.CMS, api.configmap("d"))).status == 403
    recorder.refuse = ""
    assert (await api.create(api.CMS, api.configmap("d"))).status == 201
    recorder.refuse = "validate"
    assert (await api.call("DELETE", api.CMS)).status == 403
    assert (await api.get(f"{api.CMS}/d")).status == 200


async def test_finalize_is_an_update_of_the_finalize_subresource(api: Any, recorder: Recorder) -> None:
    assert (await api.create("/api/v1/namespaces", {"metadata": {"name": "t"}})).status == 201
    recorder.seen.clear()
    r = await api.call("PUT", "/api/v1/namespaces/t/finalize",
                       body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}, "spec": {}})
    assert r.status == 200, r.json
    assert recorder.calls() == [("admit", "UPDATE", "namespaces", "finalize", "Namespace"),
                                ("validate", "UPDATE", "namespaces", "finalize", "Namespace")]


# --- NamespaceLifecycle ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(IMMORTAL_NAMESPACES))
async def test_immortal_namespaces_may_not_be_deleted(api: Any, name: str) -> None:
    if (await api.get(f"/api/v1/namespaces/{name}")).status == 404:
        assert (await api.create("/api/v1/namespaces", {"metadata": {"name": name}})).status == 201
    for query in ({}, {"dryRun": "All"}):
        r = await api.call("DELETE", f"/api/v1/namespaces/{name}", query)
        assert r.status == 403, r.json
        assert r.json["reason"] == "Forbidden"
        assert r.json["message"] == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
        assert r.json["details"] == {"name": name, "kind": "namespaces"}
    ns = (await api.get(f"/api/v1/namespaces/{name}")).json
    assert "deletionTimestamp" not in ns["metadata"] and ns["status"]["phase"] == "Active"


async def test_other_namespaces_may_be_deleted(api: Any) -> None:
    assert (await api.create("/api/v1/namespaces", {"metadata": {"name": "kube-systems"}})).status == 201
    assert (await api.call("DELETE", "/api/v1/namespaces/kube-systems")).status == 200


async def test_update_in_a_missing_namespace_is_not_found(api: Any) -> None:
    """Upstream's Lifecycle refuses every operation but DELETE in a namespace that does not exist
    (here: one removed under a stored object, as a restore or a crash can leave it)."""
    assert (await api.create("/api/v1/namespaces", {"metadata": {"name": "gone"}})).status == 201
    cms = "/api/v1/namespaces/gone/configmaps"
    assert (await api.create(cms, api.configmap("cm"))).status == 201
    await api.storage.delete("/registry/namespaces/gone")
    r = await api.call("PATCH", f"{cms}/cm", body={"data": {"k": "x"}}, headers={"content-type": MERGE})
    assert r.status == 404 and r.json["message"] == 'namespaces "gone" not found'
    assert (await api.call("DELETE", f"{cms}/cm")).status == 200        # deleting is always allowed


async def test_update_in_a_terminating_namespace_is_allowed(api: Any) -> None:
    """Only CREATE is refused in a terminating namespace: controllers finish their work there."""
    assert (await api.create("/api/v1/namespaces", {"metadata": {"name": "term"}})).status == 201
    cms = "/api/v1/namespaces/term/configmaps"
    assert (await api.create(cms, api.configmap("cm"))).status == 201
    assert (await api.call("DELETE", "/api/v1/namespaces/term")).status == 200
    r = await api.call("PATCH", f"{cms}/cm", body={"data": {"k": "x"}}, headers={"content-type": MERGE})
    assert r.status == 200, r.json
    r = await api.create(cms, api.configmap("new"))
    assert r.status == 403 and "because it is being terminated" in r.json["message"]


class PodsOnly(Recorder):
    """A plugin declaring the one resource it acts on."""
    NAME = "PodsOnly"
    RESOURCES = frozenset({("", "pods")})


async def test_chain_calls_a_plugin_only_for_the_resources_it_declares(api: Any) -> None:
    rec = PodsOnly(api.server)
    api.server.admission.append(rec)       # a new plugin resets the routes worked out before
    assert (await api.create(api.CMS, api.configmap("cm"))).status == 201
    assert rec.calls() == []
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    r = await api.create("/api/v1/namespaces/default/pods", pod)
    assert r.status == 201, r.json
    assert rec.calls() == [("admit", "CREATE", "pods", "", "Pod"), ("validate", "CREATE", "pods", "", "Pod")]


def test_chain_routes_each_request_to_the_plugins_that_act_on_it(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which plugins a request reaches (the shipped ones, in order): a pod binding or status
    write concerns none of the pod plugins; a pod create all of them."""
    from kubeplane.apiserver.admission import Operation
    from kubeplane.apiserver.admission.chain import Chain

    monkeypatch.setattr(api.server, "options", dataclasses.replace(api.server.options, disable_admission_plugins=()))
    chain = Chain(api.server, enabled=("NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition",
                                       "PodSecurity", "Priority", "DefaultTolerationSeconds", "DefaultStorageClass",
                                       "DefaultIngressClass", "ResourceQuota"))

    def route(op: Operation, group: str, resource: str, sub: str = "") -> tuple[list[str], list[str]]:
        a = Attributes(op, group, "v1", resource, "Pod", "default", "p", subresource=sub)
        admitters, validators = chain._route(a)
        return [p.NAME for p in admitters], [p.NAME for p in validators]

    assert route(Operation.CREATE, "", "pods") == (
        ["NamespaceLifecycle", "LimitRanger", "ServiceAccount", "Priority", "DefaultTolerationSeconds"],
        ["LimitRanger", "ServiceAccount", "PodSecurity", "ResourceQuota"])    # Priority validates PriorityClasses only
    assert route(Operation.CREATE, "scheduling.k8s.io", "priorityclasses") == (
        ["NamespaceLifecycle"], ["Priority", "ResourceQuota"])
    assert route(Operation.CREATE, "", "pods", "binding") == (["NamespaceLifecycle"], ["ResourceQuota"])
    assert route(Operation.UPDATE, "", "pods", "status") == (["NamespaceLifecycle"], ["ResourceQuota"])
    assert route(Operation.UPDATE, "", "pods", "ephemeralcontainers") == (
        ["NamespaceLifecycle", "ServiceAccount"], ["ServiceAccount", "PodSecurity", "ResourceQuota"])
    assert route(Operation.CREATE, "", "nodes") == (["NamespaceLifecycle", "TaintNodesByCondition"], ["ResourceQuota"])
    assert route(Operation.CREATE, "apps", "deployments") == (["NamespaceLifecycle"], ["PodSecurity", "ResourceQuota"])
    assert route(Operation.UPDATE, "apps", "deployments", "status") == (["NamespaceLifecycle"], ["ResourceQuota"])


async def test_legacy_bindings_and_eviction_are_admitted(api: Any, recorder: Recorder) -> None:
    """A POST to the bindings collection is a create of bindings; an eviction a create of
    pods/eviction with the Eviction, and its own pod write and delete are not admitted again
    (upstream: LegacyBindingREST, EvictionREST with rest.ValidateAllObjectFunc)."""
    assert (await api.create(api.PODS, api.pod("p"))).status == 201
    recorder.seen.clear()
    r = await api.create("/api/v1/namespaces/default/bindings", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}})
    assert r.status == 201, r.json
    r = await api.create(f"{api.PODS}/p/eviction", {"apiVersion": "policy/v1", "kind": "Eviction",
                                                    "metadata": {"name": "p"}})
    assert r.status == 201, r.json
    assert recorder.calls() == [
        ("admit", "CREATE", "bindings", "", "Binding"),
        ("validate", "CREATE", "bindings", "", "Binding"),
        ("admit", "CREATE", "pods", "eviction", "Eviction"),
        ("validate", "CREATE", "pods", "eviction", "Eviction"),
    ]
    evicted = recorder.seen[-1][1]
    assert evicted.name == "p" and evicted.obj is not None and evicted.obj["kind"] == "Eviction"
    assert (await api.get(f"{api.PODS}/p")).json["metadata"]["deletionTimestamp"]
    recorder.refuse = "validate"
    assert (await api.create(api.PODS, api.pod("q"))).status == 403
    recorder.refuse = ""
    assert (await api.create(api.PODS, api.pod("q"))).status == 201
    recorder.refuse = "admit"
    r = await api.create(f"{api.PODS}/q/eviction", {"apiVersion": "policy/v1", "kind": "Eviction",
                                                    "metadata": {"name": "q"}})
    assert r.status == 403 and r.json["message"].endswith("refused by the recorder")
    assert not (await api.get(f"{api.PODS}/q")).json["metadata"].get("deletionTimestamp")


class Gate(Recorder):
    """A plugin driven by objects users write (as the webhooks and policies are): ConfigMaps in
    namespace "gates"; it refuses every write while one exists and is dormant while none does."""
    NAME = "Gate"
    CONFIG_PREFIX = "/registry/configmaps/gates/"

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        from kubeplane.apiserver.admission.plugins._index import PrefixIndex
        self.index = PrefixIndex(api.storage, self.CONFIG_PREFIX)
        self.asked = 0

    def dormant(self) -> bool | None:
        self.asked += 1
        generation = self.index.poll()
        return None if generation is None else not self.index.polled()

    async def validate(self, a: Attributes) -> None:
        await super().validate(a)
        if a.namespace != "gates" and await self.index.all():
            raise self.forbid(a)


async def test_chain_leaves_a_dormant_plugin_out_until_its_configuration_is_written(api: Any) -> None:
    """The chain asks a CONFIG_PREFIX plugin whether it is dormant only after a write under its
    prefix (or while it cannot tell), and a configuration written just before a request applies
    to that request, as when the plugin is asked every time."""
    gate = Gate(api.server)
    api.server.admission.append(gate)
    assert (await api.create(api.CMS, api.configmap("a"))).status == 201      # not listed yet: asked
    assert gate.calls() == [("admit", "CREATE", "configmaps", "", "ConfigMap"),
                            ("validate", "CREATE", "configmaps", "", "ConfigMap")]
    for name in ("b", "c", "d"):
        assert (await api.create(api.CMS, api.configmap(name))).status == 201
    assert len(gate.calls()) == 2                 # dormant from the second write on
    asked = gate.asked
    assert asked <= 3                             # not asked again while nothing was written under its prefix
    assert (await api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": "gates"}})).status == 201
    r = await api.create("/api/v1/namespaces/gates/configmaps", api.configmap("on"))
    assert r.status == 201, r.json
    assert gate.asked == asked                    # the namespace and the config map came after the check
    r = await api.create(api.CMS, api.configmap("e"))
    assert r.status == 403 and r.json["message"].endswith("refused by the recorder")
    assert gate.asked == asked + 1
    assert (await api.call("DELETE", "/api/v1/namespaces/gates/configmaps/on")).status == 200
    gate.seen.clear()
    assert (await api.create(api.CMS, api.configmap("f"))).status == 201
    assert (await api.create(api.CMS, api.configmap("g"))).status == 201
    assert gate.calls() == []                     # dormant again at once


async def test_webhook_and_policy_plugins_are_left_out_while_nothing_is_configured(api: Any) -> None:
    from kubeplane.apiserver.admission import Operation
    dynamic = {"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ValidatingAdmissionPolicy",
               "MutatingAdmissionPolicy"}
    chain = api.server.admission
    a = Attributes(Operation.CREATE, "", "v1", "configmaps", "ConfigMap", "default", "x")
    for name in ("a", "b"):      # the first write lists the configurations; the second finds none
        assert (await api.create(api.CMS, api.configmap(name))).status == 201
    assert not dynamic & {p.NAME for phase in chain._route(a) for p in phase}
    hook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "deny"},
            "webhooks": [{"name": "deny.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                          "clientConfig": {"url": "https://127.0.0.1:1/deny"}, "failurePolicy": "Fail",
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]}]}]}
    r = await api.create("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", hook)
    assert r.status == 201, r.json
    r = await api.create(api.CMS, api.configmap("c"))      # the webhook cannot be reached: Fail
    assert r.status == 500 and 'failed calling webhook "deny.example.com"' in r.json["message"], r.json
    assert "ValidatingAdmissionWebhook" in {p.NAME for p in chain._route(a)[1]}
    await chain.close()                                     # the webhook plugin's HTTP session


class DecidesNow(Recorder):
    """Decides pods without waiting (admit_now/validate_now); anything else through admit/validate."""
    NAME = "DecidesNow"

    def admit_now(self, a: Attributes) -> bool:
        if a.resource != "pods":
            return False
        self.seen.append(("admit_now", a))
        return True

    def validate_now(self, a: Attributes) -> bool:
        if a.resource != "pods":
            return False
        self.seen.append(("validate_now", a))
        if self.refuse == "validate_now":
            raise self.forbid(a)
        return True


async def test_a_plugin_deciding_without_waiting_is_not_awaited(api: Any) -> None:
    """Plugin.admit_now/validate_now answer True: the chain does not call admit/validate; False:
    it awaits them, and the plugins after keep the chain's order either way."""
    now, after = DecidesNow(api.server), Recorder(api.server)
    api.server.admission.append(now)
    api.server.admission.append(after)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert (await api.create("/api/v1/namespaces/default/pods", pod)).status == 201
    assert [c[0] for c in now.calls()] == ["admit_now", "validate_now"]
    assert [c[0] for c in after.calls()] == ["admit", "validate"]
    assert (await api.create(api.CMS, api.configmap("cm"))).status == 201
    assert [c[0] for c in now.calls()[2:]] == ["admit", "validate"]
    now.refuse = "validate_now"                      # a refusal without waiting is the chain's answer
    r = await api.create("/api/v1/namespaces/default/pods", {**pod, "metadata": {"name": "q"}})
    assert r.status == 403 and "refused by the recorder" in r.json["message"]
    assert (await api.get("/api/v1/namespaces/default/pods/q")).status == 404


async def test_namespace_lifecycle_sees_a_namespace_written_just_before(api: Any) -> None:
    """NamespaceLifecycle reads namespaces from a watch-fed index once it has listed them: a
    namespace created, then marked terminating, then deleted is seen at each step at once."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert (await api.create("/api/v1/namespaces/default/pods", pod)).status == 201     # lists them
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}
    assert (await api.create("/api/v1/namespaces", ns)).status == 201
    assert (await api.create("/api/v1/namespaces/fresh/pods", pod)).status == 201
    assert (await api.call("DELETE", "/api/v1/namespaces/fresh")).status == 200     # terminating: finalizer
    r = await api.create("/api/v1/namespaces/fresh/pods", {**pod, "metadata": {"name": "q"}})
    assert r.status == 403 and "because it is being terminated" in r.json["message"], r.json
    r = await api.create("/api/v1/namespaces/missing/pods", pod)
    assert r.status == 404 and r.json["message"] == 'namespaces "missing" not found', r.json
