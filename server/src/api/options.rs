//! Query options, typed, with their wire names: `GetOptions`, `ListOptions`,
//! `CreateOptions` / `UpdateOptions` / `PatchOptions` ([`WriteOptions`]) and
//! `DeleteOptions`. Each is parsed and validated here, once, so handlers and the store
//! only see values that are known to make sense. Unknown parameters (`pretty`,
//! `timeout`, ...) are ignored, as kube-apiserver does.

use serde::Deserialize;
use serde_json::Value;

use super::selectors::{FieldSelector, LabelSelector};
use super::{ApiError, StatusCause};
use crate::catalog::ApiResource;

/// Which state a read is served from: the API's `resourceVersion` semantics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadAt {
    /// `resourceVersion` unset: the most recent state (a consistent read).
    #[default]
    Latest,
    /// `resourceVersion=0`: any state the server holds, however recent.
    Any,
    /// `resourceVersion=N` (`NotOlderThan`): a state at least as new as `N`.
    NotOlderThan(u64),
    /// `resourceVersionMatch=Exact`: the state at exactly `N`.
    Exact(u64),
}

impl ReadAt {
    /// The revision the read must have reached, if it names one.
    pub fn revision(self) -> Option<u64> {
        match self {
            ReadAt::NotOlderThan(n) | ReadAt::Exact(n) => Some(n),
            ReadAt::Latest | ReadAt::Any => None,
        }
    }
}

/// Every query parameter a read, write or delete may carry, as sent.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Query {
    /// An int64, as upstream: more is a 400, a negative limit means none.
    limit: Option<i64>,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    resource_version: Option<String>,
    resource_version_match: Option<String>,
    timeout_seconds: Option<u64>,
    allow_watch_bookmarks: Option<String>,
    send_initial_events: Option<String>,
    dry_run: Option<String>,
    field_validation: Option<String>,
    field_manager: Option<String>,
    force: Option<String>,
    propagation_policy: Option<String>,
    orphan_dependents: Option<String>,
    grace_period_seconds: Option<i64>,
}

impl Query {
    fn parse(query: &str) -> Result<Query, ApiError> {
        actix_web::web::Query::<Query>::from_query(query)
            .map(actix_web::web::Query::into_inner)
            .map_err(|e| ApiError::bad_request(format!("invalid query parameters: {e}")))
    }
}

/// A boolean parameter: `true`/`1`, `false`/`0`/empty.
fn flag(v: Option<&str>, name: &str) -> Result<bool, ApiError> {
    match v {
        None | Some("") | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "{name}: invalid value {other:?}: must be true or false"
        ))),
    }
}

/// `dryRun`: only `All` is defined.
fn dry_run(v: Option<&str>, options: &str) -> Result<bool, ApiError> {
    match v {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::invalid_options(
            options,
            StatusCause::unsupported("dryRun", &format!("[]string{{{other:?}}}"), &["All"]),
        )),
    }
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

/// `resourceVersion` and `resourceVersionMatch` of a get or list, checked as upstream
/// checks them, into the state to read.
fn read_at(q: &Query, is_list: bool) -> Result<ReadAt, ApiError> {
    let rv = non_empty(&q.resource_version);
    let rv_match = non_empty(&q.resource_version_match);
    if is_list && rv_match.is_some() && rv.is_none() {
        return Err(ApiError::invalid_options(
            "ListOptions",
            StatusCause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ),
        ));
    }
    if is_list && rv.is_some() && non_empty(&q.continue_token).is_some() {
        return Err(ApiError::invalid_options(
            "ListOptions",
            StatusCause::forbidden(
                "resourceVersion",
                "specifying resource version is not allowed when using continue",
            ),
        ));
    }
    if let Some(m) = rv_match.filter(|m| !["Exact", "NotOlderThan"].contains(m)) {
        return Err(ApiError::invalid_options(
            "ListOptions",
            StatusCause::unsupported(
                "resourceVersionMatch",
                &format!("{m:?}"),
                &["Exact", "NotOlderThan", ""],
            ),
        ));
    }
    let Some(rv) = rv else {
        return Ok(ReadAt::Latest);
    };
    let n: u64 = rv
        .parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
    Ok(match (rv_match, n) {
        (Some("Exact"), 0) => {
            return Err(ApiError::invalid_options(
                "ListOptions",
                StatusCause::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ),
            ))
        }
        (_, 0) => ReadAt::Any,
        (Some("Exact"), n) => ReadAt::Exact(n),
        (_, n) => ReadAt::NotOlderThan(n),
    })
}

/// `GetOptions`: which state one object is read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GetOptions {
    pub at: ReadAt,
}

