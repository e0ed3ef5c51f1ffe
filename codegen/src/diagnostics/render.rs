//! Diagnostics drawn as rustc draws its errors, with rustc's own renderer
//! (annotate-snippets): `error[E0002]: message`, ` --> file:line:col`, the source line
//! with a caret under the span, `= note:` and `= help:` lines.

use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};

use super::{summary, Diagnostic, Diagnostics};

pub(super) fn render(diags: &Diagnostics, source: &dyn Fn(&str) -> Option<String>) -> String {
    let renderer = Renderer::plain();
    let mut out = String::new();
    for d in &diags.0 {
        let text = source(&d.location.file);
        out.push_str(&renderer.render(&[group(d, text.as_deref())]));
        out.push_str("\n\n");
    }
    out.push_str(&format!("error: {}\n", summary(diags.0.len())));
    match diags.codes().as_slice() {
        [] => {}
        [one] => out.push_str(&format!(
            "For more information about this error, try `cargo run -p codegen -- --explain {one}`.\n"
        )),
        [first, ..] => {
            let all: Vec<&str> = diags.codes().iter().map(|c| c.as_str()).collect();
            out.push_str(&format!(
                "Some errors have detailed explanations: {}.\nFor more information about an error, try `cargo run -p codegen -- --explain {first}`.\n",
                all.join(", ")
            ));
        }
    }
    out
}

fn group<'a>(d: &'a Diagnostic, text: Option<&'a str>) -> Group<'a> {
    let title = Level::ERROR
        .primary_title(d.message.as_str())
        .id(d.code.as_str());
    let at = &d.location;
    let span = text.and_then(|t| span(t, at.line, at.column, d.width as usize).map(|s| (t, s)));
    let mut group = match span {
        Some((t, range)) => title.element(
            Snippet::source(t)
                .path(at.file.as_str())
                .annotation(AnnotationKind::Primary.span(range)),
        ),
        // No text (or a position that is a field path, line 0): just where.
        None => {
            let mut origin = Origin::path(at.file.as_str());
            if at.line > 0 {
                origin = origin
                    .line(at.line)
                    .char_column(at.column.saturating_sub(1));
            }
            title.element(origin)
        }
    };
    for note in &d.notes {
        group = group.element(Level::NOTE.message(note.as_str()));
    }
    if let Some(help) = &d.help {
        group = group.element(Level::HELP.message(help.as_str()));
    }
    group
}

/// The byte range of `width` characters at 1-based `line`:`column`; with width 0, the
/// word found there (a key, a scalar, a quoted string).
fn span(text: &str, line: usize, column: usize, width: usize) -> Option<std::ops::Range<usize>> {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.checked_sub(1)?)
        .map(str::len)
        .sum();
    let line_text = text[line_start..].lines().next().unwrap_or("");
    let start = line_start
        + line_text
            .char_indices()
            .nth(column.saturating_sub(1))
            .map(|(i, _)| i)
            .unwrap_or(line_text.len());
    let rest = &text[start..line_start + line_text.len()];
    let len = if width > 0 {
        rest.char_indices()
            .nth(width)
            .map(|(i, _)| i)
            .unwrap_or(rest.len())
    } else {
        word(rest)
    };
    Some(start..(start + len.max(1)).min(text.len()))
}

/// The length of the YAML token `rest` starts with.
fn word(rest: &str) -> usize {
    match rest.chars().next() {
        Some(q @ ('"' | '\'')) => rest[1..].find(q).map(|i| i + 2).unwrap_or(rest.len()),
        _ => rest
            .find(|c: char| c.is_whitespace() || ":,]}#".contains(c))
            .filter(|&i| i > 0)
            .unwrap_or_else(|| rest.trim_end().len().max(1).min(rest.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caret_covers_the_word_or_the_given_width() {
        let text = "group: example.dev\nkynd: Widget\nname: \"a b\"\n";
        assert_eq!(&text[span(text, 2, 1, 0).unwrap()], "kynd");
        assert_eq!(&text[span(text, 2, 7, 0).unwrap()], "Widget");
        assert_eq!(&text[span(text, 3, 7, 0).unwrap()], "\"a b\"");
        assert_eq!(&text[span(text, 1, 8, 7).unwrap()], "example");
    }
}
