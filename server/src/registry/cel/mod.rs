//! CEL validation rules (`x-kubernetes-validations`): compiled once, when a kind's catalog
//! entry is made, and evaluated on every write against `self` (the value at the schema
//! node that declares the rule) and, for transition rules, `oldSelf` (the stored value).
//!
//! cel-rust has no runtime cost accounting, so a rule's worst-case cost is estimated
//! (`cost.rs`): when it is compiled, from the schema's bounds, refusing the CRD as
//! kube-apiserver does; and before each evaluation, from the value at hand, refusing
//! the object when one rule or all of them together would cost too much.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use cel::objects::OptionalValue;
use cel::{Context, Env, Program};
use codegen::model::ValidationRule;
use serde_json::Value;

use crate::api::StatusCause;
use crate::registry::schema::{join, type_name};

pub use activation::Activation;
use cost::{
    actual_bounds, cardinality, Estimator, RULE_COST_LIMIT, TOTAL_COST_LIMIT, UNBOUNDED_AT_COMPILE,
};
pub use cost::{PER_CALL_LIMIT, RUNTIME_BUDGET};
pub use reach::Reach;

mod activation;
mod cost;
pub(crate) mod format;
pub(crate) mod library;
mod reach;
mod semver;
pub mod type_check;

/// The compiled rules of one kind's schema, in a tree that mirrors the schema.
#[derive(Default)]
pub struct Rules {
    root: Node,
}

#[derive(Default)]
struct Node {
    rules: Vec<Compiled>,
    /// The schema here, kept when there are rules: it shapes their cost estimates.
    schema: Value,
    properties: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    /// `x-kubernetes-list-map-keys`: how old and new items of a map list correlate.
    map_keys: Vec<String>,
}

impl Node {
    fn is_empty(&self) -> bool {
        self.rules.is_empty()
            && self.properties.is_empty()
            && self.items.is_none()
            && self.additional.is_none()
    }
}

struct Compiled {
    rule: ValidationRule,
    program: Program,
    message: Option<Program>,
    /// Uses `oldSelf`: evaluated only on updates where an old value correlates.
    transition: bool,
}

impl Compiled {
    /// A transition rule that also runs without an old value, `oldSelf` then empty.
    fn optional_old_self(&self) -> bool {
        self.transition && self.rule.optional_old_self == Some(true)
    }
}

/// The CEL environment rules compile and run in: the standard library and the
/// extensions Kubernetes rules use (strings, lists, math, encoders); [`root`] adds
/// Kubernetes' own functions.
fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        for ext in [
            cel::extensions::strings,
            cel::extensions::lists,
            cel::extensions::math,
            cel::extensions::encoders,
        ] {
            // The crate's own extensions never conflict with the standard library.
            let _ = env.add_extension(ext);
        }
        Arc::new(env)
    })
}

/// The context every evaluation scopes its variables in: the environment and the
/// Kubernetes library's functions, installed once.
fn root() -> &'static Context<'static, 'static> {
    static ROOT: OnceLock<Context<'static, 'static>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let mut ctx = Context::with_env(env().clone());
        library::install(&mut ctx);
        ctx
    })
}

/// One CEL expression outside a schema (admission's match conditions and policies),
/// with the same limits and Kubernetes library as validation rules.
pub struct Expression {
    program: Program,
}

impl Expression {
    /// Compiles `expr`; a problem names `field`.
    pub fn compile(expr: &str, field: &str) -> Result<Self, StatusCause> {
        compile(expr, field).map(|program| Expression { program })
    }

    /// Evaluates with JSON values bound to the given names (`Value::Null` binds null).
    pub fn evaluate(&self, variables: &[(&str, &Value)]) -> Result<cel::Value, String> {
        let mut scope = Activation::new();
        for (name, v) in variables {
            scope.bind_json(name, v);
        }
        self.evaluate_in(&scope)
    }

    /// Evaluates with the variables of `scope` (bound once, shared by several
    /// expressions).
    pub fn evaluate_in(&self, scope: &Activation<'_, '_>) -> Result<cel::Value, String> {
        self.program
            .execute(&scope.ctx)
            .map_err(|e| one_line(&e.to_string()))
    }
}

