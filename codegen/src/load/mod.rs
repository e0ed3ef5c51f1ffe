//! Loaders: one per definition format, each lowering to [`crate::model::ResourceDef`].

pub mod rust;
pub mod yaml;
