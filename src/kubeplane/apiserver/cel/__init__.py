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

What differs from upstream's 1.37 environment, because of the engine:
- the opaque values are maps: `type(ip('1.2.3.4')) == net.IP` cannot hold, string() of a
  quantity (which upstream refuses when compiling) fails when evaluated, and a map literal
  shaped like a tagged value would pass for one;
- a Python function cannot return an optional: format's validate() and format.named() give a
  list (empty: valid) or a "none" map, with hasValue()/value() declared on them; an optional as
  an expression's result is an evaluation error (use orValue());
- not available: two-variable comprehensions and cel-go's lists extension (sortBy and the like
  are parser macros); MutatingAdmissionPolicy's Object{...} literals are rewritten into maps
  (mutation.py);
- types are not checked against schemas for admission policies: status.typeChecking reports
  undefined fields only (typechecking.py). CRD rules are (apiextensions/celvalidation/typedenv.py:
  object types declared as protobuf messages, for the checker only).
- cel-go's AST validators of Kubernetes' base environment run after checking (compiler.py
  literal_issues): duration, timestamp and regex literals (all environments) and homogeneous
  list and map literals (CRD rules' environments: the admission policies' object literals are
  rewritten into mixed maps here).

Modules: compiler (environments, compile cache, evaluation, upstream's error texts), cost
(cel-go's estimator over the checked AST), library (Kubernetes' functions), netip (Go's
address parsers), mutation (MutatingAdmissionPolicy's object literals), typechecking (a
policy's status.typeChecking), activation (the admission variables), matchconditions (named
conditions, for webhooks and policies), validation
(a policy's CEL checked on create and update, as upstream's field errors), metrics
(apiserver_cel_compilation/evaluation_duration_seconds).
"""
