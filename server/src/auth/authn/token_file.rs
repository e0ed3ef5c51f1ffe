//! Static bearer tokens: `--token-auth-file` in kube-apiserver's CSV format
//! (`token,user,uid,"group1,group2"`, at least three columns), and the admin token the
//! server writes into its kubeconfig.

use std::collections::HashMap;
use std::path::Path;

use async_trait::async_trait;

use super::TokenAuthenticator;
use crate::auth::UserInfo;

/// Tokens and the users they stand for.
#[derive(Debug, Default)]
pub struct StaticTokens {
    users: HashMap<String, UserInfo>,
}

impl StaticTokens {
    /// Adds one token (a later duplicate of a token replaces nothing).
    pub fn insert(&mut self, token: String, user: UserInfo) {
        self.users.entry(token).or_insert(user);
    }

    /// Reads a token file; every malformed record is an error naming its line.
    pub fn load(path: &Path) -> Result<StaticTokens, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--token-auth-file {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("--token-auth-file {}: {e}", path.display()))
    }

    /// Parses the CSV text of a token file.
    pub fn parse(text: &str) -> Result<StaticTokens, String> {
        let mut tokens = StaticTokens::default();
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        for record in reader.records() {
            let record = record.map_err(|e| e.to_string())?;
            let line = record.position().map_or(0, |p| p.line());
            if record.iter().all(str::is_empty) {
                continue;
            }
            if record.len() < 3 {
                return Err(format!(
                    "line {line}: {} columns; a record has at least 3 (token, user name, user uid)",
                    record.len()
                ));
            }
            let (token, name, uid) = (&record[0], &record[1], &record[2]);
            if token.is_empty() || name.is_empty() {
                return Err(format!("line {line}: empty token or user name"));
            }
            if tokens.users.contains_key(token) {
                tracing::warn!(
                    line,
                    "duplicate token in --token-auth-file; the first is used"
                );
                continue;
            }
            let groups = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            tokens.insert(
                token.to_string(),
                UserInfo {
                    name: name.to_string(),
                    uid: uid.to_string(),
                    groups,
                    ..UserInfo::default()
                },
            );
        }
        Ok(tokens)
    }
}

#[async_trait]
impl TokenAuthenticator for StaticTokens {
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, String> {
        Ok(self.users.get(token).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_with_and_without_groups() {
        let tokens =
            StaticTokens::parse("t1,alice,u1,\"dev,ops\"\n\nt2, bob ,u2\nt1,mallory,u3,admins\n")
                .unwrap();
        assert_eq!(tokens.users["t1"].name, "alice");
        assert_eq!(tokens.users["t1"].groups, ["dev", "ops"]);
        assert_eq!(tokens.users["t2"].name, "bob");
        assert!(tokens.users["t2"].groups.is_empty());
    }

    #[test]
    fn short_records_and_empty_names_are_errors() {
        assert!(StaticTokens::parse("t1,alice\n")
            .unwrap_err()
            .contains("line 1"));
        assert!(StaticTokens::parse("t1,alice,u1\nt2,,u2\n")
            .unwrap_err()
            .contains("line 2"));
        assert!(StaticTokens::parse("t1,\"alice,u1\n").is_err());
    }
}
