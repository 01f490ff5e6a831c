//! A document is analysed once, when it is stored: the chat turns after its upload (a
//! question that names a document, one that names none and so ranks the whole library, a
//! summary, a question about the library itself) analyse nothing, however large the
//! documents they do not quote. Counted, not timed, so it holds on a loaded machine.
//!
//! One test in this binary: the count of analyses is the process's.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use palgraph_graphs::eval::{Case, Runner, TurnEnd};
use palgraph_nodes::analyses_made;
use palgraph_nodes::llm::OfflineLlm;

/// A handbook of about 200 KiB: a policy's sections many times over, each a rule of its own.
fn handbook() -> String {
    let mut text = String::from("This handbook applies to Group Entity 7 only.\n\n");
    let mut n = 0;
    while text.len() < 200 * 1024 {
        n += 1;
        text.push_str(&format!(
            "## {n}. Vendor review {n}\n\n{n}.1 The vendor manager must review supplier {n} every {} months and record the review in the vendor register.\n\n{n}.2 Supplier {n} invoices above EUR {} need the approval of the Head of Procurement.\n\n",
            n % 12 + 1,
            n * 100
        ));
    }
    text
}

fn case(n: usize, say: &str) -> Case {
    serde_json::from_value(serde_json::json!({
        "id": format!("once-{n}"),
        "category": "inquire",
        "turns": [{"say": say}]
    }))
    .unwrap()
}

#[tokio::test]
async fn turns_after_an_upload_analyse_no_document() {
    let runner = Runner::over(
        &[],
        &[("Group Entity 7 Vendor Handbook".to_string(), handbook())],
        Arc::new(OfflineLlm::new()),
    )
    .await
    .unwrap();
    let after_upload = analyses_made();
    assert!(
        after_upload >= 6,
        "the samples and the handbook were analysed as stored"
    );
    let turns = [
        "What does the AML policy say about politically exposed persons?",
        "How long must recorded telephone calls be kept?",
        "Summarize the data retention policy 2024",
        "Which documents do I have?",
        "How often must the vendor manager review supplier 40?",
    ];
    for round in 0..2 {
        for (n, say) in turns.iter().enumerate() {
            let results = runner
                .run_case(&case(n, say), &format!("t-{round}-{n}"))
                .await
                .unwrap();
            assert_eq!(results[0].end, TurnEnd::Answered, "{say}: {results:?}");
            assert_eq!(
                analyses_made(),
                after_upload,
                "\"{say}\" analysed a document again"
            );
        }
    }
}
