//! What a compiled token limit is: the part of a call's tokens it counts and the
//! values it is keyed by (the kinds' plain data; `tokens.rs` holds and charges them).

use turnpike_policy::ai::{TokenEstimate, TokenUsage};
use turnpike_policy::RuleId;

use crate::facts::RequestFacts;

/// Which tokens a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenPart {
    Total,
    Prompt,
    Completion,
}

impl TokenPart {
    /// How labels and messages name what is counted.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TokenPart::Total => "tokens",
            TokenPart::Prompt => "prompt-tokens",
            TokenPart::Completion => "completion-tokens",
        }
    }

    pub(crate) fn of_estimate(self, e: &TokenEstimate) -> u64 {
        match self {
            TokenPart::Total => e.total(),
            TokenPart::Prompt => e.prompt,
            TokenPart::Completion => e.max_completion,
        }
    }

    pub(crate) fn of_usage(self, u: &TokenUsage) -> u64 {
        match self {
            // A provider that reports no total: its parts.
            TokenPart::Total if u.total == 0 => u.prompt.saturating_add(u.completion),
            TokenPart::Total => u.total,
            TokenPart::Prompt => u.prompt,
            TokenPart::Completion => u.completion,
        }
    }
}

/// A value a budget is counted per, besides its level's scope.
#[derive(Debug)]
pub(crate) enum TokenKey {
    /// The model the request is sent to (its body's `model`, read after the AI kind's
    /// routing rewrote it).
    Model,
    /// The caller's end user (as application tiers count it).
    User,
    Header(Box<str>),
    Claim(Box<str>),
}

impl TokenKey {
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        let named = |name: &str| (!name.is_empty()).then(|| Box::<str>::from(name));
        let key = match s.split_once(':') {
            None if s == "model" => Some(TokenKey::Model),
            None if s == "user" => Some(TokenKey::User),
            Some(("header", n)) => {
                named(n).map(|n| TokenKey::Header(n.to_ascii_lowercase().into()))
            }
            Some(("claim", n)) => named(n).map(TokenKey::Claim),
            _ => None,
        };
        key.ok_or_else(|| {
            format!("unknown token key {s:?} (model, user, header:NAME or claim:NAME)")
        })
    }

    pub(crate) fn value<'a>(&self, f: &'a RequestFacts<'_>, model: Option<&'a str>) -> &'a str {
        let v = match self {
            TokenKey::Model => model,
            TokenKey::User => f.user,
            TokenKey::Header(n) => f.lookup.header(n),
            TokenKey::Claim(n) => f.lookup.claim(n),
        };
        v.unwrap_or("")
    }
}

/// One compiled token limit and the keys it is counted per.
#[derive(Debug)]
pub(crate) struct TokenRef {
    pub rule: RuleId,
    pub by: Box<[TokenKey]>,
}
