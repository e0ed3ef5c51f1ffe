//! The one place storage errors become API errors (handlers only ever see `ApiError`).

use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::storage::StorageError;

/// The one place storage errors become API errors.
pub fn map_err(res: &ApiResource, name: &str, e: StorageError) -> ApiError {
    match e {
        StorageError::NotFound(_) => ApiError::not_found(res, name),
        StorageError::AlreadyExists(_) => ApiError::already_exists(res, name),
        StorageError::Conflict { .. } => ApiError::conflict(res, name),
        StorageError::Expired { requested, oldest } => {
            ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
        }
        // A client's object (etcd refuses requests over --max-request-bytes), as
        // kube-apiserver answers it: 413.
        StorageError::TooLarge(msg) => ApiError::new(
            413,
            crate::api::status::StatusReason::RequestEntityTooLarge,
            format!("Request entity too large: {msg}"),
        ),
        StorageError::Internal(msg) => ApiError::internal(msg),
    }
}
