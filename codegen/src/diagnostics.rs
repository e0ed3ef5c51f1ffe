//! Diagnostics: each with a stable code ([`Code`], `E0001` ...), a position, the message,
//! notes and a `help:` line with the fix. [`Diagnostics::render`] draws them as rustc
//! does (the source line, a caret under the span); `Display` is the one-line form.

use std::fmt;

mod codes;
mod render;

pub use codes::Code;

/// A position in a definition file (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// One error in a definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind of mistake this is; `--explain` tells more.
    pub code: Code,
    pub location: Location,
    /// How many characters from `location` the caret underlines; 0: the word found there.
    /// (`u32` keeps a diagnostic small enough to be an `Err` by value.)
    pub width: u32,
    pub message: String,
    /// Context: why this is an error, or where the other half of a clash is.
    pub notes: Vec<String>,
    /// What to write instead, when we can tell.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error of kind `code` at `location`.
    pub fn new(code: Code, location: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            location,
            width: 0,
            message: message.into(),
            notes: Vec::new(),
            help: None,
        }
    }

    /// Adds a hint of what to write instead.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a note of context.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Underlines `width` characters (when the span's end is known).
    pub fn with_width(mut self, width: usize) -> Self {
        self.width = u32::try_from(width).unwrap_or(0);
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: error[{}]: {}",
            self.location, self.code, self.message
        )?;
        for note in &self.notes {
            write!(f, "\n  note: {note}")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// Every diagnostic of a run, sorted by position so output is stable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Records one diagnostic.
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sorted by file, line and column.
    pub fn sorted(mut self) -> Self {
        self.0.sort_by(|a, b| a.location.cmp(&b.location));
        self.0.dedup();
        self
    }

    /// The codes reported, each once, in order.
    pub fn codes(&self) -> Vec<Code> {
        let mut codes: Vec<Code> = self.0.iter().map(|d| d.code).collect();
        codes.sort();
        codes.dedup();
        codes
    }

    /// As rustc draws its errors: each with the source line and a caret under the span
    /// (`source` gives a file's text by path; without it, only the position), then the
    /// count and how to `--explain` a code.
    pub fn render(&self, source: &dyn Fn(&str) -> Option<String>) -> String {
        render::render(self, source)
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        write!(f, "{}", summary(self.0.len()))
    }
}

fn summary(n: usize) -> String {
    format!(
        "{n} error{} in definitions; nothing was written",
        if n == 1 { "" } else { "s" }
    )
}

/// The closest of `candidates` to `word`, if it is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(&word.to_lowercase(), &c.to_lowercase()), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_keys_only() {
        assert_eq!(
            suggest("shortname", &["shortNames", "plural"]),
            Some("shortNames")
        );
        assert_eq!(suggest("namespaced", &["group", "kind"]), None);
    }
}
