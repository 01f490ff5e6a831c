//! The evaluation sets' format. A set is a folder of case files (`*.json`, read in name
//! order); each file holds cases and names the library its cases run against, a folder of
//! documents (every `.md` and `.txt` under it, uploaded the way the server uploads a file
//! and titled the same way) that the user has besides the sample documents. The shipped
//! sets, `graphs/eval/dev` and `graphs/eval/heldout`, share `graphs/eval/library`. A file may
//! also name its `family`, the folder of the documents its cases are about, to be run
//! against those alone ([`EvalSet::families`]). A case is one conversation (one thread): turns the user sends, the answers to any prompt
//! PalAssist raises, and what the answer of a turn must and must not say.
//!
//! ```json
//! {
//!   "about": "what these cases are",
//!   "library": "../library",
//!   "family": "../library/dev/k",
//!   "cases": [{
//!     "id": "inquire-emails-plural",
//!     "category": "inquire",
//!     "turns": [{
//!       "say": "How long are emails kept?",
//!       "mention": [],
//!       "action": null,
//!       "choose": [],
//!       "expect": {
//!         "must": [["3 years", "three years"]],
//!         "must_not": ["found no document"],
//!         "cites": ["Data Retention Policy 2024"],
//!         "not_cites": [],
//!         "asks": "none",
//!         "stops": false,
//!         "verdicts": [{"about": "3 years", "verdict": "breaks"}]
//!       }
//!     }]
//!   }]
//! }
//! ```
//!
//! Facts and claims are matched case-insensitively, whitespace folded; a fact given as a
//! list is met by any one of its spellings. Documents (`mention`, `choose`, `cites`) are
//! named by a prefix of their title, or as `file:<path>` (the path of its file under the
//! library folder) where two documents share a title. `asks` is the first prompt the turn
//! must raise, or `none`. `verdicts` are an audit's findings: each finding is a line of the
//! answer that starts with its verdict (`**Breaks**`, `**Meets**`, `**Not verifiable**`),
//! and the finding line that contains `about` must carry the verdict given.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::EvalError;

/// One case file.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct CaseFile {
    #[serde(default)]
    about: String,
    /// The library folder, relative to the file (none: the samples alone).
    #[serde(default)]
    library: Option<String>,
    /// The documents its cases are about, a folder relative to the file: run alone
    /// ([`EvalSet::families`]), its cases meet these and the samples only, as on a new
    /// team's server.
    #[serde(default)]
    family: Option<String>,
    cases: Vec<Case>,
}

/// An evaluation set: its cases and the library they run against.
#[derive(Clone, Debug)]
pub struct EvalSet {
    /// The set's name (its folder's).
    pub name: String,
    /// What its files say they are.
    pub about: Vec<String>,
    /// The folders of documents the user has besides the samples.
    pub libraries: Vec<PathBuf>,
    /// The cases, file by file.
    pub cases: Vec<Case>,
}

/// The sets shipped with this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The development set: the cases the offline model is developed against.
    Dev,
    /// The held-out set: written before the model was developed against it, and never
    /// tuned on; its score is what a library nobody has seen gets.
    HeldOut,
}

impl Part {
    /// Both, in report order.
    pub const ALL: [Part; 2] = [Part::Dev, Part::HeldOut];

    /// Its folder's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Dev => "dev",
            Part::HeldOut => "heldout",
        }
    }
}

impl EvalSet {
    /// The set in folder `dir`: every `*.json` file in it, in name order.
    ///
    /// # Errors
    /// [`EvalError::Read`] or [`EvalError::Parse`].
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EvalError> {
        let dir = dir.as_ref();
        let mut set = EvalSet::empty(set_name(dir));
        for (_, file) in case_files(dir)? {
            if let Some(library) = file.library {
                let library = folder(dir, &library);
                if !set.libraries.contains(&library) {
                    set.libraries.push(library);
                }
            }
            if !file.about.is_empty() {
                set.about.push(file.about);
            }
            set.cases.extend(file.cases);
        }
        Ok(set)
    }

    /// The files of the set in folder `dir` that name their family's documents, each as a
    /// set of its own over those documents alone (and the samples): what a team whose
    /// library is that family meets, where the whole set's library makes every question
    /// choose among many more documents. Files without a family are left out.
    ///
    /// # Errors
    /// As [`EvalSet::load`].
    pub fn families(dir: impl AsRef<Path>) -> Result<Vec<Self>, EvalError> {
        let dir = dir.as_ref();
        let mut out = Vec::new();
        for (path, file) in case_files(dir)? {
            let Some(family) = file.family else {
                continue;
            };
            let stem = path
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut set = EvalSet::empty(format!("{}/{stem}", set_name(dir)));
            set.libraries.push(folder(dir, &family));
            if !file.about.is_empty() {
                set.about.push(file.about);
            }
            set.cases = file.cases;
            out.push(set);
        }
        Ok(out)
    }

    fn empty(name: String) -> Self {
        EvalSet {
            name,
            about: Vec::new(),
            libraries: Vec::new(),
            cases: Vec::new(),
        }
    }

