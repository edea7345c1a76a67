"""The bootstrap token controllers kubeadm turns on (--controllers=*,bootstrapsigner,tokencleaner):
the token cleaner deletes expired bootstrap token Secrets, the bootstrap signer signs
kube-public/cluster-info with every signing token. Upstream: pkg/controller/bootstrap."""
from .bootstrapsigner import Signer
from .tokencleaner import TokenCleaner

__all__ = ["Signer", "TokenCleaner"]
