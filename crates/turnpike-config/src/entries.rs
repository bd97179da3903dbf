//! Desugars each API's sections into the policy entries its chain is built from: the
//! file keeps its user-facing sections (`soap:`, `deprecation:`, `policies:`,
//! `lifecycle:`, `max_body_size:`, `auth:` with the file's `security:`, `throttling:`,
//! `mediation:`, `graphql:`), and `crate::chain` sees one list per API. The entries
//! borrow the spec: the `ApiSpec` is never rewritten, so the file format, the wire JSON
//! and the sync hashes stay as they are.

use turnpike_model::ai::AiSpec;
use turnpike_model::graphql::GraphqlSpec;
use turnpike_model::policy::PolicySpec;
use turnpike_model::soap::SoapSpec;
use turnpike_model::{ApiSpec, Quantity};

/// One policy entry of an API: its document path and what it asks for.
pub(crate) struct Entry<'a> {
    pub(crate) at: String,
    pub(crate) spec: EntrySpec<'a>,
}

/// What an entry asks for, by kind.
pub(crate) enum EntrySpec<'a> {
    /// The `soap:` section (pass-through or SOAP-to-REST).
    Soap(&'a SoapSpec),
    /// The `ai:` section (an LLM API).
    Ai(&'a AiSpec),
    /// A `DEPRECATED` lifecycle or `deprecation:` dates (both read from the API).
    Deprecation(&'a ApiSpec),
    /// One entry of the `policies:` list (it must name exactly one kind).
    Declared(&'a PolicySpec),
    /// Resources' `cache:` on an API without a `cache` entry (with one, that entry
    /// builds them).
    ResourceCaches,
    /// A `lifecycle:` that refuses every request (read by `turnpike_edge::lifecycle::prepare`).
    Lifecycle,
    /// `max_body_size:` (the default when absent).
    BodyLimit(&'a Option<Quantity>),
    /// `auth:` with the file's `security:`.
    Auth,
    /// `throttling:` of the API, its resources or its GraphQL operations.
    Throttle,
    /// `mediation:` of the API or its resources.
    Mediation,
    /// `graphql:`.
    Graphql(&'a GraphqlSpec),
    /// The `tokens:` budgets of the `throttling:` section that can reach the API.
    TokenBudget,
}

/// API `i`'s entries, in the order their problems are reported.
pub(crate) fn entries(i: usize, api: &ApiSpec) -> Vec<Entry<'_>> {
    let at = |what: &str| format!("apis[{i}].{what}");
    let mut out = Vec::new();
    let mut push = |at: String, spec| out.push(Entry { at, spec });
    if let Some(soap) = &api.soap {
        push(at("soap"), EntrySpec::Soap(soap));
    }
    if let Some(ai) = &api.ai {
        push(at("ai"), EntrySpec::Ai(ai));
    }
    push(at("deprecation"), EntrySpec::Deprecation(api));
    for (j, spec) in api.policies.iter().enumerate() {
        push(at(&format!("policies[{j}]")), EntrySpec::Declared(spec));
    }
    let api_cache = api.policies.iter().any(|p| p.cache.is_some());
    if !api_cache && api.resources.iter().any(|r| r.cache.is_some()) {
        push(at("resources"), EntrySpec::ResourceCaches);
    }
    push(at("lifecycle"), EntrySpec::Lifecycle);
    push(
        at("max_body_size"),
        EntrySpec::BodyLimit(&api.max_body_size),
    );
    push(at("auth"), EntrySpec::Auth);
    push(at("throttling"), EntrySpec::Throttle);
    push(at("mediation"), EntrySpec::Mediation);
    if let Some(g) = &api.graphql {
        push(at("graphql"), EntrySpec::Graphql(g));
    }
    push(at("throttling"), EntrySpec::TokenBudget);
    out
}
