"""The ReplicationController manager: the ReplicaSet controller run over ReplicationControllers
through conversion adapters, as upstream does.

Upstream: pkg/controller/replication/replication_controller.go (NewReplicationManager)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...utils.clock import REAL_CLOCK, Clock
from .. import controller_utils as cu
from ..replicaset.replica_set import ReplicaSetController, ReplicaSetControllerOptions
from .conversion import ClientsetAdapter, InformerAdapter

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import PodLister, ReplicationControllerLister
    from ...client.tools.record import EventRecorder

# Upstream: controllerKind = v1.SchemeGroupVersion.WithKind("ReplicationController").
REPLICATION_CONTROLLER_KIND = cu.GroupVersionKind("", "v1", "ReplicationController")
CONTROLLER_NAME = "replicationcontroller-controller"


class ReplicationManager(ReplicaSetController):
    """Upstream: ReplicationManager (a ReplicaSetController with RC adapters)."""

    def __init__(self, pod_informer: ResourceInformer[PodLister],
                 rc_informer: ResourceInformer[ReplicationControllerLister], client: Clientset, *,
                 clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 options: ReplicaSetControllerOptions = ReplicaSetControllerOptions()) -> None:
        adapter: Any = InformerAdapter(rc_informer)
        super().__init__(adapter, pod_informer, ClientsetAdapter(client), clock=clock,  # type: ignore[arg-type]
                         recorder=recorder, options=options)
        self.gvk = REPLICATION_CONTROLLER_KIND
        self.kind = REPLICATION_CONTROLLER_KIND.kind
        self.queue = RateLimitingQueue(RateLimitingQueueOptions(name="replicationmanager", clock=clock))