/// The shapes of the JSON values an evaluation binds, for [`Expression::cost_on`]: each
/// bounded by what it holds, and what expressions compute bounded by their total size.
pub struct Shapes {
    vars: Vec<(String, Value)>,
    computed: u64,
}

impl Shapes {
    /// The shapes of `variables` (names as the expressions use them).
    pub fn of(variables: &[(&str, &Value)]) -> Shapes {
        Shapes {
            vars: variables
                .iter()
                .map(|(name, v)| (name.to_string(), actual_bounds(&Value::Null, v)))
                .collect(),
            computed: elements(variables.iter().map(|(_, v)| *v)),
        }
    }
}

/// How many elements any value held in, or computed from, these values can have at most
/// (about their serialized size; walked without allocating).
pub fn elements<'v>(values: impl Iterator<Item = &'v Value>) -> u64 {
    values.map(cost::size).fold(0, u64::saturating_add)
}

impl Expression {
    /// The cost of one evaluation whatever the values, each as large as a request can
    /// make it: when this is within a limit, no value can exceed it.
    pub fn worst_case_cost(&self) -> u64 {
        self.cost_within(UNBOUNDED_AT_COMPILE)
    }

    /// The cost of one evaluation on values of at most `elements` elements (entries,
    /// characters) each: a bound quicker to work out than [`Self::cost_on`] and, with
    /// `elements` from [`elements`], as safe.
    pub fn cost_within(&self, elements: u64) -> u64 {
        Estimator::with_variables(Vec::new(), elements).cost(self.program.expression())
    }

    /// The cost of one evaluation on values of these shapes.
    pub fn cost_on(&self, shapes: &Shapes) -> u64 {
        let vars = shapes
            .vars
            .iter()
            .map(|(name, shape)| (name.clone(), Some(shape)))
            .collect();
        Estimator::with_variables(vars, shapes.computed).cost(self.program.expression())
    }
}

/// A JSON value as CEL sees it.
pub fn to_cel(v: &Value) -> Result<cel::Value, String> {
    cel::to_value(v).map_err(|e| e.to_string())
}

impl Rules {
    /// Compiles every rule of `schema` (as JSON). Problems name the rule's field under
    /// `base` (e.g. `spec.versions[0].schema.openAPIV3Schema`).
    pub fn compile(schema: &Value, base: &str) -> Result<Rules, Vec<StatusCause>> {
        let mut errors = Vec::new();
        let mut total = 0u64;
        let root = compile_node(schema, base, 1, &mut total, &mut errors);
        if total > TOTAL_COST_LIMIT {
            errors.push(StatusCause::forbidden(
                base,
                &format!(
                    "total CRD cost exceeds budget by factor of {:.2}x (try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are used)",
                    total as f64 / TOTAL_COST_LIMIT as f64
                ),
            ));
        }
        if errors.is_empty() {
            Ok(Rules { root })
        } else {
            Err(errors)
        }
    }

    /// Whether there is any rule to evaluate.
    pub fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// Evaluates the rules against `obj` (and `old`, the stored object, on update).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
        let mut walk = Walk {
            causes: Vec::new(),
            remaining: RUNTIME_BUDGET,
            stopped: false,
        };
        if !self.is_empty() {
            validate_node(&self.root, obj, old, "", &mut walk);
        }
        walk.causes
    }
}

