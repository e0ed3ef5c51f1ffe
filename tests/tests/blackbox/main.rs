//! Every black-box suite in one test binary: one link of the server's and kube's crates
//! instead of one per suite, which was most of the test command's build time. Each module
//! is one area, as the files were when each was its own binary; run one with
//! `cargo test -p apiserver-tests --test blackbox <module>::`.
//! (`add_resource.rs` stays a binary of its own: it points `APISERVER_BIN` at a rebuilt
//! server, which would leak into every other suite here.)

mod admission_policies;
mod admission_webhooks;
mod aggregated_auth;
mod aggregation;
mod apply;
mod audit;
mod authentication;
mod bad_input;
mod builtin_controllers;
mod builtin_kinds;
mod builtin_subresources;
mod builtin_tables;
mod builtin_validation;
mod builtin_workloads;
mod command_line;
mod config_data;
mod crash;
mod crd;
mod crd_clients;
mod crd_conversion;
mod discovery;
mod encryption;
mod etcd;
mod events;
mod garbage_collection;
mod harness;
mod hostile_input;
mod instance_services;
mod instances;
mod kube_client;
mod kubectl;
mod live_catalog;
mod operations;
mod rbac;
mod restart;
mod semantics_deletion;
mod semantics_encodings;
mod semantics_lists;
mod semantics_metadata;
mod semantics_request_options;
mod semantics_subresources;
mod semantics_updates;
mod semantics_watch;
mod server_bugs;
mod service_accounts;
mod services;
mod serving_limits;
mod shutdown;
mod stored;
mod typed_client;
mod versions;
mod watch;
