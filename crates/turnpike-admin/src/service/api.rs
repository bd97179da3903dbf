//! Writing an API, for the Publisher routes and the importers alike: the REST body read
//! against defaults, checked field by field, against the subscription tiers and by the
//! gateways' own compile (the control plane refuses what every gateway would refuse), then
//! stored in one transaction.

use axum::response::Response;
use http::StatusCode;
use serde_json::Value;
use turnpike_store::{ApiInput, LifecycleState, TierKind};

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::written;
use crate::service::api_body::parse_api;
use crate::AppState;

/// Field errors for offered tiers that are not subscription tiers.
async fn check_tiers(state: &AppState, tiers: &[String]) -> ApiResult<Vec<FieldError>> {
    let known = state.inner.store.list_tiers(TierKind::Subscription).await?;
    Ok(tiers
        .iter()
        .enumerate()
        .filter(|(_, t)| !known.iter().any(|k| &k.name == *t))
        .map(|(i, t)| FieldError {
            field: format!("policies[{i}]"),
            message: format!("{t:?} is not a subscription tier"),
        })
        .collect())
}

/// The API `v` describes (fields it leaves out from `defaults`), with every field, tier
/// and compile error at once.
pub(crate) async fn validated(
    state: &AppState,
    v: &Value,
    defaults: Option<&ApiInput>,
) -> ApiResult<ApiInput> {
    let (input, mut f) = parse_api(v, defaults);
    // Tiers are checked even when other fields are invalid, so one 400 lists them all;
    // the gateways' compile needs a readable API, so it runs once the fields are valid.
    let tiers = match &input {
        Some(i) => i.tiers.clone(),
        None if f.errors.iter().any(|e| e.field.starts_with("policies")) => Vec::new(),
        None => v["policies"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    };
    f.errors.extend(check_tiers(state, &tiers).await?);
    if let (Some(i), true) = (&input, f.errors.is_empty()) {
        f.errors = check_compiles(state, i).await?;
    }
    f.into_result()?;
    input.ok_or_else(|| ApiError::bad_request("invalid API"))
}

/// What the gateways' own compile finds wrong in an API (body sizes, timeouts, hosts,
/// resource templates, advanced policies by name), as field errors: the control plane
/// refuses what every gateway would refuse.
async fn check_compiles(state: &AppState, input: &ApiInput) -> ApiResult<Vec<FieldError>> {
    let api = turnpike_store::Api {
        id: String::new(),
        name: input.name.clone(),
        context: input.context.clone(),
        version: input.version.clone(),
        is_default_version: input.is_default,
        lifecycle_status: LifecycleState::Published,
        api_type: input.api_type.clone(),
        description: String::new(),
        // An API is published only with endpoints; that rule is the lifecycle's. An AI
        // API's endpoints are its providers' URLs (`turnpike_ai::expand`), a multiplexed
        // MCP endpoint's its `mcp.servers`.
        endpoints: if input.endpoints.is_empty()
            && !turnpike_store::endpoints_in_options(&input.options)
        {
            vec!["http://127.0.0.1:9".into()]
        } else {
            input.endpoints.clone()
        },
        sandbox_endpoints: input.sandbox_endpoints.clone(),
        resources: input.resources.clone(),
        policies: input.tiers.clone(),
        options: input.options.clone(),
        // A SOAP API's `soap:` section: the gateways import its WSDL.
        definition: input.definition.clone(),
        provider: String::new(),
        revision: 0,
        created_time: 0,
        last_updated_time: 0,
    };
    let mut spec = match crate::snapshot::index::entry_spec(&api, false, None) {
        Ok(s) => s,
        Err(e) => {
            return Ok(vec![FieldError {
                field: String::new(),
                message: e.to_string(),
            }])
        }
    };
    // Scopes and open resources need a secured API; which credentials does not matter.
    spec.auth = Some(turnpike_model::security::ApiAuthSpec {
        oauth2: false,
        api_key: true,
        subscription: false,
        ..Default::default()
    });
    let file = turnpike_model::GatewayFile {
        apis: vec![spec],
        throttling: crate::snapshot::throttling::throttling_spec(&state.inner.store).await?,
        ..Default::default()
    };
    Ok(match turnpike_config::check(file, 0) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .problems()
            .iter()
            .map(|p| FieldError {
                field: rest_field(&p.path),
                message: p.message.clone(),
            })
            .collect(),
    })
}

