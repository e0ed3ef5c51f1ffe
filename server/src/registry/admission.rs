//! Validating admission as the store sees it: checks a write must pass after the
//! object's own validation, made with what only the request knows (its user). RBAC's
//! privilege-escalation checks are the first; the admission chain of webhooks and
//! policies will plug in here too.

use serde_json::Value;

use crate::api::ApiError;
use crate::catalog::ApiResource;

/// One validating admission check, asked by the store for every create and update
/// (patches included) with the final object, before it is stored (dry runs too).
pub trait ValidatingAdmission: Send + Sync {
    /// `old` is the stored object on update, `None` on create; `name` is the name the
    /// request path gives (empty on create).
    fn validate(
        &self,
        res: &ApiResource,
        new: &Value,
        old: Option<&Value>,
        name: &str,
    ) -> Result<(), ApiError>;
}
