//! The LangGraph Agent Server API's bodies, as the official SDKs send and read them: typed,
//! so handlers read fields instead of probing JSON, and the OpenAPI document is generated
//! from them.

mod requests;
mod responses;
mod run_fields;

pub(crate) use requests::*;
pub(crate) use responses::*;
pub(crate) use run_fields::{Goto, RunConfigBody, StreamModes};
