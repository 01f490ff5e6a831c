//! A strict reader of Prometheus's text exposition format (version 0.0.4), for tests that
//! scrape `/metrics`: every sample belongs to a family declared by `# TYPE`, label values
//! are unescaped, no series appears twice, and every histogram is whole (cumulative
//! buckets ending in `+Inf`, whose count is the `_count`, and a `_sum`).

use std::collections::BTreeMap;

/// Labels of a sample, sorted by name.
pub(crate) type Labels = BTreeMap<String, String>;

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: Labels,
    pub(crate) value: f64,
}

/// A metric family: its `# TYPE`, `# HELP` and samples.
#[derive(Clone, Debug, Default)]
pub(crate) struct Family {
    pub(crate) kind: String,
    pub(crate) help: Option<String>,
    pub(crate) samples: Vec<Sample>,
}

/// A parsed scrape.
#[derive(Clone, Debug, Default)]
pub(crate) struct Exposition {
    pub(crate) families: BTreeMap<String, Family>,
}

impl Exposition {
    /// The family `name`, which must be there.
    pub(crate) fn family(&self, name: &str) -> &Family {
        self.families
            .get(name)
            .unwrap_or_else(|| panic!("no family {name} in {:?}", self.families.keys()))
    }

    /// The value of the sample `name` whose labels include `want` (exactly one must match).
    pub(crate) fn value(&self, name: &str, want: &[(&str, &str)]) -> f64 {
        let found = self.find(name, want);
        assert_eq!(found.len(), 1, "{name}{want:?}: {found:?}");
        found[0].value
    }

    /// The sum of the samples `name` whose labels include `want` (0 when none).
    pub(crate) fn sum(&self, name: &str, want: &[(&str, &str)]) -> f64 {
        self.find(name, want).iter().map(|s| s.value).sum()
    }

    /// The samples `name` whose labels include `want`.
    pub(crate) fn find(&self, name: &str, want: &[(&str, &str)]) -> Vec<&Sample> {
        self.families
            .values()
            .flat_map(|f| &f.samples)
            .filter(|s| s.name == name)
            .filter(|s| {
                want.iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect()
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_value(v: &str) -> Result<f64, String> {
    match v {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => v.parse::<f64>().map_err(|_| format!("bad value `{v}`")),
    }
}

/// `{a="x",b="y"}` (the braces included) at the start of `s`; returns the labels and the
/// rest of the line.
fn parse_labels(s: &str) -> Result<(Labels, &str), String> {
    let mut labels = Labels::new();
    let mut rest = s.strip_prefix('{').ok_or("labels must open with {")?;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = rest.find('=').ok_or("a label without =")?;
        let name = rest[..eq].trim();
        if !valid_label_name(name) {
            return Err(format!("bad label name `{name}`"));
        }
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or("a label value must be quoted")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                Some((i, '"')) => break i,
                Some((_, '\n')) | None => return Err("an unterminated label value".into()),
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(name.to_string(), value).is_some() {
            return Err(format!("label `{name}` twice"));
        }
        rest = &rest[end + 1..];
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        } else if !rest.starts_with('}') {
            return Err("labels must be separated by commas".into());
        }
    }
}

/// The family a sample of `name` belongs to, given the declared families.
fn family_of<'a>(name: &'a str, families: &BTreeMap<String, Family>) -> Option<&'a str> {
    if families.contains_key(name) {
        return Some(name);
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if families
                .get(base)
                .is_some_and(|f| f.kind == "histogram" || f.kind == "summary")
            {
                return Some(base);
            }
        }
    }
    None
}

