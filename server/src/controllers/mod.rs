//! In-process controllers that a control plane needs to keep its API promises.

pub mod crd;
pub mod definitions;
pub mod namespace;
pub mod rbac;
