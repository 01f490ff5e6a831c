//! A document's outline: its sections (Markdown headings, "1. PURPOSE", "Section 4 —
//! Approvals", underlined or all-capitals lines) and its clauses (numbered "4.2" or
//! "4.2.1", lettered "(a)" under the clause before, list items, table rows (Markdown's, or
//! cells between tabs) read with their column headings, paragraphs). A clause is what an answer quotes and cites; its number
//! and its section's heading say where it is ("§4.2 Approvals").

use crate::text::{squash, strip_list_marker};

/// A section of a document.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Section {
    /// Its number as written ("4", "4.2"), when it has one.
    pub(crate) number: Option<String>,
    /// Its heading, without the number.
    pub(crate) heading: String,
}

/// A clause: a numbered paragraph, a list item, a table row or a paragraph.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Clause {
    /// Its number ("4.2", "4.2(a)"), when the document numbers it.
    pub(crate) number: Option<String>,
    /// The section it is in (an index into the outline's sections), if any.
    pub(crate) section: Option<usize>,
    /// Its text, whitespace folded, without its number or list marker (a table row: its
    /// cells as written, between ` | `).
    pub(crate) text: String,
    /// What it continues: a table row's header row, or the sentence a list item completes
    /// ("The following caps apply per night:").
    pub(crate) lead: Option<String>,
}