impl GetOptions {
    /// Parses and checks the query of a GET on one object.
    pub fn parse(query: &str) -> Result<GetOptions, ApiError> {
        Ok(GetOptions {
            at: read_at(&Query::parse(query)?, false)?,
        })
    }
}

/// `ListOptions`: what a list (or watch, or deletecollection) selects and from which
/// state; selectors already parsed against the resource's selectable fields.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Page size; 0 = everything.
    pub limit: usize,
    pub continue_token: Option<String>,
    /// Which state to serve (a continue token pins its own).
    pub at: ReadAt,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// `resourceVersion` as sent: where a watch starts.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` as sent.
    pub resource_version_match: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: bool,
}

impl ListOptions {
    /// Parses and checks the query of a list or watch of `res`.
    pub fn parse(query: &str, res: &ApiResource, watch: bool) -> Result<ListOptions, ApiError> {
        let q = Query::parse(query)?;
        // A watch's resourceVersion is where it starts, not a state to list.
        let at = if watch {
            ReadAt::Latest
        } else {
            read_at(&q, true)?
        };
        let labels = LabelSelector::parse(q.label_selector.as_deref().unwrap_or_default())
            .map_err(ApiError::bad_request)?;
        let fields = FieldSelector::parse(
            q.field_selector.as_deref().unwrap_or_default(),
            &res.selectable_fields,
            res.builtin(),
        )
        .map_err(ApiError::bad_request)?;
        let send_initial_events = flag(q.send_initial_events.as_deref(), "sendInitialEvents")?;
        if watch
            && send_initial_events
            && q.resource_version_match.as_deref() != Some("NotOlderThan")
        {
            return Err(ApiError::invalid_options(
                "ListOptions",
                StatusCause::forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ),
            ));
        }
        Ok(ListOptions {
            limit: q
                .limit
                .map_or(0, |n| usize::try_from(n.max(0)).unwrap_or(usize::MAX)),
            continue_token: q.continue_token,
            at,
            labels,
            fields,
            resource_version: q.resource_version,
            resource_version_match: q.resource_version_match,
            timeout_seconds: q.timeout_seconds,
            allow_watch_bookmarks: flag(q.allow_watch_bookmarks.as_deref(), "allowWatchBookmarks")?,
            send_initial_events,
        })
    }
}

/// What `fieldValidation` asks for unknown and duplicate fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the default).
    #[default]
    Warn,
    /// Refuse the request.
    Strict,
}

/// Which write an options value belongs to; its wire name is in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Create,
    Update,
    Patch,
}

impl WriteKind {
    /// `CreateOptions`, `UpdateOptions` or `PatchOptions`.
    pub fn options_name(self) -> &'static str {
        match self {
            WriteKind::Create => "CreateOptions",
            WriteKind::Update => "UpdateOptions",
            WriteKind::Patch => "PatchOptions",
        }
    }
}

/// `CreateOptions`, `UpdateOptions` and `PatchOptions`, which share their fields
/// (`force` is PatchOptions' own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    pub kind: WriteKind,
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    /// `force` was given at all (only apply patches may carry it).
    pub force_given: bool,
    pub force: bool,
}

impl WriteOptions {
    /// Parses and checks the query of a create, update or patch.
    pub fn parse(query: &str, kind: WriteKind) -> Result<WriteOptions, ApiError> {
        let q = Query::parse(query)?;
        let name = kind.options_name();
        if q.field_manager.as_deref().is_some_and(|m| m.len() > 128) {
            return Err(ApiError::invalid_options(
                name,
                StatusCause::too_long("fieldManager", "may not be more than 128 bytes"),
            ));
        }
        let field_validation = match q.field_validation.as_deref() {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Ignore") => FieldValidation::Ignore,
            Some("Strict") => FieldValidation::Strict,
            Some(other) => {
                return Err(ApiError::invalid_options(
                    name,
                    StatusCause::unsupported(
                        "fieldValidation",
                        &format!("{other:?}"),
                        &["", "Ignore", "Strict", "Warn"],
                    ),
                ))
            }
        };
        Ok(WriteOptions {
            kind,
            dry_run: dry_run(q.dry_run.as_deref(), name)?,
            field_manager: q.field_manager,
            field_validation,
            force_given: q.force.is_some(),
            force: flag(q.force.as_deref(), "force")?,
        })
    }
}

/// `propagationPolicy`: how dependents are garbage collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropagationPolicy {
    Orphan,
    Background,
    Foreground,
}

