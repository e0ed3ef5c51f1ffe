//! `ValidatingAdmissionPolicy`: CEL validations applied where a
//! ValidatingAdmissionPolicyBinding says, in the validating phase (after mutating
//! webhooks, before validating ones, as upstream orders them).
//!
//! Policies and bindings are compiled when they change (followed from the watch caches);
//! for each request, every binding whose policy's `matchConstraints` and own
//! `matchResources` select it is evaluated, once per parameter object when the policy
//! has a `paramKind`, with `object`, `oldObject`, `request`, `params`,
//! `namespaceObject` and `variables` bound (matchPolicy Equivalent: a policy whose rules
//! name another version of the requested resource sees the objects in that version). A
//! failed validation is acted on as the
//! binding's `validationActions` say: Deny refuses (the first such failure is the
//! answer), Warn adds a `Warning`, Audit an audit annotation. An expression that cannot
//! be evaluated follows the policy's `failurePolicy`. Each policy's status (its
//! expressions type-checked) is written here too ([`super::policy_status`]).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::matching::{namespace_labels, strings, FailurePolicy, MatchResources};
use super::webhook::review;
use super::{Attributes, ValidatingPlugin};
use crate::api::options::ListOptions;
use crate::api::selectors::LabelSelector;
use crate::api::status::StatusReason;
use crate::api::{ApiError, StatusCause};
use crate::catalog::{ApiResource, Catalog};
use crate::registry::cel::{
    elements, Activation, Expression, Reach, Shapes, PER_CALL_LIMIT, RUNTIME_BUDGET,
};
use crate::registry::codec::convert_to;
use crate::registry::Store;

const GROUP: &str = "admissionregistration.k8s.io";

/// A compiled expression, or why it does not compile (an evaluation error when used).
type Compiled = Result<Expression, String>;

fn compile(v: &Value, field: &str) -> Compiled {
    Expression::compile(v.as_str().unwrap_or_default(), field).map_err(|c| c.message)
}

struct Validation {
    text: String,
    expression: Compiled,
    message: Option<String>,
    message_expression: Option<Compiled>,
    reason: StatusReason,
}

/// Which of the variables a policy's expressions name (the others are neither built nor
/// bound: no expression can resolve them).
#[derive(Default)]
struct Uses {
    object: bool,
    old_object: bool,
    request: bool,
    namespace_object: bool,
    params: bool,
    variables: bool,
}

impl Uses {
    /// From the expressions' texts: a name used anywhere counts (a string literal that
    /// spells it too only costs a conversion).
    fn of<'t>(texts: impl Iterator<Item = &'t str>) -> Uses {
        let mut uses = Uses::default();
        for t in texts {
            uses.object |= mentions(t, "object");
            uses.old_object |= mentions(t, "oldObject");
            uses.request |= mentions(t, "request");
            uses.namespace_object |= mentions(t, "namespaceObject");
            uses.params |= mentions(t, "params");
            uses.variables |= mentions(t, "variables");
        }
        uses
    }
}