/// The text a clause means, to read it (not to quote it): a table row as "heading: cell"
/// pairs ("City: London, Cap per night: GBP 200"), a list item after its lead sentence.
pub(crate) fn meaning(text: &str, lead: Option<&str>) -> String {
    match lead {
        Some(head) if head.contains(" | ") && text.contains(" | ") => {
            let heads: Vec<&str> = head.split(" | ").collect();
            text.split(" | ")
                .enumerate()
                .map(|(i, cell)| match heads.get(i).filter(|h| !h.is_empty()) {
                    Some(h) => format!("{h}: {cell}"),
                    None => cell.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
        Some(lead) => format!("{} {text}", lead.trim_end_matches(':')),
        None => text.to_string(),
    }
}

/// A document's sections and clauses, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Outline {
    pub(crate) sections: Vec<Section>,
    pub(crate) clauses: Vec<Clause>,
}

impl Outline {
    /// Where clause `i` is: "§4.2" (its number, else its section's), with the section's
    /// heading ("§4.2 Approvals", "Retention periods"); `None` when neither is known.
    pub(crate) fn place(&self, i: usize) -> Option<String> {
        let c = self.clauses.get(i)?;
        let section = c.section.and_then(|s| self.sections.get(s));
        let number = c
            .number
            .clone()
            .or_else(|| section.and_then(|s| s.number.clone()));
        match (
            number,
            section
                .map(|s| s.heading.as_str())
                .filter(|h| !h.is_empty()),
        ) {
            (Some(n), Some(h)) => Some(format!("§{n} {h}")),
            (Some(n), None) => Some(format!("§{n}")),
            (None, Some(h)) => Some(h.to_string()),
            (None, None) => None,
        }
    }

    /// The heading of clause `i`'s section, if any.
    pub(crate) fn heading(&self, i: usize) -> Option<&str> {
        let s = self.clauses.get(i)?.section?;
        self.sections.get(s).map(|s| s.heading.as_str())
    }
}

/// Paragraphs longer than this are cut into clauses of whole sentences.
const LONG_PARAGRAPH: usize = 700;
/// The size of those pieces.
const PIECE: usize = 400;
/// A line longer than this is not a heading.
const HEADING_MAX_CHARS: usize = 90;

/// A clause number at the start of a line ("4.2", "4.2.1.", "12.1"), and the rest.
fn clause_number(line: &str) -> Option<(String, &str)> {
    let end = line
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(line.len(), |(i, _)| i);
    let num = &line[..end];
    let rest = &line[end..];
    let trimmed = num.trim_end_matches('.');
    let parts: Vec<&str> = trimmed.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty() || p.len() > 3) {
        return None;
    }
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some((trimmed.to_string(), rest.trim_start()))
}

/// A letter or roman sub-clause marker at the start of a line ("(a)", "a)", "(iv)").
fn sub_clause(line: &str) -> Option<(String, &str)> {
    let (inner, rest) = if let Some(r) = line.strip_prefix('(') {
        let close = r.find(')')?;
        (&r[..close], &r[close + 1..])
    } else {
        let close = line.find(')')?;
        (&line[..close], &line[close + 1..])
    };
    let letter = inner.len() == 1 && inner.chars().all(|c| c.is_ascii_lowercase());
    let roman = !inner.is_empty()
        && inner.len() <= 4
        && inner.chars().all(|c| matches!(c, 'i' | 'v' | 'x'));
    if !(letter || roman) || !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some((format!("({inner})"), rest.trim_start()))
}

/// A section heading: its number (if any) and text.
fn heading(line: &str, next: Option<&str>) -> Option<(Option<String>, String)> {
    let t = line.trim();
    if let Some(h) = t.strip_prefix('#') {
        let h = h
            .trim_start_matches('#')
            .trim()
            .trim_end_matches('#')
            .trim();
        return Some(split_number(h));
    }
    // A whole line in bold: "**4. Approvals**".
    if let Some(h) = t.strip_prefix("**").and_then(|h| h.strip_suffix("**")) {
        if !h.contains("**") && h.len() <= HEADING_MAX_CHARS {
            return Some(split_number(h.trim().trim_end_matches(':')));
        }
    }
    // Underlined with === or ---.
    if let Some(n) = next.map(str::trim) {
        if n.len() >= 3
            && (n.chars().all(|c| c == '=') || n.chars().all(|c| c == '-'))
            && !t.is_empty()
        {
            return Some(split_number(t));
        }
    }
    if t.len() > HEADING_MAX_CHARS
        || t.ends_with(['.', ';', ',', ':']) && !t.ends_with("..") && t.len() > 3 && !is_caps(t)
    {
        return None;
    }
    let lower = t.to_lowercase();
    // "Section 4 — Approvals", "Part 2: Scope", "Chapter 3".
    for word in ["section ", "part ", "chapter ", "article "] {
        if let Some(rest) = lower.strip_prefix(word) {
            let digits: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            if !digits.is_empty() {
                let after = t[word.len() + digits.len()..]
                    .trim_start_matches([' ', ':', '—', '–', '-', '.'])
                    .trim();
                return Some((
                    Some(digits.trim_end_matches('.').to_string()),
                    after.to_string(),
                ));
            }
        }
    }
    // "1. PURPOSE", "4. Approvals and sign-off" (a short line, no sentence).
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    if !digits.is_empty() && digits.len() <= 2 {
        let rest = &t[digits.len()..];
        let rest = rest.strip_prefix('.').unwrap_or(rest);
        if rest.starts_with(' ') {
            let text = rest.trim();
            let words = text.split_whitespace().count();
            let title_like = is_caps(text)
                || (words <= 7
                    && !text.ends_with('.')
                    && text.chars().next().is_some_and(char::is_uppercase)
                    && !has_verb_signs(text));
            if title_like && !text.is_empty() {
                return Some((Some(digits), text.to_string()));
            }
        }
        return None;
    }
    // An all-capitals line: "DEFINITIONS".
    if is_caps(t)
        && t.split_whitespace().count() <= 8
        && t.chars().filter(|c| c.is_alphabetic()).count() >= 4
    {
        return Some(split_number(t));
    }
    None
}

/// Whether a line reads as a title: a few words, the first capitalised, no sentence end, no
/// verb of a rule, no figure or label ("Version 2.0", "Owner: CFO" are header lines).
fn is_title(line: &str) -> bool {
    let t = line.trim();
    let words = t.split_whitespace().count();
    (1..=6).contains(&words)
        && t.chars().next().is_some_and(char::is_uppercase)
        && !t.ends_with(['.', ';', ',', ':', '?', '!'])
        && !has_verb_signs(t)
        && !t.contains(['|', ':'])
        && !t.chars().any(|c| c.is_ascii_digit())
}

/// Words that show a short numbered line is a rule, not a heading.
fn has_verb_signs(text: &str) -> bool {
    let lower = format!(" {} ", text.to_lowercase());
    [
        " must ", " shall ", " may ", " is ", " are ", " will ", " should ",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

fn is_caps(t: &str) -> bool {
    let letters: Vec<char> = t.chars().filter(|c| c.is_alphabetic()).collect();
    letters.len() >= 3 && letters.iter().all(|c| c.is_uppercase())
}

/// "4. Approvals" -> (Some("4"), "Approvals"); "Approvals" -> (None, "Approvals").
fn split_number(h: &str) -> (Option<String>, String) {
    let digits: String = h
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    if !digits.is_empty() && digits.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        let rest = h[digits.len()..]
            .trim_start_matches([' ', ':', '—', '–', '-', ')'])
            .trim();
        if !rest.is_empty() {
            return (
                Some(digits.trim_end_matches('.').to_string()),
                rest.to_string(),
            );
        }
    }
    (None, h.to_string())
}

/// The cells of a table row (`| a | b |`), or `None` when the line is not one; a separator
/// row (`|---|---|`) has no cells.
fn table_cells(line: &str) -> Option<Vec<String>> {
    let t = line.trim();
    // A row copied out of a word processor: its cells between tabs.
    if !t.starts_with('|') && t.contains('\t') {
        let cells: Vec<String> = t
            .split('\t')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect();
        return (cells.len() >= 2).then_some(cells);
    }
    if !(t.starts_with('|') && t.len() > 1) {
        return None;
    }
    let inner = t.trim_start_matches('|').trim_end_matches('|');
    let cells: Vec<String> = inner.split('|').map(|c| c.trim().to_string()).collect();
    if cells
        .iter()
        .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
    {
        return Some(Vec::new());
    }
    Some(cells)
}

/// Reads a document's outline.
pub(crate) fn read(content: &str) -> Outline {
    let mut out = Outline::default();
    let lines: Vec<&str> = content.lines().collect();
    let mut section: Option<usize> = None;
    let mut paragraph: Vec<&str> = Vec::new();
    let mut paragraph_number: Option<String> = None;
    let mut last_number: Option<String> = None;
    let mut table_head: Option<Vec<String>> = None;
    let mut skip_next = false;
    // Whether the paragraph being read is a list item or a lettered sub-clause.
    let mut in_item = false;

    // A list item or a lettered sub-clause completes the clause it follows when that clause
    // leads into a list ("... caps apply per night:"): `item` says the paragraph is one.
    let flush = |out: &mut Outline,
                 paragraph: &mut Vec<&str>,
                 number: &mut Option<String>,
                 section: Option<usize>,
                 item: bool| {
        if paragraph.is_empty() {
            return;
        }
        let text = squash(&paragraph.join(" "));
        paragraph.clear();
        let number = number.take();
        let lead = if item {
            out.clauses
                .iter()
                .rev()
                .find(|c| c.lead.is_none())
                .filter(|c| c.section == section && c.text.trim_end().ends_with(':'))
                .and_then(|c| crate::text::sentences(&c.text).last().cloned())
        } else {
            None
        };
        for piece in cut(&text) {
            out.clauses.push(Clause {
                number: number.clone(),
                section,
                lead: lead.clone(),
                text: piece,
            });
        }
    };

    for (k, raw) in lines.iter().enumerate() {
        if skip_next {
            skip_next = false;
            continue;
        }
        let line = raw.trim();
        if line.is_empty() {
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                in_item,
            );
            in_item = false;
            table_head = None;
            continue;
        }
        if let Some(cells) = table_cells(line) {
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                in_item,
            );
            if cells.is_empty() {
                continue;
            }
            match &table_head {
                None => {
                    // The sentence that leads into the table ("Updates must be installed
                    // within these periods:") comes before its headings.
                    let intro = out
                        .clauses
                        .last()
                        .filter(|c| {
                            c.section == section
                                && c.lead.is_none()
                                && c.text.trim_end().ends_with(':')
                        })
                        .and_then(|c| crate::text::sentences(&c.text).last().cloned());
                    let mut cells = cells;
                    if let (Some(intro), Some(first)) = (intro, cells.first_mut()) {
                        *first = format!("{intro} {first}");
                    }
                    table_head = Some(cells);
                }
                Some(head) => {
                    out.clauses.push(Clause {
                        number: None,
                        section,
                        lead: Some(head.join(" | ")),
                        text: squash(&cells.join(" | ")),
                    });
                }
            }
            continue;
        }
        table_head = None;
        let next = lines.get(k + 1).copied();
        // A short title-like line on its own ("Version history" above a table).
        let alone = paragraph.is_empty()
            && next.is_none_or(|n| n.trim().is_empty() || n.trim_start().starts_with('|'))
            && is_title(line);
        let found = heading(line, next).or_else(|| alone.then(|| split_number(line)));
        if let Some((number, text)) = found {
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                in_item,
            );
            if next.is_some_and(|n| {
                let n = n.trim();
                n.len() >= 3 && (n.chars().all(|c| c == '=') || n.chars().all(|c| c == '-'))
            }) {
                skip_next = true;
            }
            out.sections.push(Section {
                number,
                heading: text,
            });
            section = Some(out.sections.len() - 1);
            last_number = None;
            continue;
        }
        if let Some((number, text)) = clause_number(line) {
            // "4.3 Lost or stolen devices" on its own: a sub-section its lettered clauses
            // belong to.
            if is_title(text) && next.is_none_or(|n| n.trim().is_empty()) {
                flush(
                    &mut out,
                    &mut paragraph,
                    &mut paragraph_number,
                    section,
                    in_item,
                );
                in_item = false;
                out.sections.push(Section {
                    number: Some(number.clone()),
                    heading: text.to_string(),
                });
                section = Some(out.sections.len() - 1);
                last_number = Some(number);
                continue;
            }
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                in_item,
            );
            in_item = false;
            paragraph.push(text);
            last_number = Some(number.clone());
            paragraph_number = Some(number);
            continue;
        }
        if let Some((marker, text)) = sub_clause(strip_list_marker(line)) {
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                in_item,
            );
            let number = match &last_number {
                Some(n) => format!("{n}{marker}"),
                None => marker,
            };
            in_item = true;
            paragraph.push(text);
            paragraph_number = Some(number);
            continue;
        }
        // "4. Staff must report breaches.": a numbered rule, not a heading.
        let digits: String = line.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && line[digits.len()..].starts_with(". ") {
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                in_item,
            );
            in_item = false;
            paragraph.push(line[digits.len() + 2..].trim_start());
            last_number = Some(digits.clone());
            paragraph_number = Some(digits);
            continue;
        }
        let stripped = strip_list_marker(line);
        if stripped.len() != line.len() {
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                in_item,
            );
            paragraph.push(stripped);
            // A list item under a numbered clause continues it ("4.2 ... :" then bullets).
            paragraph_number = last_number.clone();
            flush(
                &mut out,
                &mut paragraph,
                &mut paragraph_number,
                section,
                true,
            );
            in_item = false;
            continue;
        }
        if paragraph.is_empty() {
            in_item = false;
        }
        paragraph.push(line);
    }
    flush(
        &mut out,
        &mut paragraph,
        &mut paragraph_number,
        section,
        in_item,
    );
    out
}

