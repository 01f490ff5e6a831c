//! PalAssist's nodes and documents store through their public API, one module per concern,
//! in one binary (it links once): the nodes against the sample library, the documents
//! store on SQLite and Postgres, the OpenAI client and embeddings against fakes on the real
//! wire format.

mod fake_embeddings;
mod fake_openai;
mod support;

mod actions;
mod doc_resolver;
mod document_changes;
mod documents;
mod embeddings;
mod format_response;
mod intent_resolver;
mod openai_client;
mod validate_inputs;
