//! Markdown tables, the one format every report section writes (a leaf: the sections
//! import it, it imports nothing of theirs).

use std::fmt::Write as _;

pub(crate) fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|", header.join(" | "));
    for (i, _) in header.iter().enumerate() {
        s.push_str(if i == 0 { "---|" } else { "---:|" });
    }
    s.push('\n');
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | ").replace('\n', " "));
    }
    s
}