/// A long paragraph cut into pieces of whole sentences.
fn cut(text: &str) -> Vec<String> {
    if text.len() <= LONG_PARAGRAPH {
        return vec![text.to_string()];
    }
    let mut groups = Vec::new();
    let mut current = String::new();
    for s in crate::text::sentences(text) {
        if !current.is_empty() && current.len() + s.len() > PIECE {
            groups.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&s);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(o: &Outline) -> Vec<String> {
        (0..o.clauses.len())
            .map(|i| o.place(i).unwrap_or_default())
            .collect()
    }

    #[test]
    fn markdown_headings_and_numbered_clauses() {
        let o = read("Version 2.0\n\n## 4. Approvals\n\n4.1 Gifts above EUR 100 must be approved.\n4.2 Hospitality must be\nrecorded.\n(a) within 3 days;\n(b) by the host.\n\n- A bullet.\n");
        assert_eq!(
            o.sections,
            [Section {
                number: Some("4".into()),
                heading: "Approvals".into()
            }]
        );
        let texts: Vec<&str> = o.clauses.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Version 2.0",
                "Gifts above EUR 100 must be approved.",
                "Hospitality must be recorded.",
                "within 3 days;",
                "by the host.",
                "A bullet."
            ]
        );
        assert_eq!(
            places(&o),
            [
                "",
                "§4.1 Approvals",
                "§4.2 Approvals",
                "§4.2(a) Approvals",
                "§4.2(b) Approvals",
                "§4.2 Approvals"
            ]
        );
    }

    #[test]
    fn plain_numbered_headings_sections_and_capitals() {
        let o = read("1. PURPOSE\nThis procedure sets rules.\n\nSection 3 — Verifying identity\nStaff must verify identity.\n\nDEFINITIONS\nA term.\n\n4. Staff must report breaches.\n");
        let heads: Vec<(Option<&str>, &str)> = o
            .sections
            .iter()
            .map(|s| (s.number.as_deref(), s.heading.as_str()))
            .collect();
        assert_eq!(
            heads,
            [
                (Some("1"), "PURPOSE"),
                (Some("3"), "Verifying identity"),
                (None, "DEFINITIONS")
            ]
        );
        let last = o.clauses.last().unwrap();
        assert_eq!(
            last.text, "Staff must report breaches.",
            "a numbered rule is not a heading"
        );
        assert_eq!(last.number.as_deref(), Some("4"));
    }

    #[test]
    fn table_rows_read_with_their_headings() {
        let o = read("## Hotels\n\n| City | Cap per night |\n|---|---|\n| London | GBP 200 |\n| Paris | EUR 220 |\n");
        let texts: Vec<&str> = o.clauses.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["London | GBP 200", "Paris | EUR 220"]);
        let c = &o.clauses[0];
        assert_eq!(
            meaning(&c.text, c.lead.as_deref()),
            "City: London, Cap per night: GBP 200"
        );
    }
}
