"""Volume controllers: the PersistentVolume binder and the simulated local-path provisioner."""
