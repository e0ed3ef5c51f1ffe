//! kube-apiserver's Table columns of built-in kinds whose cells are computed (counts,
//! `ready/desired`, lists cut at three, conditions read as one word), by group and kind,
//! as upstream's printers are registered per type. Kinds with a strategy of their own
//! that prints columns (pods, deployments, services, ...) keep them there.

use serde_json::{json, Value};

use super::strategy::{column, ComputedColumn};
use crate::api::meta::{human_age, human_duration};

/// Where a kind's Table prints Age among its priority-0 columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgeAt {
    /// After every priority-0 column (most kinds).
    AfterNarrow,
    /// After this many priority-0 columns (Node: AGE before VERSION).
    After(usize),
    /// No Age column (Role and ClusterRole print CREATED AT instead).
    Never,
}

/// A kind's computed columns and where its Age goes.
pub struct Printer {
    pub columns: &'static [ComputedColumn],
    pub age: AgeAt,
}

/// The printer of a built-in kind, if upstream prints more than NAME AGE for it and no
/// strategy prints its columns.
pub fn for_kind(group: &str, kind: &str) -> Option<&'static Printer> {
    Some(match (group, kind) {
        ("batch", "Job") => &JOB,
        ("batch", "CronJob") => &CRON_JOB,
        ("apps", "ReplicaSet") => &REPLICA_SET,
        ("", "ReplicationController") => &REPLICATION_CONTROLLER,
        ("apps", "DaemonSet") => &DAEMON_SET,
        ("apps", "StatefulSet") => &STATEFUL_SET,
        ("apps", "ControllerRevision") => &CONTROLLER_REVISION,
        ("", "ServiceAccount") => &SERVICE_ACCOUNT,
        ("", "Endpoints") => &ENDPOINTS,
        ("discovery.k8s.io", "EndpointSlice") => &ENDPOINT_SLICE,
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => &ROLE,
        ("scheduling.k8s.io", "PriorityClass") => &PRIORITY_CLASS,
        ("", "Node") => &NODE,
        ("", "PersistentVolume") => &PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => &PERSISTENT_VOLUME_CLAIM,
        ("storage.k8s.io", "StorageClass") => &STORAGE_CLASS,
        ("networking.k8s.io", "Ingress") => &INGRESS,
        ("" | "events.k8s.io", "Event") => &EVENT,
        ("networking.k8s.io", "IngressClass") => &INGRESS_CLASS,
        ("networking.k8s.io", "NetworkPolicy") => &NETWORK_POLICY,
        ("", "PodTemplate") => &POD_TEMPLATE,
        ("policy", "PodDisruptionBudget") => &POD_DISRUPTION_BUDGET,
        ("", "LimitRange") => &LIMIT_RANGE,
        ("", "ResourceQuota") => &RESOURCE_QUOTA,
        ("node.k8s.io", "RuntimeClass") => &RUNTIME_CLASS,
        ("storage.k8s.io", "CSINode") => &CSI_NODE,
        ("storage.k8s.io", "VolumeAttachment") => &VOLUME_ATTACHMENT,
        ("storage.k8s.io", "VolumeAttributesClass") => &VOLUME_ATTRIBUTES_CLASS,
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => &WEBHOOK_CONFIGURATION,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            &VALIDATING_ADMISSION_POLICY
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => &FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            &PRIORITY_LEVEL_CONFIGURATION
        }
        _ => return None,
    })
}

const SPEC_STATUS: &[&str] = &["spec", "status"];
const SPEC: &[&str] = &["spec"];

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn str_or<'a>(v: &'a Value, missing: &'a str) -> &'a str {
    v.as_str().filter(|s| !s.is_empty()).unwrap_or(missing)
}

