//! What AI calls cost: a price per model in USD per million tokens (input, output, and
//! input read from the provider's cache), as millionths of a dollar so sums stay exact.
//! [`BUILT_IN`] holds common models' list prices; the control plane's edits (Admin API,
//! `ai_prices` in the store) override them. A dated or suffixed model name
//! (`gpt-4o-mini-2024-07-18`) takes the price of the longest listed name it starts with.

use serde::{Deserialize, Serialize};

/// USD per million tokens, in millionths of a dollar (`150_000` is $0.15).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    pub input: u64,
    pub output: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_input: u64,
}

const fn usd(input: f64, output: f64, cached_input: f64) -> Price {
    Price {
        input: (input * 1e6) as u64,
        output: (output * 1e6) as u64,
        cached_input: (cached_input * 1e6) as u64,
    }
}

/// List prices (USD per million tokens) of common models, 2025-26; edit them through the
/// Admin API when a provider changes its prices or a contract has its own.
pub const BUILT_IN: &[(&str, Price)] = &[
    ("gpt-5", usd(1.25, 10.0, 0.125)),
    ("gpt-5-mini", usd(0.25, 2.0, 0.025)),
    ("gpt-5-nano", usd(0.05, 0.4, 0.005)),
    ("gpt-4.1", usd(2.0, 8.0, 0.5)),
    ("gpt-4.1-mini", usd(0.4, 1.6, 0.1)),
    ("gpt-4.1-nano", usd(0.1, 0.4, 0.025)),
    ("gpt-4o", usd(2.5, 10.0, 1.25)),
    ("gpt-4o-mini", usd(0.15, 0.6, 0.075)),
    ("o3", usd(2.0, 8.0, 0.5)),
    ("o3-mini", usd(1.1, 4.4, 0.55)),
    ("o4-mini", usd(1.1, 4.4, 0.275)),
    ("gpt-3.5-turbo", usd(0.5, 1.5, 0.5)),
    ("text-embedding-3-small", usd(0.02, 0.0, 0.0)),
    ("text-embedding-3-large", usd(0.13, 0.0, 0.0)),
    ("claude-opus-4-1", usd(15.0, 75.0, 1.5)),
    ("claude-opus-4", usd(15.0, 75.0, 1.5)),
    ("claude-sonnet-4-5", usd(3.0, 15.0, 0.3)),
    ("claude-sonnet-4", usd(3.0, 15.0, 0.3)),
    ("claude-haiku-4-5", usd(1.0, 5.0, 0.1)),
    ("claude-3-5-haiku", usd(0.8, 4.0, 0.08)),
    ("gemini-2.5-pro", usd(1.25, 10.0, 0.31)),
    ("gemini-2.5-flash", usd(0.3, 2.5, 0.075)),
    ("mistral-large", usd(2.0, 6.0, 2.0)),
    ("mistral-small", usd(0.1, 0.3, 0.1)),
];

/// The price of `model`: from `edits` (the control plane's table) first, then
/// [`BUILT_IN`]; by exact name, else by the longest listed name followed by `-`.
pub fn price_of(model: &str, edits: &[(String, Price)]) -> Option<Price> {
    let listed = edits
        .iter()
        .map(|(m, p)| (m.as_str(), *p))
        .chain(BUILT_IN.iter().map(|(m, p)| (*m, *p)));
    let mut best: Option<(usize, Price)> = None;
    for (name, price) in listed {
        let fits = model == name
            || model
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('-'));
        let better = best.is_none_or(|(len, _)| name.len() > len);
        if fits && better {
            best = Some((name.len(), price));
        }
        if fits && model == name {
            // An exact name wins, and edits come first.
            return Some(price);
        }
    }
    best.map(|(_, p)| p)
}

/// The cost in USD of `prompt` tokens (of which `cached` came from the provider's cache)
/// and `completion` tokens at `price`.
pub fn cost_usd(price: Price, prompt: u64, cached: u64, completion: u64) -> f64 {
    let cached = cached.min(prompt);
    let micro_per_million = u128::from(prompt - cached) * u128::from(price.input)
        + u128::from(cached) * u128::from(price.cached_input)
        + u128::from(completion) * u128::from(price.output);
    micro_per_million as f64 / 1e12
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_names_take_the_longest_listed_prefix_and_edits_win() {
        let mini = price_of("gpt-4o-mini-2024-07-18", &[]).expect("listed");
        assert_eq!(mini, usd(0.15, 0.6, 0.075));
        assert_eq!(price_of("gpt-4o", &[]), Some(usd(2.5, 10.0, 1.25)));
        assert_eq!(price_of("gpt-4omega", &[]), None);
        let edits = vec![("gpt-4o-mini".to_string(), usd(1.0, 2.0, 0.5))];
        assert_eq!(price_of("gpt-4o-mini", &edits), Some(usd(1.0, 2.0, 0.5)));
        assert_eq!(
            price_of("gpt-4o-mini-2024-07-18", &edits),
            Some(usd(1.0, 2.0, 0.5))
        );
    }

    #[test]
    fn cost_charges_cached_prompt_tokens_at_their_price() {
        let p = usd(2.5, 10.0, 1.25);
        // 1M prompt tokens, half cached, and 100k completion tokens.
        let c = cost_usd(p, 1_000_000, 500_000, 100_000);
        assert!((c - (1.25 + 0.625 + 1.0)).abs() < 1e-9, "{c}");
    }
}
