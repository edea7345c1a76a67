"""The CRD controllers, run inside the API server as upstream's apiextensions-apiserver runs them:

* names (controller/status/naming_controller.go): status.acceptedNames and the NamesAccepted
  condition (NoConflicts, or PluralConflict/SingularConflict/ShortNamesConflict/KindConflict/
  ListKindConflict with `"foos" is already in use`) against the other CRDs of the group;
* API approval (controller/apiapproval): the KubernetesAPIApprovalPolicyConformant condition
  of a CRD in a protected group (apiapproval.py);
* establishing (controller/establish/establishing_controller.go): Established
  InitialNamesAccepted once the names are accepted;
* serving (apiserver/customresource_handler.go, customresource_discovery_controller.go): a CRD
  whose names are accepted has its served versions registered (registry, discovery, OpenAPI)
  at once, and unregistered when it goes;
* finalizer (controller/finalizer/crd_finalizer.go): a CRD marked for deletion has every
  custom object deleted, then its customresourcecleanup finalizer removed;
* APIServices (crdregistration_controller.go): the Local APIService of every group-version a
  CRD serves, after each batch of syncs (apiservices.py).

It reads CRDs straight from storage (list, then watch: it lives in the server) and writes their
status through the generic store, as the /status subresource (admission, validation). One
key per CRD name in a dirty set; a sync is level-triggered and retried after a second on error.
"""
from __future__ import annotations

import asyncio
import logging
from types import ModuleType
from typing import TYPE_CHECKING

from ...api import errors
from ...storage.interface import Compacted, KeyValue
from .. import enablement
from ..authentication.user import APISERVER
from ..registry import REGISTRY, store
from ..registry.apiextensions.customresourcedefinition import CUSTOM_RESOURCE_DEFINITIONS as CRDS
from ..registry.definition import Obj, ResourceDefinition
from ..registry.deletion import DeleteOptions, delete
from . import apiapproval, apiservices, helpers
from .helpers import version_priority

if TYPE_CHECKING:
    from ..admission.webhook.client import ClientManager
    from ..server import APIServer

log = logging.getLogger(__name__)
RETRY_SECONDS = 1.0


