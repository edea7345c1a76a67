"""The providers of encryption at rest: aescbc, aesgcm, secretbox, and identity (none).

Upstream: k8s.io/apiserver/pkg/storage/value/encrypt/{aes,secretbox,identity}.
"""
