"""The garbage collector: owner graph, background/foreground/orphan deletion.

Upstream: pkg/controller/garbagecollector.
"""
from .garbagecollector import GarbageCollector
from .graph import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Node, ObjectReference
from .graph_builder import GraphBuilder, monitored_resources

__all__ = ["FOREGROUND_FINALIZER", "ORPHAN_FINALIZER", "GarbageCollector", "GraphBuilder", "Node", "ObjectReference",
           "monitored_resources"]
