"""ServiceAccounts. Upstream: pkg/registry/core/serviceaccount (strategy.go; storage/token.go is
handlers/token.py)."""
from __future__ import annotations

from ....api.resources import Subresource
from ....api.validation import core as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import CreateOnUpdateStrategy

SERVICEACCOUNTS = register(ResourceDefinition(
    "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, "io.k8s.api.core.v1.ServiceAccount",
    short_names=("sa",),
    # TokenRequest: handlers/token.py (upstream's TokenREST)
    subresources=(Subresource("token", "TokenRequest", ("create",), "authentication.k8s.io", "v1",
                              handler="token"),),
    strategy=CreateOnUpdateStrategy(),
    validate=validation.validate_service_account,
    columns=columns.service_account_columns, printer=printers.print_service_account,
    returns_deleted_object=True,        # upstream: the service account store's ReturnDeletedObject
))
