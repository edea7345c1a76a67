"""client-go's tools/cache: stores, indexers, reflectors, shared informers, listers."""
from .listers import GenericLister, GenericNamespaceLister
from .reflector import ListerWatcher, Reflector
from .shared_informer import (
    ResourceEventHandler, ResourceEventHandlerFuncs, SharedIndexInformer, wait_for_cache_sync,
)
from .store import (
    NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer, meta_namespace_index_func, meta_namespace_key_func,
    object_from_tombstone, split_meta_namespace_key,
)

__all__ = [
    "NAMESPACE_INDEX", "DeletedFinalStateUnknown", "Indexer", "GenericLister", "ListerWatcher", "GenericNamespaceLister",
    "Reflector", "ResourceEventHandler", "ResourceEventHandlerFuncs", "SharedIndexInformer",
    "meta_namespace_index_func", "meta_namespace_key_func", "object_from_tombstone", "split_meta_namespace_key",
    "wait_for_cache_sync",
]
