//! The check `POST /api/am/publisher/v1/apply` runs before it writes anything (a dry run
//! runs it too): the whole file compiled as a gateway would compile it
//! (`turnpike_config::compile`, the same compile the control plane runs on each API it
//! stores), against the control plane's tiers as well as the file's, so every problem of
//! every API is listed at once and a bad second API stops the run before the first is
//! touched.

use serde_json::{json, Value};
use turnpike_model::GatewayFile;
use turnpike_store::{Store, TierKind};

use crate::error::{ApiResult, FieldError};

/// The tier families, in the order of the file's three lists.
const FAMILIES: [TierKind; 3] = [
    TierKind::Subscription,
    TierKind::Application,
    TierKind::Advanced,
];

/// The control plane's tier names, by family.
async fn server_tiers(store: &Store) -> ApiResult<[Vec<String>; 3]> {
    let mut out: [Vec<String>; 3] = Default::default();
    for (names, kind) in out.iter_mut().zip(FAMILIES) {
        *names = store
            .list_tiers(kind)
            .await?
            .into_iter()
            .map(|t| t.name)
            .collect();
    }
    Ok(out)
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

/// A problem the control plane resolves itself: it adds its own key manager as the
/// issuer of every API it serves, so a file naming no issuer still has one there.
fn issuer_supplied_by_the_control_plane(message: &str) -> bool {
    message.starts_with("this API accepts only OAuth2 tokens but security.issuers")
}

/// Every problem of `file` (none: the file can be applied), each named by its path in
/// the file (`apis[1].throttling`).
pub(crate) async fn problems(store: &Store, file: &GatewayFile) -> ApiResult<Vec<FieldError>> {
    let checked = with_server_tiers(file, &server_tiers(store).await?);
    let mut out = unoffered_tiers(&checked);
    let Err(e) = turnpike_config::check(checked, 0) else {
        return Ok(out);
    };
    if e.problems().is_empty() {
        out.push(FieldError {
            field: String::new(),
            message: e.to_string(),
        });
        return Ok(out);
    }
    out.extend(
        e.problems()
            .iter()
            .filter(|p| !issuer_supplied_by_the_control_plane(&p.message))
            .map(|p| FieldError {
                field: p.path.clone(),
                message: p.message.clone(),
            }),
    );
    Ok(out)
}

/// The tiers an API offers that are no subscription tier (gateways do not read them, so
/// their compile does not check them).
fn unoffered_tiers(file: &GatewayFile) -> Vec<FieldError> {
    let known = &file.throttling.subscription_tiers;
    let builtin = ["Unlimited"];
    file.apis
        .iter()
        .enumerate()
        .flat_map(|(i, api)| {
            api.subscription_tiers
                .iter()
                .enumerate()
                .filter(|(_, t)| {
                    !builtin.contains(&t.as_str()) && !known.iter().any(|k| &k.name == *t)
                })
                .map(move |(j, t)| FieldError {
                    field: format!("apis[{i}].subscription_tiers[{j}]"),
                    message: format!("{t:?} is not a subscription tier"),
                })
        })
        .collect()
}
