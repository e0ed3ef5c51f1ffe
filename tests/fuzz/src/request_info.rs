//! `request_info`: a request line, `METHOD /path?query`, through what every request meets
//! first: the request-info parser, the catalog lookup (404/405), and the typed options
//! of the verb it resolves to.

use std::rc::Rc;

use apiserver::api::options::{DeleteOptions, GetOptions, ListOptions, WriteKind, WriteOptions};
use apiserver::endpoints::request_info::RequestInfo;
use apiserver::endpoints::RequestScope;
use codegen::endpoints::Verb;

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((line, _)) = crate::header_and_rest(data) else {
        return;
    };
    let (method, target) = line.split_once(' ').unwrap_or(("GET", line));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let info = RequestInfo::parse(method, path, query);
    assert_eq!(info.path, path, "the request info keeps the path as sent");
    let fixture = crate::fixture::get();
    let scope = RequestScope::resolve(Rc::new(info), method, &fixture.catalog);
    crate::client_errors_only(&scope, line);
    let Ok(Some(scope)) = scope else {
        return;
    };
    let res = &scope.resource;
    match scope.verb {
        Verb::Get => crate::client_errors_only(&GetOptions::parse(query), line),
        Verb::List | Verb::Watch => {
            let watch = scope.verb == Verb::Watch;
            crate::client_errors_only(&ListOptions::parse(query, res, watch), line)
        }
        Verb::Create => {
            crate::client_errors_only(&WriteOptions::parse(query, WriteKind::Create), line)
        }
        Verb::Update => {
            crate::client_errors_only(&WriteOptions::parse(query, WriteKind::Update), line)
        }
        Verb::Patch => {
            crate::client_errors_only(&WriteOptions::parse(query, WriteKind::Patch), line)
        }
        Verb::Delete => crate::client_errors_only(&DeleteOptions::parse(query, b""), line),
        Verb::DeleteCollection => {
            crate::client_errors_only(&DeleteOptions::parse(query, b""), line);
            crate::client_errors_only(&ListOptions::parse(query, res, false), line);
        }
    }
}
