"""CEL for the API server: ValidatingAdmissionPolicy, webhook matchConditions and (issue 13)
CRD x-kubernetes-validations share one engine.

The engine is cel-expr-python (Google's CEL C++ runtime with its type checker, wrapped for
Python), chosen over cel-python (celpy, pure Python) and common-expression-language (cel-rust
via PyO3); the comparison is in BENCHMARKS.md ("CEL engine"). In short:
- correctness: it parses and type-checks as cel-go does (undeclared references, no matching
  overload, return types are compile errors with cel-go's text and caret), ships the strings,
  optional, bindings and math extensions Kubernetes enables; celpy has no type checker and the
  Rust crate neither checker nor typed functions.
- speed: ~10 us to evaluate a typical admission expression against a Deployment, the object
  converted once per request (cel-rust ~45 us, celpy 100-700 us); compile 15-80 us.
- extensibility: typed Python functions (member or global) for Kubernetes' libraries; opaque
  types cannot be declared from Python, so Quantity/URL/IP/CIDR/authorizer values are tagged
  maps (library.py).
- limits: no cost tracking is exposed; cost.py estimates from the checked AST as cel-go does,
  and stands for cel-go's runtime cost tracker by the same walk over the values an expression
  reaches (upstream's cost tables hold); the per-call limit and a policy's budget are enforced
  on that figure before the expression runs (compiler.py), and the runtime's own iteration
  budget (10,000 per evaluation) refuses loops upstream would still allow.
Regular expressions of Kubernetes' find/findAll run in RE2 (google-re2), as upstream's and as
CEL's own matches(): linear in the input whatever the pattern.

Modules: compiler (environments, compile cache, evaluation, upstream's error texts), cost
(cel-go's estimator over the checked AST), library (Kubernetes' functions), activation (the
admission variables), matchconditions (named conditions, for webhooks and policies), validation
(a policy's CEL checked on create and update, as upstream's field errors).
"""
