//! The `format_response` node.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeMap;

use palgraph_nodes::format_response::format_response;
use palgraph_nodes::AgentStateUpdate;
use support::*;

#[tokio::test]
async fn titles_of_the_turns_documents_join_the_registry_which_never_shrinks() {
    let kit = kit().await;
    let (crr, crr_title) = kit.doc("Capital").await;
    let (aml, aml_title) = kit.doc("Anti-Money").await;
    let g = single("format_response", format_response, &kit.deps);
    let out = run(&g, "t", said("one").resolved_doc_ids(vec![crr.clone()])).await;
    assert_eq!(
        out.state.conversation_docs,
        BTreeMap::from([(crr_title.clone(), crr.clone())])
    );
    let out = run(&g, "t", said("two").resolved_doc_ids(vec![aml.clone()])).await;
    assert_eq!(
        out.state.conversation_docs,
        BTreeMap::from([(crr_title.clone(), crr.clone()), (aml_title, aml)])
    );
    let out = run(&g, "t", said("three")).await;
    assert_eq!(
        out.state.conversation_docs.len(),
        2,
        "a turn with no documents keeps the registry"
    );
    assert!(out.state.conversation_docs.contains_key(&crr_title));
}

#[tokio::test]
async fn a_cancelled_turn_merges_nothing() {
    let kit = kit().await;
    let (crr, _) = kit.doc("Capital").await;
    let g = single("format_response", format_response, &kit.deps);
    let input: AgentStateUpdate = said("x").resolved_doc_ids(vec![crr]).cancelled(true);
    let out = run(&g, "t", input).await;
    assert!(out.state.conversation_docs.is_empty());
}
