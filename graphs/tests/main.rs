//! PalAssist as a graph, one module per concern, in one binary (it links once): its turns,
//! prompts and answers, and the evaluation sets with the offline model and a model behind
//! the OpenAI-compatible fake. `analysed_once.rs` counts the process's analyses, so it is a
//! binary of its own.

#[path = "../../nodes/tests/fake_openai/mod.rs"]
mod fake_openai;
mod support;

mod eval;
mod eval_model;
mod palassist;
mod palassist_answers;
mod palassist_prompts;
