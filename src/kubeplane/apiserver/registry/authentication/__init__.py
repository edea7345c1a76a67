"""authentication.k8s.io/v1 kinds (create-only reviews)."""