/// A file path of the one-API check (`apis[0].max_body_size`) as the REST body's field.
fn rest_field(path: &str) -> String {
    let Some(rest) = path.strip_prefix("apis[0].") else {
        return path.to_string();
    };
    for (api_field, file_field) in turnpike_model::rest::OPTION_FIELDS {
        if rest == file_field || rest.starts_with(&format!("{file_field}.")) {
            return rest.replacen(file_field, api_field, 1);
        }
    }
    if let Some(field) = crate::service::cache_body::rest_field(rest) {
        return field;
    }
    if let Some(field) = rest.strip_prefix("policies[0].cors") {
        return crate::service::cors_body::rest_field(field);
    }
    match rest.strip_suffix(".throttling") {
        Some(res) if res.starts_with("resources[") => format!("{res}.throttlingPolicy"),
        _ => rest.to_string(),
    }
}

/// Stores a new API (default security: OAuth2 and a subscription) and answers 201.
pub(crate) async fn insert_api(
    s: &AppState,
    caller: &Caller,
    input: &ApiInput,
    verb: &str,
) -> ApiResult<Response> {
    let mut tx = s.inner.store.begin_write().await?;
    let api = tx.create_api(input, &caller.name).await?;
    tx.commit(
        &caller.name,
        &format!("{verb} API {} {}", api.context, api.version),
    )
    .await?;
    Ok(written(StatusCode::CREATED, &api))
}

/// Applies `patch` to `current` and stores it if the API is still at `expected`.
pub(crate) async fn patch_once(
    s: &AppState,
    caller: &Caller,
    current: turnpike_store::Api,
    expected: Option<i64>,
    patch: &Value,
) -> ApiResult<Response> {
    let mut body = serde_json::to_value(&current).map_err(|_| ApiError::internal())?;
    // A patch that changes a read-only field is refused, not ignored.
    let read_only: Vec<FieldError> = crate::service::api_body::READ_ONLY
        .iter()
        .filter(|ro| patch.get(**ro).is_some_and(|p| Some(p) != body.get(**ro)))
        .map(|ro| FieldError {
            field: ro.to_string(),
            message: "is read-only".into(),
        })
        .collect();
    if !read_only.is_empty() {
        return Err(ApiError::invalid(read_only));
    }
    crate::merge::merge_patch(&mut body, patch);
    // Fields the patch removed go back to their defaults, not to the current values.
    store_update_with(s, caller, current, expected, &body, None).await
}

/// `PUT`'s write: `v` over `current` (fields `v` leaves out keep their current values),
/// stored if the API is still at `expected`.
pub(crate) async fn store_update(
    s: &AppState,
    caller: &Caller,
    current: turnpike_store::Api,
    expected: Option<i64>,
    v: &Value,
) -> ApiResult<Response> {
    let defaults = crate::service::api_body::input_of(&current);
    store_update_with(s, caller, current, expected, v, Some(&defaults)).await
}

/// Validates `v` against `defaults`, refuses a changed context or version or scopes on an
/// unsecured API, and stores it if the API is still at `expected`.
async fn store_update_with(
    s: &AppState,
    caller: &Caller,
    current: turnpike_store::Api,
    expected: Option<i64>,
    v: &Value,
    defaults: Option<&ApiInput>,
) -> ApiResult<Response> {
    let id = current.id.clone();
    let mut input = validated(s, v, defaults).await?;
    let mut errs = Vec::new();
    if input.context != current.context {
        errs.push(FieldError {
            field: "context".into(),
            message: "cannot be changed; create a new API".into(),
        });
    }
    if input.version != current.version {
        errs.push(FieldError {
            field: "version".into(),
            message: "cannot be changed; use copy-api for a new version".into(),
        });
    }
    let auth = crate::security::stored_auth(&s.inner.store, &id).await?;
    errs.extend(crate::security::scopes_need_auth(
        &input.resources,
        auth.as_ref(),
    ));
    if !errs.is_empty() {
        return Err(ApiError::invalid(errs));
    }
    input.definition = current.definition;
    let mut tx = s.inner.store.begin_write().await?;
    let api = tx.update_api(&id, &input, expected).await?;
    tx.commit(
        &caller.name,
        &format!("update API {} {}", api.context, api.version),
    )
    .await?;
    Ok(written(StatusCode::OK, &api))
}
