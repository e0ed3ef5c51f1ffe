//! What of a variable expressions can reach, worked out from their syntax when they are
//! compiled, so that a large JSON value (a policy's `object`) is converted to CEL values
//! only where some expression can read it.
//!
//! A use of the variable that is a chain of field selections (`object.metadata.name`,
//! also inside `has()`) reaches that field, whole; any other use (`object` alone, as an
//! operand, a macro's range, indexed, `object.?field`) reaches the whole value. A value
//! bound with [`Reach`] holds the fields reached and nothing else, so every expression
//! whose uses were counted sees what it would see with the whole value: the fields it
//! selects are there (or absent) as in the JSON, each with its whole value, and the
//! maps between the variable and them are only ever selected from.

use std::collections::BTreeMap;

use cel::common::ast::Expr;
use cel::common::types::{CelMap, CelMapKey};
use cel::common::value::Val;
use serde_json::Value;

use super::activation::json_val;
use super::Expression;

/// The part of a variable's value some expressions can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The whole value.
    Whole,
    /// Only these fields of it (a value that is not a map is bound whole): each with
    /// the part of it reached. No field: the variable is not read at all.
    Fields(BTreeMap<String, Reach>),
}

impl Default for Reach {
    fn default() -> Self {
        Reach::Fields(BTreeMap::new())
    }
}

impl Reach {
    /// What `expressions` can reach of the variable `name`.
    pub fn of<'e>(name: &str, expressions: impl IntoIterator<Item = &'e Expression>) -> Reach {
        let mut reach = Reach::default();
        for e in expressions {
            reach.add_uses(name, e);
        }
        reach
    }

    /// Adds what `e` can reach of the variable `name`.
    pub fn add_uses(&mut self, name: &str, e: &Expression) {
        // A worklist, not recursion: an expression may nest as deep as its length.
        let mut pending = vec![e.program.expression()];
        while let Some(e) = pending.pop() {
            if *self == Reach::Whole {
                return;
            }
            match &e.expr {
                Expr::Ident(ident) if ident == name => *self = Reach::Whole,
                Expr::Select(select) => match selected_path(&e.expr, name) {
                    Some(path) => self.add(&path),
                    None => pending.push(&select.operand),
                },
                Expr::Call(call) => {
                    pending.extend(call.target.as_deref());
                    pending.extend(&call.args);
                }
                Expr::Comprehension(c) => pending.extend([
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]),
                Expr::List(list) => pending.extend(&list.elements),
                Expr::Map(map) => {
                    for entry in &map.entries {
                        if let cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                            pending.extend([&m.key, &m.value]);
                        }
                    }
                }
                Expr::Struct(s) => {
                    for entry in &s.entries {
                        if let cel::common::ast::EntryExpr::StructField(f) = &entry.expr {
                            pending.push(&f.value);
                        }
                    }
                }
                Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
            }
        }
    }

    /// Adds a path of fields, reached whole.
    fn add(&mut self, path: &[&str]) {
        let mut at = self;
        for field in path {
            match at {
                Reach::Whole => return,
                Reach::Fields(fields) => at = fields.entry(field.to_string()).or_default(),
            }
        }
        *at = Reach::Whole;
    }
}

/// The fields `expr` selects from the variable `name`, outermost last, when it is a
/// chain of field selections on it (the outermost one may be `has()`'s test).
fn selected_path<'e>(expr: &'e Expr, name: &str) -> Option<Vec<&'e str>> {
    let mut path = Vec::new();
    let mut at = expr;
    loop {
        match at {
            Expr::Select(select) if !select.test || path.is_empty() => {
                path.push(select.field.as_str());
                at = &select.operand.expr;
            }
            Expr::Ident(ident) if ident == name => {
                path.reverse();
                return Some(path);
            }
            _ => return None,
        }
    }
}

