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
