//! PalAssist as a graph, one module per concern, in one binary (it links once): its turns,
//! prompts and answers, a document analysed once, and the evaluation sets with the offline
//! model and a model behind the OpenAI-compatible fake.

#[path = "../../nodes/tests/fake_openai/mod.rs"]
mod fake_openai;
mod support;

mod analysed_once;
mod eval;
mod eval_model;
mod palassist;
mod palassist_answers;
mod palassist_prompts;
