//! JSON patch (RFC 6902) with kube-apiserver's limits on what a patch may cost: at most
//! [`MAX_OPERATIONS`] operations (413), `copy` operations adding at most
//! [`MAX_COPY_BYTES`] of JSON in total (422), and, ours, no operation nesting the object
//! deeper than [`MAX_DEPTH`] (422), so that what is stored can be decoded again and
//! nothing recursive over it can run out of stack.
//!
//! The `json-patch` crate has no such limits, so operations are applied one by one with
//! the checks in between: the document never grows past them, however the patch is
//! built (a handful of doubling `copy` operations would otherwise take gigabytes).

use json_patch::{PatchOperation, PatchOperation as Op};
use serde_json::Value;

use crate::api::ApiError;

/// Most operations one JSON patch may carry (kube-apiserver's `maxJSONPatchOperations`).
pub const MAX_OPERATIONS: usize = 10_000;

/// Most bytes (as JSON) that the `copy` operations of one patch may add, in total
/// (kube-apiserver's `JSONPatchMaxCopyBytes` default: 3 MiB).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Deepest nesting of arrays and objects a patched object may have: what `serde_json`
/// decodes (its recursion limit is 128 levels), so a stored object is always readable.
pub const MAX_DEPTH: usize = 127;

/// Applies `ops` to `doc` within the limits. On error `doc` is left half-patched: the
/// caller patches a copy and drops it.
pub fn apply(doc: &mut Value, ops: &[PatchOperation]) -> Result<(), ApiError> {
    if ops.len() > MAX_OPERATIONS {
        return Err(ApiError::new(
            413,
            crate::api::status::StatusReason::RequestEntityTooLarge,
            format!(
                "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
                ops.len()
            ),
        ));
    }
    // An upper bound of the document's depth, kept as operations apply.
    let mut depth = depth_of(doc);
    let mut copied = 0usize;
    for (i, op) in ops.iter().enumerate() {
        let failed = |why: String| {
            ApiError::invalid_request(format!(
                "the server rejected our request due to an error in our request: operation {i} ({}) failed: {why}",
                op_name(op)
            ))
        };
        let placed = match op {
            Op::Add(o) => Some((segments(o.path.as_str()), depth_of(&o.value))),
            Op::Replace(o) => Some((segments(o.path.as_str()), depth_of(&o.value))),
            Op::Copy(o) => {
                let from = doc.pointer(o.from.as_str()).ok_or_else(|| {
                    failed(format!(
                        "\"from\" path {:?} does not exist",
                        o.from.as_str()
                    ))
                })?;
                let budget = MAX_COPY_BYTES - copied;
                let size = json_size(from, budget).ok_or_else(|| {
                    failed(format!(
                        "the accumulated size of the values copied exceeds the limit of {MAX_COPY_BYTES} bytes"
                    ))
                })?;
                copied += size;
                Some((segments(o.path.as_str()), depth_of(from)))
            }
            Op::Move(o) => {
                let from = segments(o.from.as_str());
                let to = segments(o.path.as_str());
                // The moved value is at most as deep as what is under its old place.
                let bound = depth.saturating_sub(from);
                if to + bound <= MAX_DEPTH {
                    None
                } else {
                    let moved = doc.pointer(o.from.as_str()).map(depth_of).unwrap_or(0);
                    Some((to, moved))
                }
            }
            Op::Remove(_) | Op::Test(_) => None,
        };
        if let Some((at, value_depth)) = placed {
            let new_depth = at + value_depth;
            if new_depth > MAX_DEPTH {
                return Err(failed(format!(
                    "the object would be nested {new_depth} levels deep, more than the limit of {MAX_DEPTH}"
                )));
            }
            depth = depth.max(new_depth);
        }
        json_patch::patch_unsafe(doc, std::slice::from_ref(op))
            .map_err(|e| failed(e.kind.to_string()))?;
    }
    Ok(())
}

fn op_name(op: &PatchOperation) -> &'static str {
    match op {
        Op::Add(_) => "add",
        Op::Remove(_) => "remove",
        Op::Replace(_) => "replace",
        Op::Move(_) => "move",
        Op::Copy(_) => "copy",
        Op::Test(_) => "test",
    }
}

/// How many reference tokens a JSON pointer has (`""` is the root: 0).
fn segments(pointer: &str) -> usize {
    pointer.bytes().filter(|b| *b == b'/').count()
}

