//! What extensions add to the chat page: [`WebModule`]s, each a folder of JavaScript
//! modules and style sheets served at `/ext/{id}/{file}`, whose entry module the page
//! imports at start (after its own modules, before it loads anything), and whose style
//! sheets it links.
//!
//! An entry module talks to the page through `/js/page.js` (documented there): it adds
//! sidebar panels shown for the graphs that ask for them, sources of `@` mentions, the
//! opener of citations, and work to do whenever the page's graph changes.

use std::collections::HashSet;

/// A part of the chat page an [`Extension`](crate::Extension) brings: its files (served
/// at `/ext/{id}/{name}` under the page's content security policy) and the module the
/// page imports.
///
/// ```
/// use palgraph_server::WebModule;
///
/// let notes = WebModule::new("notes", "notes.js")
///     .file("notes.js", "import { addPanel } from '/js/page.js'; /* ... */")
///     .file("notes.css", ".notes-panel { margin-top: 12px; }");
/// assert_eq!(notes.id(), "notes");
/// ```
#[derive(Clone, Debug)]
pub struct WebModule {
    id: String,
    entry: String,
    files: Vec<(String, &'static str)>,
}

/// Why a [`WebModule`] cannot be served.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WebModuleError {
    /// The id is not 1-64 of `a-z`, `0-9` and `-`.
    #[error("a web module's id must be 1-64 of a-z, 0-9 and '-': `{0}`")]
    BadId(String),
    /// Two modules have one id.
    #[error("two web modules have the id `{0}`")]
    DuplicateId(String),
    /// A file name is not 1-100 of `A-Za-z0-9._-`, starting with a letter or digit.
    #[error("web module `{module}`: a file name must be 1-100 of A-Za-z0-9._- starting with a letter or digit: `{file}`")]
    BadFileName {
        /// The module.
        module: String,
        /// The name.
        file: String,
    },
    /// A file is not `.js`, `.mjs` or `.css`.
    #[error("web module `{module}`: `{file}` is not a .js, .mjs or .css file")]
    BadFileType {
        /// The module.
        module: String,
        /// The name.
        file: String,
    },
    /// Two files have one name.
    #[error("web module `{module}` has two files named `{file}`")]
    DuplicateFile {
        /// The module.
        module: String,
        /// The name.
        file: String,
    },
    /// The entry module is not one of the files.
    #[error("web module `{module}`: its entry `{entry}` is not one of its .js files")]
    NoEntry {
        /// The module.
        module: String,
        /// The entry's name.
        entry: String,
    },
}

impl WebModule {
    /// A module `id` (its folder, `/ext/{id}/`) whose entry is the file `entry`.
    pub fn new(id: &str, entry: &str) -> Self {
        Self {
            id: id.to_string(),
            entry: entry.to_string(),
            files: Vec::new(),
        }
    }

    /// Adds the file `name` (a `.js`/`.mjs` module or a `.css` style sheet).
    pub fn file(mut self, name: &str, body: &'static str) -> Self {
        self.files.push((name.to_string(), body));
        self
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its entry module's path on the server.
    fn entry_path(&self) -> String {
        format!("/ext/{}/{}", self.id, self.entry)
    }

    /// Its style sheets' paths on the server.
    fn style_paths(&self) -> impl Iterator<Item = String> + '_ {
        self.files
            .iter()
            .filter(|(n, _)| n.ends_with(".css"))
            .map(|(n, _)| format!("/ext/{}/{n}", self.id))
    }

    fn check(&self) -> Result<(), WebModuleError> {
        let id_ok = !self.id.is_empty()
            && self.id.len() <= 64
            && self
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !id_ok {
            return Err(WebModuleError::BadId(self.id.clone()));
        }
        let mut seen = HashSet::new();
        for (name, _) in &self.files {
            let err =
                |make: fn(String, String) -> WebModuleError| make(self.id.clone(), name.clone());
            let name_ok = (1..=100).contains(&name.len())
                && name.as_bytes()[0].is_ascii_alphanumeric()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !name_ok {
                return Err(err(|module, file| WebModuleError::BadFileName {
                    module,
                    file,
                }));
            }
            if content_type(name).is_none() {
                return Err(err(|module, file| WebModuleError::BadFileType {
                    module,
                    file,
                }));
            }
            if !seen.insert(name.as_str()) {
                return Err(err(|module, file| WebModuleError::DuplicateFile {
                    module,
                    file,
                }));
            }
        }
        if !self
            .files
            .iter()
            .any(|(n, _)| *n == self.entry && !n.ends_with(".css"))
        {
            return Err(WebModuleError::NoEntry {
                module: self.id.clone(),
                entry: self.entry.clone(),
            });
        }
        Ok(())
    }
}

