"""The Horizontal Pod Autoscaler. Upstream: pkg/controller/podautoscaler (horizontal.go: the
controller; replica_calculator.go; metrics/: what it reads from metrics.k8s.io; clients.py here:
the target's /scale and the PodMetrics fetch)."""
