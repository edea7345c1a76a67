"""apiextensions.k8s.io/v1 kinds."""
