//! Namespaces: checking their labels, and the text form the SQL backends store (labels
//! joined by U+001F, which no label may contain, so that a prefix is a range of text).

use super::StoreError;

/// The separator of labels in the stored text form.
pub(crate) const SEP: char = '\u{1f}';

/// Checks a label a client may use: not empty, no `.` (the API joins labels with dots), no
/// control characters.
///
/// # Errors
/// [`StoreError::Invalid`] naming the fault.
pub fn validate_label(label: &str) -> Result<(), StoreError> {
    check_stored_label(label)?;
    if label.contains('.') {
        return Err(StoreError::Invalid(format!(
            "namespace label `{label}` must not contain periods"
        )));
    }
    Ok(())
}

/// Checks a namespace a client may use: at least one label, each valid
/// ([`validate_label`]).
///
/// # Errors
/// [`StoreError::Invalid`] naming the fault.
pub fn validate_namespace(namespace: &[String]) -> Result<(), StoreError> {
    if namespace.is_empty() {
        return Err(StoreError::Invalid(
            "a namespace needs at least one label".into(),
        ));
    }
    namespace.iter().try_for_each(|l| validate_label(l))
}

/// Checks a label a backend can store: not empty, no control characters.
pub(crate) fn check_stored_label(label: &str) -> Result<(), StoreError> {
    if label.is_empty() {
        return Err(StoreError::Invalid(
            "namespace labels must not be empty".into(),
        ));
    }
    if label.chars().any(char::is_control) {
        return Err(StoreError::Invalid(
            "namespace labels must not contain control characters".into(),
        ));
    }
    Ok(())
}

/// Checks a namespace a backend can store.
pub(crate) fn check_stored(namespace: &[String]) -> Result<(), StoreError> {
    if namespace.is_empty() {
        return Err(StoreError::Invalid(
            "a namespace needs at least one label".into(),
        ));
    }
    namespace.iter().try_for_each(|l| check_stored_label(l))
}

/// The stored text form.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn encode(namespace: &[String]) -> String {
    let mut s = String::new();
    for (i, l) in namespace.iter().enumerate() {
        if i > 0 {
            s.push(SEP);
        }
        s.push_str(l);
    }
    s
}

/// The labels of a stored text form.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn decode(text: &str) -> Vec<String> {
    text.split(SEP).map(str::to_string).collect()
}

/// The bounds of the stored forms of a prefix's namespaces: `ns = exact OR (ns >= lower AND
/// ns < upper)` (labels hold no character below U+0020, so U+001F sorts before any label
/// character and U+0020 after the separator).
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn prefix_bounds(prefix: &[String]) -> (String, String, String) {
    let exact = encode(prefix);
    (exact.clone(), format!("{exact}{SEP}"), format!("{exact} "))
}

/// Whether `namespace` is under `prefix` (literal labels).
pub(crate) fn has_prefix(namespace: &[String], prefix: &[String]) -> bool {
    namespace.len() >= prefix.len() && namespace[..prefix.len()] == *prefix
}

/// The labels of a pattern before its first `*`.
pub(crate) fn literal_head(pattern: &[String]) -> Vec<String> {
    pattern.iter().take_while(|l| *l != "*").cloned().collect()
}

fn label_matches(label: &str, pattern: &str) -> bool {
    pattern == "*" || label == pattern
}

/// Whether `namespace` starts with `pattern` (`*` matches any label).
pub(crate) fn matches_at_start(namespace: &[String], pattern: &[String]) -> bool {
    namespace.len() >= pattern.len()
        && namespace
            .iter()
            .zip(pattern)
            .all(|(l, p)| label_matches(l, p))
}

/// Whether `namespace` ends with `pattern` (`*` matches any label).
pub(crate) fn matches_at_end(namespace: &[String], pattern: &[String]) -> bool {
    namespace.len() >= pattern.len()
        && namespace[namespace.len() - pattern.len()..]
            .iter()
            .zip(pattern)
            .all(|(l, p)| label_matches(l, p))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ns(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn prefix_bounds_take_children_and_leave_siblings() {
        let (exact, lo, hi) = prefix_bounds(&ns(&["a", "b"]));
        let inside = |n: &[&str]| {
            let t = encode(&ns(n));
            t == exact || (t >= lo && t < hi)
        };
        assert!(inside(&["a", "b"]));
        assert!(inside(&["a", "b", "c"]));
        assert!(inside(&["a", "b", "c", "d"]));
        assert!(!inside(&["a", "bc"]));
        assert!(!inside(&["a", "b!"]));
        assert!(!inside(&["a"]));
        assert!(!inside(&["a", "a", "b"]));
        assert_eq!(decode(&encode(&ns(&["x", "y.z"]))), ns(&["x", "y.z"]));
    }

    #[test]
    fn wildcards_and_validation() {
        assert!(matches_at_start(&ns(&["a", "b", "c"]), &ns(&["*", "b"])));
        assert!(!matches_at_start(&ns(&["a"]), &ns(&["a", "*"])));
        assert!(matches_at_end(&ns(&["a", "b", "c"]), &ns(&["*", "c"])));
        assert!(validate_namespace(&ns(&["a.b"])).is_err());
        assert!(validate_namespace(&ns(&[""])).is_err());
        assert!(validate_namespace(&[]).is_err());
        assert!(check_stored(&ns(&["a.b"])).is_ok());
        assert!(check_stored(&ns(&["a\u{1f}b"])).is_err());
    }
}
