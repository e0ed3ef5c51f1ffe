//! What a CEL rule may cost, and how much it can cost at most.
//!
//! cel-rust counts nothing while it evaluates, so every cost here is a worst case worked
//! out before evaluation: one unit per expression node, loops multiplied by how many
//! elements they can visit, string and list scans by how long their subject can be.
//! At compile time the lengths come from the schema's bounds (`maxItems`,
//! `maxProperties`, `maxLength`; a value without one is bounded by the request size
//! limit); at run time from the value being validated ([`actual_bounds`]), so a rule is
//! refused before it runs rather than stopped while it runs.

use cel::common::ast::{EntryExpr, Expr, LiteralValue};
use cel::IdedExpr;
use serde_json::{Map, Value};

use crate::registry::schema::child_schema;

/// The most a rule's estimated cost may be (kube-apiserver's `StaticEstimatedCostLimit`).
pub const RULE_COST_LIMIT: u64 = 10_000_000;
/// The most all of a kind's rules may cost together, each counted as many times as the
/// value it checks can occur (kube-apiserver's `StaticEstimatedCRDCostLimit`).
pub const TOTAL_COST_LIMIT: u64 = 100_000_000;
/// The most one evaluation of one rule may cost on a real value (kube-apiserver's
/// `PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most all rule evaluations for one object may cost together (kube-apiserver's
/// `RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// What bounds a value the schema does not bound: no request body is larger.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;
/// How many elements a value the schema does not bound can hold: the smallest element
/// serializes to at least two bytes (`1,`, `"",`).
pub const UNBOUNDED_AT_COMPILE: u64 = MAX_REQUEST_BYTES / 2;

/// Worst-case cost of an expression over values shaped by a schema.
pub struct Estimator<'s> {
    /// Variables in scope and the schema of their values.
    vars: Vec<(String, Option<&'s Value>)>,
    /// How many elements a value of unknown size (computed, or unbounded) can hold.
    unbounded: u64,
    /// The accumulators of the comprehensions around: `map` and `filter` append to
    /// theirs in place, so adding to one costs no copy.
    accumulators: Vec<String>,
}

impl<'s> Estimator<'s> {
    /// An estimator with `self` shaped by `this` and `oldSelf` by `old`; values of
    /// unknown size count as `unbounded` elements.
    pub fn new(this: &'s Value, old: &'s Value, unbounded: u64) -> Self {
        Self::with_variables(
            vec![("self".into(), Some(this)), ("oldSelf".into(), Some(old))],
            unbounded,
        )
    }

    /// An estimator with the named variables shaped by their schemas (`None`, or a name
    /// not listed: shape unknown); values of unknown size count as `unbounded` elements.
    pub fn with_variables(vars: Vec<(String, Option<&'s Value>)>, unbounded: u64) -> Self {
        Estimator {
            vars,
            unbounded: unbounded.max(1),
            accumulators: Vec::new(),
        }
    }

    fn cardinality(&self, schema: Option<&Value>) -> u64 {
        cardinality(schema, self.unbounded)
    }

    /// The schema of what `e` evaluates to, when it is a path into `self`.
    fn schema_of(&self, e: &IdedExpr) -> Option<&'s Value> {
        match &e.expr {
            Expr::Ident(name) => self.vars.iter().rev().find(|(n, _)| n == name)?.1,
            Expr::Select(s) => {
                let parent = self.schema_of(&s.operand)?;
                Some(child_schema(parent, &s.field)).filter(|c| !c.is_null())
            }
            Expr::Call(c) if c.func_name == "_[_]" => {
                let parent = self.schema_of(c.args.first()?)?;
                element(parent)
            }
            _ => None,
        }
    }

    /// What a call costs beyond one unit per node: the length of what it scans, copies
    /// or compares.
    fn scan(&self, function: &str, operands: &[&IdedExpr]) -> u64 {
        let length = |i: usize| operands.get(i).map_or(0, |e| self.length(e));
        match function {
            // Equality stops at the shorter operand.
            "_==_" | "_!=_" => length(0).min(length(1)),
            "_+_" => length(0).saturating_add(length(1)),
            // `x in list`: the list is scanned.
            "@in" => length(1),
            f if scans(f) => length(0),
            _ => 0,
        }
    }

