"""The errors of calling a webhook, and the Status a refusal becomes.

Upstream: ToStatusErr, NewDryRunUnsupportedErr (plugin/webhook/errors/statuserror.go),
ErrCallingWebhook and ErrWebhookRejection (apiserver/pkg/util/webhook/error.go).
"""
from __future__ import annotations

from typing import Any

from ....api import errors

Obj = dict[str, Any]


class ErrCallingWebhook(Exception):
    """The webhook could not be asked or did not answer properly (not a refusal): failurePolicy
    decides. `status` is what the failure is as an API error (a metric's code)."""

    def __init__(self, webhook_name: str, reason: str, status: errors.StatusError) -> None:
        self.webhook_name = webhook_name
        self.reason = reason
        self.status = status
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.reason:
            return f"failed calling webhook {errors.go_quote(self.webhook_name)}: {self.reason}"
        return f"failed calling webhook {errors.go_quote(self.webhook_name)}; no further details available"


class ErrWebhookRejection(Exception):
    """The webhook answered and refused the request."""

    def __init__(self, status: errors.StatusError) -> None:
        self.status = status
        super().__init__(status.message)


def to_status_err(webhook_name: str, result: Any) -> errors.StatusError:
    """Upstream: ToStatusErr — the webhook's Status, made a failure of code >= 400, its message
    prefixed `admission webhook "<name>" denied the request: `."""
    result = dict(result) if isinstance(result, dict) else {}
    denied_by = f"admission webhook {errors.go_quote(webhook_name)} denied the request"
    code = result.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    message = result.get("message") if isinstance(result.get("message"), str) else ""
    reason = result.get("reason") if isinstance(result.get("reason"), str) else ""
    if message:
        message = f"{denied_by}: {message}"
    elif reason:
        message = f"{denied_by}: {reason}"
    else:
        message = f"{denied_by} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    err = errors.StatusError(code, reason, message, details)
    return err


def new_dry_run_unsupported_err(webhook_name: str) -> errors.StatusError:
    """Upstream: NewDryRunUnsupportedErr."""
    return errors.BadRequest(f"admission webhook {errors.go_quote(webhook_name)} does not support dry run")


def service_unavailable(message: str) -> errors.StatusError:
    """apierrors.NewServiceUnavailable."""
    return errors.StatusError(503, "ServiceUnavailable", message)
