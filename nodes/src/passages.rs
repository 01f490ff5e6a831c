//! Passages: the clauses of a document as an answer cites them, numbered `[n]` in the
//! order an answer is given them, each with where it sits in its document ("§4.2
//! Approvals") and how well it matched the request. They are made from the document model
//! ([`crate::docmodel`]) once per document ([`crate::analysis`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::state::Citation;

pub(crate) use crate::citations::{cited, strip_unknown_markers};
use crate::text::shorten;

/// The longest quote a citation carries.
pub(crate) const QUOTE_CHARS: usize = 280;

/// A piece of a document an answer may cite: a clause.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Passage {
    /// Its marker in the answer (`[number]`), from 1.
    pub number: u32,
    /// The document.
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// Where it sits: its clause number and section heading ("§4.2 Approvals"), if known.
    pub heading: Option<String>,
    /// Its clause number as the document writes it ("4.2", "4.2(a)"), if any.
    #[serde(default)]
    pub clause: Option<String>,
    /// The text (a table row: its cells between ` | `).
    pub text: String,
    /// What it continues, when it does not stand alone: a table row's header row, or the
    /// sentence a list item completes.
    #[serde(default)]
    pub lead: Option<String>,
    /// How well it matches the request (0..1; 0 when not ranked).
    pub score: f64,
}

impl Passage {
    /// The citation of this passage.
    pub fn citation(&self) -> Citation {
        Citation {
            doc_id: self.doc_id.clone(),
            title: self.title.clone(),
            quote: shorten(&self.text, QUOTE_CHARS),
            marker: self.number,
        }
    }
}

impl Passage {
    /// Whether the passage speaks of the document rather than binding anyone: its version
    /// history or document control (by its heading), or a header line.
    pub(crate) fn about_the_document(&self) -> bool {
        let heading = self.heading.as_deref().unwrap_or("").to_lowercase();
        ["history", "document control", "change log", "revision"]
            .iter()
            .any(|w| heading.contains(w))
            || crate::docmodel::header::is_metadata_line(&self.text)
    }

    /// What the passage means, to read it (not to quote it): a table row with its
    /// headings, a list item after its lead sentence (see [`crate::docmodel::outline::meaning`]).
    pub(crate) fn meaning(&self) -> String {
        crate::docmodel::outline::meaning(&self.text, self.lead.as_deref())
    }
}

/// Numbers passages 1, 2, ... in their current order.
pub(crate) fn number(passages: &mut [Passage]) {
    for (i, p) in passages.iter_mut().enumerate() {
        p.number = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
}
