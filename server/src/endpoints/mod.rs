//! REST endpoints: request decoding and response negotiation ([`negotiation`]), one
//! generic handler per verb ([`handlers`]), and Table output ([`table`]).

pub mod body;
pub mod duplicates;
pub mod handlers;
pub mod negotiation;
pub mod request_info;
pub mod scale;
pub mod table;
pub mod watch;

use std::rc::Rc;
use std::sync::Arc;

use codegen::endpoints::{PathKind, Subresource, Verb};

use crate::api::ApiError;
use crate::catalog::{ApiResource, Catalog};
use crate::registry::store::Target;
use crate::registry::Store;
use crate::storage::Storage;
use request_info::RequestInfo;

/// A resource request resolved against the catalog: the entry, the verb and the
/// subresource one generic handler serves.
#[derive(Clone, Debug)]
pub struct RequestScope {
    pub info: Rc<RequestInfo>,
    pub resource: Arc<ApiResource>,
    pub verb: Verb,
    pub subresource: Option<Subresource>,
}

impl RequestScope {
    /// Resolves a resource request against the catalog. `Ok(None)`: no entry serves it
    /// (the next link of the chain may); `Err`: the entry has no such path (404) or the
    /// path does not take this method (405).
    /// `method` is the request's HTTP method.
    pub fn resolve(
        info: Rc<RequestInfo>,
        method: &str,
        catalog: &Catalog,
    ) -> Result<Option<Self>, ApiError> {
        if !info.is_resource_request {
            return Ok(None);
        }
        let Some(resource) = catalog.get(&info.api_group, &info.api_version, &info.resource) else {
            return Ok(None);
        };
        let not_found = || ApiError::path_not_found(&info.path);
        let kind = info
            .path_kind(resource.namespaced(), |s| {
                Subresource::parse(&resource.def, s)
            })
            .ok_or_else(not_found)?;
        let endpoint = resource
            .endpoints
            .iter()
            .find(|e| e.kind == kind)
            .ok_or_else(not_found)?;
        let operation = endpoint
            .operations
            .iter()
            .find(|o| o.method.eq_ignore_ascii_case(method))
            .ok_or_else(ApiError::method_not_allowed)?;
        // A list path serves watches too (`?watch=true`), where the kind serves watch.
        let verb = match (operation.verb, info.resource_verb()) {
            (Verb::List, Some(Verb::Watch))
                if codegen::endpoints::serves(&resource.def, Verb::Watch) =>
            {
                Verb::Watch
            }
            (Verb::List, Some(Verb::Watch)) => return Err(ApiError::method_not_allowed()),
            (v, _) => v,
        };
        let subresource = match kind {
            PathKind::Subresource(s) => Some(s),
            _ => None,
        };
        Ok(Some(RequestScope {
            info,
            resource,
            verb,
            subresource,
        }))
    }

    /// The namespace objects live in: the path's, for a namespaced kind.
    pub fn namespace(&self) -> Option<&str> {
        self.info
            .namespace
            .as_deref()
            .filter(|_| self.info.in_namespace)
    }

    /// The object's name (empty on collection paths).
    pub fn name(&self) -> &str {
        self.info.name.as_deref().unwrap_or_default()
    }

    /// Which part of the object a write replaces.
    pub fn target(&self) -> Target {
        match self.subresource {
            Some(Subresource::Status) => Target::Status,
            Some(Subresource::Part(i)) => self
                .resource
                .parts
                .get(usize::from(i))
                .map_or(Target::Main, |p| Target::Part(*p)),
            _ => Target::Main,
        }
    }
}

/// What every handler needs: the catalog and the store.
pub struct ApiState {
    pub catalog: Arc<Catalog>,
    pub store: Store,
    /// The backend under the store, for health checks.
    pub storage: Arc<dyn Storage>,
    /// Set once the CRD controller has served every stored definition (a readiness check).
    pub crds_synced: Arc<std::sync::atomic::AtomicBool>,
    /// The post-start hooks and shutdown state `/healthz`, `/livez` and `/readyz` report.
    pub hooks: Arc<crate::server::health::Hooks>,
    /// The APIServices: which group-versions other servers serve, and what they said.
    pub aggregator: Arc<crate::aggregator::Aggregator>,
    /// Graceful shutdown's state: whether requests are still accepted, which are in
    /// flight; watches end when it stops accepting.
    pub lifecycle: Arc<crate::server::lifecycle::Lifecycle>,
}
