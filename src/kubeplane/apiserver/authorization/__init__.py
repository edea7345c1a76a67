"""May they: the authorizers (RBAC, Node, AlwaysAllow) behind one interface (issue 12).

Upstream: staging/src/k8s.io/apiserver/pkg/authorization and plugin/pkg/auth/authorizer.
"""
