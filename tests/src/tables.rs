//! kubectl's table output (`kubectl get` without `-o`), read cell by cell.

/// The whitespace-separated cells of the row whose first cell is `name`.
///
/// # Panics
///
/// When there is no such row; the message has the table.
pub fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{table}"))
}

/// The column names: the cells of the first line.
pub fn header(table: &str) -> Vec<&str> {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect()
}

/// The column names, multi-word ones (`LAST SCHEDULE`, `CREATED AT`) kept whole.
pub fn column_names(table: &str) -> Vec<String> {
    column_starts(table)
        .into_iter()
        .map(|(_, name)| name)
        .collect()
}

/// Each header column's start offset and name: kubectl separates columns by at least
/// three spaces, words within a name by one.
fn column_starts(table: &str) -> Vec<(usize, String)> {
    let line = table.lines().next().unwrap_or_default();
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut start = None;
    let mut spaces = 0;
    for (i, ch) in line.char_indices() {
        if ch == ' ' {
            spaces += 1;
            continue;
        }
        if start.is_none() || spaces >= 2 {
            if let Some(s) = start {
                out.push((s, line[s..i].trim().to_string()));
            }
            start = Some(i);
        }
        spaces = 0;
    }
    if let Some(s) = start {
        out.push((s, line[s..].trim().to_string()));
    }
    out
}

/// The cells of the row named `name`, cut at the header's column offsets (so empty
/// cells keep their place).
///
/// # Panics
///
/// When there is no such row; the message has the table.
pub fn cells(table: &str, name: &str) -> Vec<String> {
    let line = table
        .lines()
        .skip(1)
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{table}"));
    cut(table, line)
}

/// Every row's cells, cut at the header's column offsets (tables whose first column is
/// not the name: events).
pub fn rows(table: &str) -> Vec<Vec<String>> {
    table.lines().skip(1).map(|l| cut(table, l)).collect()
}

/// `line` cut at the header's column offsets.
fn cut(table: &str, line: &str) -> Vec<String> {
    let cols = column_starts(table);
    cols.iter()
        .enumerate()
        .map(|(i, (start, _))| {
            let end = cols
                .get(i + 1)
                .map_or(line.len(), |(s, _)| *s)
                .min(line.len());
            line.get(*start..end).unwrap_or_default().trim().to_string()
        })
        .collect()
}
