//! What tokens cost: USD per million prompt and completion tokens, per model.
//!
//! The built-in list holds OpenAI's list prices for common models at the time of writing;
//! a model is found by its longest matching name prefix (`gpt-4o-mini-2024-07-18` costs
//! what `gpt-4o-mini` costs). Unknown models (a local server, say) cost 0.

/// Prices per model.
#[derive(Clone, Debug, PartialEq)]
pub struct Prices {
    /// (model prefix, USD per 1M prompt tokens, USD per 1M completion tokens).
    table: Vec<(String, f64, f64)>,
    /// One price for every model, when set.
    flat: Option<(f64, f64)>,
}

const LIST: [(&str, f64, f64); 12] = [
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-5-mini", 0.25, 2.00),
    ("gpt-5", 1.25, 10.00),
    ("o4-mini", 1.10, 4.40),
    ("o3-mini", 1.10, 4.40),
    ("o3", 2.00, 8.00),
    ("gpt-3.5-turbo", 0.50, 1.50),
];

impl Default for Prices {
    fn default() -> Self {
        Prices {
            table: LIST
                .iter()
                .map(|(m, i, o)| ((*m).to_string(), *i, *o))
                .collect(),
            flat: None,
        }
    }
}

impl Prices {
    /// One price for every model.
    pub fn flat(input_per_mtok: f64, output_per_mtok: f64) -> Self {
        Prices {
            table: Vec::new(),
            flat: Some((input_per_mtok, output_per_mtok)),
        }
    }

    /// The same list with `model` (a name prefix) priced as given.
    #[must_use]
    pub fn with(
        mut self,
        model: impl Into<String>,
        input_per_mtok: f64,
        output_per_mtok: f64,
    ) -> Self {
        self.table
            .push((model.into(), input_per_mtok, output_per_mtok));
        self
    }

    /// The cost of a call in USD.
    pub fn cost(&self, model: &str, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        let price = self.flat.or_else(|| {
            self.table
                .iter()
                .filter(|(prefix, _, _)| model.starts_with(prefix.as_str()))
                .max_by_key(|(prefix, _, _)| prefix.len())
                .map(|(_, i, o)| (*i, *o))
        });
        match price {
            Some((input, output)) => {
                (prompt_tokens as f64 * input + completion_tokens as f64 * output) / 1_000_000.0
            }
            None => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_unknown_models_are_free() {
        let p = Prices::default();
        let mini = p.cost("gpt-4o-mini-2024-07-18", 1_000_000, 1_000_000);
        assert!((mini - 0.75).abs() < 1e-9);
        let full = p.cost("gpt-4o", 1_000_000, 0);
        assert!((full - 2.5).abs() < 1e-9);
        assert_eq!(p.cost("llama3", 1000, 1000), 0.0);
        let custom = p
            .with("llama3", 1.0, 2.0)
            .cost("llama3:8b", 500_000, 500_000);
        assert!((custom - 1.5).abs() < 1e-9);
        assert!((Prices::flat(1.0, 1.0).cost("x", 2_000_000, 0) - 2.0).abs() < 1e-9);
    }
}