fn compile_node(
    schema: &Value,
    at: &str,
    occurrences: u64,
    total: &mut u64,
    errors: &mut Vec<StatusCause>,
) -> Node {
    let mut node = Node {
        map_keys: crate::registry::schema::list_map_keys(schema)
            .into_iter()
            .map(str::to_string)
            .collect(),
        ..Node::default()
    };
    if let Some(list) = schema.get("x-kubernetes-validations") {
        let rules: Vec<ValidationRule> = serde_json::from_value(list.clone()).unwrap_or_default();
        for (i, rule) in rules.into_iter().enumerate() {
            let here = format!("{at}.x-kubernetes-validations[{i}]");
            match compile_rule(rule, schema, &here) {
                Ok((compiled, cost)) => {
                    *total = total.saturating_add(cost.saturating_mul(occurrences));
                    node.rules.push(compiled);
                }
                Err(e) => errors.push(e),
            }
        }
        if !node.rules.is_empty() {
            node.schema = schema.clone();
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, s) in props {
            let child = compile_node(
                s,
                &format!("{at}.properties[{name}]"),
                occurrences,
                total,
                errors,
            );
            if !child.is_empty() {
                node.properties.insert(name.clone(), child);
            }
        }
    }
    let many = |s: &Value| occurrences.saturating_mul(cardinality(Some(s), UNBOUNDED_AT_COMPILE));
    if let Some(items) = schema.get("items") {
        let child = compile_node(items, &format!("{at}.items"), many(schema), total, errors);
        if !child.is_empty() {
            node.items = Some(Box::new(child));
        }
    }
    if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let child = compile_node(
            ap,
            &format!("{at}.additionalProperties"),
            many(schema),
            total,
            errors,
        );
        if !child.is_empty() {
            node.additional = Some(Box::new(child));
        }
    }
    node
}

/// One rule, compiled, with its estimated cost; or the cause that refuses it.
fn compile_rule(
    rule: ValidationRule,
    schema: &Value,
    at: &str,
) -> Result<(Compiled, u64), StatusCause> {
    let program = compile(&rule.rule, &format!("{at}.rule"))?;
    let message = match rule.message_expression.as_deref() {
        Some(expr) => Some(compile(expr, &format!("{at}.messageExpression"))?),
        None => None,
    };
    if let Some(reason) = rule.reason.as_deref() {
        const REASONS: &[&str] = &[
            "FieldValueInvalid",
            "FieldValueForbidden",
            "FieldValueRequired",
            "FieldValueDuplicate",
        ];
        if !REASONS.contains(&reason) {
            return Err(StatusCause::unsupported(
                &format!("{at}.reason"),
                &format!("{reason:?}"),
                REASONS,
            ));
        }
    }
    let cost = Estimator::new(schema, schema, UNBOUNDED_AT_COMPILE).cost(program.expression());
    if cost > RULE_COST_LIMIT {
        return Err(StatusCause::forbidden(
            &format!("{at}.rule"),
            &format!(
                "estimated rule cost exceeds budget by factor of {:.2}x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
                cost as f64 / RULE_COST_LIMIT as f64
            ),
        ));
    }
    let transition = program.references().has_variable("oldSelf");
    Ok((
        Compiled {
            rule,
            program,
            message,
            transition,
        },
        cost,
    ))
}

/// The longest expression compiled, and the deepest nesting of brackets in one: the
/// parser recurses per level, so both bound the stack and time a CRD author can spend.
const MAX_EXPRESSION_BYTES: usize = 16 * 1024;
const MAX_NESTING: usize = 64;

