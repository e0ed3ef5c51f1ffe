//! `/metrics` as a test reads it: one scrape parsed into series, and waiting for a
//! watch to be registered (the condition tests wait for before making the changes a
//! watcher must see, instead of sleeping).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::raw_request;

/// One scrape: each series (name and sorted labels) with its value.
pub struct Scrape(BTreeMap<String, f64>);

impl Scrape {
    /// Parses Prometheus' text format.
    pub fn parse(text: &str) -> Scrape {
        let mut series = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (key, value) = line.rsplit_once(' ').expect("a sample line");
            let key = match key.split_once('{') {
                Some((name, labels)) => {
                    let labels = labels.strip_suffix('}').expect("closed labels");
                    let mut pairs: Vec<&str> = split_labels(labels);
                    pairs.sort();
                    format!("{name}{{{}}}", pairs.join(","))
                }
                None => key.to_string(),
            };
            series.insert(key, value.parse().expect("a number"));
        }
        Scrape(series)
    }

    /// Whether a series `name` without labels is there.
    pub fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The value of `name` with exactly `labels` (0 when the series is absent).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        pairs.sort();
        let key = if pairs.is_empty() {
            name.to_string()
        } else {
            format!("{name}{{{}}}", pairs.join(","))
        };
        self.0.get(&key).copied().unwrap_or(0.0)
    }
}

/// Splits `a="x",b="y"` at the commas between pairs (values here hold no quotes).
fn split_labels(labels: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, c) in labels.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&labels[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < labels.len() {
        out.push(&labels[start..]);
    }
    out
}

/// GETs `/metrics` through `client`, checks it is the text format, and parses it.
pub async fn scrape(client: &kube::Client) -> Scrape {
    let r = raw_request(client, "GET", "/metrics", None, Vec::new()).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{r:?}"
    );
    Scrape::parse(&r.text)
}

/// Waits until the server counts at least `at_least` registered watchers of `kind` in
/// `group`/`version` (`apiserver_registered_watchers`): a watch is registered once the
/// server delivers it every later change. Panics after 20 seconds.
pub async fn wait_for_watchers(
    client: &kube::Client,
    (group, version, kind): (&str, &str, &str),
    at_least: u32,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let watchers = scrape(client).await.value(
            "apiserver_registered_watchers",
            &[("group", group), ("version", version), ("kind", kind)],
        );
        if watchers >= f64::from(at_least) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{watchers} registered {kind} watchers, waiting for {at_least}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
