//! `selectors`: a label selector (first line) and a field selector (second line), parsed
//! as `labelSelector` and `fieldSelector` are, then matched against a labelled object.

use std::collections::BTreeMap;

use apiserver::api::selectors::{selects, FieldSelector, LabelSelector};
use serde_json::json;

/// Runs one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (labels, fields) = text.split_once('\n').unwrap_or((text, ""));
    let obj = json!({
        "metadata": { "name": "w", "namespace": "ns", "labels": { "app": "web", "tier": "front", "n": "3" } },
        "spec": { "color": "red" }
    });
    let label_selector = LabelSelector::parse(labels);
    if let Ok(selector) = &label_selector {
        let set: BTreeMap<String, String> =
            BTreeMap::from([("app".into(), "web".into()), ("n".into(), "3".into())]);
        selector.matches(&set);
    }
    // A custom kind (its selectable fields) and a core kind (upstream's field wording).
    for (selectable, core) in [(&["spec.color"][..], false), (&["spec.nodeName"][..], true)] {
        let field_selector = FieldSelector::parse(fields, selectable, core);
        if let (Ok(l), Ok(f)) = (&label_selector, &field_selector) {
            selects(l, f, &obj);
        }
    }
}
