"""Controllers: shared helpers (controller_utils, controller_ref_manager) and one package per
controller (replicaset, deployment, ...). Upstream: pkg/controller."""