/// `DeleteOptions.preconditions`: the delete happens only if the object still is this.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// `DeleteOptions`, from the query and a DeleteOptions body (either may say dryRun).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub propagation_policy: Option<PropagationPolicy>,
    /// The deprecated `orphanDependents`; never set together with `propagation_policy`.
    pub orphan_dependents: Option<bool>,
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Preconditions,
}

impl DeleteOptions {
    /// Parses and checks a DELETE's query and body (empty, or a DeleteOptions object).
    pub fn parse(query: &str, body: &[u8]) -> Result<DeleteOptions, ApiError> {
        let q = Query::parse(query)?;
        let body: Value = if body.is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the body of the request is not valid DeleteOptions: {e}"
                ))
            })?
        };
        let body_dry_run = body["dryRun"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "All"));
        let policy_given = q
            .propagation_policy
            .as_deref()
            .or(body["propagationPolicy"].as_str());
        let policy = match policy_given {
            None => None,
            Some("Orphan") => Some(PropagationPolicy::Orphan),
            Some("Background") => Some(PropagationPolicy::Background),
            Some("Foreground") => Some(PropagationPolicy::Foreground),
            Some(p) => {
                return Err(ApiError::invalid_options(
                    "DeleteOptions",
                    StatusCause::unsupported(
                        "propagationPolicy",
                        &format!("{p:?}"),
                        &["Foreground", "Background", "Orphan", "nil"],
                    ),
                ))
            }
        };
        let orphan_dependents = match q.orphan_dependents.as_deref() {
            Some(v) => Some(flag(Some(v), "orphanDependents")?),
            None => body["orphanDependents"].as_bool(),
        };
        if let (Some(_), Some(given)) = (orphan_dependents, policy_given) {
            return Err(ApiError::invalid_options(
                "DeleteOptions",
                StatusCause::invalid(
                    "propagationPolicy",
                    given,
                    "orphanDependents and deletionPropagation cannot be both set",
                ),
            ));
        }
        let text = |v: &Value| v.as_str().map(str::to_string);
        Ok(DeleteOptions {
            dry_run: dry_run(q.dry_run.as_deref(), "DeleteOptions")? || body_dry_run,
            propagation_policy: policy,
            orphan_dependents,
            grace_period_seconds: q
                .grace_period_seconds
                .or(body["gracePeriodSeconds"].as_i64()),
            preconditions: Preconditions {
                uid: text(&body["preconditions"]["uid"]),
                resource_version: text(&body["preconditions"]["resourceVersion"]),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::status::StatusReason;

    #[test]
    fn read_states_follow_resource_version_and_match() {
        let at = |q: &str| GetOptions::parse(q).map(|o| o.at);
        assert_eq!(at("").unwrap(), ReadAt::Latest);
        assert_eq!(at("resourceVersion=0").unwrap(), ReadAt::Any);
        assert_eq!(at("resourceVersion=7").unwrap(), ReadAt::NotOlderThan(7));
        assert_eq!(
            at("resourceVersion=7&resourceVersionMatch=Exact").unwrap(),
            ReadAt::Exact(7)
        );
        assert!(at("resourceVersion=x").unwrap_err().reason == StatusReason::BadRequest);
        assert!(at("resourceVersion=0&resourceVersionMatch=Exact")
            .unwrap_err()
            .is_invalid());
        assert!(at("resourceVersionMatch=Sometime&resourceVersion=1")
            .unwrap_err()
            .is_invalid());
    }

    #[test]
    fn write_and_delete_options_are_checked() {
        let w =
            WriteOptions::parse("dryRun=All&fieldValidation=Strict", WriteKind::Create).unwrap();
        assert!(w.dry_run);
        assert_eq!(w.field_validation, FieldValidation::Strict);
        let e = WriteOptions::parse("dryRun=Some", WriteKind::Update).unwrap_err();
        assert!(
            e.is_invalid() && e.message.starts_with("UpdateOptions.meta.k8s.io"),
            "{e}"
        );
        assert!(
            WriteOptions::parse("fieldValidation=Loud", WriteKind::Patch)
                .unwrap_err()
                .is_invalid()
        );
        let d = DeleteOptions::parse(
            "propagationPolicy=Foreground",
            br#"{"dryRun":["All"],"preconditions":{"uid":"u1"}}"#,
        )
        .unwrap();
        assert!(d.dry_run);
        assert_eq!(d.propagation_policy, Some(PropagationPolicy::Foreground));
        assert_eq!(d.preconditions.uid.as_deref(), Some("u1"));
        assert!(DeleteOptions::parse("propagationPolicy=Later", b"")
            .unwrap_err()
            .is_invalid());
        assert!(
            DeleteOptions::parse("", b"{not json").unwrap_err().reason == StatusReason::BadRequest
        );
    }
}
