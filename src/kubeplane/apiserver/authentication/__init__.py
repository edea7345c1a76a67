"""Who is asking: the authenticators and the user they produce (issue 12).

Upstream: staging/src/k8s.io/apiserver/pkg/authentication.
"""
