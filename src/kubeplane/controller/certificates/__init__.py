"""Certificate controllers. Upstream: pkg/controller/certificates."""
