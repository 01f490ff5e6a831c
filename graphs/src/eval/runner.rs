//! Runs the cases through the real PalAssist graph, in process: an in-memory document store
//! seeded with the samples and the set's library (every `.md` and `.txt` file under its
//! folders, uploaded the way the server uploads a file), the in-memory checkpointer, one
//! thread per case, prompts answered from the case's `choose` list.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use palgraph::{CompiledGraph, MemoryCheckpointer, Resume, RunConfig, RunInput, RunOutcome};
use palgraph_nodes::documents::title_and_body;
use palgraph_nodes::{
    seed_samples, turn_input, AgentState, ChatTurn, Citation, Document, DocumentStore, Llm,
    MemoryDocumentStore, PalAssistDeps,
};
use serde_json::{json, Value};

use super::cases::{Case, EvalSet, Turn};
use super::EvalError;
use crate::palassist;

/// The user the evaluation runs as.
pub const USER: &str = "eval";

/// At most this many prompts are answered in one turn.
const MAX_PROMPTS: usize = 6;

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    /// An answer.
    Answered,
    /// Stopped without an action: a prompt the case gave no answer to was cancelled.
    Stopped,
    /// Still waiting at a prompt after every answer the case gave.
    Asking,
    /// The run failed.
    Failed(String),
}

/// What one turn produced.
#[derive(Clone, Debug)]
pub struct TurnResult {
    /// The message sent.
    pub message: String,
    /// The kind of the first prompt raised, if any.
    pub asked: Option<String>,
    /// That prompt's question and options, as shown to the user.
    pub prompt: Option<String>,
    /// How it ended.
    pub end: TurnEnd,
    /// The answer text (the prompt's question when it ended asking).
    pub response: String,
    /// The passages cited.
    pub citations: Vec<Citation>,
    /// The state's `answered_by` (how the answer was made), as JSON; `None` when absent.
    pub answered_by: Option<Value>,
}

/// The graph and the documents a set runs against.
pub struct Runner {
    graph: CompiledGraph<AgentState>,
    library: Vec<Document>,
    /// The library's files (path under their folder, with `/`) and their documents' ids.
    files: Vec<(String, String)>,
}

/// Every `.md` and `.txt` file under `dir`, in path order.
fn library_files(dir: &Path) -> Result<Vec<PathBuf>, EvalError> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| EvalError::Read {
            path: d.clone(),
            source,
        })?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "md" || e == "txt") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

impl Runner {
    /// Seeds the documents and builds the graph over `llm`.
    ///
    /// # Errors
    /// A fixture cannot be read, a document cannot be stored, the graph cannot be built.
    pub async fn new(set: &EvalSet, llm: Arc<dyn Llm>) -> Result<Self, EvalError> {
        Self::over(&set.libraries, &[], llm).await
    }

