//! The variables an evaluation binds, converted once and shared by every expression
//! evaluated with them: a policy's validations all see the same `object`, so it is
//! turned into CEL values once per request, not once per expression.

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use cel::Context;
use serde_json::Value;

use super::reach::{reached_val, Reach};
use super::root;

/// A scope of variables: the JSON values bound are read in place (their strings are
/// borrowed, not copied), and a scope nested in another sees the outer one's variables
/// unless it binds the same name.
pub struct Activation<'p, 'v> {
    pub(super) ctx: Context<'p, 'v>,
}

impl<'v> Activation<'static, 'v> {
    /// An empty scope in the Kubernetes CEL environment.
    pub fn new() -> Self {
        Activation {
            ctx: root().new_inner_scope(),
        }
    }
}

impl Default for Activation<'static, '_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'p, 'v> Activation<'p, 'v> {
    /// Binds `name` to a JSON value as CEL sees it (`null` binds null).
    pub fn bind_json(&mut self, name: &str, v: &'v Value) {
        self.ctx.add_variable_as_val(name, json_val(v));
    }

    /// Binds `name` to the part of a JSON value that `reach` says expressions can read
    /// (the rest is not converted).
    pub fn bind_json_reached(&mut self, name: &str, v: &'v Value, reach: &Reach) {
        self.ctx.add_variable_as_val(name, reached_val(v, reach));
    }

    /// Binds `name` to a CEL value (one computed by an expression).
    pub fn bind(&mut self, name: &str, v: cel::Value) -> Result<(), String> {
        let v: Box<dyn Val> = v.try_into().map_err(|e| format!("{name}: {e}"))?;
        self.ctx.add_variable_as_val(name, v);
        Ok(())
    }

    /// A scope inside this one, for what changes from one evaluation to the next.
    pub fn nested(&self) -> Activation<'_, 'v> {
        Activation {
            ctx: self.ctx.new_inner_scope(),
        }
    }
}

/// A JSON value as CEL values, as [`super::to_cel`] converts it (a positive integer is a
/// `uint`, a negative one an `int`, any other number a `double`), without the copy
/// `to_cel` and binding its result would make.
pub(super) fn json_val(v: &Value) -> Box<dyn Val + '_> {
    match v {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Box::new(CelUInt::from(u)),
            (None, Some(i)) => Box::new(CelInt::from(i)),
            (None, None) => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => Box::new(CelString::from(s.as_str())),
        Value::Array(items) => Box::new(CelList::from(
            items.iter().map(json_val).collect::<Vec<_>>(),
        )),
        Value::Object(map) => Box::new(CelMap::from(
            map.iter()
                .map(|(k, v)| (CelMapKey::from(k.as_str()), json_val(v)))
                .collect::<std::collections::HashMap<_, _>>(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_bound_as_to_cel_converts_it() {
        let v = json!({
            "metadata": { "name": "cm", "labels": { "a": "b" } },
            "data": { "k": "v", "empty": "" },
            "numbers": [0, 1, -1, 2.5, 18446744073709551615u64, -9223372036854775808i64, 1e300],
            "flags": [true, false, null],
            "nested": [[], {}, [{ "x": [1] }]],
        });
        let mut scope = Activation::new();
        scope.bind_json("object", &v);
        let bound = cel::Program::compile("object")
            .expect("compiles")
            .execute(&scope.ctx)
            .expect("evaluates");
        assert_eq!(bound, super::super::to_cel(&v).expect("converts"));
    }

    #[test]
    fn nested_scopes_see_outer_variables_and_shadow_them() {
        let (a, b) = (json!(1), json!("x"));
        let mut outer = Activation::new();
        outer.bind_json("a", &a);
        outer.bind_json("b", &b);
        let mut inner = outer.nested();
        inner.bind("b", cel::Value::Int(-2)).expect("binds");
        let run = |scope: &Activation<'_, '_>, e: &str| {
            cel::Program::compile(e)
                .expect("compiles")
                .execute(&scope.ctx)
                .expect("evaluates")
        };
        assert_eq!(run(&inner, "[a, b]"), run(&outer, "[1u, -2]"));
        assert_eq!(run(&outer, "b"), cel::Value::String("x".to_string().into()));
    }
}
