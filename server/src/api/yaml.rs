//! YAML request bodies decoded into JSON values within bounds.
//!
//! An alias replays its anchor's whole node, so a few bytes of aliases of aliases can
//! stand for gigabytes ("billion laughs"). serde_yaml stops alias chains that jump too
//! often, but not a large anchor aliased many times (quadratic: one 3 MiB body can
//! still describe terabytes). So the value is built here, by a visitor that charges
//! every node and string byte against a budget proportional to the body's size and
//! gives up as soon as it is spent, before the expansion is held in memory. Documents
//! without aliases always fit the budget. The visitor also stops nesting at the depth
//! `serde_json` reads back ([`MAX_DEPTH`]), where serde_yaml alone would allow one level
//! more.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Deepest nesting of sequences and mappings accepted (as in a JSON body).
pub const MAX_DEPTH: usize = crate::registry::json_patch::MAX_DEPTH;

/// The budget of a body of `len` bytes: each node costs 1 and each string (keys too) its
/// length, so a document without aliases costs less than twice its size.
pub fn budget(len: usize) -> usize {
    len.saturating_mul(2).saturating_add(4096)
}

/// Decodes one YAML document into a JSON value, as `serde_yaml::from_slice::<Value>`
/// does, but refusing expansions beyond [`budget`] and nesting beyond [`MAX_DEPTH`].
pub fn from_slice(body: &[u8]) -> Result<Value, serde_yaml::Error> {
    let left = Cell::new(budget(body.len()));
    let de = serde_yaml::Deserializer::from_slice(body);
    Bounded {
        left: &left,
        depth: 0,
    }
    .deserialize(de)
}

#[derive(Clone, Copy)]
struct Bounded<'a> {
    left: &'a Cell<usize>,
    depth: usize,
}

impl Bounded<'_> {
    fn charge<E: serde::de::Error>(self, cost: usize) -> Result<(), E> {
        match self.left.get().checked_sub(cost) {
            Some(rest) => {
                self.left.set(rest);
                Ok(())
            }
            None => Err(E::custom(
                "the document expands to more than the server accepts for a body of its size (too many or too large aliases)",
            )),
        }
    }

    fn nested<E: serde::de::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format!(
                "the document is nested more than {MAX_DEPTH} levels deep"
            )));
        }
        self.charge(1)?;
        Ok(Bounded {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.charge(1)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.charge(1)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.charge(1)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.charge(1)?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.charge(1 + v.len())?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.charge(1 + v.len())?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.charge(1)?;
        Ok(Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            inner.charge::<A::Error>(key.len())?;
            let value = map.next_value_seed(inner)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// For error messages that name the failure without the document.
pub fn is_expansion_error(e: &serde_yaml::Error) -> bool {
    e.to_string().contains("expands to more than")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_as_serde_yaml_does() {
        let doc = b"a: 1\nb: [x, 2.5, true, null]\nc:\n  d: -3\n  e: ~\nf: .nan\n";
        let ours = from_slice(doc).unwrap();
        let theirs: Value = serde_yaml::from_slice(doc).unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(ours["c"], json!({"d": -3, "e": null}));
        // Anchors and aliases within the budget are fine.
        let aliased = b"a: &x {k: v}\nb: *x\n";
        assert_eq!(from_slice(aliased).unwrap()["b"], json!({"k": "v"}));
        assert!(from_slice(b"a: [unclosed").is_err());
    }

    #[test]
    fn billion_laughs_is_refused_before_it_expands() {
        let mut doc = String::from(
            "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 9].join(",");
            doc.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let start = std::time::Instant::now();
        let e = from_slice(doc.as_bytes()).unwrap_err();
        assert!(is_expansion_error(&e), "{e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_large_anchor_aliased_many_times_is_refused() {
        // Quadratic, not exponential: serde_yaml's own repetition limit lets it through.
        let anchor = vec!["x".repeat(100); 1000].join(",");
        let mut doc = format!("a: &a [{anchor}]\nb:\n");
        for _ in 0..5000 {
            doc.push_str("- *a\n");
        }
        let e = from_slice(doc.as_bytes()).unwrap_err();
        assert!(is_expansion_error(&e), "{e}");
    }

    #[test]
    fn documents_without_aliases_always_fit() {
        // The densest forms: one-byte scalars, empty values, short keys.
        for doc in [
            "- a\n".repeat(50_000),
            "-\n".repeat(50_000),
            (0..20_000).map(|i| format!("k{i}:\n")).collect::<String>(),
            format!("[{}]", vec!["{a}"; 20_000].join(",")),
            format!("[{}]", vec!["[]"; 20_000].join(",")),
        ] {
            from_slice(doc.as_bytes()).unwrap_or_else(|e| panic!("{e}: {}", &doc[..20]));
        }
    }

    #[test]
    fn nesting_stops_where_json_does() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        from_slice(ok.as_bytes()).unwrap();
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(from_slice(deep.as_bytes()).is_err());
        // serde_yaml alone takes one level more, which serde_json would not read back.
        assert!(serde_yaml::from_slice::<Value>(deep.as_bytes()).is_ok());
        assert!(serde_json::from_str::<Value>(&deep).is_err());
    }
}
