# kopf's examples/02-children/example.py (https://github.com/nolar/kopf, 60d02aefb11c98cda6afab483f7953f6bb2ab9d6);
# Copyright (c) 2020-2025 Sergey Vasilyev, (c) 2019-2020 Zalando SE; MIT licence: ../README.md.
# Adapted: the child pod is made with the official kubernetes client instead of pykube-ng.
from typing import Any

import kopf
import kubernetes
import yaml


@kopf.on.create('kopfexamples')
def create_fn(spec: kopf.Spec, **_: Any) -> Any:

    # Render the pod yaml with some spec fields used in the template.
    doc = yaml.safe_load(f"""
        apiVersion: v1
        kind: Pod
        spec:
          containers:
          - name: the-only-one
            image: busybox
            command: ["sh", "-x", "-c"]
            args:
            - |
              echo "FIELD=$FIELD"
              sleep {spec.get('duration', 0)}
            env:
            - name: FIELD
              value: {spec.get('field', 'default-value')}
    """)

    # Make it our child: assign the namespace, name, labels, owner references, etc.
    kopf.adopt(doc)

    # Actually create an object by requesting the Kubernetes API.
    kubernetes.config.load_kube_config()  # KUBECONFIG
    api = kubernetes.client.CoreV1Api()
    pod = api.create_namespaced_pod(namespace=doc['metadata']['namespace'], body=doc)
    api.api_client.close()

    # Update the parent's status.
    return {'children': [pod.metadata.uid]}
