"""resource.k8s.io/v1 kinds (dynamic resource allocation)."""
