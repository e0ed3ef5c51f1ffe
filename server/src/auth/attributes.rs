//! What an authorizer is asked (the request's attributes) and what it answers.

use crate::auth::UserInfo;

/// The attributes of one request, as upstream's `authorizer.Attributes`: borrowed from
/// the request scope, so building them costs nothing.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    /// Who is asking.
    pub user: &'a UserInfo,
    /// The API verb (`get`, `list`, `watch`, `create`, ...) or, for non-resource
    /// requests, the lower-cased HTTP method.
    pub verb: &'a str,
    /// Whether the request is for an API resource (else a non-resource path).
    pub resource_request: bool,
    /// The namespace, empty for cluster-scoped and all-namespace requests.
    pub namespace: &'a str,
    /// The API group (`""` for the core group).
    pub api_group: &'a str,
    /// The API version (RBAC ignores it).
    pub api_version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource, empty for none.
    pub subresource: &'a str,
    /// The object's name, empty when the request names none (list, create). The request
    /// info sets it for a list or watch with a `metadata.name` field selector, which is
    /// how `resourceNames` rules allow those.
    pub name: &'a str,
    /// The request path, for non-resource requests.
    pub path: &'a str,
}

impl<'a> Attributes<'a> {
    /// A resource request: `verb` on `resource` of `api_group`, cluster-wide and unnamed
    /// until [`in_namespace`](Self::in_namespace) / [`named`](Self::named) say otherwise.
    pub fn resource(
        user: &'a UserInfo,
        verb: &'a str,
        api_group: &'a str,
        resource: &'a str,
    ) -> Self {
        Attributes {
            user,
            verb,
            resource_request: true,
            namespace: "",
            api_group,
            api_version: "",
            resource,
            subresource: "",
            name: "",
            path: "",
        }
    }

    /// A non-resource request: `verb` on `path`.
    pub fn non_resource(user: &'a UserInfo, verb: &'a str, path: &'a str) -> Self {
        Attributes {
            user,
            verb,
            resource_request: false,
            namespace: "",
            api_group: "",
            api_version: "",
            resource: "",
            subresource: "",
            name: "",
            path,
        }
    }

    /// The same request in `namespace`.
    pub fn in_namespace(mut self, namespace: &'a str) -> Self {
        self.namespace = namespace;
        self
    }

    /// The same request on the object `name`.
    pub fn named(mut self, name: &'a str) -> Self {
        self.name = name;
        self
    }

    /// The same request on `subresource`.
    pub fn with_subresource(mut self, subresource: &'a str) -> Self {
        self.subresource = subresource;
        self
    }

    /// The same request at `api_version`.
    pub fn with_version(mut self, api_version: &'a str) -> Self {
        self.api_version = api_version;
        self
    }
}

/// An authorizer's answer, with its reason (shown in audit logs and
/// SubjectAccessReview status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The request is allowed.
    Allow(String),
    /// The request is denied; later authorizers are not asked.
    Deny(String),
    /// No opinion; the next authorizer decides (RBAC's only negative answer).
    NoOpinion(String),
    /// The authorizer could not decide (the parent API server of delegated
    /// authorization did not answer); a later authorizer may still decide, else the
    /// request fails with 500, as upstream answers an authorizer's error.
    Error(String),
}

impl Decision {
    /// Whether this is [`Decision::Allow`].
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The reason (may be empty).
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(r)
            | Decision::Deny(r)
            | Decision::NoOpinion(r)
            | Decision::Error(r) => r,
        }
    }
}