/// Parses and checks a scrape.
pub(crate) fn parse(text: &str) -> Result<Exposition, String> {
    let mut out = Exposition::default();
    let mut seen: std::collections::HashSet<(String, Vec<(String, String)>)> = Default::default();
    for (n, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: `{line}`", n + 1);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut parts = comment.trim_start().splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("TYPE"), Some(name), Some(kind)) => {
                    if !valid_name(name) {
                        return Err(at(format!("bad metric name `{name}`")));
                    }
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(at(format!("unknown type `{kind}`")));
                    }
                    let f = out.families.entry(name.to_string()).or_default();
                    if !f.kind.is_empty() || !f.samples.is_empty() {
                        return Err(at("TYPE twice, or after its samples".into()));
                    }
                    f.kind = kind.to_string();
                }
                (Some("HELP"), Some(name), help) => {
                    if !valid_name(name) {
                        return Err(at(format!("bad metric name `{name}`")));
                    }
                    let f = out.families.entry(name.to_string()).or_default();
                    if f.help.replace(help.unwrap_or("").to_string()).is_some() {
                        return Err(at("HELP twice".into()));
                    }
                }
                _ => {}
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| at("no value".into()))?;
        let name = &line[..name_end];
        if !valid_name(name) {
            return Err(at(format!("bad metric name `{name}`")));
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).map_err(at)?
        } else {
            (Labels::new(), &line[name_end..])
        };
        let mut fields = rest.split_whitespace();
        let value = parse_value(fields.next().ok_or_else(|| at("no value".into()))?).map_err(at)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>()
                .map_err(|_| at(format!("bad timestamp `{ts}`")))?;
        }
        if fields.next().is_some() {
            return Err(at("trailing fields".into()));
        }
        let family = family_of(name, &out.families)
            .ok_or_else(|| at(format!("`{name}` has no # TYPE")))?
            .to_string();
        let key = (
            name.to_string(),
            labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        );
        if !seen.insert(key) {
            return Err(at("the same series twice".into()));
        }
        let f = out.families.get_mut(&family).expect("found above");
        if f.kind == "counter" && (value.is_nan() || value < 0.0) {
            return Err(at("a negative counter".into()));
        }
        f.samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    for (name, f) in &out.families {
        if f.kind.is_empty() {
            return Err(format!("{name} has HELP but no TYPE"));
        }
        if f.kind == "histogram" {
            check_histogram(name, f)?;
        }
    }
    Ok(out)
}

/// Per series (labels less `le`): buckets cumulative and ending in `+Inf` = `_count`, and a
/// `_sum`.
fn check_histogram(name: &str, f: &Family) -> Result<(), String> {
    /// A series' buckets `(le, count)`, `_sum` and `_count`.
    type Series = (Vec<(f64, f64)>, Option<f64>, Option<f64>);
    let mut series: BTreeMap<Labels, Series> = BTreeMap::new();
    for s in &f.samples {
        let mut labels = s.labels.clone();
        let le = labels.remove("le");
        let e = series.entry(labels).or_default();
        if s.name.ends_with("_bucket") {
            let le = le.ok_or_else(|| format!("{name}: a bucket without le"))?;
            e.0.push((parse_value(&le)?, s.value));
        } else if s.name.ends_with("_sum") {
            e.1 = Some(s.value);
        } else if s.name.ends_with("_count") {
            e.2 = Some(s.value);
        } else {
            return Err(format!("{name}: a histogram sample `{}`", s.name));
        }
    }
    for (labels, (mut buckets, sum, count)) in series {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let what = format!("{name}{labels:?}");
        if buckets.windows(2).any(|w| w[1].1 < w[0].1) {
            return Err(format!("{what}: buckets are not cumulative: {buckets:?}"));
        }
        let inf = buckets
            .last()
            .filter(|b| b.0 == f64::INFINITY)
            .ok_or_else(|| format!("{what}: no +Inf bucket"))?;
        let count = count.ok_or_else(|| format!("{what}: no _count"))?;
        if inf.1 != count {
            return Err(format!("{what}: +Inf bucket {} but _count {count}", inf.1));
        }
        sum.ok_or_else(|| format!("{what}: no _sum"))?;
    }
    Ok(())
}

#[test]
fn the_reader_refuses_what_the_format_forbids() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"uo\\\\te\"} 3\n\
                # TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3.5\nh_count 2\n";
    let e = parse(good).unwrap();
    assert_eq!(e.value("a_total", &[("x", "q\"uo\\te")]), 3.0);
    for bad in [
        "a 1\n",                                        // no TYPE
        "# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n", // twice
        "# TYPE a gauge\na{x=1} 1\n",                   // unquoted
        "# TYPE a counter\na -1\n",                     // negative counter
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", // no +Inf
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}