/// One CEL expression, compiled after its size and nesting are checked.
fn compile(expr: &str, field: &str) -> Result<Program, StatusCause> {
    if expr.len() > MAX_EXPRESSION_BYTES {
        return Err(StatusCause::too_long(
            field,
            &format!("may not be more than {MAX_EXPRESSION_BYTES} bytes"),
        ));
    }
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for c in expr.chars() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_NESTING {
        return Err(StatusCause::invalid(
            field,
            expr,
            &format!("compilation failed: nested more than {MAX_NESTING} levels deep"),
        ));
    }
    env().compile(expr).map_err(|e| {
        StatusCause::invalid(
            field,
            expr,
            &format!("compilation failed: {}", one_line(&e.to_string())),
        )
    })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One object's validation: the causes found and what is left of its cost budget.
struct Walk {
    causes: Vec<StatusCause>,
    remaining: u64,
    /// A rule cost too much: no further rule runs, as in kube-apiserver.
    stopped: bool,
}

impl Walk {
    /// Takes an evaluation's estimated `cost` from the budget; or stops the walk and
    /// answers why it may not run: `over_call` past the per-call limit, `over_budget`
    /// past what is left of the object's budget (upstream's words, given by the caller).
    fn charge(&mut self, cost: u64, over_call: String, over_budget: &str) -> Result<(), String> {
        let refused = if cost > PER_CALL_LIMIT {
            over_call
        } else if cost > self.remaining {
            over_budget.to_string()
        } else {
            self.remaining -= cost;
            return Ok(());
        };
        self.stopped = true;
        Err(refused)
    }
}

fn validate_node(node: &Node, v: &Value, old: Option<&Value>, path: &str, walk: &mut Walk) {
    if v.is_null() || walk.stopped {
        return;
    }
    if !node.rules.is_empty() {
        evaluate(node, v, old, path, walk);
    }
    match v {
        Value::Object(map) => {
            for (name, child) in &node.properties {
                if let Some(value) = map.get(name) {
                    let old = old.and_then(|o| o.get(name));
                    validate_node(child, value, old, &join(path, name), walk);
                }
            }
            if let Some(child) = &node.additional {
                for (key, value) in map {
                    let old = old.and_then(|o| o.get(key));
                    validate_node(child, value, old, &join(path, key), walk);
                }
            }
        }
        Value::Array(items) => {
            if let Some(child) = &node.items {
                let old_items = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    // Only map lists correlate old and new items (by their keys).
                    let old = match (old_items, node.map_keys.is_empty()) {
                        (Some(olds), false) => olds
                            .iter()
                            .find(|o| node.map_keys.iter().all(|k| o.get(k) == item.get(k))),
                        _ => None,
                    };
                    validate_node(child, item, old, &format!("{path}[{i}]"), walk);
                }
            }
        }
        _ => {}
    }
}

/// Runs the node's rules with `self` (and `oldSelf`) bound, each after its cost on
/// these values is estimated and charged.
fn evaluate(node: &Node, v: &Value, old: Option<&Value>, path: &str, walk: &mut Walk) {
    let (Ok(this), old_this) = (cel::to_value(v), old.map(cel::to_value).transpose()) else {
        return;
    };
    let Ok(old_this) = old_this else {
        return;
    };
    let this_bounds = actual_bounds(&node.schema, v);
    let old_bounds = old.map(|o| actual_bounds(&node.schema, o));
    // What a rule computes from these values is no larger than they are.
    let computed = cost::size(v).saturating_add(old.map_or(0, cost::size));
    let estimate = |p: &Program| {
        let old = old_bounds.as_ref().unwrap_or(&this_bounds);
        Estimator::new(&this_bounds, old, computed).cost(p.expression())
    };
    let context = |old_self: Option<cel::Value>| {
        let mut ctx = root().new_inner_scope();
        ctx.add_variable_from_value("self", this.clone());
        if let Some(o) = old_self {
            ctx.add_variable_from_value("oldSelf", o);
        }
        ctx
    };
    let plain = context(old_this.clone());
    // `optionalOldSelf: true`: oldSelf is an optional, empty when nothing correlates.
    let optional = node.rules.iter().any(|c| c.optional_old_self()).then(|| {
        let wrapped = match old_this.clone() {
            Some(o) => OptionalValue::of(o),
            None => OptionalValue::none(),
        };
        context(Some(cel::Value::Opaque(Arc::new(wrapped))))
    });
    let stop = |walk: &mut Walk, message: String| {
        walk.causes
            .push(StatusCause::invalid(path, type_name(v), &message));
    };
    for c in &node.rules {
        let ctx = match (&optional, c.optional_old_self()) {
            (Some(optional), true) => optional,
            _ if c.transition && old.is_none() => continue,
            _ => &plain,
        };
        let field = match c.rule.field_path.as_deref() {
            Some(fp) => join(path, fp.trim_start_matches('.')),
            None => path.to_string(),
        };
        let charged = walk.charge(
            estimate(&c.program),
            format!(
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                rule_error_string(&c.rule)
            ),
            "validation failed due to running out of cost budget, no further validation rules will be run",
        );
        if let Err(refused) = charged {
            return stop(walk, refused);
        }
        let failed = match c.program.execute(ctx) {
            Ok(cel::Value::Bool(true)) => continue,
            Ok(cel::Value::Bool(false)) => match message(c, ctx, walk, &estimate) {
                Ok(m) => m,
                Err(refused) => return stop(walk, refused),
            },
            Ok(other) => format!("rule did not evaluate to a bool: {other:?}"),
            Err(e) => format!("rule evaluation error: {e}"),
        };
        walk.causes.push(cause(&c.rule, &field, v, &failed));
    }
}

