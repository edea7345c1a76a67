"""Control-plane bootstrap controllers that run inside the API server (upstream: pkg/controlplane/controller/)."""