/// Whether `name` occurs in `text` as a whole identifier.
fn mentions(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// One ValidatingAdmissionPolicy, compiled.
struct Policy {
    name: String,
    uses: Uses,
    /// What the expressions can read of `object`: only that is converted to CEL values
    /// per request.
    object_reach: Reach,
    /// The same of `oldObject`.
    old_object_reach: Reach,
    failure_policy: FailurePolicy,
    /// `paramKind`: (apiVersion, kind).
    param_kind: Option<(String, String)>,
    constraints: MatchResources,
    match_conditions: Vec<(String, Compiled)>,
    variables: Vec<(String, Compiled)>,
    validations: Vec<Validation>,
    audit_annotations: Vec<(String, Compiled)>,
    /// Whether some values could make an evaluation exceed a cost limit, so each one is
    /// costed on the request's values first (most policies cannot, and skip that work).
    costed: bool,
    /// For a costed policy, the most elements (see [`elements`]) the values of one
    /// evaluation may hold for the quick bound to settle it (`None`: it never does).
    /// Worked out once, when the policy is compiled, so a request only sizes its values.
    quick_limit: Option<u64>,
}

impl Policy {
    fn from_json(p: &Value) -> Policy {
        let spec = &p["spec"];
        let named = |list: &str, name: &str, expr: &str| -> Vec<(String, Compiled)> {
            spec[list]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, c)| {
                    let field = format!("spec.{list}[{i}].{expr}");
                    (
                        c[name].as_str().unwrap_or_default().to_string(),
                        compile(&c[expr], &field),
                    )
                })
                .collect()
        };
        let validations = spec["validations"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, v)| Validation {
                text: v["expression"].as_str().unwrap_or_default().to_string(),
                expression: compile(
                    &v["expression"],
                    &format!("spec.validations[{i}].expression"),
                ),
                message: v["message"]
                    .as_str()
                    .filter(|m| !m.is_empty())
                    .map(String::from),
                message_expression: v["messageExpression"].as_str().map(|m| {
                    compile(
                        &json!(m),
                        &format!("spec.validations[{i}].messageExpression"),
                    )
                }),
                reason: match v["reason"].as_str() {
                    None | Some("") => StatusReason::Invalid,
                    Some(r) => StatusReason::from_wire(r),
                },
            })
            .collect();
        let texts = [
            "matchConditions",
            "variables",
            "validations",
            "auditAnnotations",
        ]
        .into_iter()
        .flat_map(|list| spec[list].as_array().into_iter().flatten())
        .flat_map(|item| {
            ["expression", "messageExpression", "valueExpression"]
                .into_iter()
                .filter_map(|k| item[k].as_str())
        });
        let mut policy = Policy {
            uses: Uses::of(texts),
            name: p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            failure_policy: FailurePolicy::from_json(&spec["failurePolicy"]),
            param_kind: spec["paramKind"].as_object().map(|k| {
                (
                    k.get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    k.get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                )
            }),
            constraints: MatchResources::from_json(&spec["matchConstraints"]),
            match_conditions: named("matchConditions", "name", "expression"),
            variables: named("variables", "name", "expression"),
            validations,
            audit_annotations: named("auditAnnotations", "key", "valueExpression"),
            costed: false,
            quick_limit: None,
            object_reach: Reach::Whole,
            old_object_reach: Reach::Whole,
        };
        policy.object_reach = Reach::of("object", policy.expressions());
        policy.old_object_reach = Reach::of("oldObject", policy.expressions());
        let worst: Vec<u64> = policy
            .expressions()
            .map(Expression::worst_case_cost)
            .collect();
        policy.costed = !within_limits(worst.into_iter());
        if policy.costed {
            policy.quick_limit = policy.largest_within_limits();
        }
        policy
    }

    /// The most elements on which [`Self::within_limits_on`] holds, by bisection: the
    /// estimate only grows with the elements, so the answer for any count is whether it
    /// is at most this one.
    fn largest_within_limits(&self) -> Option<u64> {
        if !self.within_limits_on(0) {
            return None;
        }
        if self.within_limits_on(u64::MAX) {
            return Some(u64::MAX);
        }
        // `within` holds, `beyond` does not.
        let (mut within, mut beyond) = (0u64, u64::MAX);
        while beyond - within > 1 {
            let mid = within + (beyond - within) / 2;
            match self.within_limits_on(mid) {
                true => within = mid,
                false => beyond = mid,
            }
        }
        Some(within)
    }

    /// Whether the quick bound settles an evaluation on values of `elements` elements
    /// (what [`Self::within_limits_on`] answers, without estimating anything).
    fn settled_on(&self, elements: u64) -> bool {
        self.quick_limit.is_some_and(|limit| elements <= limit)
    }

    /// Whether every evaluation on values of at most `elements` elements stays within the
    /// limits (the quick bound; the shapes of the values are the precise one).
    fn within_limits_on(&self, elements: u64) -> bool {
        within_limits(self.expressions().map(|e| e.cost_within(elements)))
    }

    /// Every expression of the policy that compiled.
    fn expressions(&self) -> impl Iterator<Item = &Expression> {
        fn compiled(l: &[(String, Compiled)]) -> impl Iterator<Item = &Compiled> {
            l.iter().map(|(_, c)| c)
        }
        compiled(&self.match_conditions)
            .chain(compiled(&self.variables))
            .chain(
                self.validations.iter().flat_map(|v| {
                    std::iter::once(&v.expression).chain(v.message_expression.as_ref())
                }),
            )
            .chain(compiled(&self.audit_annotations))
            .filter_map(|c| c.as_ref().ok())
    }
}

