//! Load generator for the apiserver: drives the real binary over HTTPS the way
//! Kubernetes clients do (kubeconfig CA and bearer token; one multiplexed HTTP/2
//! connection as client-go, or an HTTP/1.1 pool) and reports throughput, latency
//! percentiles, error counts, resident memory and start-to-ready times as markdown
//! tables. `raw` is the engine baseline (durable redb transactions on the same disk);
//! `storage` measures the `Storage` trait of both backends next to their raw engines;
//! `crds` what CustomResourceDefinitions cost (install latency, memory, start-up, custom
//! objects next to ConfigMaps); `authz` what authorization costs (a RoleBinding's user
//! under RBAC next to AlwaysAllow); `admission` what a validating webhook and a
//! ValidatingAdmissionPolicy cost writes; `audit` what the audit log costs writes;
//! `consistent_reads` what consistent GETs cost on etcd, in etcd round trips and CPU;
//! `backend_ops` issue 20's figures per backend: creates, GETs, LISTs and updates on the
//! embedded store and on etcd, their CPU, etcd round trips and memory per object;
//! `soak` a long run of mixed traffic and 1,000 watchers, checked for memory growth and
//! for watchers that miss or repeat an event; `startup` start-to-ready and idle memory on
//! an empty data directory.
//!
//! The `loadgen` binary is the command-line front end; BENCHMARKS.md at the repository
//! root has the commands and the latest figures. Traffic only ever goes to loopback
//! addresses.

#![warn(missing_docs)]

pub mod admission;
pub mod audit;
pub mod authz;
pub mod backend_ops;
pub mod bench_etcd;
pub mod client;
pub mod consistent_reads;
pub mod crds;
pub mod kubeconfig;
pub mod metrics;
pub mod raw;
pub mod scenarios;
pub mod server;
pub mod soak;
pub mod startup;
pub mod storage;
pub mod suite;
