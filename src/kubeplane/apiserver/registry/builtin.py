"""The built-in resources: importing a kind's module registers it (discovery shows them in
this order, the core group first, as upstream). Adding a kind: docs/adding-a-kind.md."""
# ruff: noqa: F401  (imported to register; the order is discovery's)
from .core import namespace, pod, node, event, configmap, secret
from .core.service import strategy as service
from .core import serviceaccount
from .apps import deployment, replicaset
from .coordination import lease
from .events import event as events_event
from .autoscaling import scale
from .core import persistentvolume, persistentvolumeclaim, limitrange, resourcequota, endpoints, componentstatus
from .storage import storageclass, volumeattachment, csinode, csidriver, csistoragecapacity, volumeattributesclass
from .discovery import endpointslice
from .networking import ingress, ingressclass, networkpolicy, servicecidr, ipaddress
from .policy import poddisruptionbudget
from .autoscaling import horizontalpodautoscaler
from .scheduling import priorityclass
from .node import runtimeclass
from .core import replicationcontroller, podtemplate
from .apps import statefulset, daemonset, controllerrevision
from .batch import job, cronjob
from .apiregistration import apiservice
from .apiextensions import customresourcedefinition
from .authentication import reviews as authentication_reviews
from .authorization import reviews as authorization_reviews
from .certificates import csr, clustertrustbundle, podcertificaterequest
from .rbac import clusterrolebinding, clusterrole, rolebinding, role
from .admissionregistration import mutatingadmissionpolicy, mutatingwebhookconfiguration
from .admissionregistration import validatingadmissionpolicy, validatingwebhookconfiguration
from .flowcontrol import flowschema
from .resource import kinds as resource_kinds
from .storagemigration import storageversionmigration
from .. import metricsapi  # metrics.k8s.io (metrics-server's upstream): registered after every built-in group
