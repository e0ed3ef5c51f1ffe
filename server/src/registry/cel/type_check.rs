//! A field check of CEL expressions against a kind's schema, the part of cel-go's type
//! checker that ValidatingAdmissionPolicy's status reports most: a field selected on a
//! typed variable (`object.spec.replicas`) that its schema does not declare. cel-rust has
//! no type checker, so only selections are followed: a value whose type this cannot tell
//! (an index, a function's result, a comprehension's variable, a schema that keeps
//! unknown fields) is not checked further, so nothing is reported that cel-go would not.
//!
//! Issues are worded and laid out as cel-go prints them:
//! `ERROR: <input>:1:7: undefined field 'replicas'`, the source line, a caret line.

use cel::common::ast::{EntryExpr, Expr};
use cel::IdedExpr;
use serde_json::Value;

/// The issues of `expr` with the variables `typed` bound to the kind's `schema` (the
/// object's root schema), as cel-go prints them; `None` when there are none (or the
/// expression does not parse: compiling it reports that).
pub fn undefined_fields(expr: &str, typed: &[&str], schema: &Value) -> Option<String> {
    let program = super::compile(expr, "expression").ok()?;
    let mut found = Vec::new();
    walk(program.expression(), typed, schema, &mut found);
    if found.is_empty() {
        return None;
    }
    found.sort_by_key(|(id, _)| program.source_info().offset_for(*id));
    let issues: Vec<String> = found
        .iter()
        .map(|(id, field)| {
            let offset = program.source_info().offset_for(*id).map_or(0, |o| o.0);
            issue(expr, offset as usize, &format!("undefined field '{field}'"))
        })
        .collect();
    Some(issues.join("\n"))
}

/// Records each selection of an undeclared field below `e`; returns `e`'s schema when
/// it is known (`None`: dynamic).
fn walk<'s>(
    e: &IdedExpr,
    typed: &[&str],
    root: &'s Value,
    found: &mut Vec<(u64, String)>,
) -> Option<&'s Value> {
    match &e.expr {
        Expr::Ident(name) if typed.contains(&name.as_str()) => Some(root),
        Expr::Select(s) => {
            let operand = walk(&s.operand, typed, root, found)?;
            match field(operand, &s.field, std::ptr::eq(operand, root)) {
                Field::Declared(schema) => Some(schema),
                Field::Dynamic => None,
                Field::Undefined => {
                    found.push((e.id, s.field.clone()));
                    None
                }
            }
        }
        Expr::Call(c) => {
            for x in c.target.iter().map(|t| &**t).chain(&c.args) {
                walk(x, typed, root, found);
            }
            None
        }
        Expr::Comprehension(c) => {
            // Its variables shadow typed ones of the same name: those go unchecked.
            let inner: Vec<&str> = typed
                .iter()
                .copied()
                .filter(|t| *t != c.iter_var && *t != c.accu_var)
                .filter(|t| c.iter_var2.as_deref() != Some(*t))
                .collect();
            walk(&c.iter_range, typed, root, found);
            walk(&c.accu_init, typed, root, found);
            for x in [&c.loop_cond, &c.loop_step, &c.result] {
                walk(x, &inner, root, found);
            }
            None
        }
        Expr::List(l) => {
            for x in &l.elements {
                walk(x, typed, root, found);
            }
            None
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                match &entry.expr {
                    EntryExpr::MapEntry(me) => {
                        walk(&me.key, typed, root, found);
                        walk(&me.value, typed, root, found);
                    }
                    EntryExpr::StructField(f) => {
                        walk(&f.value, typed, root, found);
                    }
                }
            }
            None
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    walk(&f.value, typed, root, found);
                }
            }
            None
        }
        _ => None,
    }
}

/// What selecting a field of a value of `schema` gives.
enum Field<'s> {
    Declared(&'s Value),
    /// A value whose fields the schema does not fix.
    Dynamic,
    Undefined,
}

/// `root`: the schema is the kind's own, where `apiVersion`, `kind` and `metadata` are
/// implied (a CRD's schema leaves them out).
fn field<'s>(schema: &'s Value, name: &str, root: bool) -> Field<'s> {
    if let Some(declared) = schema["properties"].get(name) {
        return Field::Declared(declared);
    }
    if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        return Field::Declared(values);
    }
    let object = schema["type"] == "object" || schema["properties"].is_object();
    let open = schema["x-kubernetes-preserve-unknown-fields"] == true
        || schema["additionalProperties"] == true
        || !schema["properties"].is_object();
    let implied = ["apiVersion", "kind", "metadata"].contains(&name)
        && (root || schema["x-kubernetes-embedded-resource"] == true);
    match (object, open || implied) {
        (true, false) => Field::Undefined,
        _ => Field::Dynamic,
    }
}

/// One issue as cel-go prints it: where (1-based line and column), what, the line, and a
/// caret under the column.
fn issue(source: &str, offset: usize, message: &str) -> String {
    let before = &source[..offset.min(source.len())];
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count();
    let line = source[line_start..].lines().next().unwrap_or_default();
    format!(
        "ERROR: <input>:{line_no}:{}: {message}\n | {line}\n | {}^",
        column + 1,
        ".".repeat(column)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                }},
                "metadata": {"type": "object", "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                }},
            },
        })
    }

    #[test]
    fn an_undeclared_field_is_reported_where_it_is_selected() {
        let issues = undefined_fields("object.replicas > 1", &["object"], &deployment());
        assert_eq!(
            issues.as_deref(),
            Some(
                "ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^"
            )
        );
        let issues = undefined_fields(
            "object.spec.replicas > 1 &&\n  oldObject.spec.bogus == 2",
            &["object", "oldObject"],
            &deployment(),
        );
        assert_eq!(
            issues.as_deref(),
            Some("ERROR: <input>:2:17: undefined field 'bogus'\n |   oldObject.spec.bogus == 2\n | ................^")
        );
    }

    #[test]
    fn declared_implied_and_open_fields_are_fine() {
        for expr in [
            "object.spec.replicas > 1",
            "object.metadata.labels.app == 'x'",
            "object.spec.template.anything.goes",
            "object.kind == 'Deployment' && has(object.apiVersion)",
            "params.whatever == 1",
            "object.spec.replicas.all(object, object.nothing)",
            "[1].all(x, x > 0)",
        ] {
            assert_eq!(
                undefined_fields(expr, &["object"], &deployment()),
                None,
                "{expr}"
            );
        }
        assert!(undefined_fields("has(object.spec.bogus)", &["object"], &deployment()).is_some());
    }
}