    /// How long the string or list `e` can be; 0 for a scalar.
    fn length(&self, e: &IdedExpr) -> u64 {
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => s.inner().len() as u64,
            Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
            Expr::Literal(_) => 0,
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            Expr::Ident(name) if self.accumulators.contains(name) => 0,
            _ => {
                let schema = self.schema_of(e);
                match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
                    Some("integer" | "number" | "boolean") => 0,
                    _ => self.cardinality(schema),
                }
            }
        }
    }

    /// The worst-case cost of `e`.
    pub fn cost(&mut self, e: &IdedExpr) -> u64 {
        match &e.expr {
            Expr::Select(s) => 1 + self.cost(&s.operand),
            Expr::List(l) => l
                .elements
                .iter()
                .fold(1, |n, x| n.saturating_add(self.cost(x))),
            Expr::Map(m) => m.entries.iter().fold(1, |n, entry| match &entry.expr {
                EntryExpr::MapEntry(me) => n
                    .saturating_add(self.cost(&me.key))
                    .saturating_add(self.cost(&me.value)),
                EntryExpr::StructField(f) => n.saturating_add(self.cost(&f.value)),
            }),
            Expr::Call(c) => {
                let mut n: u64 = 1;
                let operands: Vec<&IdedExpr> = c
                    .target
                    .as_deref()
                    .into_iter()
                    .chain(c.args.iter())
                    .collect();
                for x in &operands {
                    n = n.saturating_add(self.cost(x));
                }
                n.saturating_add(self.scan(&c.func_name, &operands))
            }
            Expr::Comprehension(c) => {
                let range = self.schema_of(&c.iter_range);
                let visits = self.cardinality(range);
                let element = range.and_then(element);
                let outer = self
                    .cost(&c.iter_range)
                    .saturating_add(self.cost(&c.accu_init));
                self.vars.push((c.iter_var.clone(), element));
                if let Some(v2) = &c.iter_var2 {
                    self.vars.push((v2.clone(), element));
                }
                self.accumulators.push(c.accu_var.clone());
                let body = self
                    .cost(&c.loop_cond)
                    .saturating_add(self.cost(&c.loop_step));
                self.accumulators.pop();
                self.vars
                    .truncate(self.vars.len() - 1 - usize::from(c.iter_var2.is_some()));
                outer
                    .saturating_add(visits.saturating_mul(body))
                    .saturating_add(self.cost(&c.result))
            }
            _ => 1,
        }
    }
}

/// How many elements (or entries, or bytes) a value of `schema` can hold at most;
/// `unbounded` when the schema does not say.
pub fn cardinality(schema: Option<&Value>, unbounded: u64) -> u64 {
    let bound = |k: &str| schema.and_then(|s| s.get(k)).and_then(Value::as_u64);
    match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("array") => bound("maxItems"),
        Some("object") => bound("maxProperties"),
        Some("string") => bound("maxLength"),
        _ => None,
    }
    .unwrap_or(unbounded)
}

