//! A Kubernetes-compatible API server. Resource-specific code is generated from
//! `api-defs/` by `cargo run -p codegen` into [`generated`]; everything else here is the
//! generic machinery that serves it.
//!
//! Start-up (see [`server::run`]) mirrors kube-apiserver: resource registration (the
//! generated catalog) → flag parsing ([`options`]) → generic config → the three servers
//! chained by delegation (aggregator → built-in resources → custom resources → 404) →
//! HTTPS serving.

pub mod admission;
pub mod aggregator;
pub mod api;
pub mod apiextensions;
pub mod audit;
pub mod auth;
pub mod catalog;
pub mod controllers;
pub mod discovery;
pub mod docs;
pub mod endpoints;
pub mod feature_gates;
pub mod filters;
#[rustfmt::skip]
pub mod generated;
pub mod logging;
pub mod metrics;
pub mod migrate;
pub mod openapi;
pub mod openapi_v2_pb;
pub mod options;
pub mod panics;
pub mod protobuf;
pub mod registry;
pub mod scratch;
pub mod server;
pub mod storage;
pub mod upstream_flags;
pub mod webhook;
