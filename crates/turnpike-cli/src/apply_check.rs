//! The check `turnpike apply` runs before it writes anything (and `--dry-run` runs too):
//! the whole file compiled as a gateway would compile it (`turnpike_config::compile`, the
//! same compile the control plane runs on each API it stores), against the control
//! plane's tiers as well as the file's, so every problem of every API is listed at once
//! and a bad second API stops the run before the first is touched.

use serde_json::{json, Value};
use turnpike_model::GatewayFile;

/// The tier families of the Admin REST API, with the file's list each one fills.
const FAMILIES: [&str; 3] = ["subscription", "application", "advanced"];

/// The control plane's tier names, by family (`None`: the caller may not list them, e.g.
/// a publisher without the admin role).
pub(crate) type ServerTiers = Option<[Vec<String>; 3]>;

/// The names in a `GET /throttling/policies/{family}` answer.
pub(crate) fn names(list: &Value) -> Vec<String> {
    list["list"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The file with the control plane's tiers it does not declare added by name (their
/// limits do not matter to a reference check).
fn with_server_tiers(file: &GatewayFile, server: &[Vec<String>; 3]) -> GatewayFile {
    let mut f = file.clone();
    let th = &mut f.throttling;
    let declared: [Vec<&str>; 3] = [
        th.subscription_tiers
            .iter()
            .map(|t| t.name.as_str())
            .collect(),
        th.application_tiers
            .iter()
            .map(|t| t.name.as_str())
            .collect(),
        th.advanced_policies
            .iter()
            .map(|t| t.name.as_str())
            .collect(),
    ];
    let missing: Vec<(usize, Value)> = server
        .iter()
        .enumerate()
        .flat_map(|(i, names)| {
            names
                .iter()
                .filter(|n| !declared[i].contains(&n.as_str()))
                .map(move |n| (i, json!({ "name": n })))
                .collect::<Vec<_>>()
        })
        .collect();
    for (i, t) in missing {
        match i {
            0 => th.subscription_tiers.extend(serde_json::from_value(t).ok()),
            1 => th.application_tiers.extend(serde_json::from_value(t).ok()),
            _ => th.advanced_policies.extend(serde_json::from_value(t).ok()),
        }
    }
    f
}

/// A problem about a tier the control plane may hold (unknowable without the admin role).
fn names_a_tier(message: &str) -> bool {
    [
        "no subscription tier named",
        "no application tier named",
        "no advanced policy named",
    ]
    .iter()
    .any(|p| message.starts_with(p))
}

/// A problem the control plane resolves itself: it adds its own key manager as the
/// issuer of every API it serves, so a file naming no issuer still has one there.
fn issuer_supplied_by_the_control_plane(message: &str) -> bool {
    message.starts_with("this API accepts only OAuth2 tokens but security.issuers")
}

/// Every problem of `file` as `path: message` lines (none: the file can be applied).
pub(crate) fn problems(file: &GatewayFile, server: &ServerTiers) -> Vec<String> {
    let checked = match server {
        Some(tiers) => with_server_tiers(file, tiers),
        None => file.clone(),
    };
    let Err(e) = turnpike_config::compile(checked, 0) else {
        return Vec::new();
    };
    if e.problems().is_empty() {
        return vec![e.to_string()];
    }
    e.problems()
        .iter()
        // Without the control plane's tier names, the server checks tier references.
        .filter(|p| server.is_some() || !names_a_tier(&p.message))
        .filter(|p| !issuer_supplied_by_the_control_plane(&p.message))
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect()
}

/// The REST path listing one family's tiers.
pub(crate) fn tiers_path(i: usize) -> String {
    format!("/api/am/admin/v1/throttling/policies/{}", FAMILIES[i])
}
