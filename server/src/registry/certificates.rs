//! CertificateSigningRequest: what a write may change of a request's conditions and
//! certificate, as kube-apiserver's strategies for the object, its `status` and its
//! `approval` keep apart approval (people, `kubectl certificate approve`) and issuance
//! (signers).

use base64::Engine;
use serde_json::{json, Value};

use super::strategy::{ComputedColumn, Strategy};
use crate::api::StatusCause;
use crate::auth::UserInfo;

/// CertificateSigningRequest: updates change metadata only; `/status` the certificate
/// (once) and conditions other than Approved and Denied; `approval` (a part subresource,
/// `registry::parts`) those two.
pub struct CertificateSigningRequestStrategy;

/// `<none>` for an unset string, as upstream's printer shows it.
fn or_none(v: &Value) -> Value {
    match v.as_str() {
        Some(s) if !s.is_empty() => json!(s),
        _ => json!("<none>"),
    }
}

fn signer_name(obj: &Value) -> Value {
    or_none(&obj["spec"]["signerName"])
}

fn requestor(obj: &Value) -> Value {
    json!(obj["spec"]["username"].as_str().unwrap_or_default())
}

fn requested_duration(obj: &Value) -> Value {
    match obj["spec"]["expirationSeconds"].as_i64() {
        Some(secs) => json!(crate::api::meta::human_duration(secs)),
        None => json!("<none>"),
    }
}

/// Upstream's `extractCSRStatus`: Denied, Approved or Pending, then `,Failed` and
/// `,Issued`.
fn condition(obj: &Value) -> Value {
    let types: Vec<&str> = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str())
        .collect();
    let mut status = if types.contains(&"Denied") {
        "Denied".to_string()
    } else if types.contains(&"Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if types.contains(&"Failed") {
        status.push_str(",Failed");
    }
    if obj["status"]["certificate"]
        .as_str()
        .is_some_and(|c| !c.is_empty())
    {
        status.push_str(",Issued");
    }
    json!(status)
}

/// kube-apiserver's Table columns of CertificateSigningRequests (after Name and Age).
const CSR_COLUMNS: &[ComputedColumn] = &[
    ComputedColumn {
        name: "SignerName",
        type_: "string",
        description: "The signer the request is for.",
        priority: 0,
        fields: &["spec"],
        value: signer_name,
    },
    ComputedColumn {
        name: "Requestor",
        type_: "string",
        description: "The user who created the request.",
        priority: 0,
        fields: &["spec"],
        value: requestor,
    },
    ComputedColumn {
        name: "RequestedDuration",
        type_: "string",
        description: "The validity the request asks for.",
        priority: 0,
        fields: &["spec"],
        value: requested_duration,
    },
    ComputedColumn {
        name: "Condition",
        type_: "string",
        description: "Approved, Denied or Pending, and whether it failed or was issued.",
        priority: 0,
        fields: &["status"],
        value: condition,
    },
];

impl Strategy for CertificateSigningRequestStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        CSR_COLUMNS
    }

    fn prints_age_first(&self) -> bool {
        true
    }

    /// As upstream: the requester's name, uid, groups and extra replace whatever the
    /// client sent, so a signer or approver can trust them.
    fn record_requester(&self, obj: &mut Value, user: Option<&UserInfo>) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for field in ["username", "uid", "groups", "extra"] {
            spec.remove(field);
        }
        let Some(user) = user else {
            return;
        };
        if !user.name.is_empty() {
            spec.insert("username".into(), json!(user.name));
        }
        if !user.uid.is_empty() {
            spec.insert("uid".into(), json!(user.uid));
        }
        if !user.groups.is_empty() {
            spec.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            spec.insert("extra".into(), json!(user.extra));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // Neither the request nor its approval change through the object itself.
        match old.get("spec") {
            Some(spec) => new["spec"] = spec.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("spec");
                }
            }
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // Approved and Denied conditions as stored, where as many as stored were sent;
        // adding or removing one is refused by validation.
        for t in ["Approved", "Denied"] {
            let stored: Vec<Value> = conditions_of(old, t).into_iter().cloned().collect();
            if conditions_of(new, t).len() != stored.len() {
                continue;
            }
            let mut rest = stored.into_iter();
            if let Some(list) = new["status"]
                .get_mut("conditions")
                .and_then(Value::as_array_mut)
            {
                for c in list.iter_mut().filter(|c| c["type"] == json!(t)) {
                    if let Some(o) = rest.next() {
                        *c = o;
                    }
                }
            }
        }
        stamp_conditions(new, old);
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut causes = validate_csr_conditions(new, old);
        causes.extend(csr_conditions_kept(
            new,
            old,
            &["Approved", "Denied", "Failed"],
        ));
        causes.extend(csr_approval_frozen(new, old));
        let (now, before) = (&new["status"]["certificate"], &old["status"]["certificate"]);
        if now != before {
            if before.as_str().is_some_and(|c| !c.is_empty()) {
                causes.push(StatusCause::forbidden(
                    "status.certificate",
                    "updates may not modify existing certificate content",
                ));
            } else if let Some(problem) = now.as_str().and_then(certificate_problem) {
                causes.push(StatusCause::invalid(
                    "status.certificate",
                    "<certificate data>",
                    problem,
                ));
            }
        }
        causes
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