/// Whether `obj` has a condition of `type_` with status True.
fn condition_true(obj: &Value, type_: &str) -> bool {
    obj["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

/// Names or images of a pod template's containers, comma-separated.
fn template_list(template: &Value, key: &str) -> Value {
    let list: Vec<&str> = template["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c[key].as_str())
        .collect();
    json!(list.join(","))
}

/// A label map as kubectl prints one (`a=b,c=d`, sorted by key), `<none>` when empty.
fn labels(map: &Value) -> Value {
    let parts: Vec<String> = map
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    if parts.is_empty() {
        json!("<none>")
    } else {
        json!(parts.join(","))
    }
}

/// Up to three entries joined by commas and `+ N more...`, as upstream's lists; `empty`
/// when there are none.
fn first_three(list: &[String], empty: &str) -> Value {
    match list.len() {
        0 => json!(empty),
        n if n > 3 => json!(format!("{} + {} more...", list[..3].join(","), n - 3)),
        _ => json!(list.join(",")),
    }
}

// --- Pod template owners -------------------------------------------------------------

fn spec_containers(obj: &Value) -> Value {
    template_list(&obj["spec"]["template"], "name")
}
fn spec_images(obj: &Value) -> Value {
    template_list(&obj["spec"]["template"], "image")
}
fn spec_selector(obj: &Value) -> Value {
    super::workloads::format_selector(&obj["spec"]["selector"])
}
fn spec_replicas(obj: &Value) -> Value {
    json!(int(&obj["spec"]["replicas"]))
}
fn status_replicas(obj: &Value) -> Value {
    json!(int(&obj["status"]["replicas"]))
}
fn status_ready(obj: &Value) -> Value {
    json!(int(&obj["status"]["readyReplicas"]))
}
fn rc_selector(obj: &Value) -> Value {
    labels(&obj["spec"]["selector"])
}

const CONTAINERS: ComputedColumn = column(
    "Containers",
    "string",
    "The names of the template's containers.",
    1,
    SPEC,
    spec_containers,
);
const IMAGES: ComputedColumn = column(
    "Images",
    "string",
    "The images of the template's containers.",
    1,
    SPEC,
    spec_images,
);
const SELECTOR: ComputedColumn = column(
    "Selector",
    "string",
    "The label selector of the pods.",
    1,
    SPEC,
    spec_selector,
);
const DESIRED: ComputedColumn = column(
    "Desired",
    "integer",
    "Replicas wanted.",
    0,
    SPEC,
    spec_replicas,
);
const CURRENT: ComputedColumn = column(
    "Current",
    "integer",
    "Replicas created.",
    0,
    SPEC_STATUS,
    status_replicas,
);
const READY: ComputedColumn = column(
    "Ready",
    "integer",
    "Replicas ready.",
    0,
    SPEC_STATUS,
    status_ready,
);

static REPLICA_SET: Printer = Printer {
    columns: &[DESIRED, CURRENT, READY, CONTAINERS, IMAGES, SELECTOR],
    age: AgeAt::AfterNarrow,
};

static REPLICATION_CONTROLLER: Printer = Printer {
    columns: &[
        DESIRED,
        CURRENT,
        READY,
        CONTAINERS,
        IMAGES,
        column(
            "Selector",
            "string",
            "The labels of the pods.",
            1,
            SPEC,
            rc_selector,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

fn ds_count(obj: &Value, key: &str) -> Value {
    json!(int(&obj["status"][key]))
}
fn ds_desired(obj: &Value) -> Value {
    ds_count(obj, "desiredNumberScheduled")
}
fn ds_current(obj: &Value) -> Value {
    ds_count(obj, "currentNumberScheduled")
}
fn ds_ready(obj: &Value) -> Value {
    ds_count(obj, "numberReady")
}
fn ds_updated(obj: &Value) -> Value {
    ds_count(obj, "updatedNumberScheduled")
}
fn ds_available(obj: &Value) -> Value {
    ds_count(obj, "numberAvailable")
}
fn ds_node_selector(obj: &Value) -> Value {
    labels(&obj["spec"]["template"]["spec"]["nodeSelector"])
}

static DAEMON_SET: Printer = Printer {
    columns: &[
        column(
            "Desired",
            "integer",
            "Nodes that should run the pod.",
            0,
            SPEC_STATUS,
            ds_desired,
        ),
        column(
            "Current",
            "integer",
            "Nodes running the pod.",
            0,
            SPEC_STATUS,
            ds_current,
        ),
        column(
            "Ready",
            "integer",
            "Nodes whose pod is ready.",
            0,
            SPEC_STATUS,
            ds_ready,
        ),
        column(
            "Up-to-date",
            "integer",
            "Nodes running the current template.",
            0,
            SPEC_STATUS,
            ds_updated,
        ),
        column(
            "Available",
            "integer",
            "Nodes whose pod is available.",
            0,
            SPEC_STATUS,
            ds_available,
        ),
        column(
            "Node Selector",
            "string",
            "The nodes the pods may run on.",
            0,
            SPEC,
            ds_node_selector,
        ),
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    age: AgeAt::AfterNarrow,
};

fn sts_ready(obj: &Value) -> Value {
    json!(format!(
        "{}/{}",
        int(&obj["status"]["readyReplicas"]),
        int(&obj["spec"]["replicas"])
    ))
}

static STATEFUL_SET: Printer = Printer {
    columns: &[
        column(
            "Ready",
            "string",
            "Ready replicas of those wanted.",
            0,
            SPEC_STATUS,
            sts_ready,
        ),
        CONTAINERS,
        IMAGES,
    ],
    age: AgeAt::AfterNarrow,
};

// --- Jobs ----------------------------------------------------------------------------

fn job_status(obj: &Value) -> Value {
    let status = if condition_true(obj, "Complete") {
        "Complete"
    } else if condition_true(obj, "Failed") {
        "Failed"
    } else if !obj["metadata"]["deletionTimestamp"].is_null() {
        "Terminating"
    } else if condition_true(obj, "Suspended") {
        "Suspended"
    } else if condition_true(obj, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(obj, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    json!(status)
}

fn job_completions(obj: &Value) -> Value {
    let succeeded = int(&obj["status"]["succeeded"]);
    let spec = &obj["spec"];
    let parallelism = int(&spec["parallelism"]);
    json!(match spec["completions"].as_i64() {
        Some(completions) => format!("{succeeded}/{completions}"),
        None if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        None => format!("{succeeded}/1"),
    })
}

fn time_of(v: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// How long the job took, or has taken so far; empty before it starts.
fn job_duration(obj: &Value) -> Value {
    let status = &obj["status"];
    let Some(start) = time_of(&status["startTime"]) else {
        return json!("");
    };
    match time_of(&status["completionTime"]) {
        Some(end) => json!(human_duration((end - start).num_seconds().max(0))),
        None => json!(human_age(status["startTime"].as_str().unwrap_or_default())),
    }
}

static JOB: Printer = Printer {
    columns: &[
        column(
            "Status",
            "string",
            "What the job came to, or that it runs.",
            0,
            &["metadata", "status"],
            job_status,
        ),
        column(
            "Completions",
            "string",
            "Pods that succeeded, of those wanted.",
            0,
            SPEC_STATUS,
            job_completions,
        ),
        column(
            "Duration",
            "string",
            "How long the job took, or has run so far.",
            0,
            SPEC_STATUS,
            job_duration,
        ),
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    age: AgeAt::AfterNarrow,
};

fn cron_schedule(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["schedule"], ""))
}
fn cron_time_zone(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["timeZone"], "<none>"))
}
fn cron_suspend(obj: &Value) -> Value {
    json!(match obj["spec"]["suspend"].as_bool() {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    })
}
fn cron_active(obj: &Value) -> Value {
    json!(obj["status"]["active"].as_array().map_or(0, Vec::len))
}
fn cron_last_schedule(obj: &Value) -> Value {
    match obj["status"]["lastScheduleTime"].as_str() {
        Some(t) => json!(human_age(t)),
        None => json!("<none>"),
    }
}
fn cron_containers(obj: &Value) -> Value {
    template_list(&obj["spec"]["jobTemplate"]["spec"]["template"], "name")
}
fn cron_images(obj: &Value) -> Value {
    template_list(&obj["spec"]["jobTemplate"]["spec"]["template"], "image")
}
fn cron_selector(obj: &Value) -> Value {
    super::workloads::format_selector(&obj["spec"]["jobTemplate"]["spec"]["selector"])
}

static CRON_JOB: Printer = Printer {
    columns: &[
        column(
            "Schedule",
            "string",
            "When jobs are made, in cron format.",
            0,
            SPEC,
            cron_schedule,
        ),
        column(
            "Timezone",
            "string",
            "The time zone of the schedule.",
            0,
            SPEC,
            cron_time_zone,
        ),
        column(
            "Suspend",
            "boolean",
            "Whether new jobs are held back.",
            0,
            SPEC,
            cron_suspend,
        ),
        column(
            "Active",
            "integer",
            "Jobs running now.",
            0,
            SPEC_STATUS,
            cron_active,
        ),
        column(
            "Last Schedule",
            "string",
            "Since a job was last made.",
            0,
            SPEC_STATUS,
            cron_last_schedule,
        ),
        column(
            "Containers",
            "string",
            "The names of the template's containers.",
            1,
            SPEC,
            cron_containers,
        ),
        column(
            "Images",
            "string",
            "The images of the template's containers.",
            1,
            SPEC,
            cron_images,
        ),
        column(
            "Selector",
            "string",
            "The label selector of the jobs' pods.",
            1,
            SPEC,
            cron_selector,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

// --- Core and discovery ----------------------------------------------------------------

fn sa_secrets(obj: &Value) -> Value {
    json!(obj["secrets"].as_array().map_or(0, Vec::len))
}

static SERVICE_ACCOUNT: Printer = Printer {
    columns: &[column(
        "Secrets",
        "integer",
        "Secrets the account may use.",
        0,
        &["secrets"],
        sa_secrets,
    )],
    age: AgeAt::AfterNarrow,
};

/// `ip:port` for each port and address of each subset (bare IPs for a subset without
/// ports), the first three and `+ N more...`; `<none>` without subsets.
fn endpoints_list(obj: &Value) -> Value {
    let Some(subsets) = obj["subsets"].as_array().filter(|s| !s.is_empty()) else {
        return json!("<none>");
    };
    let mut list = Vec::new();
    for subset in subsets {
        let addresses: Vec<&str> = subset["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["ip"].as_str())
            .collect();
        match subset["ports"].as_array().filter(|p| !p.is_empty()) {
            None => list.extend(addresses.iter().map(|ip| ip.to_string())),
            Some(ports) => {
                for port in ports {
                    let port = int(&port["port"]);
                    list.extend(addresses.iter().map(|ip| join_host_port(ip, port)));
                }
            }
        }
    }
    first_three(&list, "")
}

/// `ip:port`, or `[ip]:port` for an IPv6 address, as Go's `net.JoinHostPort`.
fn join_host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

static ENDPOINTS: Printer = Printer {
    columns: &[column(
        "Endpoints",
        "string",
        "The addresses and ports of the endpoints.",
        0,
        &["subsets"],
        endpoints_list,
    )],
    age: AgeAt::AfterNarrow,
};

fn slice_address_type(obj: &Value) -> Value {
    json!(str_or(&obj["addressType"], ""))
}
fn slice_ports(obj: &Value) -> Value {
    let list: Vec<String> = obj["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
            (Some(port), _) => port.to_string(),
            (None, Some(name)) => name.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    first_three(&list, "<unset>")
}
fn slice_endpoints(obj: &Value) -> Value {
    let list: Vec<String> = obj["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["addresses"].as_array().into_iter().flatten())
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    first_three(&list, "<unset>")
}

static ENDPOINT_SLICE: Printer = Printer {
    columns: &[
        column(
            "AddressType",
            "string",
            "The kind of addresses the slice holds.",
            0,
            &["addressType"],
            slice_address_type,
        ),
        column(
            "Ports",
            "string",
            "The ports of the endpoints.",
            0,
            &["ports"],
            slice_ports,
        ),
        column(
            "Endpoints",
            "string",
            "The endpoints' addresses.",
            0,
            &["endpoints"],
            slice_endpoints,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

/// The creation time as RFC 3339 in UTC (upstream's CREATED AT of roles).
fn created_at(obj: &Value) -> Value {
    match time_of(&obj["metadata"]["creationTimestamp"]) {
        Some(t) => json!(t.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
        None => json!("0001-01-01T00:00:00Z"),
    }
}

static ROLE: Printer = Printer {
    columns: &[column(
        "Created At",
        "date",
        "When the role was created.",
        0,
        &[],
        created_at,
    )],
    age: AgeAt::Never,
};

fn pc_value(obj: &Value) -> Value {
    json!(int(&obj["value"]))
}
fn pc_global_default(obj: &Value) -> Value {
    json!(obj["globalDefault"].as_bool().unwrap_or(false))
}
fn pc_preemption(obj: &Value) -> Value {
    json!(str_or(&obj["preemptionPolicy"], "<unset>"))
}

static PRIORITY_CLASS: Printer = Printer {
    columns: &[
        column(
            "Value",
            "integer",
            "The priority of pods of the class.",
            0,
            &["value"],
            pc_value,
        ),
        column(
            "Global-Default",
            "boolean",
            "Whether pods without a class get this one.",
            0,
            &["globalDefault"],
            pc_global_default,
        ),
        column(
            "PreemptionPolicy",
            "string",
            "Whether pods of the class preempt lower ones.",
            0,
            &["preemptionPolicy"],
            pc_preemption,
        ),
    ],
    age: AgeAt::After(2),
};

// --- Nodes and storage -----------------------------------------------------------------

/// `Ready` or `NotReady` from the Ready condition (`Unknown` without one), and
/// `SchedulingDisabled` for a cordoned node.
fn node_status(obj: &Value) -> Value {
    let ready = obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    let mut status = vec![match ready {
        Some(c) if c["status"] == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if obj["spec"]["unschedulable"] == json!(true) {
        status.push("SchedulingDisabled");
    }
    json!(status.join(","))
}

/// The roles named by `node-role.kubernetes.io/<role>` labels and `kubernetes.io/role`.
fn node_roles(obj: &Value) -> Value {
    let mut roles: Vec<&str> = obj["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) => Some(role),
            None if k == "kubernetes.io/role" => v.as_str(),
            None => None,
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() {
        json!("<none>")
    } else {
        json!(roles.join(","))
    }
}

fn node_version(obj: &Value) -> Value {
    json!(str_or(&obj["status"]["nodeInfo"]["kubeletVersion"], ""))
}

fn node_address(obj: &Value, type_: &str) -> Value {
    let found = obj["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == type_)
        .and_then(|a| a["address"].as_str());
    json!(found.unwrap_or("<none>"))
}
fn node_internal_ip(obj: &Value) -> Value {
    node_address(obj, "InternalIP")
}
fn node_external_ip(obj: &Value) -> Value {
    node_address(obj, "ExternalIP")
}
fn node_info(obj: &Value, key: &str) -> Value {
    json!(str_or(&obj["status"]["nodeInfo"][key], "<unknown>"))
}
fn node_os_image(obj: &Value) -> Value {
    node_info(obj, "osImage")
}
fn node_kernel(obj: &Value) -> Value {
    node_info(obj, "kernelVersion")
}
fn node_runtime(obj: &Value) -> Value {
    node_info(obj, "containerRuntimeVersion")
}

static NODE: Printer = Printer {
    columns: &[
        column(
            "Status",
            "string",
            "Whether the node is ready and schedulable.",
            0,
            &["metadata", "spec", "status"],
            node_status,
        ),
        column(
            "Roles",
            "string",
            "The node's roles, from its labels.",
            0,
            &["metadata"],
            node_roles,
        ),
        column(
            "Version",
            "string",
            "The kubelet's version.",
            0,
            &["status"],
            node_version,
        ),
        column(
            "Internal-IP",
            "string",
            "The node's internal address.",
            1,
            &["status"],
            node_internal_ip,
        ),
        column(
            "External-IP",
            "string",
            "The node's external address.",
            1,
            &["status"],
            node_external_ip,
        ),
        column(
            "OS-Image",
            "string",
            "The node's operating system image.",
            1,
            &["status"],
            node_os_image,
        ),
        column(
            "Kernel-Version",
            "string",
            "The node's kernel version.",
            1,
            &["status"],
            node_kernel,
        ),
        column(
            "Container-Runtime",
            "string",
            "The node's container runtime and version.",
            1,
            &["status"],
            node_runtime,
        ),
    ],
    age: AgeAt::After(2),
};

/// Access modes abbreviated in upstream's fixed order (`RWO,ROX,RWX,RWOP`).
fn access_modes(modes: &Value) -> Value {
    let modes = modes.as_array();
    let has = |m: &str| modes.is_some_and(|ms| ms.iter().any(|x| x == m));
    let short: Vec<&str> = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .into_iter()
    .filter(|(m, _)| has(m))
    .map(|(_, s)| s)
    .collect();
    json!(short.join(","))
}

/// The class of a volume or claim: the beta annotation, else `spec.storageClassName`.
fn storage_class_of(obj: &Value) -> Value {
    let beta = &obj["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"];
    json!(str_or(beta, str_or(&obj["spec"]["storageClassName"], "")))
}
fn attributes_class_of(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["volumeAttributesClassName"], "<unset>"))
}
fn volume_mode_of(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["volumeMode"], "<unset>"))
}
/// The phase, or `Terminating` once deletion is pending.
fn phase_of(obj: &Value) -> Value {
    if !obj["metadata"]["deletionTimestamp"].is_null() {
        return json!("Terminating");
    }
    json!(str_or(&obj["status"]["phase"], ""))
}

fn pv_capacity(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["capacity"]["storage"], "0"))
}
fn pv_access_modes(obj: &Value) -> Value {
    access_modes(&obj["spec"]["accessModes"])
}
fn pv_reclaim(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["persistentVolumeReclaimPolicy"], ""))
}
fn pv_claim(obj: &Value) -> Value {
    let claim = &obj["spec"]["claimRef"];
    if !claim.is_object() {
        return json!("");
    }
    json!(format!(
        "{}/{}",
        str_or(&claim["namespace"], ""),
        str_or(&claim["name"], "")
    ))
}
fn pv_reason(obj: &Value) -> Value {
    json!(str_or(&obj["status"]["reason"], ""))
}

const META_SPEC_STATUS: &[&str] = &["metadata", "spec", "status"];

static PERSISTENT_VOLUME: Printer = Printer {
    columns: &[
        column(
            "Capacity",
            "string",
            "The volume's size.",
            0,
            SPEC,
            pv_capacity,
        ),
        column(
            "Access Modes",
            "string",
            "How the volume may be mounted.",
            0,
            SPEC,
            pv_access_modes,
        ),
        column(
            "Reclaim Policy",
            "string",
            "What happens to the volume once released.",
            0,
            SPEC,
            pv_reclaim,
        ),
        column(
            "Status",
            "string",
            "The volume's phase.",
            0,
            META_SPEC_STATUS,
            phase_of,
        ),
        column(
            "Claim",
            "string",
            "The claim bound to the volume.",
            0,
            SPEC,
            pv_claim,
        ),
        column(
            "StorageClass",
            "string",
            "The volume's storage class.",
            0,
            META_SPEC_STATUS,
            storage_class_of,
        ),
        column(
            "VolumeAttributesClass",
            "string",
            "The volume's attributes class.",
            0,
            SPEC,
            attributes_class_of,
        ),
        column(
            "Reason",
            "string",
            "Why the volume is in its phase.",
            0,
            SPEC_STATUS,
            pv_reason,
        ),
        column(
            "VolumeMode",
            "string",
            "Filesystem or Block.",
            1,
            SPEC,
            volume_mode_of,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

fn pvc_volume(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["volumeName"], ""))
}
/// Capacity and access modes of a bound claim (its status), empty before binding.
fn pvc_capacity(obj: &Value) -> Value {
    if str_or(&obj["spec"]["volumeName"], "").is_empty() {
        return json!("");
    }
    json!(str_or(&obj["status"]["capacity"]["storage"], "0"))
}
fn pvc_access_modes(obj: &Value) -> Value {
    if str_or(&obj["spec"]["volumeName"], "").is_empty() {
        return json!("");
    }
    access_modes(&obj["status"]["accessModes"])
}

static PERSISTENT_VOLUME_CLAIM: Printer = Printer {
    columns: &[
        column(
            "Status",
            "string",
            "The claim's phase.",
            0,
            META_SPEC_STATUS,
            phase_of,
        ),
        column(
            "Volume",
            "string",
            "The volume bound to the claim.",
            0,
            SPEC,
            pvc_volume,
        ),
        column(
            "Capacity",
            "string",
            "The bound volume's size.",
            0,
            SPEC_STATUS,
            pvc_capacity,
        ),
        column(
            "Access Modes",
            "string",
            "How the bound volume may be mounted.",
            0,
            SPEC_STATUS,
            pvc_access_modes,
        ),
        column(
            "StorageClass",
            "string",
            "The claim's storage class.",
            0,
            META_SPEC_STATUS,
            storage_class_of,
        ),
        column(
            "VolumeAttributesClass",
            "string",
            "The claim's attributes class.",
            0,
            SPEC,
            attributes_class_of,
        ),
        column(
            "VolumeMode",
            "string",
            "Filesystem or Block.",
            1,
            SPEC,
            volume_mode_of,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

fn sc_provisioner(obj: &Value) -> Value {
    json!(str_or(&obj["provisioner"], ""))
}
fn sc_reclaim(obj: &Value) -> Value {
    json!(str_or(&obj["reclaimPolicy"], "Delete"))
}
fn sc_binding(obj: &Value) -> Value {
    json!(str_or(&obj["volumeBindingMode"], "Immediate"))
}
fn sc_expansion(obj: &Value) -> Value {
    json!(obj["allowVolumeExpansion"].as_bool().unwrap_or(false))
}

/// The name, with ` (default)` for the cluster's default class (its annotation).
fn sc_name(obj: &Value) -> Value {
    let name = str_or(&obj["metadata"]["name"], "");
    let annotations = &obj["metadata"]["annotations"];
    let default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|k| annotations[*k] == "true");
    if default {
        json!(format!("{name} (default)"))
    } else {
        json!(name)
    }
}

static STORAGE_CLASS: Printer = Printer {
    columns: &[
        column(
            "Name",
            "string",
            "Name must be unique within a namespace.",
            0,
            &[],
            sc_name,
        ),
        column(
            "Provisioner",
            "string",
            "The driver that provisions volumes.",
            0,
            &["provisioner"],
            sc_provisioner,
        ),
        column(
            "ReclaimPolicy",
            "string",
            "What happens to provisioned volumes once released.",
            0,
            &["reclaimPolicy"],
            sc_reclaim,
        ),
        column(
            "VolumeBindingMode",
            "string",
            "When volumes are bound and provisioned.",
            0,
            &["volumeBindingMode"],
            sc_binding,
        ),
        column(
            "AllowVolumeExpansion",
            "string",
            "Whether claims of the class may grow.",
            0,
            &["allowVolumeExpansion"],
            sc_expansion,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

// --- Networking --------------------------------------------------------------------------

fn ingress_class(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["ingressClassName"], "<none>"))
}
/// The rules' hosts, the first three and `+ N more...` (counting every rule); `*` if none.
fn ingress_hosts(obj: &Value) -> Value {
    let rules = obj["spec"]["rules"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let hosts: Vec<&str> = rules
        .iter()
        .take(3)
        .filter_map(|r| r["host"].as_str().filter(|h| !h.is_empty()))
        .collect();
    if hosts.is_empty() {
        return json!("*");
    }
    if rules.len() > 3 {
        return json!(format!("{} + {} more...", hosts.join(","), rules.len() - 3));
    }
    json!(hosts.join(","))
}
/// The load balancer's IPs or host names; more than 16 characters are cut to 13 and `...`.
fn ingress_address(obj: &Value) -> Value {
    let list: Vec<&str> = obj["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            i["ip"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| i["hostname"].as_str().filter(|s| !s.is_empty()))
        })
        .collect();
    let all = list.join(",");
    if all.len() > 16 {
        return json!(format!("{}...", all.chars().take(13).collect::<String>()));
    }
    json!(all)
}
fn ingress_ports(obj: &Value) -> Value {
    let tls = obj["spec"]["tls"].as_array().is_some_and(|t| !t.is_empty());
    json!(if tls { "80, 443" } else { "80" })
}

static INGRESS: Printer = Printer {
    columns: &[
        column(
            "Class",
            "string",
            "The ingress class.",
            0,
            SPEC,
            ingress_class,
        ),
        column(
            "Hosts",
            "string",
            "The hosts the rules match.",
            0,
            SPEC,
            ingress_hosts,
        ),
        column(
            "Address",
            "string",
            "Where the load balancer listens.",
            0,
            &["status"],
            ingress_address,
        ),
        column(
            "Ports",
            "string",
            "The ports served (443 with TLS).",
            0,
            SPEC,
            ingress_ports,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

fn ingress_class_controller(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["controller"], ""))
}
/// `Kind[.group]/name` of the class's parameters, `<none>` without.
fn ingress_class_parameters(obj: &Value) -> Value {
    let p = &obj["spec"]["parameters"];
    if !p.is_object() {
        return json!("<none>");
    }
    let mut out = str_or(&p["kind"], "").to_string();
    if let Some(group) = p["apiGroup"].as_str() {
        out = format!("{out}.{group}");
    }
    json!(format!("{out}/{}", str_or(&p["name"], "")))
}

static INGRESS_CLASS: Printer = Printer {
    columns: &[
        column(
            "Controller",
            "string",
            "The controller that implements the class.",
            0,
            SPEC,
            ingress_class_controller,
        ),
        column(
            "Parameters",
            "string",
            "The class's parameters resource.",
            0,
            SPEC,
            ingress_class_parameters,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

fn pod_selector(obj: &Value) -> Value {
    super::workloads::format_selector(&obj["spec"]["podSelector"])
}

static NETWORK_POLICY: Printer = Printer {
    columns: &[column(
        "Pod-Selector",
        "string",
        "The pods the policy applies to.",
        0,
        SPEC,
        pod_selector,
    )],
    age: AgeAt::AfterNarrow,
};

// --- Core policy kinds -------------------------------------------------------------------

fn pt_containers(obj: &Value) -> Value {
    template_list(&obj["template"], "name")
}
fn pt_images(obj: &Value) -> Value {
    template_list(&obj["template"], "image")
}
fn pt_labels(obj: &Value) -> Value {
    labels(&obj["template"]["metadata"]["labels"])
}

static POD_TEMPLATE: Printer = Printer {
    columns: &[
        column(
            "Containers",
            "string",
            "The names of the template's containers.",
            0,
            &["template"],
            pt_containers,
        ),
        column(
            "Images",
            "string",
            "The images of the template's containers.",
            0,
            &["template"],
            pt_images,
        ),
        column(
            "Pod Labels",
            "string",
            "The labels of the template's pods.",
            0,
            &["template"],
            pt_labels,
        ),
    ],
    age: AgeAt::Never,
};

/// An int-or-string as written (`1`, `50%`), `N/A` when unset.
fn int_or_string(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.to_string()),
        Value::String(s) => json!(s),
        _ => json!("N/A"),
    }
}
fn pdb_min(obj: &Value) -> Value {
    int_or_string(&obj["spec"]["minAvailable"])
}
fn pdb_max(obj: &Value) -> Value {
    int_or_string(&obj["spec"]["maxUnavailable"])
}
fn pdb_allowed(obj: &Value) -> Value {
    json!(int(&obj["status"]["disruptionsAllowed"]))
}

static POD_DISRUPTION_BUDGET: Printer = Printer {
    columns: &[
        column(
            "Min Available",
            "string",
            "Pods that must stay available.",
            0,
            SPEC,
            pdb_min,
        ),
        column(
            "Max Unavailable",
            "string",
            "Pods that may be unavailable.",
            0,
            SPEC,
            pdb_max,
        ),
        column(
            "Allowed Disruptions",
            "integer",
            "Pods that may be disrupted now.",
            0,
            SPEC_STATUS,
            pdb_allowed,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

static LIMIT_RANGE: Printer = Printer {
    columns: &[column(
        "Created At",
        "date",
        "When the limit range was created.",
        0,
        &[],
        created_at,
    )],
    age: AgeAt::Never,
};

/// `name: used/hard` of each resource of the quota's status, sorted by name: the
/// `limits.*` ones (`limit`) or the others.
fn quota_usage(obj: &Value, limit: bool) -> Value {
    let status = &obj["status"];
    let mut names: Vec<&String> = status["hard"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .collect();
    names.sort();
    let parts: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("limits.") == limit)
        .map(|n| {
            let used = quantity_text(&status["used"][n.as_str()]);
            let hard = quantity_text(&status["hard"][n.as_str()]);
            format!("{n}: {used}/{hard}")
        })
        .collect();
    json!(parts.join(", "))
}
fn quantity_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".into(),
    }
}
fn quota_request(obj: &Value) -> Value {
    quota_usage(obj, false)
}
fn quota_limit(obj: &Value) -> Value {
    quota_usage(obj, true)
}

static RESOURCE_QUOTA: Printer = Printer {
    columns: &[
        column(
            "Request",
            "string",
            "Requests used of the quota's hard limits.",
            0,
            &["status"],
            quota_request,
        ),
        column(
            "Limit",
            "string",
            "Limits used of the quota's hard limits.",
            0,
            &["status"],
            quota_limit,
        ),
    ],
    age: AgeAt::After(0),
};

// --- Node, storage and admission configuration kinds ---------------------------------------

fn runtime_handler(obj: &Value) -> Value {
    json!(str_or(&obj["handler"], ""))
}

static RUNTIME_CLASS: Printer = Printer {
    columns: &[column(
        "Handler",
        "string",
        "The runtime handler of the class.",
        0,
        &["handler"],
        runtime_handler,
    )],
    age: AgeAt::AfterNarrow,
};

fn csi_node_drivers(obj: &Value) -> Value {
    json!(obj["spec"]["drivers"].as_array().map_or(0, Vec::len))
}

static CSI_NODE: Printer = Printer {
    columns: &[column(
        "Drivers",
        "integer",
        "The CSI drivers on the node.",
        0,
        SPEC,
        csi_node_drivers,
    )],
    age: AgeAt::AfterNarrow,
};

fn va_attacher(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["attacher"], ""))
}
fn va_pv(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["source"]["persistentVolumeName"], ""))
}
fn va_node(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["nodeName"], ""))
}
fn va_attached(obj: &Value) -> Value {
    json!(obj["status"]["attached"].as_bool().unwrap_or(false))
}

static VOLUME_ATTACHMENT: Printer = Printer {
    columns: &[
        column(
            "Attacher",
            "string",
            "The driver that attaches the volume.",
            0,
            SPEC,
            va_attacher,
        ),
        column("PV", "string", "The volume to attach.", 0, SPEC, va_pv),
        column(
            "Node",
            "string",
            "The node to attach it to.",
            0,
            SPEC,
            va_node,
        ),
        column(
            "Attached",
            "boolean",
            "Whether the volume is attached.",
            0,
            &["status"],
            va_attached,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

fn vac_driver(obj: &Value) -> Value {
    json!(str_or(&obj["driverName"], ""))
}

static VOLUME_ATTRIBUTES_CLASS: Printer = Printer {
    columns: &[column(
        "DriverName",
        "string",
        "The CSI driver of the class.",
        0,
        &["driverName"],
        vac_driver,
    )],
    age: AgeAt::AfterNarrow,
};

fn webhooks(obj: &Value) -> Value {
    json!(obj["webhooks"].as_array().map_or(0, Vec::len))
}

static WEBHOOK_CONFIGURATION: Printer = Printer {
    columns: &[column(
        "Webhooks",
        "integer",
        "The webhooks configured.",
        0,
        &["webhooks"],
        webhooks,
    )],
    age: AgeAt::AfterNarrow,
};

fn vap_validations(obj: &Value) -> Value {
    json!(obj["spec"]["validations"].as_array().map_or(0, Vec::len))
}
/// `apiVersion/kind` of the policy's parameters, `<unset>` without.
fn vap_param_kind(obj: &Value) -> Value {
    let p = &obj["spec"]["paramKind"];
    if !p.is_object() {
        return json!("<unset>");
    }
    json!(format!(
        "{}/{}",
        str_or(&p["apiVersion"], ""),
        str_or(&p["kind"], "")
    ))
}

static VALIDATING_ADMISSION_POLICY: Printer = Printer {
    columns: &[
        column(
            "Validations",
            "integer",
            "The policy's validations.",
            0,
            SPEC,
            vap_validations,
        ),
        column(
            "ParamKind",
            "string",
            "The kind of the policy's parameters.",
            0,
            SPEC,
            vap_param_kind,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

// --- API priority and fairness ---------------------------------------------------------------

fn fs_priority_level(obj: &Value) -> Value {
    json!(str_or(
        &obj["spec"]["priorityLevelConfiguration"]["name"],
        ""
    ))
}
fn fs_precedence(obj: &Value) -> Value {
    json!(int(&obj["spec"]["matchingPrecedence"]))
}
fn fs_distinguisher(obj: &Value) -> Value {
    json!(str_or(
        &obj["spec"]["distinguisherMethod"]["type"],
        "<none>"
    ))
}
/// The status of the `Dangling` condition (its priority level is missing), `?` without.
fn fs_missing_pl(obj: &Value) -> Value {
    let dangling = obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling"));
    json!(dangling.map_or("?", |c| str_or(&c["status"], "?")))
}

static FLOW_SCHEMA: Printer = Printer {
    columns: &[
        column(
            "PriorityLevel",
            "string",
            "The priority level of the matched requests.",
            0,
            SPEC,
            fs_priority_level,
        ),
        column(
            "MatchingPrecedence",
            "integer",
            "Lower matches first.",
            0,
            SPEC,
            fs_precedence,
        ),
        column(
            "DistinguisherMethod",
            "string",
            "How matched requests are split into flows.",
            0,
            SPEC,
            fs_distinguisher,
        ),
        column(
            "MissingPL",
            "string",
            "Whether the priority level is missing.",
            0,
            &["status"],
            fs_missing_pl,
        ),
    ],
    age: AgeAt::After(3),
};

fn limited(obj: &Value, path: &[&str]) -> Value {
    let mut v = &obj["spec"]["limited"];
    if !v.is_object() {
        return json!("<none>");
    }
    for p in path {
        v = &v[*p];
    }
    if v.is_null() {
        return json!("<none>");
    }
    v.clone()
}
fn plc_type(obj: &Value) -> Value {
    json!(str_or(&obj["spec"]["type"], ""))
}
fn plc_shares(obj: &Value) -> Value {
    if !obj["spec"]["limited"].is_object() {
        return json!("<none>");
    }
    json!(int(&obj["spec"]["limited"]["nominalConcurrencyShares"]))
}
fn plc_queues(obj: &Value) -> Value {
    limited(obj, &["limitResponse", "queuing", "queues"])
}
fn plc_hand_size(obj: &Value) -> Value {
    limited(obj, &["limitResponse", "queuing", "handSize"])
}
fn plc_queue_length(obj: &Value) -> Value {
    limited(obj, &["limitResponse", "queuing", "queueLengthLimit"])
}

static PRIORITY_LEVEL_CONFIGURATION: Printer = Printer {
    columns: &[
        column("Type", "string", "Exempt or Limited.", 0, SPEC, plc_type),
        column(
            "NominalConcurrencyShares",
            "string",
            "The level's share of the server's concurrency.",
            0,
            SPEC,
            plc_shares,
        ),
        column(
            "Queues",
            "string",
            "Queues of the level.",
            0,
            SPEC,
            plc_queues,
        ),
        column(
            "HandSize",
            "string",
            "Queues each flow may be shuffled into.",
            0,
            SPEC,
            plc_hand_size,
        ),
        column(
            "QueueLengthLimit",
            "string",
            "Requests each queue may hold.",
            0,
            SPEC,
            plc_queue_length,
        ),
    ],
    age: AgeAt::AfterNarrow,
};

// --- Events ------------------------------------------------------------------------------

/// The first of `names` that `obj` holds (core/v1 and events.k8s.io/v1 name an Event's
/// fields differently; both are printed alike).
fn either<'a>(obj: &'a Value, names: &[&str]) -> &'a Value {
    names
        .iter()
        .map(|n| &obj[*n])
        .find(|v| !v.is_null())
        .unwrap_or(&Value::Null)
}

fn since(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(human_age)
}

fn event_first_seen(obj: &Value) -> Value {
    let first = since(either(obj, &["firstTimestamp", "deprecatedFirstTimestamp"]))
        .or_else(|| since(&obj["eventTime"]));
    json!(first.unwrap_or_else(|| "<unknown>".into()))
}
/// The series' last observation, else the last timestamp, else the first seen.
fn event_last_seen(obj: &Value) -> Value {
    if let Some(t) = since(&obj["series"]["lastObservedTime"]) {
        return json!(t);
    }
    match since(either(obj, &["lastTimestamp", "deprecatedLastTimestamp"])) {
        Some(t) => json!(t),
        None => event_first_seen(obj),
    }
}
fn event_type(obj: &Value) -> Value {
    json!(str_or(&obj["type"], ""))
}
fn event_reason(obj: &Value) -> Value {
    json!(str_or(&obj["reason"], ""))
}
fn involved(obj: &Value) -> &Value {
    either(obj, &["involvedObject", "regarding"])
}
/// `kind/name` of the object the event is about, the kind lower-cased.
fn event_object(obj: &Value) -> Value {
    let o = involved(obj);
    let kind = str_or(&o["kind"], "").to_lowercase();
    match o["name"].as_str().filter(|n| !n.is_empty()) {
        Some(name) => json!(format!("{kind}/{name}")),
        None => json!(kind),
    }
}
fn event_subobject(obj: &Value) -> Value {
    json!(str_or(&involved(obj)["fieldPath"], ""))
}
/// `component, host` of the source (the reporting controller and instance without one).
fn event_source(obj: &Value) -> Value {
    let source = either(obj, &["source", "deprecatedSource"]);
    let component = str_or(
        &source["component"],
        str_or(&obj["reportingController"], ""),
    );
    let component = if component.is_empty() {
        str_or(&obj["reportingComponent"], "")
    } else {
        component
    };
    let host = str_or(&source["host"], str_or(&obj["reportingInstance"], ""));
    if host.is_empty() {
        json!(component)
    } else {
        json!(format!("{component}, {host}"))
    }
}
fn event_message(obj: &Value) -> Value {
    json!(str_or(either(obj, &["message", "note"]), "").trim())
}
/// The series' count, else the count, else 1 (a singleton event of events.k8s.io/v1).
fn event_count(obj: &Value) -> Value {
    let count = obj["series"]["count"]
        .as_i64()
        .or_else(|| either(obj, &["count", "deprecatedCount"]).as_i64())
        .filter(|c| *c != 0)
        .unwrap_or(1);
    json!(count)
}
fn event_name(obj: &Value) -> Value {
    obj["metadata"]["name"].clone()
}

const EVENT_FIELDS: &[&str] = &[
    "involvedObject",
    "regarding",
    "type",
    "reason",
    "message",
    "note",
    "source",
    "deprecatedSource",
    "reportingController",
    "reportingComponent",
    "reportingInstance",
    "firstTimestamp",
    "deprecatedFirstTimestamp",
    "lastTimestamp",
    "deprecatedLastTimestamp",
    "eventTime",
    "count",
    "deprecatedCount",
    "series",
];

/// Upstream's event printer: no leading NAME (it is the last wide column) and no AGE.
static EVENT: Printer = Printer {
    columns: &[
        column(
            "Last Seen",
            "string",
            "When the event was last seen.",
            0,
            EVENT_FIELDS,
            event_last_seen,
        ),
        column(
            "Type",
            "string",
            "Normal or Warning.",
            0,
            EVENT_FIELDS,
            event_type,
        ),
        column(
            "Reason",
            "string",
            "Why the event happened, in one word.",
            0,
            EVENT_FIELDS,
            event_reason,
        ),
        column(
            "Object",
            "string",
            "The object the event is about.",
            0,
            EVENT_FIELDS,
            event_object,
        ),
        column(
            "Subobject",
            "string",
            "The part of the object the event is about.",
            1,
            EVENT_FIELDS,
            event_subobject,
        ),
        column(
            "Source",
            "string",
            "The component that reported the event.",
            1,
            EVENT_FIELDS,
            event_source,
        ),
        column(
            "Message",
            "string",
            "What happened.",
            0,
            EVENT_FIELDS,
            event_message,
        ),
        column(
            "First Seen",
            "string",
            "When the event was first seen.",
            1,
            EVENT_FIELDS,
            event_first_seen,
        ),
        column(
            "Count",
            "string",
            "How often the event happened.",
            1,
            EVENT_FIELDS,
            event_count,
        ),
        column("Name", "string", "The event's name.", 1, &[], event_name),
    ],
    age: AgeAt::Never,
};

/// `kind.group/name` of the controlling owner, lower-cased kind and group, `<none>`
/// without one.
fn cr_controller(obj: &Value) -> Value {
    let owner = obj["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["controller"] == json!(true));
    let Some(owner) = owner else {
        return json!("<none>");
    };
    let api_version = str_or(&owner["apiVersion"], "");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = str_or(&owner["kind"], "");
    let group_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    json!(format!(
        "{}/{}",
        group_kind.to_lowercase(),
        str_or(&owner["name"], "")
    ))
}
fn cr_revision(obj: &Value) -> Value {
    json!(int(&obj["revision"]))
}

static CONTROLLER_REVISION: Printer = Printer {
    columns: &[
        column(
            "Controller",
            "string",
            "The object that owns the revision.",
            0,
            &[],
            cr_controller,
        ),
        column(
            "Revision",
            "string",
            "The revision's number.",
            0,
            &["revision"],
            cr_revision,
        ),
    ],
    age: AgeAt::AfterNarrow,
};