/// The failure message: `messageExpression` when it yields a string, else `message`,
/// else the rule itself; `Err` when the message expression may not run (too costly).
fn message(
    c: &Compiled,
    ctx: &Context,
    walk: &mut Walk,
    estimate: &dyn Fn(&Program) -> u64,
) -> Result<String, String> {
    if let Some(m) = &c.message {
        let expr = c.rule.message_expression.as_deref().unwrap_or_default();
        walk.charge(
            estimate(m),
            format!("no further validation rules will be run due to call cost exceeds limit for messageExpression: {expr:?}"),
            "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
        )?;
        if let Ok(cel::Value::String(s)) = m.execute(ctx) {
            if !s.trim().is_empty() {
                return Ok(s.to_string());
            }
        }
    }
    Ok(match &c.rule.message {
        Some(m) if !m.is_empty() => m.clone(),
        _ => format!("failed rule: {}", c.rule.rule),
    })
}

/// How kube-apiserver names a rule in errors: its message, else its expression.
fn rule_error_string(rule: &ValidationRule) -> &str {
    match rule.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m,
        _ => rule.rule.trim(),
    }
}

fn cause(rule: &ValidationRule, field: &str, v: &Value, message: &str) -> StatusCause {
    match rule.reason.as_deref() {
        Some("FieldValueForbidden") => StatusCause::forbidden(field, message),
        Some("FieldValueRequired") => StatusCause::required(field, message),
        Some("FieldValueDuplicate") => StatusCause::duplicate(field, message),
        _ => StatusCause::invalid(field, type_name(v), message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(schema: Value, obj: Value, old: Option<Value>) -> Vec<String> {
        let rules = Rules::compile(&schema, "s").expect("compiles");
        rules
            .validate(&obj, old.as_ref())
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn rules_see_self_and_report_at_their_field() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}, "name": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max", "fieldPath": ".replicas"},
            {"rule": "self.name.startsWith('app-')", "messageExpression": "'name ' + self.name + ' lacks the app- prefix'", "reason": "FieldValueForbidden"},
            {"rule": "has(self.max)"}
        ]}}});
        assert!(messages(
            schema.clone(),
            json!({"spec": {"replicas": 1, "max": 2, "name": "app-x"}}),
            None
        )
        .is_empty());
        assert_eq!(
            messages(schema, json!({"spec": {"replicas": 3, "name": "x"}}), None),
            [
                "spec.replicas: Invalid value: \"object\": rule evaluation error: No such key: max",
                "spec: Forbidden: name x lacks the app- prefix",
                "spec: Invalid value: \"object\": failed rule: has(self.max)",
            ]
        );
    }

    #[test]
    fn transition_rules_compare_with_the_stored_value() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"mode": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                        "x-kubernetes-validations": [{"rule": "self.port >= oldSelf.port", "message": "ports only grow"}]}}}}}});
        let old = json!({"spec": {"mode": "a", "ports": [{"name": "http", "port": 80}]}});
        assert!(
            messages(schema.clone(), old.clone(), None).is_empty(),
            "no old value: not checked"
        );
        assert_eq!(
            messages(
                schema,
                json!({"spec": {"mode": "b", "ports": [{"name": "web", "port": 1}, {"name": "http", "port": 79}]}}),
                Some(old)
            ),
            [
                "spec.mode: Invalid value: \"string\": mode is immutable",
                "spec.ports[1]: Invalid value: \"object\": ports only grow",
            ]
        );
    }

    #[test]
    fn optional_old_self_runs_on_create_with_an_empty_old_self() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"size": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() ? self.size >= oldSelf.value().size : self.size < 10",
                "optionalOldSelf": true, "message": "starts under 10, then only grows"}]}}});
        let msg = |obj: Value, old: Option<Value>| messages(schema.clone(), obj, old);
        assert!(msg(json!({"spec": {"size": 3}}), None).is_empty());
        assert_eq!(
            msg(json!({"spec": {"size": 30}}), None),
            ["spec: Invalid value: \"object\": starts under 10, then only grows"]
        );
        assert!(msg(
            json!({"spec": {"size": 30}}),
            Some(json!({"spec": {"size": 3}}))
        )
        .is_empty());
        assert_eq!(
            msg(
                json!({"spec": {"size": 2}}),
                Some(json!({"spec": {"size": 3}}))
            )
            .len(),
            1
        );
    }

    /// Strings of `len` characters, `n` of them, all different.
    fn names(n: usize, len: usize) -> Value {
        (0..n).map(|i| format!("{i:0len$}")).collect()
    }

    #[test]
    fn a_rule_too_costly_for_the_value_at_hand_is_refused_before_it_runs() {
        // Affordable for the schema's estimate (500 × 500 short comparisons), so the CRD
        // is accepted, but over the per-call limit on a full list.
        let schema = json!({"type": "object", "properties": {"names": {"type": "array", "maxItems": 500,
            "items": {"type": "string", "maxLength": 8},
            "x-kubernetes-validations": [
                {"rule": "self.all(x, self.exists_one(y, x == y))", "message": "names must be unique"},
                {"rule": "self.size() >= 0", "message": "never reached"}]}}});
        assert!(messages(schema.clone(), json!({"names": names(20, 8)}), None).is_empty());
        assert_eq!(
            messages(schema, json!({"names": names(500, 8)}), None),
            ["names: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: names must be unique"]
        );
    }

    #[test]
    fn rules_stop_when_the_objects_cost_budget_runs_out() {
        // Each item's rule is under the per-call limit; 40 of them together are over the
        // budget for one object, so validation stops with upstream's message.
        let schema = json!({"type": "object", "properties": {"groups": {"type": "array", "maxItems": 40,
            "items": {"type": "array", "maxItems": 200, "items": {"type": "string", "maxLength": 8},
                "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, x == y))"}]}}}});
        let group = names(200, 8);
        let found = messages(
            schema.clone(),
            json!({"groups": vec![group.clone(); 40]}),
            None,
        );
        assert_eq!(found.len(), 1, "the rules that ran passed: {found:?}");
        assert!(
            found[0].starts_with("groups[") && found[0].ends_with("Invalid value: \"array\": validation failed due to running out of cost budget, no further validation rules will be run"),
            "{found:?}"
        );
        assert!(messages(schema, json!({"groups": vec![group; 5]}), None).is_empty());
    }

    #[test]
    fn bad_rules_are_refused_naming_the_rule() {
        let schema = |rule: &str| {
            json!({"type": "object", "properties": {"list": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": rule}]}}})
        };
        let err =
            |rule: &str| Rules::compile(&schema(rule), "s").err().expect("refused")[0].clone();
        let syntax = err("self.size( >");
        assert_eq!(
            syntax.field,
            "s.properties[list].x-kubernetes-validations[0].rule"
        );
        assert!(
            syntax.message.contains("compilation failed"),
            "{}",
            syntax.message
        );
        // Hostile sizes are refused before the parser sees them; the deepest nesting
        // allowed compiles on a thread's default stack.
        let deep = |n: usize| format!("{}self.size() > 0{}", "(".repeat(n), ")".repeat(n));
        assert!(err(&deep(64))
            .message
            .contains("nested more than 64 levels"));
        let ok = Rules::compile(&schema(&deep(63)), "s")
            .map(|_| ())
            .map_err(|e| e[0].message.clone());
        assert_eq!(ok, Ok(()));
        assert!(err(&"1 + ".repeat(5000))
            .message
            .contains("may not be more than"));
        // Unbounded list of unbounded strings, each scanned: far over budget.
        let costly = err("self.all(x, self.all(y, x.contains(y)))");
        assert!(
            costly
                .message
                .contains("estimated rule cost exceeds budget"),
            "{}",
            costly.message
        );
        let bounded = json!({"type": "object", "properties": {"list": {"type": "array", "maxItems": 10,
            "items": {"type": "string", "maxLength": 20}, "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x.contains(y)))"}]}}});
        assert!(
            Rules::compile(&bounded, "s").is_ok(),
            "bounds make it affordable"
        );
    }
}
