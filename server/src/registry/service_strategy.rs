//! Service: kube-apiserver's defaults, the cluster IP's immutability and its printed
//! columns. Cluster IPs and node ports are allocated by the store
//! (`registry::services`), after these defaults.

use serde_json::{json, Value};

use super::strategy::{ComputedColumn, Strategy};
use crate::api::StatusCause;

pub struct ServiceStrategy;

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn or_none(s: String) -> Value {
    Value::String(if s.is_empty() { "<none>".into() } else { s })
}

fn service_type(obj: &Value) -> Value {
    obj["spec"]["type"].clone()
}

fn cluster_ip(obj: &Value) -> Value {
    or_none(text(&obj["spec"]["clusterIP"]).to_string())
}

fn external_ip(obj: &Value) -> Value {
    let spec = &obj["spec"];
    let external: Vec<&str> = spec["externalIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match text(&spec["type"]) {
        "ExternalName" => Value::String(text(&spec["externalName"]).to_string()),
        "LoadBalancer" => {
            let mut all: Vec<&str> = obj["status"]["loadBalancer"]["ingress"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["ip"].as_str().or_else(|| i["hostname"].as_str()))
                .collect();
            all.extend(external);
            Value::String(if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            })
        }
        _ => or_none(external.join(",")),
    }
}

fn ports(obj: &Value) -> Value {
    let ports: Vec<String> = obj["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_u64().filter(|n| *n != 0) {
                Some(node) => format!("{}:{node}/{protocol}", p["port"]),
                None => format!("{}/{protocol}", p["port"]),
            }
        })
        .collect();
    or_none(ports.join(","))
}

