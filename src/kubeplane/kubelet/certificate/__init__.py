"""The kubelet's client certificate. Upstream: pkg/kubelet/certificate."""
