//! The registry: one generic store ([`store::Store`]) for every resource, with per-kind
//! behaviour in [`strategy`] hooks and schema work in [`schema`] (pruning, defaulting) and
//! [`validator`] (validation, compiled once per schema).

pub mod apply;
pub mod autoscalers;
pub mod cacher;
pub mod cel;
pub mod certificates;
pub mod claims;
pub mod codec;
pub mod component_status;
pub mod config_data;
pub mod conversion_hooks;
pub mod events;
pub mod eviction;
pub mod feed;
pub mod go_json;
pub mod json_patch;
pub mod managed_fields;
pub mod nodes;
pub mod parts;
pub mod patch;
pub mod persistent_volumes;
pub mod pod_fields;
pub mod pod_spec;
pub mod pod_volumes;
pub mod printers;
pub mod propagation;
pub mod schema;
#[cfg(any(test, feature = "interpreted-validation"))]
pub mod schema_interpreter;
pub mod service_claims;
pub mod service_strategy;
pub mod services;
pub mod storage_errors;
pub mod store;
pub mod strategic_merge;
pub mod strategy;
pub mod validator;
pub mod versions;
pub mod virtual_kinds;
pub mod watcher;
pub mod workloads;

pub use store::Store;
