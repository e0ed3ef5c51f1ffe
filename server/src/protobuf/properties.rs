//! Property tests: every shipped kind with field numbers, filled with generated values
//! its schema allows, encodes to protobuf and decodes; the decoded object is a fixed
//! point (decoding its encoding gives it back, and the same bytes again), so an object
//! survives any number of JSON ⇄ protobuf trips unchanged after the first.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use serde_json::{json, Map, Value};

use super::schema::{classify, Kind};
use super::{decode_object, encode_object, FIELD_EXT};
use crate::catalog::Catalog;

/// Nested messages generated at most (deeper ones are left out).
const MAX_DEPTH: usize = 4;

/// Values for one schema, or `None` where it has no protobuf form to generate.
fn value(schema: &Value, depth: usize) -> Option<BoxedStrategy<Value>> {
    Some(match classify(schema).ok()? {
        Kind::Str => "[a-z0-9]{0,6}".prop_map(Value::String).boxed(),
        Kind::Bytes => prop::collection::vec(any::<u8>(), 0..6)
            .prop_map(|b| {
                use base64::Engine;
                json!(base64::engine::general_purpose::STANDARD.encode(b))
            })
            .boxed(),
        Kind::Time => (2000u32..2100, 1u32..13, 1u32..29, 0u32..24, 0u32..60)
            .prop_map(|(y, mo, d, h, mi)| json!(format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:00Z")))
            .boxed(),
        Kind::Quantity => prop::sample::select(vec!["1", "500m", "1Gi", "100Ki", "2"])
            .prop_map(|q| json!(q))
            .boxed(),
        Kind::IntOrString => prop_oneof![
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z]{1,4}|[0-9]{1,2}%".prop_map(Value::String),
        ]
        .boxed(),
        Kind::Int64 => any::<i64>().prop_map(|n| json!(n)).boxed(),
        Kind::Int32 => any::<i32>().prop_map(|n| json!(n)).boxed(),
        Kind::Double => (-1000i32..1000)
            .prop_map(|n| json!(f64::from(n) / 4.0))
            .boxed(),
        Kind::Float => (-1000i16..1000)
            .prop_map(|n| json!(f32::from(n) / 4.0))
            .boxed(),
        Kind::Bool => any::<bool>().prop_map(|b| json!(b)).boxed(),
        Kind::RawJson => Just(json!({ "a": [1, "b"] })).boxed(),
        Kind::Array(items) if depth < MAX_DEPTH => {
            prop::collection::vec(value(items, depth + 1)?, 0..3)
                .prop_map(Value::Array)
                .boxed()
        }
        Kind::Map(values) if depth < MAX_DEPTH => {
            prop::collection::btree_map("[a-z]{1,3}", value(values, depth + 1)?, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
                .boxed()
        }
        Kind::Message(schema) if depth < MAX_DEPTH => message(schema, depth + 1),
        Kind::Array(_) | Kind::Map(_) | Kind::Message(_) => return None,
    })
}

/// A message: each numbered property present or not.
fn message(schema: &Map<String, Value>, depth: usize) -> BoxedStrategy<Value> {
    let fields: Vec<(String, BoxedStrategy<Value>)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, s)| s.get(FIELD_EXT).is_some())
        .filter_map(|(name, s)| Some((name.clone(), value(s, depth)?)))
        .collect();
    let (names, values): (Vec<String>, Vec<_>) = fields.into_iter().unzip();
    values
        .into_iter()
        .map(prop::option::of)
        .collect::<Vec<_>>()
        .prop_map(move |vs| {
            let m: Map<String, Value> = names
                .iter()
                .zip(vs)
                .filter_map(|(n, v)| Some((n.clone(), v?)))
                .collect();
            Value::Object(m)
        })
        .boxed()
}

/// Objects of every protobuf kind of the compiled-in catalog, with their schema.
fn shipped_objects() -> BoxedStrategy<(Value, Value)> {
    let catalog = Catalog::from_definitions(crate::generated::CATALOG).expect("the catalog loads");
    let kinds: Vec<BoxedStrategy<(Value, Value)>> = catalog
        .all()
        .into_iter()
        .filter(|r| r.protobuf)
        .filter_map(|r| {
            let schema = r.schema().clone();
            let (api_version, kind) = (r.api_version().to_string(), r.def.kind.clone());
            let body = value(&schema, 0)?;
            Some(
                body.prop_map(move |mut obj| {
                    obj["apiVersion"] = json!(api_version);
                    obj["kind"] = json!(kind);
                    (obj, schema.clone())
                })
                .boxed(),
            )
        })
        .collect();
    assert!(kinds.len() > 50, "only {} protobuf kinds", kinds.len());
    Union::new(kinds).boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The first trip may normalise (empty strings of optional fields are dropped, as
    /// the module says); after it, JSON and protobuf carry exactly the same object.
    #[test]
    fn shipped_kinds_reach_a_fixed_point_after_one_protobuf_round_trip(
        (obj, schema) in shipped_objects()
    ) {
        let body = encode_object(&obj, &schema).expect("a generated object encodes");
        let once = decode_object(&body, &schema).expect("what was encoded decodes");
        let again = encode_object(&once, &schema).expect("a decoded object encodes");
        let twice = decode_object(&again, &schema).expect("what was encoded decodes");
        prop_assert_eq!(&twice, &once, "{} changes on a second round trip", obj["kind"]);
        let thrice = encode_object(&twice, &schema).expect("a decoded object encodes");
        prop_assert_eq!(thrice, again, "{} encodes differently on a second round trip", obj["kind"]);
    }
}
