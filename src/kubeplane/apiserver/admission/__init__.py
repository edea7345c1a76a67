"""Admission: a chain of plugins, in upstream's order, run on every write.

interface.py holds what a plugin sees (Attributes) and implements (Plugin); chain.py the order
and the Chain the API server runs; plugins/ one module per plugin (each registers itself).
Upstream: staging/src/k8s.io/apiserver/pkg/admission and plugin/pkg/admission.
"""
from .chain import Chain, register
from .interface import CONNECT, CREATE, DELETE, UPDATE, Attributes, Operation, Plugin, forbidden

__all__ = ["Attributes", "CONNECT", "CREATE", "Chain", "DELETE", "Operation", "Plugin", "UPDATE", "forbidden",
           "register"]