    /// A set shipped with this crate (`graphs/eval/dev`, `graphs/eval/heldout`).
    ///
    /// # Errors
    /// As [`EvalSet::load`].
    pub fn shipped(part: Part) -> Result<Self, EvalError> {
        Self::load(Self::shipped_dir().join(part.as_str()))
    }

    /// Where the shipped sets live.
    pub fn shipped_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("eval")
    }
}

/// A set's name: its folder's.
fn set_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A folder a case file names, relative to the set's folder.
fn folder(dir: &Path, relative: &str) -> PathBuf {
    let path = dir.join(relative);
    path.canonicalize().unwrap_or(path)
}

/// The case files of the set in folder `dir`, in name order.
fn case_files(dir: &Path) -> Result<Vec<(PathBuf, CaseFile)>, EvalError> {
    let read_dir = |path: &Path| {
        std::fs::read_dir(path).map_err(|source| EvalError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut files: Vec<PathBuf> = read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Read {
            path: path.clone(),
            source,
        })?;
        let file: CaseFile = serde_json::from_str(&text).map_err(|source| EvalError::Parse {
            path: path.clone(),
            source,
        })?;
        out.push((path, file));
    }
    Ok(out)
}

/// What a case exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Questions (plurals, synonyms, units, roles, the user's library, questions nothing
    /// answers).
    Inquire,
    /// Versions: one named, "current" / "old", and none named where versions differ.
    Versions,
    /// Documents named by description, noun phrases that name no document, real
    /// ambiguities.
    Resolution,
    /// Summaries.
    Summarize,
    /// Comparisons (what changed, what is new, superseded versions).
    Compare,
    /// Audits (compliant, non-compliant, partly compliant, unrelated text).
    Audit,
    /// Follow-ups that lean on the conversation ("it", "the newer one").
    Conversation,
    /// What to do: an audit asked without the word, several actions, a cancelled prompt.
    Intent,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 8] = [
        Category::Inquire,
        Category::Versions,
        Category::Resolution,
        Category::Summarize,
        Category::Compare,
        Category::Audit,
        Category::Conversation,
        Category::Intent,
    ];

    /// Its name in the set and the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Inquire => "inquire",
            Category::Versions => "versions",
            Category::Resolution => "resolution",
            Category::Summarize => "summarize",
            Category::Compare => "compare",
            Category::Audit => "audit",
            Category::Conversation => "conversation",
            Category::Intent => "intent",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One conversation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Case {
    /// A unique name.
    pub id: String,
    /// What it exercises.
    pub category: Category,
    /// The user's turns, in order.
    pub turns: Vec<Turn>,
}

/// A message the user sends.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Turn {
    /// The message text.
    pub say: String,
    /// Documents @-mentioned after the text (title prefixes).
    #[serde(default)]
    pub mention: Vec<String>,
    /// An explicit action (`summarize`, `inquire`, `compare`, `audit`).
    #[serde(default)]
    pub action: Option<String>,
    /// The answers to the prompts PalAssist raises, in order: a document title prefix or
    /// option label picks that option, anything else is typed. A prompt with no answer
    /// left is cancelled.
    #[serde(default)]
    pub choose: Vec<String>,
    /// What the answer to this turn must show (setup turns have none).
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// What an answer must and must not say.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Expect {
    /// Facts the answer must contain.
    #[serde(default)]
    pub must: Vec<Fact>,
    /// Claims the answer must not make (text it must not contain).
    #[serde(default)]
    pub must_not: Vec<String>,
    /// Documents the answer must cite (title prefixes).
    #[serde(default)]
    pub cites: Vec<String>,
    /// Documents the answer must not cite.
    #[serde(default)]
    pub not_cites: Vec<String>,
    /// The prompt PalAssist should raise first (`doc_choice`, `text_input`,
    /// `action_choice`), or `none` when it must answer without asking.
    #[serde(default)]
    pub asks: Option<String>,
    /// The turn must end without an answer (a prompt was cancelled).
    #[serde(default)]
    pub stops: bool,
    /// An audit's findings.
    #[serde(default)]
    pub verdicts: Vec<ExpectedVerdict>,
}

/// A finding an audit must make: the finding line containing `about` has `verdict`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExpectedVerdict {
    /// Text the finding's line contains (the rule's figure or role, as written).
    pub about: String,
    /// What the finding says.
    pub verdict: Verdict,
}

/// What an audit finding says of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The practice states what the rule asks (compatible values).
    Meets,
    /// The practice contradicts the rule.
    Breaks,
    /// The practice says nothing checkable about a rule it touches.
    NotVerifiable,
}

impl Verdict {
    /// How an answer writes it, at the start of a finding's line.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Meets => "Meets",
            Verdict::Breaks => "Breaks",
            Verdict::NotVerifiable => "Not verifiable",
        }
    }
}

/// A fact: one text, or several spellings of which one must appear.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Fact {
    /// One spelling.
    One(String),
    /// Any of these.
    AnyOf(Vec<String>),
}

impl Fact {
    /// Its spellings.
    pub fn spellings(&self) -> Vec<&str> {
        match self {
            Fact::One(s) => vec![s.as_str()],
            Fact::AnyOf(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spellings().join(" | "))
    }
}
