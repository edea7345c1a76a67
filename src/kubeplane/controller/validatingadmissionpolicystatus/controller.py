"""Keeps each ValidatingAdmissionPolicy's status current: observedGeneration, and
typeChecking.expressionWarnings from the type check of its expressions against the schemas of
the kinds it matches (apiserver/cel/typechecking.py).

Upstream: Controller.reconcile (pkg/controller/validatingadmissionpolicystatus/controller.go):
nothing to do while status.observedGeneration is the policy's generation; otherwise the
warnings are written to the status subresource as the field manager
"validatingadmissionpolicy-status-controller", by server-side apply with force. Added and updated policies are
enqueued by name; a deleted one is left alone. The type checker is given to the controller,
as upstream's NewController takes one: it is the API server's (apiserver/cel/typechecking.py,
which cmd wires in), and a controller does not import the server.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec

from ...api import errors
from ...client.informers import ResourceInformer
from ...client.tools.cache import ResourceEventHandlerFuncs
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import forget_or_retry, process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

CONTROLLER_NAME = "validatingadmissionpolicy-status-controller"
Obj = dict[str, Any]


TypeChecker = Callable[[Obj], list[Obj]]     # a policy -> its expressionWarnings


class Controller:
    def __init__(self, policy_informer: ResourceInformer[Any], client: Any, type_checker: TypeChecker, *,
                 clock: Clock = REAL_CLOCK) -> None:
        self.client = client                       # a Clientset
        self.type_checker = type_checker
        self.lister = policy_informer.lister()
        self.informer = policy_informer.informer()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="validatingadmissionpolicy-status", clock=clock))
        self.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.enqueue_policy, update_func=lambda old, new: self.enqueue_policy(new)))

    def enqueue_policy(self, policy: Any) -> None:
        """Upstream: enqueuePolicy (policies are cluster-scoped: the key is the name)."""
        name = _obj(policy).get("metadata", {}).get("name")
        if name:
            self.queue.add(name)

    async def run(self, workers: int = 1) -> None:
        await run_workers(self.queue, (self.informer,), self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        forget_or_retry(self.queue, log, err, key)

    async def sync(self, key: str) -> None:
        try:
            policy = _obj(self.lister.get(key))
        except errors.NotFound:
            return                                 # being deleted: nothing to do
        await self.reconcile(policy)

    async def reconcile(self, policy: Obj) -> None:
        """Upstream: reconcile."""
        generation = (policy.get("metadata") or {}).get("generation") or 0
        if generation <= ((policy.get("status") or {}).get("observedGeneration") or 0):
            return
        warnings = self.type_checker(policy)
        status = {"observedGeneration": generation, "typeChecking": {"expressionWarnings": warnings}}
        name = policy["metadata"]["name"]
        apply = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                 "metadata": {"name": name}, "status": status}
        await self.client.admissionregistration_v1().validatingadmissionpolicies().patch(
            name, apply, "apply", subresource="status", field_manager=CONTROLLER_NAME, force=True)


def _obj(o: Any) -> Obj:
    return o if isinstance(o, dict) else msgspec.to_builtins(o)