/// `v` as CEL values, holding only what `reach` says (see [`Reach`]).
pub(super) fn reached_val<'v>(v: &'v Value, reach: &Reach) -> Box<dyn Val + 'v> {
    match (reach, v) {
        (Reach::Fields(fields), Value::Object(map)) => Box::new(CelMap::from(
            fields
                .iter()
                .filter_map(|(field, reach)| {
                    let (key, v) = map.get_key_value(field.as_str())?;
                    Some((CelMapKey::from(key.as_str()), reached_val(v, reach)))
                })
                .collect::<std::collections::HashMap<_, _>>(),
        )),
        _ => json_val(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::cel::Activation;
    use serde_json::json;

    fn compiled(e: &str) -> Expression {
        Expression::compile(e, "expression").expect("compiles")
    }

    fn reach(expressions: &[&str]) -> Reach {
        let compiled: Vec<Expression> = expressions.iter().map(|e| compiled(e)).collect();
        Reach::of("object", &compiled)
    }

    fn fields(entries: &[(&str, Reach)]) -> Reach {
        Reach::Fields(
            entries
                .iter()
                .map(|(k, r)| (k.to_string(), r.clone()))
                .collect(),
        )
    }

    #[test]
    fn field_selections_reach_their_fields_and_other_uses_the_whole_value() {
        assert_eq!(
            reach(&["object.metadata.name.size() <= 63"]),
            fields(&[("metadata", fields(&[("name", Reach::Whole)]))])
        );
        assert_eq!(
            reach(&["!has(object.data) || !('forbidden' in object.data)"]),
            fields(&[("data", Reach::Whole)])
        );
        // A shorter path takes in the longer one, whichever comes first.
        let both = fields(&[("metadata", Reach::Whole)]);
        assert_eq!(
            reach(&["object.metadata.name == 'a'", "size(object.metadata) > 0"]),
            both
        );
        assert_eq!(
            reach(&["size(object.metadata) > 0", "has(object.metadata.name)"]),
            both
        );
        for whole in [
            "object == oldObject",
            "size(object) > 0",
            "object.all(k, k != '')",
            "object['metadata'].name == 'a'",
            "[object][0].metadata.name == 'a'",
            "dyn(object).metadata.name == 'a'",
        ] {
            assert_eq!(reach(&[whole]), Reach::Whole, "{whole}");
        }
        // Not read at all; other variables and a string that spells the name count for
        // nothing.
        assert_eq!(
            reach(&["oldObject.metadata.name == 'object'"]),
            Reach::default()
        );
    }

    /// What the expression gives with `object` bound whole and bound as `reach` says.
    fn both_ways(
        e: &Expression,
        variables: &[&Expression],
        reach: &Reach,
        v: &Value,
    ) -> [Result<cel::Value, String>; 2] {
        [None, Some(reach)].map(|reach| {
            let mut scope = Activation::new();
            match reach {
                None => scope.bind_json("object", v),
                Some(reach) => scope.bind_json_reached("object", v, reach),
            }
            scope.bind_json("oldObject", v);
            let mut computed = std::collections::HashMap::new();
            for (i, variable) in variables.iter().enumerate() {
                let mut with = scope.nested();
                with.bind("variables", computed.clone().into())?;
                let value = variable.evaluate_in(&with)?;
                computed.insert(format!("v{i}"), value);
            }
            let mut with = scope.nested();
            with.bind("variables", computed.into())?;
            e.evaluate_in(&with)
        })
    }

    #[test]
    fn values_bound_as_reached_give_the_same_results_and_errors_as_whole_ones() {
        let objects = [
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "cm",
                    "namespace": "ns",
                    "labels": { "app": "web", "tier": "" },
                    "annotations": {},
                    "managedFields": [{ "manager": "kubectl", "fieldsV1": { "f:data": {} } }],
                },
                "data": { "payload": "abc", "forbidden": "x" },
                "spec": { "replicas": 3, "ports": [{ "port": 80 }, { "port": -1 }], "ratio": 0.5 },
            }),
            json!({ "metadata": { "name": "" }, "data": {} }),
            json!({ "metadata": "not a map", "data": ["forbidden"], "spec": null }),
            json!({ "kind": "Empty" }),
            json!({}),
            json!(null),
            json!("a string"),
            json!([1, 2]),
        ];
        let expressions = [
            "object.metadata.name.size() <= 63",
            "!has(object.data) || !('forbidden' in object.data)",
            "has(object.metadata.labels) && 'app' in object.metadata.labels",
            "has(object.metadata.name)",
            "has(object.spec.replicas) && object.spec.replicas > 1",
            "object.spec.ports.all(p, p.port > 0)",
            "object.spec.ports.exists(p, p.port == 80)",
            "object.metadata.labels.all(k, object.metadata.labels[k] != '')",
            "object.metadata.labels.exists_one(k, k == 'app')",
            "object.data.map(k, k).size()",
            "object.missing.field == 1",
            "object.metadata.missing",
            "object.spec.replicas == 3",
            "object.spec.replicas == dyn(3u)",
            "dyn(object.spec.ratio) < 1.0",
            "object.spec == {'replicas': 3}",
            "object.spec.ports[1].port < 0",
            "object.metadata.labels['app'] == 'web'",
            "object.?spec.replicas.orValue(0) > 0",
            "object.?spec.?missing.hasValue()",
            "object.kind == 'ConfigMap' ? object.metadata.name : object.kind",
            "type(object.metadata) == map",
            "object.metadata.managedFields[0].manager",
            "string(object.metadata.name) + '/' + object.metadata.namespace",
            "'forbidden' in object.data ? 'has ' + object.metadata.name : 'fine'",
            "object.metadata == oldObject.metadata",
            "object == oldObject",
            "size(object)",
            "[1, 2].all(object, object > 0)",
            "variables.v0 && variables.v1 == 'cm'",
        ];
        let variables = [
            compiled("has(object.metadata.labels)"),
            compiled("object.metadata.name"),
        ];
        let variables: Vec<&Expression> = variables.iter().collect();
        for text in expressions {
            let e = compiled(text);
            // What a policy's expressions reach together, as a policy binds them, and
            // what this one reaches alone.
            let mut together = Reach::of("object", variables.iter().copied());
            together.add_uses("object", &e);
            let alone = Reach::of("object", [&e]);
            for v in &objects {
                for (reach, variables) in [(&together, &variables[..]), (&alone, &[][..])] {
                    let [whole, reached] = both_ways(&e, variables, reach, v);
                    assert_eq!(whole, reached, "{text} on {v} reached as {reach:?}");
                }
            }
        }
    }
}
