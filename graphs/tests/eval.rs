//! PalAssist's evaluation sets (`graphs/eval`) run through the real graph with the offline
//! model, in process (in-memory document store seeded with the samples and the library,
//! in-memory checkpointer): the offline model must hold the scores it was measured at, on
//! the development set and on the held-out set alike, and the sets must stay sets worth
//! running.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;

use palgraph_graphs::eval::{self, Category, EvalSet, Part, Runner};
use palgraph_nodes::llm::OfflineLlm;

/// Floors a little under the figures measured on the commit that set them: the share of
/// the set's cases that pass every check, and the most false "meets" its audits may make.
const FLOORS: [(Part, f64, usize); 2] = [(Part::Dev, 0.55, 0), (Part::HeldOut, 0.48, 0)];

#[tokio::test]
async fn offline_model_holds_its_measured_eval_scores() {
    for (part, floor, false_meets) in FLOORS {
        let set = EvalSet::shipped(part).unwrap();
        let report = eval::run(&set, Arc::new(OfflineLlm::new())).await.unwrap();
        let table = report.table();
        let passed = report.passed() as f64 / report.cases.len() as f64;
        assert!(
            passed >= floor,
            "{}: {passed:.3} of the cases passed, under the floor {floor}\n{table}",
            part.as_str()
        );
        assert!(
            report.false_meets() <= false_meets,
            "{}: {} false meets\n{table}",
            part.as_str(),
            report.false_meets()
        );
    }
}

/// The floor of the development set's families each run alone, over its own documents and
/// the samples (a new team's library), a little under the figure measured.
const ALONE_FLOOR: f64 = 0.6;

#[tokio::test]
async fn the_families_alone_hold_their_measured_score() {
    let families = EvalSet::families(EvalSet::shipped_dir().join(Part::Dev.as_str())).unwrap();
    assert!(families.len() >= 10, "{} families", families.len());
    let (mut passed, mut cases, mut false_meets) = (0, 0, 0);
    for family in &families {
        assert!(family.libraries.len() == 1 && !family.cases.is_empty());
        let report = eval::run(family, Arc::new(OfflineLlm::new()))
            .await
            .unwrap();
        passed += report.passed();
        cases += report.cases.len();
        false_meets += report.false_meets();
    }
    let share = passed as f64 / cases as f64;
    assert!(
        share >= ALONE_FLOOR,
        "{passed} of {cases} cases passed, under the floor {ALONE_FLOOR}"
    );
    assert_eq!(false_meets, 0);
}

#[tokio::test]
async fn the_sets_cover_every_category_over_a_library_of_sixty_documents() {
    let mut seen = HashSet::new();
    for part in Part::ALL {
        let set = EvalSet::shipped(part).unwrap();
        assert!(
            set.cases.len() >= 120,
            "{}: {} cases",
            part.as_str(),
            set.cases.len()
        );
        for category in Category::ALL {
            let n = set.cases.iter().filter(|c| c.category == category).count();
            assert!(n >= 2, "{}: {category} has only {n} cases", part.as_str());
        }
        let runner = Runner::new(&set, Arc::new(OfflineLlm::new()))
            .await
            .unwrap();
        assert!(
            runner.library().len() >= 60,
            "{} documents",
            runner.library().len()
        );
        for case in &set.cases {
            assert!(seen.insert(case.id.clone()), "{} is not unique", case.id);
            let checked: Vec<_> = case
                .turns
                .iter()
                .filter_map(|t| t.expect.as_ref())
                .collect();
            assert!(!checked.is_empty(), "{} checks no answer", case.id);
            for expect in checked {
                assert!(
                    !expect.must.is_empty()
                        || !expect.must_not.is_empty()
                        || !expect.verdicts.is_empty()
                        || expect.stops
                        || expect.asks.is_some(),
                    "{}: an expectation needs something to check",
                    case.id
                );
                for d in expect.cites.iter().chain(&expect.not_cites) {
                    assert!(
                        runner.document(d).is_some(),
                        "{}: no document \"{d}\"",
                        case.id
                    );
                }
            }
            for t in &case.turns {
                for d in &t.mention {
                    assert!(
                        runner.document(d).is_some(),
                        "{}: no document \"{d}\"",
                        case.id
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn library_files_are_titled_by_their_heading_and_named_by_their_path() {
    let set = EvalSet::shipped(Part::Dev).unwrap();
    let runner = Runner::new(&set, Arc::new(OfflineLlm::new()))
        .await
        .unwrap();
    let vendor = runner.document("Vendor Management Standard").unwrap();
    assert!(
        !vendor.content.starts_with('#'),
        "the heading left the body"
    );
    assert!(runner.document("vendor.md").is_none());
    assert!(runner
        .document("Memo: Hybrid Working and Clean Desk")
        .is_some());
    let v4 = runner.document("file:heldout/dealing/pad_v4.md").unwrap();
    let v5 = runner.document("file:heldout/dealing/pad_v5.md").unwrap();
    assert_eq!(v4.title, v5.title, "two versions under one title");
    assert_ne!(v4.id, v5.id);
    assert!(runner.names("file:heldout/dealing/pad_v5.md", &v5.id, &v5.title));
    assert!(!runner.names("file:heldout/dealing/pad_v5.md", &v4.id, &v4.title));
}