/// Whether calls of these costs are each within the per-call limit and all together
/// within the budget.
fn within_limits(costs: impl Iterator<Item = u64>) -> bool {
    let mut total = 0u64;
    for c in costs {
        if c > PER_CALL_LIMIT {
            return false;
        }
        total = total.saturating_add(c);
    }
    total <= RUNTIME_BUDGET
}

/// How a binding finds its parameters.
struct ParamRef {
    name: Option<String>,
    namespace: Option<String>,
    selector: Option<Result<LabelSelector, String>>,
    /// `parameterNotFoundAction: Allow` (else Deny).
    allow_missing: bool,
}

/// One ValidatingAdmissionPolicyBinding with its policy.
struct Binding {
    name: String,
    policy: Arc<Policy>,
    narrowing: Option<MatchResources>,
    param_ref: Option<ParamRef>,
    actions: Vec<String>,
}

/// The bindings in force, as the watch caches last had them.
pub struct Policies {
    bindings: RwLock<Arc<Vec<Binding>>>,
    store: Store,
    catalog: Arc<Catalog>,
}

impl Policies {
    /// Reads policies and bindings now and keeps them current from then on.
    pub async fn start(catalog: Arc<Catalog>, store: Store) -> Arc<Self> {
        let kinds: Vec<Arc<ApiResource>> = [
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
        ]
        .into_iter()
        .filter_map(|plural| catalog.get(GROUP, "v1", plural))
        .collect();
        let this = Arc::new(Policies {
            bindings: RwLock::new(Arc::new(Vec::new())),
            store: store.clone(),
            catalog,
        });
        if kinds.len() != 2 {
            return this;
        }
        crate::controllers::follow(this.clone(), &store, kinds).await;
        this
    }
}

#[async_trait]
impl crate::controllers::Reload for Policies {
    /// Recompiles policies and bindings from the watch caches, bindings in name order.
    async fn reload(&self, kinds: &[Arc<ApiResource>]) {
        let list = |res: Arc<ApiResource>| async move {
            self.store
                .list(&res, None, &crate::controllers::from_cache())
                .await
                .map(|page| page.items)
        };
        let (policies, bindings) =
            match (list(kinds[0].clone()).await, list(kinds[1].clone()).await) {
                (Ok(p), Ok(b)) => (p, b),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!("admission policies: {e}");
                    return;
                }
            };
        for policy in &policies {
            let written =
                super::policy_status::reconcile(&self.store, &kinds[0], &self.catalog, policy);
            if let Err(e) = written.await {
                tracing::warn!("admission policies: writing a policy's status: {e}");
            }
        }
        let policies: HashMap<String, Arc<Policy>> = policies
            .iter()
            .map(|p| {
                let policy = Policy::from_json(p);
                (policy.name.clone(), Arc::new(policy))
            })
            .collect();
        let mut compiled: Vec<Binding> = bindings
            .iter()
            .filter_map(|b| {
                let spec = &b["spec"];
                let policy = policies.get(spec["policyName"].as_str()?)?.clone();
                let param_ref = spec["paramRef"].as_object().map(|r| ParamRef {
                    name: r.get("name").and_then(Value::as_str).map(String::from),
                    namespace: r
                        .get("namespace")
                        .and_then(Value::as_str)
                        .filter(|n| !n.is_empty())
                        .map(String::from),
                    selector: r.get("selector").map(LabelSelector::from_json),
                    allow_missing: r.get("parameterNotFoundAction") == Some(&json!("Allow")),
                });
                Some(Binding {
                    name: b["metadata"]["name"].as_str()?.to_string(),
                    policy,
                    narrowing: spec
                        .get("matchResources")
                        .filter(|m| m.is_object())
                        .map(MatchResources::from_json),
                    param_ref,
                    actions: strings(&spec["validationActions"]),
                })
            })
            .collect();
        compiled.sort_by(|a, b| a.name.cmp(&b.name));
        *self.bindings.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(compiled);
    }
}

