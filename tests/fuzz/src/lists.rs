//! `lists`: reads of the fixture's ConfigMaps and other kinds with the query a client
//! sends: `<resource>?<query>` lists (limit, continue tokens, resourceVersion and its
//! match, selectors), `<resource>/<name>?<query>` gets one object. Options are parsed
//! and the revision checked as the handlers do, then the real store (watch cache and
//! storage history) answers; a list that continues is followed to its end.

use apiserver::api::options::{GetOptions, ListOptions, ReadAt};

use crate::fixture::{self, NAMESPACE};

/// Pages followed at most per input (the fixture's collections are small).
const MAX_PAGES: usize = 16;

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((line, _)) = crate::header_and_rest(data) else {
        return;
    };
    let (target, query) = line.split_once('?').unwrap_or((line, ""));
    let (resource, name) = match target.split_once('/') {
        Some((r, n)) => (r, Some(n)),
        None => (target, None),
    };
    let fixture = fixture::get();
    let res = fixture.resource(resource);
    let ns = res.namespaced().then_some(NAMESPACE);
    let store = &fixture.store;
    fixture.runtime.block_on(async {
        if let Some(name) = name {
            let opts = GetOptions::parse(query);
            crate::client_errors_only(&opts, line);
            let Ok(opts) = opts else { return };
            let checked = store.check_read_version(opts.at, false).await;
            crate::client_errors_only(&checked, line);
            if checked.is_ok() {
                crate::client_errors_only(&store.get_at(&res, ns, name, opts.at).await, line);
            }
            return;
        }
        let opts = ListOptions::parse(query, &res, false);
        crate::client_errors_only(&opts, line);
        let Ok(mut opts) = opts else { return };
        let checked = store.check_read_version(opts.at, true).await;
        crate::client_errors_only(&checked, line);
        if checked.is_err() {
            return;
        }
        for _ in 0..MAX_PAGES {
            let page = store.list(&res, ns, &opts).await;
            crate::client_errors_only(&page, line);
            let Ok(page) = page else { return };
            let Some(token) = page.continue_token else {
                return;
            };
            // The next request, as a client sends it: the token alone.
            opts.continue_token = Some(token);
            opts.at = ReadAt::Latest;
        }
    });
}
