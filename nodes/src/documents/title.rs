//! A document's title and body from an uploaded file: a Markdown file that opens with a
//! level-1 heading (`# Vendor Management Standard`, or the heading underlined with `===`)
//! is titled by it, and the heading leaves the body; any other file is titled by its file
//! name (without the extension, `_` and `-` read as spaces).

/// The title when neither the text nor the file name gives one.
const UNTITLED: &str = "Untitled";

/// The title and the body of an uploaded file named `file_name` holding `text`.
///
/// ```
/// use palgraph_nodes::documents::title_and_body;
///
/// let (title, body) = title_and_body("vendor.md", "# Vendor Management Standard\n\nEvery vendor is assessed.");
/// assert_eq!(title, "Vendor Management Standard");
/// assert_eq!(body, "Every vendor is assessed.");
///
/// let (title, body) = title_and_body("travel_expenses-2024.txt", "Receipts are kept.");
/// assert_eq!(title, "travel expenses 2024");
/// assert_eq!(body, "Receipts are kept.");
/// ```
pub fn title_and_body(file_name: &str, text: &str) -> (String, String) {
    let text = text.trim_start_matches('\u{feff}').trim();
    if let Some((title, body)) = heading(text) {
        if !title.is_empty() && !body.is_empty() {
            return (title, body);
        }
    }
    (title_from_file_name(file_name), text.to_string())
}

/// The level-1 heading the text opens with, and the rest of the text.
fn heading(text: &str) -> Option<(String, String)> {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let first = first.trim();
    if let Some(h) = first.strip_prefix("# ") {
        let title = h.trim().trim_end_matches('#').trim().to_string();
        return Some((title, rest.trim().to_string()));
    }
    let (second, after) = rest.split_once('\n').unwrap_or((rest, ""));
    let second = second.trim();
    if !first.is_empty() && second.len() >= 3 && second.chars().all(|c| c == '=') {
        return Some((first.to_string(), after.trim().to_string()));
    }
    None
}

/// "vendor_management-standard.md" -> "vendor management standard".
fn title_from_file_name(file_name: &str) -> String {
    let base = file_name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(file_name)
        .trim();
    let stem = match base.rsplit_once('.') {
        Some((stem, _)) => stem,
        None => base,
    };
    let title = stem
        .replace(['_', '-'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if title.is_empty() {
        UNTITLED.to_string()
    } else {
        title
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_heading_is_the_title_and_leaves_the_body() {
        let (t, b) = title_and_body(
            "vendor.md",
            "\u{feff}\n# Vendor Management Standard #\n\n## Scope\n\nAll vendors.",
        );
        assert_eq!(t, "Vendor Management Standard");
        assert_eq!(b, "## Scope\n\nAll vendors.");
    }

    #[test]
    fn an_underlined_heading_is_a_title_too() {
        let (t, b) = title_and_body(
            "memo.txt",
            "Clean Desk Memo\n===============\nLock laptops.",
        );
        assert_eq!(t, "Clean Desk Memo");
        assert_eq!(b, "Lock laptops.");
    }

    #[test]
    fn without_a_heading_the_file_name_titles_the_whole_text() {
        let (t, b) = title_and_body("dir/vendor_risk-policy.md", "## Scope\n\nAll vendors.");
        assert_eq!(t, "vendor risk policy");
        assert_eq!(b, "## Scope\n\nAll vendors.");
        assert_eq!(title_and_body(".md", "text").0, UNTITLED);
    }

    #[test]
    fn a_file_that_is_only_a_heading_keeps_it_as_its_body() {
        let (t, b) = title_and_body("note.md", "# Only a heading");
        assert_eq!(t, "note");
        assert_eq!(b, "# Only a heading");
    }
}
