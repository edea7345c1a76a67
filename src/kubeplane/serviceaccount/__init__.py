"""Service account tokens (minting; authentication with them is issue 12).
Upstream: pkg/serviceaccount."""
