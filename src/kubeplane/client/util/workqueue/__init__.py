"""Work queues for controllers.

The queue is:
* Fair: items are processed in the order in which they are added.
* Stingy: a single item is never processed by two workers at once, and an item added
  several times before it is processed is processed once.
* Multi-producer, multi-consumer; an item may be re-added while it is being processed
  (it is handed out again after done()).
* Shutdown-aware: get() reports shutdown so workers can exit.

DelayingQueue adds add_after(); RateLimitingQueue adds add_rate_limited(), forget() and
num_requeues() on top of a RateLimiter. All durations are float seconds on an injected
Clock.

Upstream: staging/src/k8s.io/client-go/util/workqueue/doc.go
"""
from .default_rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from .delaying_queue import DelayingInterface, DelayingQueue, DelayingQueueOptions
from .queue import Interface, Queue, QueueOptions
from .rate_limiting_queue import (
    RateLimitingInterface,
    RateLimitingQueue,
    RateLimitingQueueOptions,
)

__all__ = [
    "BucketRateLimiter",
    "DelayingInterface",
    "DelayingQueue",
    "DelayingQueueOptions",
    "Interface",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "QueueOptions",
    "RateLimiter",
    "RateLimitingInterface",
    "RateLimitingQueue",
    "RateLimitingQueueOptions",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]
