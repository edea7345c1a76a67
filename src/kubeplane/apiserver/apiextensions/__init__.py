"""CustomResourceDefinitions: a CRD becomes a served kind at runtime (upstream's
apiextensions-apiserver, run inside the one API server as kube-apiserver does).

schema          the structural schema library (validation, pruning, defaulting of custom objects)
celvalidation   x-kubernetes-validations: CEL rules compiled on CRD writes, run on custom objects
customresource  a CRD's served versions as registry definitions (customresource_handler.go)
controller      the CRD controllers: names, establishing, finalizer, and the serving of the kinds
scale           the scale subresource of custom objects
selectable      selectableFields: field selectors, and their validation on the CRD
"""
from __future__ import annotations

from . import selectable as _selectable  # noqa: F401  (binds the CRD validation's selectableFields check)
