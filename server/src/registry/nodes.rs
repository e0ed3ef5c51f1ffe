//! Node: upstream's rules of a node's spec where a user meets them. Taints are
//! well-formed and unique per key and effect. Pod CIDRs are
//! valid CIDRs, at most one per IP family, and, like the provider ID, set once (the
//! controller manager assigns them to a node that has none); `podCIDR` is kept equal
//! to the first of `podCIDRs`, as upstream's conversion keeps it.

use std::net::IpAddr;

use serde_json::{json, Value};

use super::strategy::Strategy;
use crate::api::meta::{label_value_errors, qualified_name_errors};
use crate::api::StatusCause;

const CIDR_CHANGE: &str = "node updates may not change podCIDR except from \"\" to valid";
const PROVIDER_CHANGE: &str = "node updates may not change providerID except from \"\" to valid";

/// The node's pod CIDRs: `podCIDRs`, or the lone `podCIDR` of an older client.
fn pod_cidrs(spec: &Value) -> Vec<String> {
    let list: Vec<String> = spec["podCIDRs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    if !list.is_empty() {
        return list;
    }
    spec["podCIDR"]
        .as_str()
        .filter(|c| !c.is_empty())
        .map(|c| vec![c.to_string()])
        .unwrap_or_default()
}

/// The address family of a CIDR (`true` for IPv4), if it is one.
fn cidr_family(cidr: &str) -> Option<bool> {
    let (ip, bits) = cidr.split_once('/')?;
    let ip: IpAddr = ip.parse().ok()?;
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some(ip.is_ipv4())
}

const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Upstream's `validateNodeTaints`, which names the taints `metadata.taints` (sic):
/// keys are label names, values label values, effects known, and a key appears once
/// per effect.
fn validate_taints(spec: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let taints = spec["taints"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, taint) in taints.iter().enumerate() {
        let at = format!("metadata.taints[{i}]");
        let key = taint["key"].as_str().unwrap_or_default();
        for e in qualified_name_errors(key) {
            causes.push(StatusCause::invalid(&format!("{at}.key"), key, &e));
        }
        let value = taint["value"].as_str().unwrap_or_default();
        let errors = label_value_errors(value);
        if !errors.is_empty() {
            causes.push(StatusCause::invalid(
                &format!("{at}.value"),
                value,
                &errors.join(";"),
            ));
        }
        let effect = taint["effect"].as_str().unwrap_or_default();
        if effect.is_empty() {
            causes.push(StatusCause::required(&format!("{at}.effect"), ""));
        } else if !TAINT_EFFECTS.contains(&effect) {
            causes.push(StatusCause::unsupported(
                &format!("{at}.effect"),
                &format!("{effect:?}"),
                TAINT_EFFECTS,
            ));
        }
        if seen.contains(&(key, effect)) {
            // Upstream shows the taint as Go's `%#v` of its struct.
            let added = if taint["timeAdded"].is_null() {
                "(*v1.Time)(nil)"
            } else {
                "(*v1.Time)(...)"
            };
            causes.push(StatusCause::duplicate(
                &at,
                &format!(
                    "core.Taint{{Key:{key:?}, Value:{value:?}, Effect:{effect:?}, TimeAdded:{added}}}: taints must be unique by key and effect pair"
                ),
            ));
            continue;
        }
        seen.push((key, effect));
    }
    causes
}

/// A list of strings as Go's `%#v` prints a `[]string` in a cause.
fn go_string_slice(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Upstream's Node strategy (the spec's rules; status is the kubelet's).
pub struct NodeStrategy;
impl Strategy for NodeStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        let cidrs = pod_cidrs(&obj["spec"]);
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            if let Some(first) = cidrs.first() {
                spec.insert("podCIDR".into(), json!(first));
                spec.insert("podCIDRs".into(), json!(cidrs));
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        let mut causes = validate_taints(&obj["spec"]);
        let cidrs = pod_cidrs(&obj["spec"]);
        let mut families = Vec::new();
        for (i, cidr) in cidrs.iter().enumerate() {
            match cidr_family(cidr) {
                Some(v4) => families.push(v4),
                None => causes.push(StatusCause::invalid(
                    &format!("spec.podCIDRs[{i}]"),
                    cidr,
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                )),
            }
        }
        let dual_stack = families.len() == 2 && families[0] != families[1];
        if families.len() == cidrs.len() && cidrs.len() > 1 && !dual_stack {
            causes.push(StatusCause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: may specify no more than one CIDR for each IP family",
                    go_string_slice(&cidrs)
                ),
                field: "spec.podCIDRs".into(),
            });
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        let (now, before) = (pod_cidrs(&new["spec"]), pod_cidrs(&old["spec"]));
        if !before.is_empty() {
            if before.len() != now.len() {
                causes.push(StatusCause::forbidden("spec.podCIDRs", CIDR_CHANGE));
            } else {
                // One cause per changed entry, as upstream's loop reports them.
                for (a, b) in before.iter().zip(&now) {
                    if a != b {
                        causes.push(StatusCause::forbidden("spec.podCIDRs", CIDR_CHANGE));
                    }
                }
            }
        }
        let provider = |o: &Value| o["spec"]["providerID"].as_str().unwrap_or("").to_string();
        let old_provider = provider(old);
        if !old_provider.is_empty() && old_provider != provider(new) {
            causes.push(StatusCause::forbidden("spec.providerID", PROVIDER_CHANGE));
        }
        let external = |o: &Value| o["spec"]["externalID"].as_str().unwrap_or("").to_string();
        if external(new) != external(old) {
            causes.push(StatusCause::forbidden(
                "spec.externalID",
                "may not be updated",
            ));
        }
        causes
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_are_valid_and_one_per_family() {
        assert_eq!(cidr_family("10.0.0.0/24"), Some(true));
        assert_eq!(cidr_family("fd00::/64"), Some(false));
        assert_eq!(cidr_family("10.0.0.0/33"), None);
        assert_eq!(cidr_family("10.0.0.0"), None);
        let node = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"]}});
        let causes = NodeStrategy.validate(&node);
        assert_eq!(causes[0].message, "Invalid value: []string{\"10.0.0.0/24\", \"10.1.0.0/24\"}: may specify no more than one CIDR for each IP family");
        let dual = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}});
        assert!(NodeStrategy.validate(&dual).is_empty());
    }

    #[test]
    fn cidrs_and_provider_are_set_once() {
        let old = json!({"spec": {}});
        let set = json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "aws:///i-1"}});
        assert!(NodeStrategy.validate_update(&set, &old).is_empty());
        let changed = json!({"spec": {"podCIDRs": ["10.0.1.0/24"], "providerID": "aws:///i-2"}});
        let fields: Vec<String> = NodeStrategy
            .validate_update(&changed, &set)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(fields, ["spec.podCIDRs", "spec.providerID"]);
    }
}
