//! What the authentication and authorization reviews answer, and TokenRequest: the
//! logic behind the create-only kinds of authentication.k8s.io and authorization.k8s.io
//! (`kubectl auth can-i`, `kubectl auth whoami`, `kubectl create token`, webhooks
//! checking tokens).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::attributes::{Attributes, Decision};
use super::authn::serviceaccount::ObjectClaim;
use super::{Auth, UserInfo};
use crate::api::{ApiError, StatusCause};
use crate::endpoints::ApiState;

const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTHENTICATION: &str = "authentication.k8s.io";

/// TokenReview: whether `spec.token` authenticates, as whom, for which audiences.
pub async fn token_review(auth: &Auth, mut review: Value) -> Result<Value, ApiError> {
    let token = review["spec"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if token.is_empty() {
        return Err(ApiError::invalid_kind(
            AUTHENTICATION,
            "TokenReview",
            "",
            vec![StatusCause::required("spec.token", "a token to review")],
        ));
    }
    let api = &auth.service_accounts.audiences;
    let wanted: Vec<String> = strings(&review["spec"]["audiences"]);
    let wanted = if wanted.is_empty() {
        api.clone()
    } else {
        wanted
    };
    review["status"] = match auth.authenticator.review_token(&token, &wanted, api).await {
        Ok((user, audiences)) => json!({
            "authenticated": true,
            "user": user.to_json(),
            "audiences": audiences,
        }),
        Err(errors) => json!({
            "authenticated": false,
            "user": {},
            "error": format!("[{}]", errors.join(", ")),
        }),
    };
    Ok(review)
}

/// SubjectAccessReview: whether the user in `spec` may do what it says.
pub async fn subject_access_review(auth: &Auth, mut review: Value) -> Result<Value, ApiError> {
    let spec = &review["spec"];
    let user = UserInfo {
        name: spec["user"].as_str().unwrap_or_default().to_string(),
        uid: spec["uid"].as_str().unwrap_or_default().to_string(),
        groups: strings(&spec["groups"]),
        extra: extra(&spec["extra"]),
    };
    let mut causes = attributes_causes(spec, true);
    if user.name.is_empty() && user.groups.is_empty() {
        causes.push(StatusCause::invalid(
            "spec.user",
            "",
            "at least one of user or group must be specified",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind(
            AUTHORIZATION,
            "SubjectAccessReview",
            "",
            causes,
        ));
    }
    review["status"] = access_status(auth, &user, spec).await;
    Ok(review)
}

/// SelfSubjectAccessReview: whether the requester may.
pub async fn self_subject_access_review(
    auth: &Auth,
    user: &UserInfo,
    mut review: Value,
) -> Result<Value, ApiError> {
    let causes = attributes_causes(&review["spec"], true);
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind(
            AUTHORIZATION,
            "SelfSubjectAccessReview",
            "",
            causes,
        ));
    }
    review["status"] = access_status(auth, user, &review["spec"]).await;
    Ok(review)
}

