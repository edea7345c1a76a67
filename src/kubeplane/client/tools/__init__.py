"""Client tools, mirroring client-go's tools/: cache (informers), record (events),
leaderelection (Lease-based leader election).

Each subpackage is imported on its own (`from kubeplane.client.tools.record import ...`);
this module imports none of them.
"""
