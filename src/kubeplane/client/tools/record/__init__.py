"""Event recording: EventBroadcaster, EventRecorder, the EventCorrelator and FakeRecorder.

Upstream: client-go tools/record
"""
from .event import (
    DEFAULT_SLEEP_DURATION,
    MAX_QUEUED_EVENTS,
    MAX_TRIES_PER_EVENT,
    EventBroadcaster,
    EventRecorder,
    EventSink,
    EventSinkImpl,
    RecorderImpl,
)
from .events_cache import (
    CorrelatorOptions,
    EventAggregator,
    EventCorrelateResult,
    EventCorrelator,
    EventSourceObjectSpamFilter,
    get_event_key,
    get_spam_key,
)
from .fake import FakeRecorder
from .util import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, generate_event_name, get_reference, sprintf

__all__ = [
    "DEFAULT_SLEEP_DURATION", "EVENT_TYPE_NORMAL", "EVENT_TYPE_WARNING", "MAX_QUEUED_EVENTS",
    "MAX_TRIES_PER_EVENT", "CorrelatorOptions", "EventAggregator", "EventBroadcaster",
    "EventCorrelateResult", "EventCorrelator", "EventRecorder", "EventSink", "EventSinkImpl",
    "EventSourceObjectSpamFilter", "FakeRecorder", "RecorderImpl", "generate_event_name",
    "get_event_key", "get_reference", "get_spam_key", "sprintf",
]