fn selector(obj: &Value) -> Value {
    let mut pairs: Vec<String> = obj["spec"]["selector"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    pairs.sort();
    or_none(pairs.join(","))
}

const COLUMNS: &[ComputedColumn] = &[
    ComputedColumn {
        name: "Type",
        type_: "string",
        description:
            "How the service is exposed: ClusterIP, NodePort, LoadBalancer or ExternalName.",
        priority: 0,
        fields: &["spec"],
        value: service_type,
    },
    ComputedColumn {
        name: "Cluster-IP",
        type_: "string",
        description: "The virtual IP the service is reached at inside the cluster.",
        priority: 0,
        fields: &["spec"],
        value: cluster_ip,
    },
    ComputedColumn {
        name: "External-IP",
        type_: "string",
        description: "Addresses the service is reached at from outside the cluster.",
        priority: 0,
        fields: &["spec", "status"],
        value: external_ip,
    },
    ComputedColumn {
        name: "Port(s)",
        type_: "string",
        description: "The ports the service exposes, with their node ports and protocols.",
        priority: 0,
        fields: &["spec"],
        value: ports,
    },
    ComputedColumn {
        name: "Selector",
        type_: "string",
        description: "The labels of the pods the service sends traffic to.",
        priority: 1,
        fields: &["spec"],
        value: selector,
    },
];

/// The defaults kube-apiserver gives a Service (its `SetDefaults_Service` and the
/// registry's `PrepareForCreate`), before addresses are allocated.
fn set_defaults(obj: &mut Value) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    if text(&spec["type"]).is_empty() {
        spec["type"] = json!("ClusterIP");
    }
    let kind = text(&spec["type"]).to_string();
    if text(&spec["sessionAffinity"]).is_empty() {
        spec["sessionAffinity"] = json!("None");
    }
    if let Some(ports) = spec["ports"].as_array_mut() {
        for p in ports {
            // Zero is unset (Go's omitempty; protobuf clients send it).
            if p["nodePort"].as_u64() == Some(0) {
                if let Some(o) = p.as_object_mut() {
                    o.remove("nodePort");
                }
            }
            if text(&p["protocol"]).is_empty() {
                p["protocol"] = json!("TCP");
            }
            let unset = match &p["targetPort"] {
                Value::Null => true,
                Value::Number(n) => n.as_u64() == Some(0),
                Value::String(s) => s.is_empty(),
                _ => false,
            };
            if unset {
                p["targetPort"] = p["port"].clone();
            }
        }
    }
    if kind == "ExternalName" {
        return;
    }
    if spec["internalTrafficPolicy"].is_null() {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    if (kind == "NodePort" || kind == "LoadBalancer") && spec["externalTrafficPolicy"].is_null() {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    if kind == "LoadBalancer" && spec["allocateLoadBalancerNodePorts"].is_null() {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
    if spec["ipFamilies"].as_array().is_none_or(Vec::is_empty) {
        spec["ipFamilies"] = json!(["IPv4"]);
    }
    if spec["ipFamilyPolicy"].is_null() {
        spec["ipFamilyPolicy"] = json!("SingleStack");
    }
}

/// What a type change leaves behind, as upstream's `dropTypeDependentFields`: node
/// ports and the external traffic policy the new type does not use, and the cluster IP of a Service becoming
/// ExternalName, when the client left them as they were.
fn drop_type_dependent_fields(new: &mut Value, old: &Value, new_type: &str) {
    if needs_node_ports(&old["spec"]) && !matches!(new_type, "NodePort" | "LoadBalancer") {
        let old_ports = old["spec"]["ports"].as_array().cloned().unwrap_or_default();
        if let Some(ports) = new["spec"]["ports"].as_array_mut() {
            for p in ports {
                let kept = old_ports
                    .iter()
                    .any(|o| !o["nodePort"].is_null() && o["nodePort"] == p["nodePort"]);
                if kept {
                    if let Some(o) = p.as_object_mut() {
                        o.remove("nodePort");
                    }
                }
            }
        }
    }
    let external = |t: &str| matches!(t, "NodePort" | "LoadBalancer");
    if external(text(&old["spec"]["type"]))
        && !external(new_type)
        && new["spec"]["externalTrafficPolicy"] == old["spec"]["externalTrafficPolicy"]
    {
        if let Some(o) = new["spec"].as_object_mut() {
            o.remove("externalTrafficPolicy");
        }
    }
    if new_type == "ExternalName" && text(&old["spec"]["type"]) != "ExternalName" {
        let spec = &mut new["spec"];
        if spec["clusterIP"] == old["spec"]["clusterIP"] {
            if let Some(o) = spec.as_object_mut() {
                for f in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                    o.remove(f);
                }
            }
        }
    }
}

fn needs_node_ports(spec: &Value) -> bool {
    matches!(text(&spec["type"]), "NodePort" | "LoadBalancer")
}

impl Strategy for ServiceStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        COLUMNS
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "loadBalancer": {} });
        set_defaults(obj);
    }

    /// Status stays (it is written through /status); what the stored object was
    /// allocated is kept when the new one leaves it out (a `kubectl replace` of a
    /// manifest without `clusterIP`), as upstream's update does.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        new["status"] = old.get("status").cloned().unwrap_or(json!({}));
        if !new["spec"].is_object() {
            new["spec"] = json!({});
        }
        let (old_type, new_type) = (
            text(&old["spec"]["type"]).to_string(),
            match text(&new["spec"]["type"]) {
                "" => "ClusterIP".to_string(),
                t => t.to_string(),
            },
        );
        drop_type_dependent_fields(new, old, &new_type);
        if old_type != "ExternalName"
            && new_type != "ExternalName"
            && text(&new["spec"]["clusterIP"]).is_empty()
            && new["spec"]["clusterIPs"]
                .as_array()
                .is_none_or(Vec::is_empty)
        {
            for f in ["clusterIP", "clusterIPs"] {
                if let Some(v) = old["spec"].get(f) {
                    new["spec"][f] = v.clone();
                }
            }
        }
        if needs_node_ports(&new["spec"]) && needs_node_ports(&old["spec"]) {
            let old_ports = old["spec"]["ports"].as_array().cloned().unwrap_or_default();
            if let Some(ports) = new["spec"]["ports"].as_array_mut() {
                for p in ports {
                    if p["nodePort"].as_u64().unwrap_or(0) != 0 {
                        continue;
                    }
                    let same = old_ports.iter().find(|o| {
                        o["port"] == p["port"]
                            && text(&o["protocol"]) == p["protocol"].as_str().unwrap_or("TCP")
                    });
                    if let Some(n) = same.map(|o| &o["nodePort"]).filter(|n| !n.is_null()) {
                        p["nodePort"] = n.clone();
                    }
                }
            }
        }
        set_defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        let spec = &obj["spec"];
        let kind = text(&spec["type"]);
        let ports = spec["ports"].as_array().map_or(0, Vec::len);
        if kind == "ExternalName" {
            if text(&spec["externalName"]).is_empty() {
                causes.push(StatusCause::required("spec.externalName", ""));
            }
        } else if ports == 0 && text(&spec["clusterIP"]) != "None" {
            causes.push(StatusCause::required("spec.ports", ""));
        }
        if !needs_node_ports(spec) {
            for (i, p) in spec["ports"].as_array().into_iter().flatten().enumerate() {
                if p["nodePort"].as_u64().is_some_and(|n| n != 0) {
                    causes.push(StatusCause::forbidden(
                        &format!("spec.ports[{i}].nodePort"),
                        &format!("may not be used when `type` is '{kind}'"),
                    ));
                }
            }
        }
        if kind == "ExternalName" && !text(&spec["clusterIP"]).is_empty() {
            causes.push(StatusCause::forbidden(
                "spec.clusterIP",
                "may not be set for type 'ExternalName'",
            ));
        }
        if ports > 1 {
            for (i, p) in spec["ports"].as_array().into_iter().flatten().enumerate() {
                if text(&p["name"]).is_empty() {
                    causes.push(StatusCause::required(&format!("spec.ports[{i}].name"), ""));
                }
            }
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let (new_spec, old_spec) = (&new["spec"], &old["spec"]);
        let old_ip = text(&old_spec["clusterIP"]);
        // Immutable while the service has one, unless it becomes (or was) ExternalName.
        if text(&new_spec["type"]) != "ExternalName"
            && text(&old_spec["type"]) != "ExternalName"
            && !old_ip.is_empty()
        {
            let new_ip = text(&new_spec["clusterIP"]);
            if new_ip != old_ip {
                return vec![StatusCause::invalid(
                    "spec.clusterIP",
                    new_ip,
                    "field is immutable",
                )];
            }
        }
        Vec::new()
    }

    fn allocates_addresses(&self) -> bool {
        true
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_columns_as_upstream() {
        let mut svc = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}], "selector": {"b": "2", "a": "1"}}});
        ServiceStrategy.prepare_for_create(&mut svc);
        let spec = &svc["spec"];
        assert_eq!(spec["type"], "ClusterIP");
        assert_eq!(
            spec["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
        assert_eq!(spec["internalTrafficPolicy"], "Cluster");
        assert_eq!(spec["sessionAffinity"], "None");
        assert!(spec.get("externalTrafficPolicy").is_none());
        assert_eq!(external_ip(&svc), "<none>");
        assert_eq!(cluster_ip(&svc), "<none>");
        assert_eq!(selector(&svc), "a=1,b=2");
        svc["spec"]["ports"][0]["nodePort"] = json!(30080);
        svc["spec"]["ports"]
            .as_array_mut()
            .unwrap()
            .push(json!({"port": 53, "protocol": "UDP"}));
        assert_eq!(ports(&svc), "80:30080/TCP,53/UDP");
    }

    #[test]
    fn cluster_ip_is_immutable_and_kept_when_left_out() {
        let old = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "ports": [{"port": 80}]}});
        let mut new = json!({"spec": {"ports": [{"port": 80}]}});
        ServiceStrategy.prepare_for_update(&mut new, &old);
        assert_eq!(new["spec"]["clusterIP"], "10.0.0.7");
        assert!(ServiceStrategy.validate_update(&new, &old).is_empty());
        new["spec"]["clusterIP"] = json!("10.0.0.8");
        let causes = ServiceStrategy.validate_update(&new, &old);
        assert_eq!(causes.len(), 1);
    }

    #[test]
    fn type_changes_drop_what_the_new_type_does_not_use() {
        let old = json!({"spec": {"type": "NodePort", "externalTrafficPolicy": "Cluster", "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}});
        let mut new = old.clone();
        new["spec"]["type"] = json!("ClusterIP");
        ServiceStrategy.prepare_for_update(&mut new, &old);
        assert!(new["spec"]["ports"][0].get("nodePort").is_none(), "{new}");
        assert!(new["spec"].get("externalTrafficPolicy").is_none(), "{new}");
        assert!(ServiceStrategy.validate(&new).is_empty());
        let mut ext = old.clone();
        ext["spec"]["type"] = json!("ExternalName");
        ext["spec"]["externalName"] = json!("example.com");
        ServiceStrategy.prepare_for_update(&mut ext, &old);
        assert!(ext["spec"].get("clusterIP").is_none(), "{ext}");
        assert!(ServiceStrategy.validate(&ext).is_empty(), "{ext}");
        assert!(ServiceStrategy.validate_update(&ext, &old).is_empty());
    }
}