/// Nesting depth of arrays and objects: 0 for a scalar, 1 for `{}` or `[1]`.
pub fn depth_of(v: &Value) -> usize {
    // Explicit stack: the values measured may come from anywhere.
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                deepest = deepest.max(d + 1);
                stack.extend(a.iter().map(|c| (c, d + 1)));
            }
            Value::Object(m) => {
                deepest = deepest.max(d + 1);
                stack.extend(m.values().map(|c| (c, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// The size of `v` as compact JSON, or `None` once it exceeds `budget` (it is not
/// serialized any further).
pub fn json_size(v: &Value, budget: usize) -> Option<usize> {
    struct Counter {
        n: usize,
        budget: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.n += buf.len();
            if self.n > self.budget {
                return Err(std::io::Error::other("over budget"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Counter { n: 0, budget };
    serde_json::to_writer(&mut c, v).ok().map(|()| c.n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(v: Value) -> Vec<PatchOperation> {
        serde_json::from_value::<json_patch::Patch>(v).unwrap().0
    }

    #[test]
    fn applies_like_the_crate_within_limits() {
        let mut doc = json!({"a": {"b": 1}, "l": [1, 2]});
        apply(
            &mut doc,
            &ops(json!([
                {"op": "add", "path": "/c", "value": [3]},
                {"op": "copy", "from": "/a", "path": "/d"},
                {"op": "move", "from": "/l/0", "path": "/l/-"},
                {"op": "replace", "path": "/a/b", "value": 2},
                {"op": "remove", "path": "/c"},
                {"op": "test", "path": "/d/b", "value": 1},
            ])),
        )
        .unwrap();
        assert_eq!(doc, json!({"a": {"b": 2}, "l": [2, 1], "d": {"b": 1}}));
    }

    #[test]
    fn too_many_operations_are_413() {
        let many: Vec<Value> = (0..=MAX_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "", "value": {}}))
            .collect();
        let e = apply(&mut json!({}), &ops(Value::Array(many))).unwrap_err();
        assert_eq!(e.code, 413);
        assert!(e.message.contains("10000, got 10001"), "{}", e.message);
        let enough: Vec<Value> = (0..MAX_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "", "value": {}}))
            .collect();
        apply(&mut json!({}), &ops(Value::Array(enough))).unwrap();
    }

    #[test]
    fn doubling_copies_stop_at_the_copy_limit() {
        let mut doc = json!({"data": {"k": "x".repeat(1000)}});
        let doubling: Vec<Value> = (0..40)
            .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/k{i}")}))
            .collect();
        let e = apply(&mut doc, &ops(Value::Array(doubling))).unwrap_err();
        assert!(e.is_invalid(), "{e:?}");
        assert!(e.message.contains("accumulated size"), "{}", e.message);
        // The document never grew much past the limit.
        assert!(json_size(&doc, usize::MAX).unwrap() < 2 * MAX_COPY_BYTES + 4096);
    }

    #[test]
    fn nesting_stops_at_the_depth_limit() {
        let deep_value = (0..MAX_DEPTH).fold(json!(1), |v, _| json!([v]));
        let e = apply(
            &mut json!({}),
            &ops(json!([{"op": "add", "path": "/x", "value": deep_value}])),
        )
        .unwrap_err();
        assert!(e.is_invalid() && e.message.contains("levels deep"), "{e:?}");
        // A move into depth is checked too.
        let mut doc = json!({"deep": (0..100).fold(json!(1), |v, _| json!({"n": v})), "w": (0..50).fold(json!(1), |v, _| json!([v]))});
        let to = format!("{}/w", "/deep".to_string() + &"/n".repeat(90));
        let e = apply(
            &mut doc,
            &ops(json!([{"op": "move", "from": "/w", "path": to}])),
        )
        .unwrap_err();
        assert!(e.message.contains("levels deep"), "{e:?}");
    }

    #[test]
    fn the_depth_limit_is_what_serde_json_reads() {
        let at_limit = (1..MAX_DEPTH).fold(json!([]), |v, _| json!([v]));
        assert_eq!(depth_of(&at_limit), MAX_DEPTH);
        let text = serde_json::to_string(&at_limit).unwrap();
        serde_json::from_str::<Value>(&text).expect("readable at the limit");
        let over = format!("[{text}]");
        assert!(serde_json::from_str::<Value>(&over).is_err());
    }
}
