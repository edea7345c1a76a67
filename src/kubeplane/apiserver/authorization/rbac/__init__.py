"""RBAC: upstream's role-based authorizer, its rule resolver, the bootstrap policy and its
reconciliation at start.

Upstream: plugin/pkg/auth/authorizer/rbac, pkg/registry/rbac/validation,
plugin/pkg/auth/authorizer/rbac/bootstrappolicy, pkg/registry/rbac/rest (PostStartHook).
"""
from .authorizer import PrivilegedGroups, RBACAuthorizer
from .index import PolicyIndex
from .resolver import DefaultRuleResolver
from .rules import Rule, rule_allows

__all__ = ["DefaultRuleResolver", "PolicyIndex", "PrivilegedGroups", "RBACAuthorizer", "Rule", "rule_allows"]
