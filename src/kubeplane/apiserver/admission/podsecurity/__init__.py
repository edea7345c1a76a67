"""Pod Security Admission: the Pod Security Standards (privileged, baseline, restricted) applied
per namespace through its `pod-security.kubernetes.io/{enforce,audit,warn}[-version]` labels.

api.py: levels, versions and the labels' policy; check.py + checks_baseline.py +
checks_restricted.py: the checks, one function per check version; registry.py: which checks
run for a level:version; admission.py: the decisions for pods, pod controllers and namespaces;
config.py: PodSecurityConfiguration (defaults, exemptions). The admission plugin that runs it
is plugins/pod_security.py.
Upstream: staging/src/k8s.io/pod-security-admission (api/, policy/, admission/) and
plugin/pkg/admission/security/podsecurity/admission.go.
"""
from .admission import POD_SPEC_EXTRACTORS, Admission, Response
from .config import DEFAULT_CONFIGURATION, PodSecurityConfiguration, from_admission_config_file
from .registry import DEFAULT_EVALUATOR, Evaluator

__all__ = ["Admission", "DEFAULT_CONFIGURATION", "DEFAULT_EVALUATOR", "Evaluator", "POD_SPEC_EXTRACTORS",
           "PodSecurityConfiguration", "Response", "from_admission_config_file"]
