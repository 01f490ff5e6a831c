//! The text of an item: what text search indexes and what is embedded for search by
//! meaning.

use serde_json::Value;

use super::filter::field;

fn push_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
        }
        Value::Array(a) => a.iter().for_each(|v| push_strings(v, out)),
        Value::Object(m) => m.values().for_each(|v| push_strings(v, out)),
        Value::Number(n) => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&n.to_string());
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// The text of the fields `paths` (dotted; `$` is the whole value) of `value`: their strings
/// and numbers, one a line, in field order.
pub fn text_of(value: &Value, paths: &[String]) -> String {
    let mut out = String::new();
    for p in paths {
        if let Some(v) = field(value, p) {
            push_strings(v, &mut out);
        }
    }
    out
}

/// The lower-cased words of a text (runs of letters and digits), as the memory store
/// matches them and as SQL text queries are built from.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}