    /// Seeds the samples, every `.md` and `.txt` file under `libraries`, and `more`
    /// documents (title, text), and builds the graph over `llm`.
    ///
    /// # Errors
    /// A file cannot be read, a document cannot be stored, the graph cannot be built.
    pub async fn over(
        libraries: &[PathBuf],
        more: &[(String, String)],
        llm: Arc<dyn Llm>,
    ) -> Result<Self, EvalError> {
        let docs = Arc::new(MemoryDocumentStore::new());
        seed_samples(docs.as_ref(), USER).await?;
        for (title, text) in more {
            docs.create(USER, title, text).await?;
        }
        let mut files = Vec::new();
        for dir in libraries {
            for path in library_files(dir)? {
                let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Read {
                    path: path.clone(),
                    source,
                })?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let (title, body) = title_and_body(&name, &text);
                let doc = docs.create(USER, &title, &body).await?;
                let relative = path.strip_prefix(dir).unwrap_or(&path);
                let relative: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                files.push((relative.join("/"), doc.id));
            }
        }
        let library = docs.list(USER).await?;
        let graph = palassist::graph(PalAssistDeps::new(llm, docs))?
            .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
        Ok(Runner {
            graph,
            library,
            files,
        })
    }

    /// The documents the cases run against.
    pub fn library(&self) -> &[Document] {
        &self.library
    }

    /// The document a case names: `file:<path>` (its file under the library folder), or
    /// the first whose title starts with the name (case-insensitively).
    pub fn document(&self, name: &str) -> Option<&Document> {
        if let Some(path) = name.strip_prefix("file:") {
            let (_, id) = self.files.iter().find(|(p, _)| p == path.trim())?;
            return self.library.iter().find(|d| &d.id == id);
        }
        let prefix = name.to_lowercase();
        self.library
            .iter()
            .find(|d| d.title.to_lowercase().starts_with(&prefix))
    }

    /// Whether document `id` is the one a case names as `name` (see [`Runner::document`]:
    /// for a title prefix, any document whose title starts with it).
    pub fn names(&self, name: &str, id: &str, title: &str) -> bool {
        if name.starts_with("file:") {
            return self.document(name).is_some_and(|d| d.id == id);
        }
        title.to_lowercase().starts_with(&name.to_lowercase())
    }

    /// Runs a case on a thread of its own; one result per turn.
    ///
    /// # Errors
    /// [`EvalError::UnknownDocument`] for a mention naming no document; run failures are
    /// recorded in the turn, not returned.
    pub async fn run_case(&self, case: &Case, thread: &str) -> Result<Vec<TurnResult>, EvalError> {
        let mut results = Vec::new();
        for turn in &case.turns {
            results.push(self.run_turn(turn, thread).await?);
        }
        Ok(results)
    }

    fn chat_turn(&self, turn: &Turn) -> Result<ChatTurn, EvalError> {
        let mut message = turn.say.clone();
        let mut nodes = vec![json!({"type": "text", "text": turn.say})];
        for prefix in &turn.mention {
            let d = self
                .document(prefix)
                .ok_or_else(|| EvalError::UnknownDocument(prefix.clone()))?;
            message.push_str(&format!(" @{}", d.title));
            nodes.push(json!({"type": "text", "text": " "}));
            nodes.push(json!({"type": "mention", "attrs": {"id": d.id, "label": d.title}}));
        }
        let tiptap_json = (!turn.mention.is_empty())
            .then(|| json!({"type": "doc", "content": [{"type": "paragraph", "content": nodes}]}));
        Ok(ChatTurn {
            message,
            tiptap_json,
            action: turn.action.clone(),
            ..Default::default()
        })
    }

    async fn run_turn(&self, turn: &Turn, thread: &str) -> Result<TurnResult, EvalError> {
        let chat = self.chat_turn(turn)?;
        let message = chat.message.clone();
        let config = || RunConfig::new(thread).context("user_id", USER);
        let failed = |e: palgraph::RunError, asked: Option<String>| TurnResult {
            message: message.clone(),
            asked,
            prompt: None,
            end: TurnEnd::Failed(e.to_string()),
            response: String::new(),
            citations: Vec::new(),
            answered_by: None,
        };
        let mut out = match self
            .graph
            .invoke(config(), RunInput::Turn(turn_input(chat)))
            .await
        {
            Ok(out) => out,
            Err(e) => return Ok(failed(e, None)),
        };
        let mut asked: Option<String> = None;
        let mut shown: Option<String> = None;
        let mut answers = turn.choose.iter();
        for _ in 0..MAX_PROMPTS {
            let Some(prompt) = pending_prompt(&out) else {
                break;
            };
            asked.get_or_insert_with(|| {
                prompt["interrupt_type"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            });
            shown.get_or_insert_with(|| prompt_text(&prompt));
            let value = answers
                .next()
                .map(|a| self.answer_to(&prompt, a))
                .unwrap_or(Value::Null);
            out = match self
                .graph
                .invoke(config(), RunInput::Resume(Resume::Value(value)))
                .await
            {
                Ok(out) => out,
                Err(e) => return Ok(failed(e, asked)),
            };
        }
        if let Some(prompt) = pending_prompt(&out) {
            return Ok(TurnResult {
                message,
                asked,
                prompt: shown,
                end: TurnEnd::Asking,
                response: prompt["message"].as_str().unwrap_or_default().to_string(),
                citations: Vec::new(),
                answered_by: None,
            });
        }
        let state = serde_json::to_value(out.state.as_ref()).unwrap_or(Value::Null);
        let end = if out.state.cancelled {
            TurnEnd::Stopped
        } else {
            TurnEnd::Answered
        };
        Ok(TurnResult {
            message,
            asked,
            prompt: shown,
            end,
            response: out.state.response.clone(),
            citations: out.state.citations.clone(),
            answered_by: state.get("answered_by").filter(|v| !v.is_null()).cloned(),
        })
    }

    /// The resume value for `answer` at `prompt`: the id of the option it names (by label,
    /// a document title prefix, or its id), else the text itself.
    fn answer_to(&self, prompt: &Value, answer: &str) -> Value {
        let wanted = answer.to_lowercase();
        let options = prompt["options"].as_array().cloned().unwrap_or_default();
        for o in &options {
            let label = o["label"].as_str().unwrap_or_default().to_lowercase();
            let id = o["id"].as_str().unwrap_or_default();
            if label.starts_with(&wanted) || id.eq_ignore_ascii_case(answer) {
                return json!(id);
            }
        }
        json!(answer)
    }
}

/// The payload of the single pending prompt, if the run waits at one.
/// A prompt as the user reads it: its question, then its options' labels.
fn prompt_text(prompt: &Value) -> String {
    let options: Vec<&str> = prompt["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["label"].as_str().or_else(|| o.as_str()))
        .collect();
    let question = prompt["message"].as_str().unwrap_or_default();
    if options.is_empty() {
        question.to_string()
    } else {
        format!("{question} [{}]", options.join(" / "))
    }
}

fn pending_prompt(out: &RunOutcome<AgentState>) -> Option<Value> {
    match out.interrupts() {
        [one] => Some(one.value.clone()),
        _ => None,
    }
}
