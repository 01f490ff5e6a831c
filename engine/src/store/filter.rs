//! Filters on item values, LangGraph's shape: `{"field": value}` holds when the field
//! equals the value; `{"field": {"$op": operand, ..}}` when every operator holds. Operators:
//! `$eq $ne $gt $gte $lt $lte` (order compares numbers with numbers and strings with
//! strings), `$in $nin` (the operand is a list). A dotted field (`"a.b"`) reaches into
//! nested objects. A missing field equals nothing and is unequal to everything.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::StoreError;

const OPERATORS: &[&str] = &["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"];

/// Whether a condition is an operator object (`{"$gt": 1}`), not a value to equal.
fn is_operators(cond: &Value) -> bool {
    matches!(cond, Value::Object(m) if !m.is_empty() && m.keys().all(|k| k.starts_with('$')))
}

/// Checks a filter's operators.
pub(crate) fn check(filter: &Map<String, Value>) -> Result<(), StoreError> {
    for (field, cond) in filter {
        if field.is_empty() {
            return Err(StoreError::Invalid(
                "a filter's field must not be empty".into(),
            ));
        }
        if field.starts_with('$') {
            return Err(StoreError::Invalid(format!(
                "filter operator `{field}` must be inside a field's condition (`$and`, `$or` and `$not` are not supported)"
            )));
        }
        if !is_operators(cond) {
            continue;
        }
        for (op, operand) in cond.as_object().into_iter().flatten() {
            if !OPERATORS.contains(&op.as_str()) {
                return Err(StoreError::Invalid(format!(
                    "unknown filter operator `{op}` (known: {})",
                    OPERATORS.join(", ")
                )));
            }
            if matches!(op.as_str(), "$in" | "$nin") && !operand.is_array() {
                return Err(StoreError::Invalid(format!(
                    "filter operator `{op}` takes a list"
                )));
            }
        }
    }
    Ok(())
}

/// The field of `value` at a dotted `path`.
pub(crate) fn field<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path == "$" {
        return Some(value);
    }
    path.split('.').try_fold(value, |v, part| match v {
        Value::Object(m) => m.get(part),
        Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // 1 and 1.0 are one number.
        (Value::Number(_), Value::Number(_)) => order(a, b) == Some(Ordering::Equal),
        _ => a == b,
    }
}

fn holds(actual: Option<&Value>, op: &str, operand: &Value) -> bool {
    let cmp = |want: &[Ordering]| {
        actual
            .and_then(|a| order(a, operand))
            .is_some_and(|o| want.contains(&o))
    };
    let within = || {
        operand
            .as_array()
            .is_some_and(|list| actual.is_some_and(|a| list.iter().any(|x| equal(a, x))))
    };
    match op {
        "$eq" => actual.is_some_and(|a| equal(a, operand)),
        "$ne" => !actual.is_some_and(|a| equal(a, operand)),
        "$gt" => cmp(&[Ordering::Greater]),
        "$gte" => cmp(&[Ordering::Greater, Ordering::Equal]),
        "$lt" => cmp(&[Ordering::Less]),
        "$lte" => cmp(&[Ordering::Less, Ordering::Equal]),
        "$in" => within(),
        "$nin" => !within(),
        _ => false,
    }
}

/// Whether `value` passes `filter` (a filter the store refuses as invalid never passes).
pub fn matches(filter: &Map<String, Value>, value: &Value) -> bool {
    filter.iter().all(|(path, cond)| {
        let actual = field(value, path);
        if is_operators(cond) {
            cond.as_object()
                .into_iter()
                .flatten()
                .all(|(op, operand)| holds(actual, op, operand))
        } else {
            actual.is_some_and(|a| equal(a, cond))
        }
    })
}

/// The plain equalities of a filter as one nested object, for a backend that can narrow
/// its rows by containment first (the full filter still decides).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn equalities(filter: &Map<String, Value>) -> Option<Value> {
    let mut root = Map::new();
    for (path, cond) in filter {
        if is_operators(cond) || cond.is_array() || cond.is_object() {
            continue;
        }
        let parts: Vec<&str> = path.split('.').collect();
        let mut at = &mut root;
        for part in &parts[..parts.len() - 1] {
            let next = at
                .entry(part.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            match next {
                Value::Object(m) => at = m,
                _ => return None,
            }
        }
        let last = parts[parts.len() - 1].to_string();
        if at.contains_key(&last) {
            return None;
        }
        at.insert(last, cond.clone());
    }
    (!root.is_empty()).then_some(Value::Object(root))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn f(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn equality_operators_and_paths() {
        let v = json!({"kind": "pref", "n": 3, "meta": {"lang": "en"}, "tags": ["a"]});
        assert!(matches(&f(json!({"kind": "pref"})), &v));
        assert!(!matches(&f(json!({"kind": "fact"})), &v));
        assert!(matches(&f(json!({"n": 3.0})), &v));
        assert!(matches(&f(json!({"meta.lang": "en"})), &v));
        assert!(matches(&f(json!({"n": {"$gt": 2, "$lte": 3}})), &v));
        assert!(!matches(&f(json!({"n": {"$lt": 3}})), &v));
        assert!(matches(&f(json!({"kind": {"$ne": "fact"}})), &v));
        assert!(matches(&f(json!({"missing": {"$ne": 1}})), &v));
        assert!(!matches(&f(json!({"missing": 1})), &v));
        assert!(matches(&f(json!({"kind": {"$in": ["x", "pref"]}})), &v));
        assert!(matches(&f(json!({"tags": ["a"]})), &v));
        assert!(check(&f(json!({"n": {"$regex": "x"}}))).is_err());
        assert!(check(&f(json!({"n": {"$in": 3}}))).is_err());
        assert!(check(&f(json!({"$and": [{"n": 1}]}))).is_err());
        assert_eq!(
            equalities(&f(
                json!({"kind": "pref", "meta.lang": "en", "n": {"$gt": 1}})
            )),
            Some(json!({"kind": "pref", "meta": {"lang": "en"}}))
        );
    }
}