/// The schema of a list's items or a map's values.
fn element(schema: &Value) -> Option<&Value> {
    schema
        .get("items")
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

/// Functions whose cost grows with the length of the string (or list) they are
/// called on.
fn scans(function: &str) -> bool {
    matches!(
        function,
        "matches"
            | "contains"
            | "startsWith"
            | "endsWith"
            | "find"
            | "findAll"
            | "split"
            | "replace"
            | "indexOf"
            | "lastIndexOf"
            | "lowerAscii"
            | "upperAscii"
            | "trim"
            | "join"
            | "validate"
    )
}

/// A schema exactly as large as `v`: `maxItems`, `maxProperties` and `maxLength` are
/// what `v` holds (a list's items and a map's values merged into one worst element), so
/// the [`Estimator`] bounds an evaluation on `v` instead of on any value the schema
/// allows. Properties the schema declares keep their own shape; a value the schema
/// says nothing about is shaped from the value alone.
pub fn actual_bounds(schema: &Value, v: &Value) -> Value {
    let mut out = Map::new();
    match v {
        Value::String(s) => {
            out.insert("type".into(), "string".into());
            out.insert("maxLength".into(), s.chars().count().into());
        }
        Value::Array(items) => {
            out.insert("type".into(), "array".into());
            out.insert("maxItems".into(), items.len().into());
            let of = schema.get("items").unwrap_or(&Value::Null);
            if let Some(worst) = items.iter().map(|i| actual_bounds(of, i)).reduce(merge) {
                out.insert("items".into(), worst);
            }
        }
        Value::Object(map) => {
            out.insert("type".into(), "object".into());
            out.insert("maxProperties".into(), map.len().into());
            let declared = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            match (declared, additional) {
                (_, Some(ap)) => {
                    if let Some(worst) = map.values().map(|v| actual_bounds(ap, v)).reduce(merge) {
                        out.insert("additionalProperties".into(), worst);
                    }
                }
                (declared, None) => {
                    let props = map
                        .iter()
                        .map(|(k, v)| {
                            let s = declared.and_then(|d| d.get(k)).unwrap_or(&Value::Null);
                            (k.clone(), actual_bounds(s, v))
                        })
                        .collect();
                    out.insert("properties".into(), Value::Object(props));
                }
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// One shape that bounds both `a` and `b`.
fn merge(a: Value, b: Value) -> Value {
    let (Value::Object(mut a), Value::Object(b)) = (a, b) else {
        return Value::Null;
    };
    for (k, bv) in b {
        let merged = match (k.as_str(), a.remove(&k)) {
            (_, None) => bv,
            ("type", Some(av)) if av == bv => av,
            // Mixed types: no bound applies, the estimator falls back to the worst case.
            ("type", Some(_)) => Value::Null,
            ("maxItems" | "maxProperties" | "maxLength", Some(av)) => {
                av.as_u64().max(bv.as_u64()).into()
            }
            ("properties", Some(Value::Object(mut ap))) => {
                if let Value::Object(bp) = bv {
                    for (name, s) in bp {
                        let m = match ap.remove(&name) {
                            Some(prev) => merge(prev, s),
                            None => s,
                        };
                        ap.insert(name, m);
                    }
                }
                Value::Object(ap)
            }
            (_, Some(av)) => merge(av, bv),
        };
        a.insert(k, merged);
    }
    Value::Object(a)
}

/// About how many bytes `v` serializes to: what a value computed from it can hold.
pub fn size(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64 + 2,
        Value::Array(items) => items.iter().map(|i| size(i) + 1).sum::<u64>() + 2,
        Value::Object(map) => {
            map.iter()
                .map(|(k, v)| k.len() as u64 + 4 + size(v))
                .sum::<u64>()
                + 2
        }
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cost(schema: &Value, old: &Value, unbounded: u64, expr: &str) -> u64 {
        let program = super::super::env().compile(expr).expect("compiles");
        Estimator::new(schema, old, unbounded).cost(program.expression())
    }

    #[test]
    fn actual_bounds_are_what_the_value_holds_with_elements_merged() {
        let schema = json!({"type": "object", "properties": {
            "names": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}});
        let v = json!({"names": ["a", "abcd", "ab"], "labels": {"x": "12345", "y": ""}, "free": {"k": [1, 2]}});
        assert_eq!(
            actual_bounds(&schema, &v),
            json!({"type": "object", "maxProperties": 3, "properties": {
                "names": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 4}},
                "labels": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string", "maxLength": 5}},
                "free": {"type": "object", "maxProperties": 1, "properties": {
                    "k": {"type": "array", "maxItems": 2, "items": {}}}}}})
        );
        // Lists of objects merge every element's properties into one worst element.
        let merged = actual_bounds(
            &Value::Null,
            &json!([{"a": "x"}, {"a": "xyz", "b": [1]}, "mixed"]),
        );
        assert_eq!(merged["maxItems"], 3);
        assert_eq!(
            merged["items"]["type"],
            Value::Null,
            "mixed types keep no bound"
        );
        assert_eq!(merged["items"]["maxProperties"], 2);
    }

    #[test]
    fn the_estimate_on_a_real_value_is_far_below_the_schemas_worst_case() {
        let schema = json!({"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 100}});
        let rule = "self.all(x, self.exists(y, x == y))";
        let worst = cost(&schema, &schema, UNBOUNDED_AT_COMPILE, rule);
        assert!(worst > RULE_COST_LIMIT, "{worst}");
        let small = actual_bounds(&schema, &json!(["a", "bb", "ccc"]));
        let real = cost(&small, &small, 100, rule);
        assert!(
            real < 200 && real * 10_000 < worst,
            "{real} against {worst}"
        );
        // A computed value is bounded by what the caller says can be computed.
        let computed = |unbounded| cost(&small, &small, unbounded, "(self[0] + 'x').contains('y')");
        assert_eq!(computed(100), computed(50) + 50);
    }

    #[test]
    fn size_counts_about_the_serialized_bytes() {
        let v = json!({"a": ["xy", 1], "b": null});
        let exact = serde_json::to_string(&v).unwrap().len() as u64;
        assert!(size(&v) >= exact, "{} < {exact}", size(&v));
        assert!(size(&v) < exact * 4);
    }
}
