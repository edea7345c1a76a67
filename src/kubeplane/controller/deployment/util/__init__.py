"""Stateless helpers of the Deployment controller. Upstream: pkg/controller/deployment/util."""