/// LocalSubjectAccessReview: a SubjectAccessReview limited to `namespace`.
pub async fn local_subject_access_review(
    auth: &Auth,
    namespace: &str,
    mut review: Value,
) -> Result<Value, ApiError> {
    let mut causes = attributes_causes(&review["spec"], false);
    if review["spec"]
        .get("nonResourceAttributes")
        .is_some_and(|v| !v.is_null())
    {
        causes.push(StatusCause::invalid(
            "spec.nonResourceAttributes",
            "",
            "disallowed on this kind of request",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind(
            AUTHORIZATION,
            "LocalSubjectAccessReview",
            "",
            causes,
        ));
    }
    let asked = review["spec"]["resourceAttributes"]["namespace"]
        .as_str()
        .unwrap_or_default();
    if asked.is_empty() {
        review["spec"]["resourceAttributes"]["namespace"] = json!(namespace);
    } else if asked != namespace {
        return Err(ApiError::bad_request(format!(
            "spec.resourceAttributes.namespace must match metadata.namespace: {asked:?}, {namespace:?}"
        )));
    }
    review["metadata"]["namespace"] = json!(namespace);
    let answered = subject_access_review(auth, review).await?;
    Ok(answered)
}

/// SelfSubjectRulesReview: every rule the requester holds in `spec.namespace`.
pub fn self_subject_rules_review(
    auth: &Auth,
    user: &UserInfo,
    mut review: Value,
) -> Result<Value, ApiError> {
    let namespace = review["spec"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let rules = auth.authorizer.rules_for(user, &namespace);
    let resource: Vec<Value> = rules
        .resource_rules
        .iter()
        .map(|r| {
            let mut rule =
                json!({ "verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources });
            if !r.resource_names.is_empty() {
                rule["resourceNames"] = json!(r.resource_names);
            }
            rule
        })
        .collect();
    let non_resource: Vec<Value> = rules
        .non_resource_rules
        .iter()
        .map(|r| json!({ "verbs": r.verbs, "nonResourceURLs": r.non_resource_urls }))
        .collect();
    review["status"] = json!({
        "resourceRules": resource,
        "nonResourceRules": non_resource,
        "incomplete": rules.incomplete,
    });
    if !rules.errors.is_empty() {
        review["status"]["evaluationError"] = json!(rules.evaluation_error());
    }
    Ok(review)
}

/// The answer to an access review of `user`.
async fn access_status(auth: &Auth, user: &UserInfo, spec: &Value) -> Value {
    let ra = &spec["resourceAttributes"];
    let nra = &spec["nonResourceAttributes"];
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let fields = if ra.is_object() {
        [
            s(ra, "verb"),
            s(ra, "namespace"),
            s(ra, "group"),
            s(ra, "version"),
            s(ra, "resource"),
            s(ra, "subresource"),
            s(ra, "name"),
            String::new(),
        ]
    } else {
        [
            s(nra, "verb"),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            s(nra, "path"),
        ]
    };
    let [verb, namespace, group, version, resource, subresource, name, path] = &fields;
    let attrs = if ra.is_object() {
        Attributes::resource(user, verb, group, resource)
            .in_namespace(namespace)
            .with_version(version)
            .with_subresource(subresource)
            .named(name)
    } else {
        Attributes::non_resource(user, verb, path)
    };
    match auth.authorizer.decide(&attrs).await {
        Decision::Allow(reason) => with_reason(json!({ "allowed": true }), &reason),
        Decision::Deny(reason) => with_reason(json!({ "allowed": false, "denied": true }), &reason),
        Decision::NoOpinion(reason) => with_reason(json!({ "allowed": false }), &reason),
        // As upstream's review storage: the authorizer's error is the evaluation error.
        Decision::Error(e) => json!({ "allowed": false, "evaluationError": e }),
    }
}

fn with_reason(mut status: Value, reason: &str) -> Value {
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    status
}

/// Exactly one of resourceAttributes and nonResourceAttributes (`allow_non_resource`
/// false: resourceAttributes only).
fn attributes_causes(spec: &Value, allow_non_resource: bool) -> Vec<StatusCause> {
    let given = |k: &str| spec.get(k).is_some_and(|v| v.is_object());
    let (ra, nra) = (given("resourceAttributes"), given("nonResourceAttributes"));
    match (ra, nra && allow_non_resource) {
        (true, false) | (false, true) => Vec::new(),
        (true, true) => vec![StatusCause::invalid(
            "spec.nonResourceAttributes",
            "",
            "cannot be specified in combination with resourceAttributes",
        )],
        (false, false) => vec![StatusCause::invalid(
            "spec.resourceAttributes",
            "",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn extra(v: &Value) -> BTreeMap<String, Vec<String>> {
    v.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
        .unwrap_or_default()
}

/// The shortest and longest lifetimes a TokenRequest may ask for, and the default.
const MIN_EXPIRATION: u64 = 600;
const MAX_EXPIRATION: u64 = 1 << 32;
const DEFAULT_EXPIRATION: u64 = 3600;

/// TokenRequest (`serviceaccounts/<name>/token`): a signed token for the service
/// account, bound to it (and to `spec.boundObjectRef` when given).
pub async fn token_request(
    auth: &Auth,
    state: &ApiState,
    namespace: &str,
    service_account: &str,
    mut request: Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let sa_res = state
        .catalog
        .get("", "v1", "serviceaccounts")
        .ok_or_else(|| ApiError::internal("no serviceaccounts resource"))?;
    let sa = state
        .store
        .get(&sa_res, Some(namespace), service_account)
        .await?;
    let sa_uid = sa["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let spec = &request["spec"];
    let asked = spec["expirationSeconds"]
        .as_u64()
        .unwrap_or(DEFAULT_EXPIRATION);
    let mut causes = Vec::new();
    if asked < MIN_EXPIRATION {
        causes.push(StatusCause::invalid_value(
            "spec.expirationSeconds",
            &json!(asked),
            "may not specify a duration less than 10 minutes",
        ));
    } else if asked > MAX_EXPIRATION {
        causes.push(StatusCause::invalid_value(
            "spec.expirationSeconds",
            &json!(asked),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let bound = bound_object(state, namespace, &spec["boundObjectRef"], &mut causes).await?;
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind(
            AUTHENTICATION,
            "TokenRequest",
            service_account,
            causes,
        ));
    }
    let issuer = &auth.token_issuer;
    let lifetime = match issuer.max_expiration {
        Some(max) => Duration::from_secs(asked).min(max),
        None => Duration::from_secs(asked),
    };
    let audiences = strings(&spec["audiences"]);
    let sa_claim = ObjectClaim {
        name: service_account.to_string(),
        uid: sa_uid,
    };
    let mut claims = issuer.claims(namespace, sa_claim, audiences, lifetime);
    match bound {
        Some(("Secret", object)) => claims.kubernetes.secret = Some(object),
        Some(("Pod", object)) => claims.kubernetes.pod = Some(object),
        Some((_, object)) => claims.kubernetes.node = Some(object),
        None => {}
    }
    request["metadata"]["name"] = json!(service_account);
    request["metadata"]["namespace"] = json!(namespace);
    request["metadata"]["creationTimestamp"] = Value::Null;
    request["spec"]["audiences"] = json!(claims.aud);
    request["spec"]["expirationSeconds"] = json!(lifetime.as_secs());
    if dry_run {
        return Ok(request);
    }
    let token = issuer.sign(&claims).map_err(ApiError::internal)?;
    let expires = chrono::DateTime::from_timestamp(claims.exp as i64, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    request["status"] = json!({ "token": token, "expirationTimestamp": expires });
    Ok(request)
}

/// The object a token is bound to (`boundObjectRef`): its kind and current name and uid.
async fn bound_object(
    state: &ApiState,
    namespace: &str,
    reference: &Value,
    causes: &mut Vec<StatusCause>,
) -> Result<Option<(&'static str, ObjectClaim)>, ApiError> {
    if !reference.is_object() {
        return Ok(None);
    }
    let kind = match reference["kind"].as_str().unwrap_or_default() {
        "Secret" => "Secret",
        "Pod" => "Pod",
        "Node" => "Node",
        other => {
            causes.push(StatusCause::unsupported(
                "spec.boundObjectRef.kind",
                other,
                &["Pod", "Node", "Secret"],
            ));
            return Ok(None);
        }
    };
    let name = reference["name"].as_str().unwrap_or_default();
    if name.is_empty() {
        causes.push(StatusCause::required("spec.boundObjectRef.name", ""));
        return Ok(None);
    }
    let res = state.catalog.by_kind("", "v1", kind);
    let found = match &res {
        Some(res) => {
            let ns = res.namespaced().then_some(namespace);
            match state.store.get(res, ns, name).await {
                Ok(obj) => Some(obj),
                Err(e) if e.is_not_found() => None,
                Err(e) => return Err(e),
            }
        }
        None => None,
    };
    let Some(obj) = found else {
        let plural = format!("{}s", kind.to_ascii_lowercase());
        return Err(ApiError::not_found_in_group("", &plural, name));
    };
    let uid = obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if let Some(want) = reference["uid"].as_str().filter(|u| !u.is_empty()) {
        if want != uid {
            return Err(ApiError::conflict_with(
                format!("the UID in the bound object reference ({want}) does not match the UID in record ({uid}); the object might have been deleted and then recreated"),
                json!({ "name": name, "kind": kind }),
            ));
        }
    }
    Ok(Some((
        kind,
        ObjectClaim {
            name: name.to_string(),
            uid,
        },
    )))
}