class CRDController:
    """Dirty set: CRD names to sync; _serving: CRD name -> its registered definitions.

    Invariant: every definition in _serving is registered in REGISTRY and in enablement's
    runtime table, and nothing else from this controller is."""

    def __init__(self, api: APIServer) -> None:
        self.api = api
        self._dirty: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._serving: dict[str, list[ResourceDefinition]] = {}
        self._serving_rv: dict[str, object] = {}    # the CRD state they were made from (_fingerprint)
        self._crds: dict[str, Obj] = {}         # the last seen CRDs, by name (the informer's store)
        self._clients: ClientManager | None = None     # conversion webhooks' client, made when first needed

    # --- the loop ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Sync every stored CRD now (so their kinds are served before the server is ready)."""
        kvs, self._rev = await self.api.storage.list(CRDS.prefix)
        for kv in kvs:
            self._crds[kv.obj["metadata"]["name"]] = kv.obj
        for name in list(self._crds):
            await self._sync_logged(name)
        await self._sync_api_services()

    async def run(self) -> None:
        """Watch the CRDs and sync each changed one (and its group's others) until cancelled."""
        watcher = asyncio.ensure_future(self._watch())
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._dirty:
                    name = next(iter(self._dirty))
                    del self._dirty[name]
                    if not await self._sync_logged(name):
                        self._retry_later(name)
                await self._sync_api_services()
        finally:
            watcher.cancel()
            if self._clients is not None:
                await self._clients.close()

    async def _watch(self) -> None:
        while True:
            try:
                async for ev in self.api.storage.watch(CRDS.prefix, self._rev):
                    self._rev = ev.revision
                    self._observe(ev.kv, ev.type == "DELETED")
            except Compacted:
                kvs, self._rev = await self.api.storage.list(CRDS.prefix)
                self._crds = {kv.obj["metadata"]["name"]: kv.obj for kv in kvs}
                self._enqueue(*self._crds, *self._serving)
            await self.api.clock.sleep(RETRY_SECONDS)     # the watch ended (storage closing)

    def _observe(self, kv: KeyValue, deleted: bool) -> None:
        name = kv.key.rsplit("/", 1)[1]
        if deleted:
            self._crds.pop(name, None)
        else:
            self._crds[name] = kv.obj
        group = (kv.obj.get("spec") or {}).get("group")
        self._enqueue(name, *(n for n, c in self._crds.items() if (c.get("spec") or {}).get("group") == group))

    def _enqueue(self, *names: str) -> None:
        for n in names:
            self._dirty[n] = None
        self._wake.set()

    def _retry_later(self, name: str) -> None:
        self.api.clock.after_func(RETRY_SECONDS, self._enqueue, name)

    async def _sync_logged(self, name: str) -> bool:
        try:
            await self.sync(name)
        except errors.Conflict:
            self._enqueue(name)                 # a newer CRD is on its way through the watch
        except Exception:
            log.exception("Error syncing CustomResourceDefinition", extra={"crd": name})
            return False
        return True

    async def _sync_api_services(self) -> None:
        """The Local APIServices of the CRDs' group-versions (apiservices.py), where APIService
        is served."""
        if not enablement.enabled("apiregistration.k8s.io", "v1", "apiservices"):
            return
        try:
            await apiservices.sync_api_services(self.api, list(self._crds.values()))
        except Exception:
            log.exception("Error syncing the APIServices of CustomResourceDefinitions")
            self.api.clock.after_func(RETRY_SECONDS, self._wake.set)

    # --- one CRD ----------------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        """Names, establishing, serving and finalizing for one CRD, from the stored object."""
        kv = await self.api.storage.get(CRDS.key("", name))
        if kv is None:
            self._crds.pop(name, None)
            self.unserve(name)
            return
        crd = kv.obj
        self._crds[name] = crd
        if crd["metadata"].get("deletionTimestamp"):
            for d in self._serving.get(name, []):
                if isinstance(d.strategy, _customresource().CustomResourceStrategy):
                    d.strategy.terminating = True       # no new objects from now on
            if helpers.has_finalizer(crd, helpers.CLEANUP_FINALIZER):
                await self.finalize(crd)
            return
        crd = await self.update_names(crd) or crd
        crd = await self.update_api_approval(crd) or crd
        if not helpers.is_condition_true(crd, helpers.NAMES_ACCEPTED) and \
                not helpers.is_condition_true(crd, helpers.ESTABLISHED):
            self.unserve(name)
            return
        self.serve(crd)                         # served before Established is written, as upstream
        await self.establish(crd)

    async def _update_status(self, crd: Obj, new: Obj) -> Obj:
        """Write new as crd's /status; returns what was stored."""
        stored, _ = await store.update(self.api, store.WriteOptions(user=APISERVER, field_manager="kube-apiserver"), CRDS, new, crd,
                                       int(crd["metadata"]["resourceVersion"]), "status", [])
        self._crds[crd["metadata"]["name"]] = stored
        return stored

    async def update_names(self, crd: Obj) -> Obj | None:
        """Upstream: NamingConditionController.sync — the CRD as written, None when unchanged."""
        spec_names = (crd.get("spec") or {}).get("names") or {}
        status = crd.get("status") or {}
        if spec_names == (status.get("acceptedNames") or {}):
            return None
        names, accepted, established = calculate_names_and_conditions(crd, self._crds.values())
        current = helpers.find_condition(crd, helpers.NAMES_ACCEPTED) or {}
        if (status.get("acceptedNames") or {}) == names and all(
                current.get(k) == accepted[k] for k in ("status", "reason", "message")):
            return None
        new = _copy(crd)
        new["status"]["acceptedNames"] = names
        now = self.api.now()
        helpers.set_condition(new, helpers.NAMES_ACCEPTED, accepted["status"], accepted["reason"], accepted["message"], now)
        helpers.set_condition(new, helpers.ESTABLISHED, established["status"], established["reason"],
                              established["message"], now)
        return await self._update_status(crd, new)

    async def update_api_approval(self, crd: Obj) -> Obj | None:
        """Upstream: KubernetesAPIApprovalPolicyConformantConditionController.sync — the CRD as
        written, None when unchanged (or not in a protected group)."""
        cond = apiapproval.calculate_condition(crd)
        if cond is None:
            return None
        current = helpers.find_condition(crd, apiapproval.CONDITION) or {}
        if (current.get("status"), current.get("reason"), current.get("message")) == cond:
            return None
        new = _copy(crd)
        helpers.set_condition(new, apiapproval.CONDITION, *cond, self.api.now())
        return await self._update_status(crd, new)

    async def establish(self, crd: Obj) -> Obj | None:
        """Upstream: EstablishingController.sync — the CRD as written, None when unchanged."""
        if not helpers.is_condition_true(crd, helpers.NAMES_ACCEPTED) or helpers.is_condition_true(crd, helpers.ESTABLISHED):
            return None
        new = _copy(crd)
        helpers.set_condition(new, helpers.ESTABLISHED, "True", "InitialNamesAccepted",
                              "the initial names have been accepted", self.api.now())
        return await self._update_status(crd, new)

    # --- serving ----------------------------------------------------------------------------

    def serve(self, crd: Obj) -> None:
        """Register crd's served versions (anew whenever the CRD changed); a version whose path
        a built-in kind or another CRD serves already is left out."""
        name, rv = crd["metadata"]["name"], _fingerprint(crd)
        if name in self._serving and self._serving_rv.get(name) == rv:
            return
        for d in self._serving.pop(name, []):
            REGISTRY.unregister(d)
            _customresource().forget_schema_definition(d.definition)
        mine = []
        clients = self.conversion_clients() if _webhook_strategy(crd) else None
        for d in sorted(_customresource().served_definitions(crd, clients), key=lambda d: version_priority(d.version)):
            if REGISTRY.lookup(d.group, d.version, d.plural) is not None:
                log.warning("CustomResourceDefinition version not served: the path is taken",
                            extra={"crd": name, "version": d.version})
                _customresource().forget_schema_definition(d.definition)
                continue
            REGISTRY.register(d)
            mine.append(d)
        self._serving[name], self._serving_rv[name] = mine, rv
        self._publish()

    def conversion_clients(self) -> ClientManager:
        """The HTTPS client of conversion webhooks: the admission webhooks' client without
        credentials (upstream: the conversion factory's NewDefaultAuthenticationInfoResolver(""));
        imported when a CRD first asks for it, as the admission plugins import it."""
        if self._clients is None:
            from ..admission.webhook.client import ClientManager
            self._clients = ClientManager(self.api)
        return self._clients

    def unserve(self, name: str) -> None:
        self._serving_rv.pop(name, None)
        for d in self._serving.pop(name, []):
            REGISTRY.unregister(d)
            _customresource().forget_schema_definition(d.definition)
        self._publish()

    def unserve_all(self) -> None:
        """Stop serving every CRD's kinds (the registry is the process's; testing/fake.py's close)."""
        for name in list(self._serving):
            self.unserve(name)

    def _publish(self) -> None:
        enablement.set_runtime({(d.group, d.version, d.plural): d for defs in self._serving.values() for d in defs})

    # --- finalizer --------------------------------------------------------------------------

    async def finalize(self, crd: Obj) -> None:
        """Upstream: CRDFinalizer.sync — InstanceDeletionInProgress, every custom object deleted
        (retried while some remain, e.g. held by their own finalizers), then the finalizer
        removed with the outcome as the Terminating condition."""
        new = _copy(crd)
        now = self.api.now()
        helpers.set_condition(new, helpers.TERMINATING, "True", "InstanceDeletionInProgress",
                              "CustomResource deletion is in progress", now)
        if new != crd:
            crd = await self._update_status(crd, new)
            new = _copy(crd)
        if helpers.is_condition_true(crd, helpers.ESTABLISHED):
            remaining = await self.delete_instances(crd)
            if remaining:
                new = _copy(crd)
                helpers.set_condition(new, helpers.TERMINATING, "True", "InstanceDeletionCheck",
                                      f"could not confirm zero CustomResources remaining: {remaining} remaining", now)
                if new != crd:
                    await self._update_status(crd, new)
                raise RuntimeError(f"{remaining} custom objects remain")    # retried after a second
            helpers.set_condition(new, helpers.TERMINATING, "False", "InstanceDeletionCompleted",
                                  "removed all instances", now)
        else:
            helpers.set_condition(new, helpers.TERMINATING, "False", "NeverEstablished",
                                  "resource was never established", now)
        helpers.remove_finalizer(new, helpers.CLEANUP_FINALIZER)
        await self._update_status(crd, new)

    async def delete_instances(self, crd: Obj) -> int:
        """Delete every stored custom object of crd (its storage version's definition does: the
        same key space for all versions); returns how many are left."""
        defs = self._serving.get(crd["metadata"]["name"]) or []
        if not defs:
            return 0
        d = defs[0]
        kvs, _ = await self.api.storage.list(d.prefix)
        for item in kvs:
            if item.obj["metadata"].get("deletionTimestamp"):
                continue
            try:
                await delete(self.api, APISERVER, d, item, DeleteOptions())
            except errors.NotFound:
                pass
        return await self.api.storage.count(d.prefix)


