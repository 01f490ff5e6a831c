//! The order of the server's modules: each uses only modules of the layers below its own,
//! so a change to one layer never reaches down and back up. The test reads every module's
//! source for the `crate::<module>` paths it names (comments aside) and holds them to
//! [`LAYERS`]; what the crate root re-exports for users (`crate::User`) is left to the
//! modules it comes from.

/// The modules, bottom layer first.
const LAYERS: &[&[&str]] = &[
    // Settings-free leaves: who calls, logs and traces, metric names.
    &["auth", "telemetry", "metric"],
    // The settings, and the server's tables.
    &["config", "store"],
    // The database opened from the settings; connection limits; the chat contract's
    // models; retrying storage.
    &["database", "listen", "contract", "retry"],
    // Metrics over the database; the graphs served; crons' records.
    &["prometheus", "graphs", "crons"],
    // Background execution.
    &["runs"],
    // The HTTP API, and what it schedules (crons' runs, sweepers).
    &["api"],
    // The builder that puts them together.
    &["server"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The `crate::<name>` modules `text` names outside comments.
fn named_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // A type the crate root re-exports (`crate::User`) is not a module path.
            if name.starts_with(|c: char| c.is_ascii_lowercase()) {
                out.push(name);
            }
        }
    }
    out
}

/// Every `.rs` file under `path` (a file or a folder).
fn sources(path: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .expect("the folder reads")
            .map(|e| e.expect("the entry reads").path())
            .collect();
        entries.sort();
        for e in entries {
            sources(&e, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = Vec::new();
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(&src).expect("src reads") {
        let path = entry.expect("the entry reads").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        if matches!(name.as_str(), "lib" | "layers") {
            continue;
        }
        if !path.is_dir() && path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let Some(own) = layer_of(&name) else {
            wrong.push(format!("`{name}` is in no layer: add it to LAYERS"));
            continue;
        };
        seen.push(name.clone());
        let mut files = Vec::new();
        sources(&path, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("the source reads");
            for used in named_modules(&text) {
                if used == name {
                    continue;
                }
                match layer_of(&used) {
                    Some(l) if l < own => {}
                    Some(_) => wrong.push(format!(
                        "{} uses `crate::{used}`, a module of its own layer or above",
                        file.strip_prefix(&src).unwrap_or(&file).display()
                    )),
                    None => wrong.push(format!(
                        "{} uses `crate::{used}`, which is in no layer",
                        file.strip_prefix(&src).unwrap_or(&file).display()
                    )),
                }
            }
        }
    }
    // Every module listed exists (a renamed module is renamed here too).
    for m in LAYERS.iter().flat_map(|l| l.iter()) {
        if !seen.iter().any(|s| s == m) {
            wrong.push(format!("LAYERS names `{m}`, which is not a module of src/"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn comments_and_names_are_told_apart() {
    assert_eq!(
        named_modules("use crate::store::Run; // see crate::api\nlet x = crate::runs::of();"),
        vec!["store".to_string(), "runs".to_string()]
    );
}