/// The content type of a module file named `name`.
pub(super) fn content_type(name: &str) -> Option<&'static str> {
    if name.ends_with(".js") || name.ends_with(".mjs") {
        Some(super::JS_TYPE)
    } else if name.ends_with(".css") {
        Some(super::CSS_TYPE)
    } else {
        None
    }
}

/// The page with its extensions' modules: the index HTML linking them, and their files.
#[derive(Debug, Default)]
pub(crate) struct Page {
    index: String,
    modules: Vec<WebModule>,
}

/// Where the page's HTML takes the extensions' tags.
const SLOT: &str = "<!-- extension modules -->";

impl Page {
    /// The page with `modules` (checked: ids and file names, one entry each).
    pub(crate) fn new(modules: Vec<WebModule>) -> Result<Self, WebModuleError> {
        let mut ids = HashSet::new();
        for m in &modules {
            m.check()?;
            if !ids.insert(m.id.clone()) {
                return Err(WebModuleError::DuplicateId(m.id.clone()));
            }
        }
        let mut tags = String::new();
        for m in &modules {
            for css in m.style_paths() {
                tags.push_str(&format!("<link rel=\"stylesheet\" href=\"{css}\">\n  "));
            }
            tags.push_str(&format!(
                "<meta name=\"palgraph-module\" content=\"{}\">\n  ",
                m.entry_path()
            ));
        }
        let index = super::INDEX_HTML.replacen(SLOT, tags.trim_end(), 1);
        Ok(Self { index, modules })
    }

    /// The index HTML.
    pub(crate) fn index(&self) -> &str {
        &self.index
    }

    /// The file `name` of module `id`, with its content type.
    pub(crate) fn file(&self, id: &str, name: &str) -> Option<(&'static str, &'static str)> {
        let m = self.modules.iter().find(|m| m.id == id)?;
        let (_, body) = m.files.iter().find(|(n, _)| n == name)?;
        Some((body, content_type(name)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_links_each_modules_style_sheets_and_names_its_entry() {
        let page = Page::new(vec![WebModule::new("notes", "notes.js")
            .file("notes.js", "export {};")
            .file("notes.css", "p {}")])
        .unwrap();
        assert!(!page.index().contains(SLOT));
        assert!(page
            .index()
            .contains("<link rel=\"stylesheet\" href=\"/ext/notes/notes.css\">"));
        assert!(page
            .index()
            .contains("<meta name=\"palgraph-module\" content=\"/ext/notes/notes.js\">"));
        assert_eq!(
            page.file("notes", "notes.js"),
            Some(("export {};", super::super::JS_TYPE))
        );
        assert_eq!(page.file("notes", "other.js"), None);
        assert_eq!(page.file("other", "notes.js"), None);
    }

    #[test]
    fn a_module_that_could_not_be_served_is_refused_with_its_reason() {
        let one = |m: WebModule| Page::new(vec![m]).map(|_| ()).unwrap_err();
        assert!(matches!(
            one(WebModule::new("Notes", "a.js").file("a.js", "")),
            WebModuleError::BadId(_)
        ));
        assert!(matches!(
            one(WebModule::new("n", "a.js").file("../a.js", "")),
            WebModuleError::BadFileName { .. }
        ));
        assert!(matches!(
            one(WebModule::new("n", "a.js")
                .file("a.js", "")
                .file("a.html", "")),
            WebModuleError::BadFileType { .. }
        ));
        assert!(matches!(
            one(WebModule::new("n", "a.js")
                .file("a.js", "")
                .file("a.js", "")),
            WebModuleError::DuplicateFile { .. }
        ));
        assert!(matches!(
            one(WebModule::new("n", "b.js").file("a.js", "")),
            WebModuleError::NoEntry { .. }
        ));
        let twice = Page::new(vec![
            WebModule::new("n", "a.js").file("a.js", ""),
            WebModule::new("n", "a.js").file("a.js", ""),
        ]);
        assert_eq!(
            twice.map(|_| ()).unwrap_err(),
            WebModuleError::DuplicateId("n".into())
        );
    }
}
