//! The evaluation set's format (`graphs/eval/cases.json`): documents to upload besides the
//! samples, and cases. A case is one conversation (one thread): turns the user sends, the
//! answers to any prompt PalAssist raises, and what the answer of a turn must and must not
//! say.
//!
//! ```json
//! {
//!   "fixtures": ["fixtures/vendor.md"],
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
//!         "asks": null
//!       }
//!     }]
//!   }]
//! }
//! ```
//!
//! Facts and claims are matched case-insensitively, whitespace folded; a fact given as a
//! list is met by any one of its spellings. Documents (`mention`, `choose`, `cites`) are
//! named by a prefix of their title.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::EvalError;

/// The evaluation set.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EvalSet {
    /// What the set is, for people reading the file.
    #[serde(default)]
    pub about: String,
    /// Files uploaded for the user besides the sample documents, relative to the set's
    /// folder; each is titled the way an upload is
    /// ([`title_and_body`](palgraph_nodes::documents::title_and_body)).
    #[serde(default)]
    pub fixtures: Vec<String>,
    /// The cases.
    pub cases: Vec<Case>,
    /// The folder the set was read from (fixtures are relative to it).
    #[serde(skip)]
    pub dir: PathBuf,
}

impl EvalSet {
    /// The set in `dir/cases.json`.
    ///
    /// # Errors
    /// [`EvalError::Read`] or [`EvalError::Parse`].
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EvalError> {
        let dir = dir.as_ref();
        let path = dir.join("cases.json");
        let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Read {
            path: path.clone(),
            source,
        })?;
        let mut set: EvalSet =
            serde_json::from_str(&text).map_err(|source| EvalError::Parse { path, source })?;
        set.dir = dir.to_path_buf();
        Ok(set)
    }

    /// The set shipped with this crate (`graphs/eval/`).
    ///
    /// # Errors
    /// As [`EvalSet::load`].
    pub fn shipped() -> Result<Self, EvalError> {
        Self::load(Self::shipped_dir())
    }

    /// Where the shipped set lives.
    pub fn shipped_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("eval")
    }
}

/// What a case exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Questions (plurals, synonyms, units, versions, the user's library).
    Inquire,
    /// Summaries.
    Summarize,
    /// Comparisons (what changed, what is new, superseded versions).
    Compare,
    /// Audits (compliant, non-compliant, partly compliant, unrelated text).
    Audit,
    /// Follow-ups that lean on the conversation ("it", "the newer one").
    Conversation,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 5] = [
        Category::Inquire,
        Category::Summarize,
        Category::Compare,
        Category::Audit,
        Category::Conversation,
    ];

    /// Its name in the set and the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Inquire => "inquire",
            Category::Summarize => "summarize",
            Category::Compare => "compare",
            Category::Audit => "audit",
            Category::Conversation => "conversation",
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
    /// `action_choice`).
    #[serde(default)]
    pub asks: Option<String>,
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
