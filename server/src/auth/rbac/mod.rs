//! Role-based access control: the policy engine behind `--authorization-mode=RBAC`.
//!
//! Pure: no I/O, no HTTP. The server feeds it the RBAC objects of its watch caches
//! (as JSON) and asks it questions from the request filter and the RBAC write paths.
//!
//! - `types.rs` — the rbac/v1 objects, read leniently from JSON.
//! - `selector.rs` — label selectors (ClusterRole aggregation).
//! - `rules.rs` — whether one rule allows one request.
//! - `index.rs` — the snapshot indexed by subject: `authorize`, `rules_for`.
//! - `escalation.rs` — `covers` and the checks of Role/binding writes.
//! - `bootstrap.rs` — the default policy and its start-up reconciliation (a public
//!   module: `bootstrap::cluster_roles()`, `bootstrap::reconcile`).
//! - `aggregation.rs` — the rules of aggregated ClusterRoles.
//! - `format.rs` — messages as upstream prints them.

mod aggregation;
pub mod bootstrap;
mod escalation;
mod format;
mod index;
mod rules;
mod selector;
mod types;

pub use crate::auth::attributes::{Attributes, Decision};
pub use aggregation::{aggregate, with_rules};
pub use escalation::{
    bind_attributes, check_cluster_role_binding_write, check_cluster_role_write,
    check_role_binding_write, check_role_write, compact_rules, confirm_no_escalation, covers,
    escalate_attributes, only_gc_fields_changed, EscalationError,
};
pub use format::compact_rule;
pub use index::{RbacIndex, RoleRefError, RulesFor};
pub use rules::{rule_allows, rules_allow};
pub use types::{
    AggregationRule, ClusterRole, ClusterRoleBinding, Kind, LabelSelector,
    LabelSelectorRequirement, Meta, ObjectIssue, PolicyRule, Role, RoleBinding, RoleRef, Subject,
    RBAC_API_VERSION, RBAC_GROUP, WILDCARD,
};
