"""Stateless helpers of the DaemonSet controller. Upstream: pkg/controller/daemon/util."""