impl Policies {
    fn bindings(&self) -> Arc<Vec<Binding>> {
        self.bindings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The parameter objects of a binding for this request; `Ok(None)`: none found and the
    /// binding allows that (skip it).
    async fn params(
        &self,
        binding: &Binding,
        a: &Attributes<'_>,
        (api_version, kind): &(String, String),
    ) -> Result<Option<Vec<Value>>, String> {
        let Some(param_ref) = &binding.param_ref else {
            return Err("the policy has a paramKind but the binding has no paramRef".into());
        };
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let Some(res) = self.catalog.by_kind(group, version, kind) else {
            return Err(format!(
                "paramKind kind `{kind}` of `{api_version}` is not served"
            ));
        };
        let namespace = match (&param_ref.namespace, res.namespaced()) {
            (_, false) => None,
            (Some(ns), true) => Some(ns.as_str()),
            (None, true) => match a.namespace {
                Some(ns) => Some(ns),
                None => {
                    return Err(
                        "cannot use a namespaced paramRef without a namespace for a cluster-scoped request"
                            .into(),
                    )
                }
            },
        };
        let found: Vec<Value> = match (&param_ref.name, &param_ref.selector) {
            (Some(name), _) => match self.store.get(&res, namespace, name).await {
                Ok(obj) => vec![obj],
                Err(e) if e.is_not_found() => vec![],
                Err(e) => return Err(e.to_string()),
            },
            (None, Some(selector)) => {
                let selector = selector.clone()?;
                let opts = ListOptions {
                    labels: selector,
                    ..crate::controllers::from_cache()
                };
                self.store
                    .list(&res, namespace, &opts)
                    .await
                    .map_err(|e| e.to_string())?
                    .items
            }
            (None, None) => return Err("paramRef has neither name nor selector".into()),
        };
        match (found.is_empty(), param_ref.allow_missing) {
            (false, _) => Ok(Some(found)),
            (true, true) => Ok(None),
            (true, false) => Err(DENY_MISSING_PARAMS.into()),
        }
    }
}

const DENY_MISSING_PARAMS: &str =
    "no params found for policy binding with `Deny` parameterNotFoundAction";

/// The plugin.
pub struct ValidatingAdmissionPolicy(pub Arc<Policies>);

/// One validation that failed.
struct Failure {
    message: String,
    reason: StatusReason,
}

#[async_trait]
impl ValidatingPlugin for ValidatingAdmissionPolicy {
    async fn validate(&self, a: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        if let Some(check) = checks_of(a) {
            return match object {
                Some(object) => {
                    check(object).map_err(|causes| ApiError::invalid(a.resource, a.name, causes))
                }
                None => Ok(()),
            };
        }
        let bindings = self.0.bindings();
        if bindings.is_empty() {
            return Ok(());
        }
        let mut labels = None;
        let mut equivalents = None;
        let mut deny: Option<ApiError> = None;
        for binding in bindings.iter() {
            let policy = &binding.policy;
            // The namespace's labels only when a selector asks about them.
            let selects_namespaces = policy.constraints.selects_namespaces()
                || binding
                    .narrowing
                    .as_ref()
                    .is_some_and(MatchResources::selects_namespaces);
            if labels.is_none() && selects_namespaces {
                labels = Some(namespace_labels(&self.0.store, a, object).await?);
            }
            let ns_labels = labels.as_ref().and_then(Option::as_ref);
            let constraints = &policy.constraints;
            let equivalent = if constraints.matches(a, object, ns_labels, false) {
                None
            } else if constraints.equivalent && a.has_equivalents() {
                let equivalents =
                    equivalents.get_or_insert_with(|| self.0.catalog.equivalents(a.resource));
                let named = equivalents.iter().find(|e| {
                    constraints.matches(&a.as_equivalent(e, a.old_object), object, ns_labels, false)
                });
                match named {
                    Some(e) => Some(e.clone()),
                    None => continue,
                }
            } else {
                continue;
            };
            let seen = match &equivalent {
                Some(e) => a.as_equivalent(e, a.old_object),
                None => *a,
            };
            if binding
                .narrowing
                .as_ref()
                .is_some_and(|m| !m.matches(&seen, object, ns_labels, true))
            {
                continue;
            }
            let outcome = match &equivalent {
                None => evaluate(&self.0, binding, a, object).await,
                Some(e) => evaluate_as(&self.0, binding, a, e, object).await,
            };
            let failures = match outcome {
                Ok(failures) => failures,
                Err(why) if policy.failure_policy == FailurePolicy::Ignore => {
                    tracing::warn!(
                        "policy {:?} binding {:?}: {why}; ignored",
                        policy.name,
                        binding.name
                    );
                    continue;
                }
                Err(why) => vec![Failure {
                    message: why,
                    reason: StatusReason::Invalid,
                }],
            };
            for failure in failures {
                act(a, binding, &failure, &mut deny);
            }
        }
        match deny {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The check of one stored kind: the causes of a 422.
type Check = fn(&Value) -> Result<(), Vec<StatusCause>>;

/// The checks a policy or binding must pass to be stored (their expressions compile;
/// validation actions make sense), as upstream's validation makes them.
fn checks_of(a: &Attributes<'_>) -> Option<Check> {
    if a.resource.def.group != GROUP || !a.subresource.is_empty() {
        return None;
    }
    match a.resource.def.plural.as_str() {
        "validatingadmissionpolicies" => Some(check_policy),
        "validatingadmissionpolicybindings" => Some(check_binding),
        _ => None,
    }
}

fn check_policy(p: &Value) -> Result<(), Vec<StatusCause>> {
    let spec = &p["spec"];
    let mut causes = Vec::new();
    for (list, keys) in [
        ("matchConditions", &["expression"][..]),
        ("variables", &["expression"][..]),
        ("validations", &["expression", "messageExpression"][..]),
        ("auditAnnotations", &["valueExpression"][..]),
    ] {
        for (i, item) in spec[list].as_array().into_iter().flatten().enumerate() {
            for key in keys {
                let Some(expr) = item[*key].as_str() else {
                    continue;
                };
                if let Err(cause) = Expression::compile(expr, &format!("spec.{list}[{i}].{key}")) {
                    causes.push(cause);
                }
            }
        }
    }
    if spec["validations"].as_array().is_none_or(Vec::is_empty)
        && spec["auditAnnotations"]
            .as_array()
            .is_none_or(Vec::is_empty)
    {
        causes.push(StatusCause::required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    match causes.is_empty() {
        true => Ok(()),
        false => Err(causes),
    }
}

fn check_binding(b: &Value) -> Result<(), Vec<StatusCause>> {
    let actions = strings(&b["spec"]["validationActions"]);
    let field = "spec.validationActions";
    let mut causes = Vec::new();
    if actions.is_empty() {
        causes.push(StatusCause::required(
            field,
            "at least one validation action is required",
        ));
    }
    for (i, action) in actions.iter().enumerate() {
        if !["Deny", "Warn", "Audit"].contains(&action.as_str()) {
            causes.push(StatusCause::invalid(
                &format!("{field}[{i}]"),
                action,
                "supported values: \"Audit\", \"Deny\", \"Warn\"",
            ));
        } else if actions[..i].contains(action) {
            causes.push(StatusCause::invalid(
                &format!("{field}[{i}]"),
                action,
                "Duplicate value",
            ));
        }
    }
    if actions.iter().any(|a| a == "Deny") && actions.iter().any(|a| a == "Warn") {
        causes.push(StatusCause::invalid(
            field,
            &actions.join(","),
            "may not contain both \"Deny\" and \"Warn\"",
        ));
    }
    match causes.is_empty() {
        true => Ok(()),
        false => Err(causes),
    }
}

/// Acts on one failed validation as the binding says.
fn act(a: &Attributes<'_>, binding: &Binding, failure: &Failure, deny: &mut Option<ApiError>) {
    let policy = &binding.policy.name;
    for action in &binding.actions {
        match action.as_str() {
            "Deny" if deny.is_none() => {
                let message = format!(
                    "ValidatingAdmissionPolicy '{policy}' with binding '{}' denied request: {}",
                    binding.name, failure.message
                );
                *deny = Some(refusal(a, message, failure.reason));
            }
            "Warn" => a.outcome.warn(format!(
                "Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{}': {}",
                binding.name, failure.message
            )),
            "Audit" => a.outcome.annotate(
                "validation.policy.admission.k8s.io/validation_failure".into(),
                json!([{ "message": failure.message, "policy": policy, "binding": binding.name, "validationActions": binding.actions }]).to_string(),
            ),
            _ => {}
        }
    }
}

/// The refusal as upstream words it: forbidden-style message, the validation's reason
/// and its code.
fn refusal(a: &Attributes<'_>, message: String, reason: StatusReason) -> ApiError {
    let base = ApiError::forbidden_request(
        &a.resource.def.group,
        &a.resource.def.plural,
        a.name,
        &message,
    );
    let code = match reason {
        StatusReason::Unauthorized => 401,
        StatusReason::Forbidden => 403,
        StatusReason::RequestEntityTooLarge => 413,
        _ => 422,
    };
    let mut details = base.details.clone().unwrap_or_else(|| json!({}));
    details["causes"] = json!([{ "message": message }]);
    ApiError {
        code,
        reason: match reason {
            StatusReason::Unspecified => StatusReason::Invalid,
            r => r,
        },
        details: Some(details),
        ..base
    }
}

/// Evaluates one binding for the request seen as `equivalent` (matchPolicy Equivalent):
/// the objects converted to that version first.
async fn evaluate_as(
    policies: &Policies,
    binding: &Binding,
    a: &Attributes<'_>,
    equivalent: &ApiResource,
    object: Option<&Value>,
) -> Result<Vec<Failure>, String> {
    let convert = |obj: Option<&Value>| {
        let obj = obj.cloned();
        async move {
            match obj {
                Some(obj) => convert_to(equivalent, obj)
                    .await
                    .map(Some)
                    .map_err(|e| e.to_string()),
                None => Ok(None),
            }
        }
    };
    let (object, old_object) = (convert(object).await?, convert(a.old_object).await?);
    let seen = a.as_equivalent(equivalent, old_object.as_ref());
    evaluate(policies, binding, &seen, object.as_ref()).await
}

/// Evaluates one binding for the request: its failed validations, or why it could not be
/// evaluated.
async fn evaluate(
    policies: &Policies,
    binding: &Binding,
    a: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<Vec<Failure>, String> {
    let policy = &binding.policy;
    let params = match &policy.param_kind {
        None => vec![Value::Null],
        Some(kind) => match policies.params(binding, a, kind).await {
            Ok(Some(params)) => params,
            Ok(None) => return Ok(vec![]),
            Err(why) if why == DENY_MISSING_PARAMS => {
                return Ok(vec![Failure {
                    message: why,
                    reason: StatusReason::Invalid,
                }])
            }
            Err(why) => return Err(format!("failed to configure binding: {why}")),
        },
    };
    // Only what the policy's expressions name is built and converted.
    let uses = &policy.uses;
    let namespace_object = match (a.namespace, uses.namespace_object) {
        (Some(ns), true) => policies
            .store
            .namespace(ns)
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let request = match uses.request {
        true => review::request("", a, None)["request"].take(),
        false => Value::Null,
    };
    // The JSON each name binds: null for what no expression names.
    let json = [
        ("object", used(uses.object, object)),
        ("oldObject", used(uses.old_object, a.old_object)),
        ("request", used(uses.request, Some(&request))),
        (
            "namespaceObject",
            used(uses.namespace_object, Some(&namespace_object)),
        ),
    ];
    // Bound once for every param and expression (converted where they lie); of the
    // objects only what some expression can read, and nothing no expression names.
    let mut scope = Activation::new();
    if uses.object {
        scope.bind_json_reached("object", used(true, object), &policy.object_reach);
    }
    if uses.old_object {
        scope.bind_json_reached(
            "oldObject",
            used(true, a.old_object),
            &policy.old_object_reach,
        );
    }
    if uses.request {
        scope.bind_json("request", &request);
    }
    if uses.namespace_object {
        scope.bind_json("namespaceObject", &namespace_object);
    }
    let mut failures = Vec::new();
    for param in &params {
        let mut with_param = scope.nested();
        if uses.params {
            with_param.bind_json("params", param);
        }
        let mut bindings = json.to_vec();
        bindings.push(("params", param));
        // Costed on the shapes of the values (`variables` are computed from them) only
        // when the quick bound from their sizes does not settle it.
        let costed =
            policy.costed && !policy.settled_on(elements(bindings.iter().map(|(_, v)| *v)));
        let shapes = costed.then(|| Shapes::of(&bindings));
        let mut runner = Runner {
            shapes: shapes.as_ref(),
            remaining: RUNTIME_BUDGET,
        };
        failures.extend(evaluate_with(policy, a, &with_param, &mut runner)?);
    }
    Ok(failures)
}

/// `v` when an expression names it, else null.
fn used(used: bool, v: Option<&Value>) -> &Value {
    match (used, v) {
        (true, Some(v)) => v,
        _ => &Value::Null,
    }
}

/// Runs a policy's expressions within upstream's cost limits: each call's cost, on the
/// request's values, at most [`PER_CALL_LIMIT`]; all of one evaluation's together at
/// most [`RUNTIME_BUDGET`]. cel-rust cannot stop an evaluation, so the cost is
/// estimated before each one runs (only for policies where values could matter).
struct Runner<'s> {
    shapes: Option<&'s Shapes>,
    remaining: u64,
}

impl Runner<'_> {
    /// Runs `e` in `scope`; `what` names it in errors.
    fn run(
        &mut self,
        e: &Compiled,
        scope: &Activation<'_, '_>,
        what: &dyn Fn() -> String,
    ) -> Result<cel::Value, String> {
        let e = e.as_ref().map_err(|why| format!("{}: {why}", what()))?;
        if let Some(shapes) = self.shapes {
            let cost = e.cost_on(shapes);
            if cost > PER_CALL_LIMIT {
                return Err(format!(
                    "{} resulted in error: operation cancelled: actual cost limit exceeded",
                    what()
                ));
            }
            self.remaining = self.remaining.checked_sub(cost).ok_or_else(|| {
                "validation failed due to running out of cost budget, no further validation rules will be run".to_string()
            })?;
        }
        e.evaluate_in(scope)
            .map_err(|why| format!("{} resulted in error: {why}", what()))
    }
}

/// One evaluation of a policy in `scope` (the request's variables and `params`).
fn evaluate_with(
    policy: &Policy,
    a: &Attributes<'_>,
    scope: &Activation<'_, '_>,
    runner: &mut Runner<'_>,
) -> Result<Vec<Failure>, String> {
    for (name, condition) in &policy.match_conditions {
        match runner.run(condition, scope, &|| format!("match condition '{name}'"))? {
            cel::Value::Bool(true) => {}
            cel::Value::Bool(false) => return Ok(vec![]),
            other => {
                return Err(format!(
                    "match condition '{name}' did not evaluate to a bool: {other:?}"
                ))
            }
        }
    }
    // Each variable sees the ones before it.
    let named = policy.uses.variables;
    let mut variables: HashMap<String, cel::Value> = HashMap::new();
    for (name, expression) in &policy.variables {
        let mut with_variables = scope.nested();
        if named {
            with_variables.bind("variables", variables.clone().into())?;
        }
        let value = runner.run(expression, &with_variables, &|| {
            format!("variable '{name}'")
        })?;
        variables.insert(name.clone(), value);
    }
    let mut scope = scope.nested();
    if named {
        scope.bind("variables", variables.into())?;
    }
    let scope = &scope;
    let mut failures = Vec::new();
    for v in &policy.validations {
        match runner.run(&v.expression, scope, &|| format!("expression '{}'", v.text))? {
            cel::Value::Bool(true) => continue,
            cel::Value::Bool(false) => {}
            other => {
                return Err(format!(
                    "expression '{}' did not evaluate to a bool: {other:?}",
                    v.text
                ))
            }
        }
        let from_expression = v.message_expression.as_ref().and_then(|m| {
            match runner.run(m, scope, &|| "messageExpression".to_string()) {
                Ok(cel::Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                    Some(s.to_string())
                }
                _ => None,
            }
        });
        let message = from_expression
            .or_else(|| v.message.clone())
            .unwrap_or_else(|| format!("failed expression: {}", v.text));
        failures.push(Failure {
            message,
            reason: v.reason,
        });
    }
    for (key, expression) in &policy.audit_annotations {
        match runner.run(expression, scope, &|| format!("audit annotation '{key}'"))? {
            cel::Value::String(s) => a
                .outcome
                .annotate(format!("{}/{key}", policy.name), s.to_string()),
            cel::Value::Null => {}
            other => {
                return Err(format!(
                    "audit annotation '{key}' did not evaluate to a string: {other:?}"
                ))
            }
        }
    }
    Ok(failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_identifiers_count_as_uses() {
        assert!(mentions("object.metadata.name != ''", "object"));
        assert!(mentions("size(object.data) < 3", "object"));
        assert!(!mentions("oldObject.spec == 1", "object"));
        assert!(!mentions("objects.all(o, o)", "object"));
        assert!(mentions("oldObject.spec == 1", "oldObject"));
        let uses = Uses::of(
            [
                "request.userInfo.username == 'a'",
                "namespaceObject.metadata.name == 'x'",
            ]
            .into_iter(),
        );
        assert!(uses.request && uses.namespace_object && !uses.object && !uses.old_object);
    }

    #[test]
    fn every_expression_of_a_policy_counts_in_what_of_the_objects_is_bound() {
        let p = Policy::from_json(&json!({
            "metadata": { "name": "p" },
            "spec": {
                "matchConditions": [{ "name": "c", "expression": "object.kind == 'ConfigMap'" }],
                "variables": [{ "name": "v", "expression": "object.data" }],
                "validations": [{
                    "expression": "size(variables.v) < 3",
                    "messageExpression": "object.metadata.name + ' is too large'",
                }],
                "auditAnnotations": [{ "key": "k", "valueExpression": "oldObject.metadata.name" }],
            },
        }));
        let fields = |entries: &[(&str, Reach)]| {
            Reach::Fields(
                entries
                    .iter()
                    .map(|(k, r)| (k.to_string(), r.clone()))
                    .collect(),
            )
        };
        assert_eq!(
            p.object_reach,
            fields(&[
                ("data", Reach::Whole),
                ("kind", Reach::Whole),
                ("metadata", fields(&[("name", Reach::Whole)])),
            ])
        );
        assert_eq!(
            p.old_object_reach,
            fields(&[("metadata", fields(&[("name", Reach::Whole)]))])
        );
        // Any use but a field selection binds the whole object.
        let whole = policy(&["object.metadata.name == 'a'", "object != oldObject"]);
        assert_eq!(
            (whole.object_reach, whole.old_object_reach),
            (Reach::Whole, Reach::Whole)
        );
    }

    fn policy(validations: &[&str]) -> Policy {
        let validations: Vec<Value> = validations
            .iter()
            .map(|e| json!({ "expression": e }))
            .collect();
        Policy::from_json(&json!({
            "metadata": { "name": "p" },
            "spec": { "validations": validations },
        }))
    }

    #[test]
    fn only_policies_some_values_could_make_too_costly_are_costed_per_request() {
        // Bounded whatever the object: nothing to do per request.
        assert!(!policy(&["object.metadata.name.size() <= 63"]).costed);
        // A scan (a key looked up in a list, as far as the estimate knows) grows with the
        // object, but the quick bound settles it for a ~1 KiB one.
        let linear = policy(&["!has(object.data) || !('x' in object.data)"]);
        assert!(linear.costed && linear.within_limits_on(2_000));
        // A scan in a scan: the quick bound does not settle a 10 KiB object, so its
        // shapes are worked out.
        let quadratic = policy(&["object.data.all(a, object.data.all(b, a != b || a == b))"]);
        assert!(quadratic.costed && !quadratic.within_limits_on(10_000));
    }

    #[test]
    fn the_quick_bound_is_settled_by_a_size_worked_out_when_the_policy_is_compiled() {
        let linear = policy(&["!has(object.data) || !('x' in object.data)"]);
        let quadratic = policy(&["object.data.all(a, object.data.all(b, a != b || a == b))"]);
        for p in [&linear, &quadratic] {
            let limit = p.quick_limit.expect("small values are settled");
            assert!(p.within_limits_on(limit) && !p.within_limits_on(limit + 1));
            // The same answer as estimating, whatever the size.
            for n in [
                0,
                1,
                100,
                2_000,
                10_000,
                1 << 20,
                1 << 40,
                limit - 1,
                limit,
                limit + 1,
            ] {
                assert_eq!(p.settled_on(n), p.within_limits_on(n), "{n} elements");
            }
        }
        // A policy changed to a costlier expression is compiled anew, with its own limit.
        assert!(quadratic.quick_limit < linear.quick_limit);
        // Policies that no value can make too costly are never sized.
        let bounded = policy(&["object.metadata.name.size() <= 63"]);
        assert!(!bounded.costed && bounded.quick_limit.is_none());
    }
}
