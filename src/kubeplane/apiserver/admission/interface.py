"""What an admission plugin sees and the interface it implements.

Upstream: Attributes, Interface, MutationInterface, ValidationInterface
(staging/src/k8s.io/apiserver/pkg/admission/interfaces.go). A plugin says which operations it
handles; its `admit` may change the object (mutating phase), its `validate` may only refuse
(validating phase, after the object was validated). Refusing is raising an errors.StatusError
(admission.NewForbidden in upstream: forbidden() below).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

from ...api import errors
from ..audit.event import annotations_of_current
from ..authentication.user import ANONYMOUS, UserInfo

if TYPE_CHECKING:
    from ..server import APIServer

Obj = dict[str, Any]


class Operation(str, Enum):
    """Upstream: admission.Operation."""
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"


# The members as module constants, for the code every write runs: reading a member off the Enum
# class costs ~1,000 instructions in CPython 3.11 (its metaclass defeats the attribute cache's
# fast path), a module global ~150 (callgrind).
CREATE, UPDATE, DELETE, CONNECT = Operation.CREATE, Operation.UPDATE, Operation.DELETE, Operation.CONNECT


@dataclass(slots=True)
class Attributes:
    """One request as admission sees it. Upstream: admission.attributesRecord.

    `obj` is the object being written (None for DELETE and CONNECT), `old_obj` the stored one
    (UPDATE; DELETE in the validating phase: the handler admits a delete before reading the
    object, and a deletecollection once, without a name). For a subresource write (pods/status, pods/binding, …) `subresource`
    is set and `obj` is what that subresource receives. `name` may be empty on CREATE (a
    generateName is expanded after admission). `options` is the request's CreateOptions,
    UpdateOptions or DeleteOptions object as upstream's (kind and apiVersion set: admission/options.py),
    {} when the caller gave none.
    """
    operation: Operation
    group: str
    version: str
    resource: str                  # the plural: "pods"
    kind: str                      # "Pod" (for a subresource: the kind it receives, e.g. Binding)
    namespace: str
    name: str
    obj: Obj | None = None
    old_obj: Obj | None = None
    subresource: str = ""
    dry_run: bool = False
    user: UserInfo = ANONYMOUS
    options: Obj = field(default_factory=dict)
    # What plugins hand back besides a refusal: Warning headers for the response (the handler
    # passes its own list, so they join the validation warnings) and audit annotations (the
    # audited request's event's own dict, upstream: audit.AddAuditAnnotations).
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=annotations_of_current)
    # The request's namespace as NamespaceLifecycle read it (None: not read), so later plugins
    # need no second storage read. Upstream plugins share the namespace informer's cache.
    namespace_obj: Obj | None = None
    # Per-plugin state kept across the reinvocation round (upstream: the attributes'
    # ReinvocationContext values), made by the first plugin that needs it.
    reinvocation: Obj | None = None
    # The chain's plugins for this request (admitters, validators), as its mutating phase found
    # them: the validating phase of the same request takes them as they are (Chain.validate).
    route: tuple[list[Plugin], list[Plugin]] | None = None
    # The ServiceAccount plugin's look-up in the mutating phase: (the account's name, the
    # account, its index's generation), so the validating phase, which upstream's plugin answers
    # from the same lister, need not look it up again while that index did not move.
    service_account: tuple[str, Obj, int] | None = None

    def targets(self, group: str, resource: str, subresource: str = "") -> bool:
        """Whether this request is for group/resource (and the given subresource, "" = the main one)."""
        return self.resource == resource and self.group == group and self.subresource == subresource


class Plugin:
    """An admission plugin. Subclasses set NAME and OPERATIONS and override admit and/or validate.

    `api` gives read access to the store (api.storage) for plugins that look things up
    (namespaces, limit ranges, quotas); a plugin must not write through it except where
    upstream's plugin writes too (ResourceQuota's status).
    """
    NAME: ClassVar[str] = ""
    OPERATIONS: ClassVar[frozenset[Operation]] = frozenset(Operation)
    MUTATING: ClassVar[bool] = False       # has an admit() step
    VALIDATING: ClassVar[bool] = False     # has a validate() step
    # The (group, resource) pairs and the subresources ("" = the resource itself) the plugin
    # ever acts on, None for any: the chain calls a plugin only for requests it acts_on (its own
    # checks still decide within them).
    RESOURCES: ClassVar[frozenset[tuple[str, str]] | None] = None
    SUBRESOURCES: ClassVar[frozenset[str] | None] = None
    # A plugin driven by objects users write (webhook configurations, policies) names their
    # storage prefix: while dormant() says it has nothing to do, the chain leaves it out until
    # something under that prefix is written (see Chain).
    CONFIG_PREFIX: ClassVar[str] = ""
    # The prefixes the chain follows instead, when CONFIG_PREFIX stops within a plural (one
    # prefix for two kinds): the store wakes a watch on such a prefix at every write of any
    # kind (storage/watch_log.py _root), one on a kind's own prefix only at that kind's writes.
    CONFIG_PREFIXES: ClassVar[tuple[str, ...]] = ()

    def __init__(self, api: APIServer) -> None:
        self.api = api

    def handles(self, op: Operation) -> bool:
        """Upstream: admission.Handler.Handles."""
        return op in self.OPERATIONS

    def acts_on(self, group: str, resource: str, subresource: str) -> bool:
        """Whether a request for this resource and subresource can concern the plugin (asked
        once per operation, resource and subresource: see Chain)."""
        return ((self.RESOURCES is None or (group, resource) in self.RESOURCES)
                and (self.SUBRESOURCES is None or subresource in self.SUBRESOURCES))

    def admits_on(self, group: str, resource: str, subresource: str) -> bool:
        """acts_on, for the mutating phase alone (a plugin whose phases concern different
        resources narrows each: Priority admits pods and validates PriorityClasses)."""
        return self.acts_on(group, resource, subresource)

    def validates_on(self, group: str, resource: str, subresource: str) -> bool:
        """acts_on, for the validating phase alone (see admits_on)."""
        return self.acts_on(group, resource, subresource)

    def dormant(self) -> bool | None:
        """With CONFIG_PREFIX: True while nothing is configured (no request can concern the
        plugin), False while something is, None while it cannot tell without waiting (its
        configurations not listed yet). Asked only after a write under CONFIG_PREFIX."""
        return False

    def admit_now(self, a: Attributes) -> bool:
        """admit(a), when it can be decided without waiting: True when done (a.obj changed or
        an error raised), False when admit(a) must be awaited instead (and nothing changed yet).
        The chain asks this first: a plugin with nothing to look up or wait for then costs no
        coroutine (~1-2 us a plugin, on every pod create)."""
        return False

    def validate_now(self, a: Attributes) -> bool:
        """validate(a) without waiting, as admit_now."""
        return False

    async def admit(self, a: Attributes) -> None:
        """Mutate a.obj in place or raise. Upstream: MutationInterface.Admit.

        On UPDATE, a.obj may share nested dicts and lists with a.old_obj, the stored object
        (an in-process merge patch of a kind without defaults, or of a /status write: see
        handlers/rest.py _merges_onto_stored): replace a nested value, never change it in place
        (`spec["tolerations"] = [*old, new]`, not `.append`)."""

    async def validate(self, a: Attributes) -> None:
        """Raise to refuse; never mutate. Upstream: ValidationInterface.Validate."""

    async def close(self) -> None:
        """Release what the plugin holds open (connections) when the server stops."""


def forbidden(a: Attributes, message: str, causes: list[Obj] | None = None) -> errors.StatusError:
    """A 403 as upstream's admission.NewForbidden: `<resource> "<name>" is forbidden: <message>`,
    the object named as extractResourceName does — the request's name, else the object's (a
    generated one by the validating phase), else its generateName, else "Unknown"."""
    name = a.name
    if not name:
        meta = (a.obj or {}).get("metadata") or {}
        name = meta.get("name") or meta.get("generateName") or "Unknown"
    return status_forbidden(a.group, a.resource, name, message, causes)


def status_forbidden(group: str, resource: str, name: str, message: str,
                     causes: list[Obj] | None = None) -> errors.StatusError:
    """apierrors.NewForbidden: `<resource> "<name>" is forbidden: <message>` (the resource
    group-qualified; without a name, `<resource> is forbidden: ...`)."""
    qualified = errors.qualified(group, resource)
    subject = f'{qualified} "{name}"' if name else qualified
    details: Obj = {k: v for k, v in {"name": name, "group": group, "kind": resource}.items() if v}
    if causes:
        details["causes"] = causes
    return errors.StatusError(403, "Forbidden", f"{subject} is forbidden: {message}", details)
