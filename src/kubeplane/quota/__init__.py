"""ResourceQuota accounting: quantity arithmetic over resource lists, and the evaluators that
say what an object uses. The admission plugin (apiserver/admission/plugins/resource_quota.py)
charges quotas on writes; the resource quota controller (controller/resourcequota) recalculates
`status.used` and gives back what deleted or finished objects used.

Upstream: staging/src/k8s.io/apiserver/pkg/quota/v1 and pkg/quota/v1/evaluator/core.
"""
