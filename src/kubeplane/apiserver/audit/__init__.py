"""Auditing: who did what, when, and what the server answered, as upstream's audit log.

- policy.py: the audit.k8s.io/v1 Policy (loading, validation, the rule checker);
- event.py: one request's event as it is built, and its JSON line;
- filter.py: the step in the request path (APIServer.route_trusted -> Auditor.serve);
- log.py: the log backend (a writer thread; modes blocking, blocking-strict, batch);
- rotate.py: size-based rotation of the log file (lumberjack's);
- options.py: the --audit-* flags.

Upstream: k8s.io/apiserver pkg/audit, pkg/apis/audit, plugin/pkg/audit/log,
pkg/endpoints/filters/audit.go, pkg/server/options/audit.go.
"""
