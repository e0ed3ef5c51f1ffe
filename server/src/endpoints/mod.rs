//! REST endpoints: request decoding and response negotiation ([`negotiation`]), one
//! generic handler per verb ([`handlers`]), and Table output ([`table`]).

pub mod duplicates;
pub mod handlers;
pub mod negotiation;
pub mod scale;
pub mod table;
pub mod watch;

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::registry::Store;
use crate::storage::Storage;

/// Which resource (and subresource) a generated route serves; attached to each route as
/// app data so one generic handler serves every resource.
#[derive(Clone, Copy, Debug)]
pub struct ResourceRoute {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub subresource: Option<&'static str>,
}

impl ResourceRoute {
    /// The main resource.
    pub const fn new(group: &'static str, version: &'static str, plural: &'static str) -> Self {
        ResourceRoute {
            group,
            version,
            plural,
            subresource: None,
        }
    }

    /// A subresource such as `status`.
    pub const fn subresource(
        group: &'static str,
        version: &'static str,
        plural: &'static str,
        sub: &'static str,
    ) -> Self {
        ResourceRoute {
            group,
            version,
            plural,
            subresource: Some(sub),
        }
    }
}

/// What every handler needs: the catalog and the store.
pub struct ApiState {
    pub catalog: Arc<Catalog>,
    pub store: Store,
    /// The backend under the store, for health checks.
    pub storage: Arc<dyn Storage>,
}
