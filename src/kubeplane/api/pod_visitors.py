"""What a pod spec refers to, visited as upstream's pod visitors do (a dict spec, as stored).

Upstream: pkg/api/v1/pod/util.go (VisitPodSecretNames).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Obj = dict[str, Any]

# Volume sources that name a secret, and where. Upstream: VisitPodSecretNames (pkg/api/pod/util.go).
_VOLUME_SECRET_REFS = (("azureFile", "secretName"), ("cephfs", "secretRef"), ("cinder", "secretRef"),
                       ("flexVolume", "secretRef"), ("rbd", "secretRef"), ("secret", "secretName"),
                       ("scaleIO", "secretRef"), ("iscsi", "secretRef"), ("storageos", "secretRef"),
                       ("csi", "nodePublishSecretRef"))


def pod_secret_names(spec: Obj) -> Iterator[str]:
    """Every secret the pod spec names. Upstream: VisitPodSecretNames (all containers)."""
    for ref in spec.get("imagePullSecrets") or ():
        yield ref.get("name", "")
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or ():
            for env_from in c.get("envFrom") or ():
                if env_from.get("secretRef") is not None:
                    yield env_from["secretRef"].get("name", "")
            for env in c.get("env") or ():
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref is not None:
                    yield ref.get("name", "")
    for v in spec.get("volumes") or ():
        for source, field in _VOLUME_SECRET_REFS:
            if (src := v.get(source)) is None:
                continue
            if field == "secretName":                  # a string, visited whenever the source is set
                yield src.get(field, "")
            elif src.get(field) is not None:           # a reference, visited when set
                yield src[field].get("name", "")
        for p in (v.get("projected") or {}).get("sources") or ():
            if p.get("secret") is not None:
                yield p["secret"].get("name", "")