# --- names ----------------------------------------------------------------------------------------

def calculate_names_and_conditions(crd: Obj, all_crds: object) -> tuple[Obj, Obj, Obj]:
    """Upstream: NamingConditionController.calculateNamesAndConditions — the accepted names,
    the NamesAccepted condition and the Established condition to set."""
    group = (crd.get("spec") or {}).get("group")
    resources, kinds = _accepted_names_in_group(group, all_crds)  # type: ignore[arg-type]
    requested = (crd.get("spec") or {}).get("names") or {}
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    names = dict(accepted)
    cond = {"status": "Unknown", "reason": "", "message": ""}

    def check(key: str, used: set[str], reason: str) -> None:
        err = _equal_to_accepted_or_fresh(requested.get(key, ""), accepted.get(key, ""), used)
        if err:
            cond.update(status="False", reason=reason, message=err)
        elif requested.get(key, "") or key in names:
            names[key] = requested.get(key, "")

    check("plural", resources, "PluralConflict")
    check("singular", resources, "SingularConflict")
    if (requested.get("shortNames") or []) != (accepted.get("shortNames") or []):
        mine = set(accepted.get("shortNames") or [])
        errs = [e for s in requested.get("shortNames") or [] if s not in mine
                if (e := _equal_to_accepted_or_fresh(s, "", resources))]
        if errs:
            cond.update(status="False", reason="ShortNamesConflict", message=errs[0] if len(errs) == 1 else
                        "[" + ", ".join(errs) + "]")
        elif requested.get("shortNames"):
            names["shortNames"] = requested["shortNames"]
        else:
            names.pop("shortNames", None)
    check("kind", kinds, "KindConflict")
    check("listKind", kinds, "ListKindConflict")
    if requested.get("categories"):
        names["categories"] = requested["categories"]
    else:
        names.pop("categories", None)
    if cond["status"] == "Unknown":
        cond.update(status="True", reason="NoConflicts", message="no conflicts found")
    established = helpers.find_condition(crd, helpers.ESTABLISHED) or {
        "status": "False", "reason": "NotAccepted", "message": "not all names are accepted"}
    if established.get("status") != "True" and cond["status"] == "True":
        established = {"status": "False", "reason": "Installing", "message": "the initial names have been accepted"}
    return ({k: names[k] for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories") if k in names},
            cond, established)


def _accepted_names_in_group(group: str, all_crds: list[Obj]) -> tuple[set[str], set[str]]:
    """Upstream: getAcceptedNamesForGroup — the resource names and kinds the group's CRDs hold."""
    resources: set[str] = set()
    kinds: set[str] = set()
    for c in all_crds:
        if (c.get("spec") or {}).get("group") != group:
            continue
        a = (c.get("status") or {}).get("acceptedNames") or {}
        resources.update((a.get("plural", ""), a.get("singular", ""), *(a.get("shortNames") or [])))
        kinds.update((a.get("kind", ""), a.get("listKind", "")))
    return resources, kinds


def _equal_to_accepted_or_fresh(requested: str, accepted: str, used: set[str]) -> str:
    """Upstream: equalToAcceptedOrFresh — "" when fine, else the conflict's message."""
    if requested == accepted or requested not in used:
        return ""
    return f'"{requested}" is already in use'


# --- helpers --------------------------------------------------------------------------------------

def _fingerprint(crd: Obj) -> object:
    """What the served definitions are made of: the spec (its generation) and the accepted names."""
    return crd["metadata"].get("generation"), repr((crd.get("status") or {}).get("acceptedNames"))


def _customresource() -> ModuleType:
    """The custom kinds' module (and the schema library under it), imported when the first CRD
    is served: a server without CRDs starts without them."""
    from . import customresource
    return customresource


def _webhook_strategy(crd: Obj) -> bool:
    conversion = (crd.get("spec") or {}).get("conversion")
    return isinstance(conversion, dict) and conversion.get("strategy") == "Webhook"


def _copy(crd: Obj) -> Obj:
    import copy
    new = copy.deepcopy(crd)
    new.setdefault("status", {})
    return new


async def start_controller(api: APIServer) -> list[asyncio.Future[None]]:
    """Serve the stored CRDs now, then keep them in sync in the background (cancel to stop)."""
    controller = CRDController(api)
    api.crd_controller = controller     # type: ignore[attr-defined]
    await controller.start()
    return [asyncio.ensure_future(controller.run())]
