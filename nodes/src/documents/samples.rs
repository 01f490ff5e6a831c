//! Sample documents written for palgraph, so a new user has something to talk about: an
//! excerpt of a capital requirements regulation, an AML/KYC policy, two versions of a data
//! retention policy (2023 and 2024: compare them) and an incident response procedure.

use super::{DocumentError, DocumentStore};

/// A sample document.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Its title.
    pub title: String,
    /// Its content (Markdown).
    pub content: String,
}

const SOURCES: [&str; 5] = [
    include_str!("../../samples/capital_requirements_regulation.md"),
    include_str!("../../samples/aml_kyc_policy.md"),
    include_str!("../../samples/data_retention_policy_2023.md"),
    include_str!("../../samples/data_retention_policy_2024.md"),
    include_str!("../../samples/incident_response_procedure.md"),
];

/// The sample documents: each file's `# ` heading is its title, the rest its content
/// (read by [`title_and_body`](super::title_and_body), as an upload is).
pub fn samples() -> Vec<Sample> {
    SOURCES
        .iter()
        .map(|source| {
            let (title, content) = super::title_and_body("sample.md", source);
            Sample { title, content }
        })
        .collect()
}

/// Gives `owner` the sample documents when they have none yet; returns how many were added.
///
/// # Errors
/// A storage error.
pub async fn seed_samples(store: &dyn DocumentStore, owner: &str) -> Result<usize, DocumentError> {
    if !store.titles(owner).await?.is_empty() {
        return Ok(0);
    }
    let samples = samples();
    for sample in &samples {
        store.create(owner, &sample.title, &sample.content).await?;
    }
    Ok(samples.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_has_a_title_and_content() {
        let samples = samples();
        assert_eq!(samples.len(), 5);
        for s in samples {
            assert!(!s.title.is_empty() && !s.title.starts_with('#'));
            assert!(s.content.len() > 200, "{} is too short", s.title);
        }
    }
}
