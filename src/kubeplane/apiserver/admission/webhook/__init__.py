"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook (admissionregistration.k8s.io/v1).

Upstream: staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/. Modules by concern:
  source.py          the configurations, kept current from a storage watch (never listed per request)
  rules.py           predicates/rules: a rule against a request
  predicates.py      predicates/namespace and predicates/object: the label selectors
  matchconditions.py matchConditions (CEL), behind one function the CEL engine plugs into
  request.py         the AdmissionReview sent and the checks on the answer
  client.py          HTTPS to a `url` or a `service` (resolved to an endpoint), bounded
  errors.py          the call's failures, a refusal's Status
  generic.py         ShouldCallHook and callHook, shared by both plugins
  mutating.py        MutatingAdmissionWebhook (sequential, JSONPatch, reinvocation)
  validating.py      ValidatingAdmissionWebhook (concurrent)
  metrics.py         apiserver_admission_webhook_* series
"""
from . import mutating, validating  # noqa: F401  (register the two plugins with the chain)
