//! PalAssist's part of the chat page, the files of `graphs/web/` served as the web module
//! `palassist` (`/ext/palassist/{file}`): the documents panel with uploads, the document
//! sets panel, the `@` sources, the document viewer citations open, and the welcome. The
//! modules use only the page's interface, `/js/page.js`.

use palgraph_server::WebModule;

/// `(name, content)` of each file of `graphs/web/`.
macro_rules! embed {
    ($($name:literal),+ $(,)?) => {
        &[$(($name, include_str!(concat!("../../web/", $name)))),+]
    };
}

const FILES: &[(&str, &str)] = embed!(
    "documents.js",
    "library.js",
    "palassist.css",
    "palassist.js",
    "sets.js",
    "upload.js",
    "viewer.js",
);

/// The module (its entry: `palassist.js`).
pub(crate) fn module() -> WebModule {
    FILES.iter().fold(
        WebModule::new("palassist", "palassist.js"),
        |m, (name, body)| m.file(name, body),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_graphs_web_is_served() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let listed: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(listed, on_disk, "list each file of graphs/web in `FILES`");
    }

    #[test]
    fn the_modules_import_only_each_other_and_the_pages_interface() {
        for (name, body) in FILES.iter().filter(|(n, _)| n.ends_with(".js")) {
            for line in body.lines().filter(|l| l.starts_with("import ")) {
                let target = line
                    .rsplit_once(['\'', '"'])
                    .and_then(|(head, _)| head.rsplit_once(['\'', '"']))
                    .map(|(_, t)| t)
                    .unwrap_or_else(|| panic!("{name}: an import without a path: {line}"));
                let ok = target == "/js/page.js"
                    || target
                        .strip_prefix("./")
                        .is_some_and(|f| FILES.iter().any(|(n, _)| *n == f));
                assert!(
                    ok,
                    "{name} imports {target}: only ./<own file> or /js/page.js"
                );
            }
        }
    }
}