/// What is wrong with an issued certificate (base64 of PEM), if anything: it must hold
/// at least one CERTIFICATE block.
fn certificate_problem(data: &str) -> Option<&'static str> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    let text = String::from_utf8_lossy(&pem);
    if text.contains("-----BEGIN CERTIFICATE-----") && text.contains("-----END CERTIFICATE-----") {
        None
    } else {
        Some("must contain at least one CERTIFICATE PEM block")
    }
}

/// The conditions of a CSR of one type.
fn conditions_of<'a>(csr: &'a Value, type_: &str) -> Vec<&'a Value> {
    csr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == json!(type_))
        .collect()
}

/// Upstream's checks of a CSR's conditions: a type and a status each, `True` alone for
/// Approved, Denied and Failed, not Approved and Denied together, each type once. What
/// stored objects already break (written before these checks) is let through, as
/// upstream does.
pub fn validate_csr_conditions(new: &Value, old: &Value) -> Vec<StatusCause> {
    let path = "status.conditions";
    let old_list = old["status"]["conditions"].as_array();
    let old_has = |pred: &dyn Fn(&[Value]) -> bool| old_list.is_some_and(|l| pred(l));
    let allow_both = old_has(&|l| {
        l.iter().any(|c| c["type"] == "Approved") && l.iter().any(|c| c["type"] == "Denied")
    });
    let allow_duplicates = old_has(&|l| {
        let mut seen = Vec::new();
        l.iter().any(|c| {
            let dup = seen.contains(&&c["type"]);
            seen.push(&c["type"]);
            dup
        })
    });
    let allow_empty_type = old_has(&|l| {
        l.iter()
            .any(|c| c["type"].as_str().is_none_or(str::is_empty))
    });
    let mut causes = Vec::new();
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&Value> = Vec::new();
    for (i, c) in new["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let type_ = c["type"].as_str().unwrap_or_default();
        if type_.is_empty() && !allow_empty_type {
            causes.push(StatusCause::required(&format!("{path}[{i}].type"), ""));
        }
        let status = c["status"].as_str().unwrap_or_default();
        let allowed: &[&str] = if ["Approved", "Denied", "Failed"].contains(&type_) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            causes.push(StatusCause::required(&format!("{path}[{i}].status"), ""));
        } else if !allowed.contains(&status) {
            causes.push(StatusCause::unsupported(
                &format!("{path}[{i}].status"),
                &format!("{status:?}"),
                allowed,
            ));
        }
        if !allow_both {
            let clash = match type_ {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                causes.push(StatusCause::invalid(
                    &format!("{path}[{i}].type"),
                    type_,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !allow_duplicates {
            if seen.contains(&&c["type"]) {
                causes.push(StatusCause::duplicate(
                    &format!("{path}[{i}].type"),
                    &format!("{type_:?}"),
                ));
            }
            seen.push(&c["type"]);
        }
    }
    causes
}

/// Conditions of `types` may not be removed (`kept`), and, where `frozen`, neither added
/// nor changed: what every write of a CSR but the approval keeps.
pub fn csr_conditions_kept(new: &Value, old: &Value, kept: &[&str]) -> Vec<StatusCause> {
    kept.iter()
        .filter(|t| conditions_of(new, t).len() < conditions_of(old, t).len())
        .map(|t| {
            StatusCause::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {t:?}"),
            )
        })
        .collect()
}

/// Approved and Denied conditions may only be added or changed through `approval`.
pub fn csr_approval_frozen(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for t in ["Approved", "Denied"] {
        let (n, o) = (conditions_of(new, t), conditions_of(old, t));
        if n.len() > o.len() {
            causes.push(StatusCause::forbidden(
                "status.conditions",
                &format!("updates may not add a condition of type {t:?}"),
            ));
        } else if n.len() == o.len() && n != o {
            causes.push(StatusCause::forbidden(
                "status.conditions",
                &format!("updates may not modify a condition of type {t:?}"),
            ));
        }
    }
    causes
}

/// Fills in conditions' `lastUpdateTime` and `lastTransitionTime` where a client left
/// them out: now, or the stored condition's transition time when its status is the same.
pub fn stamp_conditions(csr: &mut Value, old: &Value) {
    let now = crate::api::meta::now_rfc3339();
    let Some(list) = csr["status"]
        .get_mut("conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in list.iter_mut() {
        if !c.is_object() {
            continue;
        }
        if c["lastUpdateTime"].as_str().is_none_or(str::is_empty) {
            c["lastUpdateTime"] = json!(now);
        }
        if c["lastTransitionTime"].as_str().is_none_or(str::is_empty) {
            let before = conditions_of(old, c["type"].as_str().unwrap_or_default())
                .into_iter()
                .find(|o| o["status"] == c["status"])
                .and_then(|o| o["lastTransitionTime"].as_str())
                .map(str::to_string);
            c["lastTransitionTime"] = json!(before.unwrap_or_else(|| now.clone()));
        }
    }
}
