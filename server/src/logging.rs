//! The process log: `tracing` events written to stderr as kube-apiserver's klog writes
//! them, in its `text` or `json` format (`--logging-format`), filtered by klog's
//! verbosity (`-v`) and per-module levels (`--vmodule`).
//!
//! Verbosity follows klog's conventions: errors, warnings and `info` events always
//! show; `-v=2` adds this server's `debug` events (steady-state detail, as upstream logs
//! at V(2)); `-v=3` adds the access log (one `HTTP` line per request, upstream's httplog
//! level); `-v=5` adds `trace`; `-v=6` and above add the libraries' own debug output.
//! `RUST_LOG`, when set, replaces all of this (for developers).

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The target of the access log ([`crate::filters::log_requests`]); shown from `-v=3`.
pub const ACCESS_LOG_TARGET: &str = "httplog";

/// klog's verbosity of the access log.
const ACCESS_LOG_VERBOSITY: u32 = 3;

/// The log formats of `--logging-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// klog's text lines: `I0102 15:04:05.000000   pid file:line] message key="value"`.
    Text,
    /// One JSON object per line with klog's field names: `ts`, `caller`, `msg`, `v`.
    Json,
}

impl LogFormat {
    /// The names `--logging-format` accepts.
    pub const NAMES: [&'static str; 2] = ["text", "json"];

    /// The format named `name`.
    pub fn parse(name: &str) -> Result<LogFormat, String> {
        match name {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "--logging-format {other:?}: unknown format; supported: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// One `--vmodule` entry: a module of this server and its verbosity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleLevel {
    /// A module path under the crate (`registry::store`), or `httplog`.
    pub module: String,
    pub verbosity: u32,
}

/// Parses `--vmodule` (`module=N,...`); every bad entry is reported.
pub fn parse_vmodule(text: &str) -> Result<Vec<ModuleLevel>, Vec<String>> {
    let mut levels = Vec::new();
    let mut errors = Vec::new();
    for entry in text.split(',').filter(|e| !e.is_empty()) {
        let parsed = entry.split_once('=').and_then(|(module, n)| {
            let valid = !module.is_empty()
                && module.split("::").all(|p| {
                    !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            Some(ModuleLevel {
                module: module.to_string(),
                verbosity: n.parse().ok()?,
            })
            .filter(|_| valid)
        });
        match parsed {
            Some(level) => levels.push(level),
            None => errors.push(format!(
                "--vmodule {entry:?}: expected <module>=<level>, a module of this server \
                 such as registry::store=4 (Go file patterns do not apply here)"
            )),
        }
    }
    if errors.is_empty() {
        Ok(levels)
    } else {
        Err(errors)
    }
}

/// The `tracing` level that shows klog verbosity `v`.
fn level_for(v: u32) -> &'static str {
    match v {
        0 | 1 => "info",
        2..=4 => "debug",
        _ => "trace",
    }
}

/// The filter directives for `-v=verbosity` and `--vmodule`, in `RUST_LOG` syntax.
pub fn directives(verbosity: u32, modules: &[ModuleLevel]) -> String {
    let mut out = String::from(if verbosity >= 6 { "debug" } else { "info" });
    let crate_name = env!("CARGO_CRATE_NAME");
    if verbosity >= 2 {
        let _ = write!(out, ",{crate_name}={}", level_for(verbosity));
    }
    if verbosity >= ACCESS_LOG_VERBOSITY {
        let _ = write!(out, ",{ACCESS_LOG_TARGET}=debug");
    }
    for m in modules {
        let level = level_for(m.verbosity);
        if m.module == ACCESS_LOG_TARGET {
            let level = if m.verbosity >= ACCESS_LOG_VERBOSITY {
                "debug"
            } else {
                "info"
            };
            let _ = write!(out, ",{ACCESS_LOG_TARGET}={level}");
        } else {
            let _ = write!(out, ",{crate_name}::{}={level}", m.module);
        }
    }
    out
}

/// Installs the process-wide subscriber (once; later calls do nothing).
pub fn init(format: LogFormat, verbosity: u32, modules: &[ModuleLevel]) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(directives(verbosity, modules)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(Klog { format })
        .try_init();
}

/// klog's verbosity of an event: what `-v` had to be for it to show.
fn verbosity_of(meta: &Metadata<'_>) -> u32 {
    if meta.target() == ACCESS_LOG_TARGET {
        return ACCESS_LOG_VERBOSITY;
    }
    match *meta.level() {
        Level::ERROR | Level::WARN | Level::INFO => 0,
        Level::DEBUG => 2,
        Level::TRACE => 5,
    }
}

/// The file and line an event comes from, relative to the crate's `src/`.
fn caller(meta: &Metadata<'_>) -> String {
    let file = meta.file().unwrap_or("?");
    let file = file.rsplit_once("src/").map_or(file, |(_, f)| f);
    format!("{file}:{}", meta.line().unwrap_or(0))
}

/// An event's fields, in the order they were written.
#[derive(Default)]
struct Fields {
    message: String,
    pairs: Vec<(&'static str, FieldValue)>,
}

enum FieldValue {
    Text(String),
    Number(String),
    Bool(bool),
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.pairs
                .push((field.name(), FieldValue::Text(value.to_string())));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.pairs
            .push((field.name(), FieldValue::Number(value.to_string())));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.pairs
            .push((field.name(), FieldValue::Number(value.to_string())));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        let number = if value.is_finite() {
            value.to_string()
        } else {
            "null".to_string()
        };
        self.pairs.push((field.name(), FieldValue::Number(number)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.pairs.push((field.name(), FieldValue::Bool(value)));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.pairs.push((field.name(), FieldValue::Text(text)));
        }
    }
}

/// The klog line format of one event.
struct Klog {
    format: LogFormat,
}

impl<S, N> FormatEvent<S, N> for Klog
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let line = match self.format {
            LogFormat::Text => text_line(meta, &fields),
            LogFormat::Json => json_line(meta, &fields),
        };
        writeln!(writer, "{line}")
    }
}

/// `I0102 15:04:05.123456   12345 filters/mod.rs:42] message key="value" n=1`.
fn text_line(meta: &Metadata<'_>, fields: &Fields) -> String {
    let severity = match *meta.level() {
        Level::ERROR => 'E',
        Level::WARN => 'W',
        _ => 'I',
    };
    let now = chrono::Local::now();
    let mut line = format!(
        "{severity}{} {:>7} {}] {}",
        now.format("%m%d %H:%M:%S%.6f"),
        std::process::id(),
        caller(meta),
        fields.message
    );
    for (key, value) in &fields.pairs {
        let _ = match value {
            FieldValue::Text(s) => write!(line, " {key}={s:?}"),
            FieldValue::Number(n) => write!(line, " {key}={n}"),
            FieldValue::Bool(b) => write!(line, " {key}={b}"),
        };
    }
    line
}

/// `{"ts":1700000000.123456,"caller":"filters/mod.rs:42","msg":"...","v":0,"key":"value"}`;
/// errors carry no `v`, as klog's JSON logger writes them.
fn json_line(meta: &Metadata<'_>, fields: &Fields) -> String {
    let now = chrono::Utc::now();
    let ts = now.timestamp() as f64 + f64::from(now.timestamp_subsec_micros()) / 1e6;
    let mut object = serde_json::Map::new();
    object.insert("ts".into(), serde_json::json!(ts));
    object.insert("caller".into(), caller(meta).into());
    object.insert("msg".into(), fields.message.clone().into());
    if *meta.level() != Level::ERROR {
        object.insert("v".into(), verbosity_of(meta).into());
    }
    for (key, value) in &fields.pairs {
        let value = match value {
            FieldValue::Text(s) => serde_json::Value::String(s.clone()),
            FieldValue::Number(n) => serde_json::from_str(n).unwrap_or(serde_json::Value::Null),
            FieldValue::Bool(b) => serde_json::Value::Bool(*b),
        };
        object.insert((*key).to_string(), value);
    }
    serde_json::Value::Object(object).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_maps_onto_filter_directives() {
        assert_eq!(directives(0, &[]), "info");
        assert_eq!(directives(2, &[]), "info,apiserver=debug");
        assert_eq!(directives(3, &[]), "info,apiserver=debug,httplog=debug");
        assert_eq!(directives(6, &[]), "debug,apiserver=trace,httplog=debug");
        let modules = parse_vmodule("registry::store=5,httplog=3").unwrap();
        assert_eq!(
            directives(0, &modules),
            "info,apiserver::registry::store=trace,httplog=debug"
        );
    }

    #[test]
    fn bad_vmodule_entries_are_all_reported() {
        let errors = parse_vmodule("store=x,=2,*.go=3,ok=1").unwrap_err();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("\"store=x\""));
    }

    #[test]
    fn logging_formats_are_named_as_upstream() {
        assert_eq!(LogFormat::parse("json"), Ok(LogFormat::Json));
        assert_eq!(LogFormat::parse("text"), Ok(LogFormat::Text));
        assert!(LogFormat::parse("xml")
            .unwrap_err()
            .contains("supported: text, json"));
    }
}
