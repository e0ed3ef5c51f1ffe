//! Admission: what a write passes through after it is decoded and before it is stored,
//! as kube-apiserver's admission chain. A mutating phase may change the object (in the
//! order of the plugins), then the object is defaulted and checked by its kind's own
//! validation, then a validating phase may only refuse it. Every kind goes through it,
//! built-in or custom, and every subresource, for CREATE, UPDATE and DELETE.
//!
//! Plugins are chosen by `--enable-admission-plugins` / `--disable-admission-plugins`
//! ([`plugins`]); RBAC's escalation checks are not a plugin upstream (the RBAC storage
//! makes them) and always run, first in the validating phase.

pub mod matching;
pub mod namespaces;
pub mod plugins;
pub mod policy;
pub mod policy_status;
pub mod webhook;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use crate::api::ApiError;
use crate::auth::UserInfo;
use crate::catalog::ApiResource;

/// What a request does to an object, in admission's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// As AdmissionReview and webhook rules spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The kind of the options that go with it (`CreateOptions`, ...), as AdmissionReview
    /// names them.
    pub fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
            Operation::Connect => "ConnectOptions",
        }
    }
}

/// What a plugin is told about one write (upstream's `admission.Attributes`).
#[derive(Clone, Copy)]
pub struct Attributes<'a> {
    pub operation: Operation,
    pub resource: &'a ApiResource,
    /// The entry of the object's kind (the resource's own but for create-only
    /// subresources).
    pub kind: &'a ApiResource,
    /// `""` for the main resource, else `status`, `scale`, ...
    pub subresource: &'a str,
    pub namespace: Option<&'a str>,
    /// The object's name; on create it may still be empty (generateName).
    pub name: &'a str,
    /// The stored object on update and delete.
    pub old_object: Option<&'a Value>,
    pub user: &'a UserInfo,
    pub dry_run: bool,
    /// The field manager of the write (part of the options a webhook is sent).
    pub field_manager: &'a str,
    /// Where plugins leave warnings and audit annotations.
    pub outcome: &'a Outcome,
}

impl<'a> Attributes<'a> {
    /// The request as seen through `res`, a resource equivalent to the requested one
    /// (matchPolicy Equivalent), with the old object converted to `res`'s version.
    pub fn as_equivalent<'b>(
        &'b self,
        res: &'b ApiResource,
        old_object: Option<&'b Value>,
    ) -> Attributes<'b> {
        Attributes {
            resource: res,
            kind: res,
            old_object,
            ..*self
        }
    }

    /// Whether the object is of the resource's own kind (not a create-only
    /// subresource's body), so equivalent versions of the resource can stand in for it.
    pub fn has_equivalents(&self) -> bool {
        std::ptr::eq(self.kind, self.resource) && self.resource.converts()
    }
}

/// What admission adds to a response besides its decision: warnings for the client
/// (`Warning` headers) and annotations for the audit log.
#[derive(Default)]
pub struct Outcome {
    warnings: Mutex<Vec<String>>,
    annotations: Mutex<BTreeMap<String, String>>,
}

impl Outcome {
    /// Adds a warning, once however often it is given (a retried patch runs admission
    /// again).
    pub fn warn(&self, warning: String) {
        let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !w.contains(&warning) {
            w.push(warning);
        }
    }

    /// Records an audit annotation.
    pub fn annotate(&self, key: String, value: String) {
        self.annotations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, value);
    }

    /// The warnings so far, in the order given.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The audit annotations so far.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.annotations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A plugin of the mutating phase. `object` is the object being written (`None` on
/// delete, where only the old object exists).
#[async_trait]
pub trait MutatingPlugin: Send + Sync {
    async fn admit(&self, a: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError>;
}

/// A plugin of the validating phase: it sees the final object and may only refuse it.
#[async_trait]
pub trait ValidatingPlugin: Send + Sync {
    async fn validate(&self, a: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError>;
}

/// The selected plugins, each phase in upstream's order.
#[derive(Default)]
pub struct Chain {
    mutating: Vec<Arc<dyn MutatingPlugin>>,
    validating: Vec<Arc<dyn ValidatingPlugin>>,
}

impl Chain {
    /// A chain of these plugins, in the order given.
    pub fn new(
        mutating: Vec<Arc<dyn MutatingPlugin>>,
        validating: Vec<Arc<dyn ValidatingPlugin>>,
    ) -> Self {
        Chain {
            mutating,
            validating,
        }
    }
}

/// One request's admission: the chain, who asks, and what the plugins said.
pub struct RequestAdmission {
    chain: Arc<Chain>,
    user: Arc<UserInfo>,
    subresource: String,
    dry_run: bool,
    field_manager: String,
    outcome: Outcome,
}

impl std::fmt::Debug for RequestAdmission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestAdmission")
            .field("user", &self.user.name)
            .field("subresource", &self.subresource)
            .finish()
    }
}

/// Which object a write is about.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub resource: &'a ApiResource,
    /// The entry of the object's kind when it is not the resource's own (a create-only
    /// subresource such as `serviceaccounts/token`, whose body is a TokenRequest).
    pub kind: &'a ApiResource,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> Target<'a> {
    /// An object of `resource`'s own kind.
    pub fn new(resource: &'a ApiResource, namespace: Option<&'a str>, name: &'a str) -> Self {
        Target {
            resource,
            kind: resource,
            namespace,
            name,
        }
    }
}

impl RequestAdmission {
    /// Admission for the writes of one request by `user`.
    pub fn new(
        chain: Arc<Chain>,
        user: Arc<UserInfo>,
        subresource: &str,
        dry_run: bool,
        field_manager: &str,
    ) -> Self {
        RequestAdmission {
            chain,
            user,
            subresource: subresource.to_string(),
            dry_run,
            field_manager: field_manager.to_string(),
            outcome: Outcome::default(),
        }
    }

    /// Who makes the request.
    pub fn user(&self) -> &UserInfo {
        &self.user
    }

    fn attributes<'a>(
        &'a self,
        operation: Operation,
        target: Target<'a>,
        old_object: Option<&'a Value>,
    ) -> Attributes<'a> {
        Attributes {
            operation,
            resource: target.resource,
            kind: target.kind,
            subresource: &self.subresource,
            namespace: target.namespace,
            name: target.name,
            old_object,
            user: &self.user,
            dry_run: self.dry_run,
            field_manager: &self.field_manager,
            outcome: &self.outcome,
        }
    }

    /// The mutating phase.
    pub async fn admit(
        &self,
        operation: Operation,
        target: Target<'_>,
        mut object: Option<&mut Value>,
        old_object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let a = self.attributes(operation, target, old_object);
        for plugin in &self.chain.mutating {
            plugin.admit(&a, object.as_deref_mut()).await?;
        }
        Ok(())
    }

    /// The validating phase.
    pub async fn validate(
        &self,
        operation: Operation,
        target: Target<'_>,
        object: Option<&Value>,
        old_object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let a = self.attributes(operation, target, old_object);
        for plugin in &self.chain.validating {
            plugin.validate(&a, object).await?;
        }
        Ok(())
    }

    /// Both phases of a delete: plugins see the stored object as the old one.
    pub async fn delete(&self, target: Target<'_>, stored: &Value) -> Result<(), ApiError> {
        self.admit(Operation::Delete, target, None, Some(stored))
            .await?;
        self.validate(Operation::Delete, target, None, Some(stored))
            .await
    }

    /// What the plugins asked to tell the client and the audit log.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }
}
