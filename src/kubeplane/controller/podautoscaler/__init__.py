"""The Horizontal Pod Autoscaler. Upstream: pkg/controller/podautoscaler (so far: the replica
calculator and the metric helpers it needs; the controller is not wired yet)."""
