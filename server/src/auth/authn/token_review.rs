//! Delegated token authentication (`--authentication-kubeconfig`): a bearer token this
//! server does not know is sent to the parent API server as an
//! authentication.k8s.io/v1 TokenReview, and the parent's answer is cached for
//! `--authentication-token-webhook-cache-ttl`, as upstream's webhook token authenticator.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::TokenAuthenticator;
use crate::auth::cache::TtlCache;
use crate::auth::parent::Parent;
use crate::auth::UserInfo;

/// Where TokenReviews are created on the parent.
const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
/// The most answers kept.
const CACHE_SIZE: usize = 8192;

/// The parent's verdict on one token: its user, or why it is not valid (`None`: the
/// parent does not know it).
type Verdict = Result<UserInfo, Option<String>>;

/// Tokens reviewed by the parent.
pub struct TokenReviewAuthenticator {
    parent: Arc<Parent>,
    ttl: Duration,
    /// Verdicts by the SHA-256 of the token (the tokens themselves are not kept).
    cache: TtlCache<[u8; 32], Verdict>,
}

impl TokenReviewAuthenticator {
    /// Asks `parent`, keeping each answer for `ttl`.
    pub fn new(parent: Arc<Parent>, ttl: Duration) -> Self {
        TokenReviewAuthenticator {
            parent,
            ttl,
            cache: TtlCache::new(CACHE_SIZE),
        }
    }

    async fn review(&self, token: &str) -> Result<Verdict, String> {
        let review = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": { "token": token },
        });
        let answer = self
            .parent
            .post(TOKEN_REVIEWS, &review)
            .await
            .map_err(|e| format!("the parent's TokenReview failed: {e}"))?;
        Ok(verdict(&answer["status"]))
    }
}

/// What a TokenReview's status says.
fn verdict(status: &Value) -> Verdict {
    if status["authenticated"].as_bool() != Some(true) {
        let error = status["error"].as_str().filter(|e| !e.is_empty());
        return Err(error.map(str::to_string));
    }
    let user = &status["user"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let extra: BTreeMap<String, Vec<String>> = user["extra"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
        .unwrap_or_default();
    Ok(UserInfo {
        name: user["username"].as_str().unwrap_or_default().to_string(),
        uid: user["uid"].as_str().unwrap_or_default().to_string(),
        groups: strings(&user["groups"]),
        extra,
    })
}

#[async_trait]
impl TokenAuthenticator for TokenReviewAuthenticator {
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, String> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let verdict = match self.cache.get(&key, Instant::now()) {
            Some(cached) => cached,
            None => {
                // A parent that cannot be asked is not cached: the next request asks again.
                let fresh = self.review(token).await?;
                self.cache
                    .insert(key, fresh.clone(), self.ttl, Instant::now());
                fresh
            }
        };
        match verdict {
            Ok(user) => Ok(Some(user)),
            Err(Some(error)) => Err(error),
            Err(None) => Ok(None),
        }
    }

    /// Audience-bound reviews (TokenReview on this server) are not delegated: the
    /// parent answers for its own audiences.
    async fn authenticate_for(
        &self,
        _token: &str,
        _wanted: &[String],
        _api: &[String],
    ) -> Result<Option<(UserInfo, Vec<String>)>, String> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authenticated_review_names_the_user() {
        let status = json!({
            "authenticated": true,
            "user": {"username": "alice", "uid": "42", "groups": ["devs", "system:authenticated"],
                     "extra": {"scopes": ["read"]}},
        });
        let user = verdict(&status).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "42");
        assert_eq!(user.groups, ["devs", "system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["read"]);
    }

    #[test]
    fn an_unauthenticated_review_carries_its_error_if_any() {
        let refused = json!({"authenticated": false, "error": "token expired"});
        assert_eq!(verdict(&refused), Err(Some("token expired".into())));
        assert_eq!(verdict(&json!({"authenticated": false})), Err(None));
        assert_eq!(verdict(&json!({})), Err(None));
    }
}
