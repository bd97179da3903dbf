//! WSO2's GraphQL complexity values in the Publisher API (Publisher REST API v4
//! `graphql-policies/complexity`), over the API's `graphql.cost.field_costs` (the WSO2
//! cost model the gateways apply against each tier's `max_complexity`):
//!
//! - `GET /apis/{id}/graphql-policies/complexity`:
//!   `{"list": [{"type": "Query", "field": "allFilms", "complexityValue": 2}, ...]}`;
//! - `PUT` of the same body replaces every value (a field left out costs the default, 1);
//!   every bad entry is reported at once, the write is one revision-checked update;
//! - `GET /apis/{id}/graphql-policies/complexity/types`:
//!   `{"typeList": [{"type": "Film", "fieldList": ["id", "title"]}, ...]}`.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use http::StatusCode;
use serde_json::{json, Map, Value};
use turnpike_graphql::{CompiledSchema, CostConfig};

use crate::auth::{ApiCreator, ApiViewer};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::JsonBody;
use crate::AppState;

/// Most complexity values one API holds.
const MAX_VALUES: usize = 10_000;
/// Largest complexity value of one field.
const MAX_VALUE: u64 = 1_000_000;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/apis/{id}/graphql-policies/complexity",
            get(get_complexity).put(put_complexity),
        )
        .route(
            "/apis/{id}/graphql-policies/complexity/types",
            get(get_types),
        )
}

/// The API's `graphql` section, or 409 for an API that has none.
fn section(api: &turnpike_store::Api) -> ApiResult<&Value> {
    api.options.get("graphql").ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "not_graphql",
            format!(
                "API {} has no GraphQL schema (import one with import-graphql-schema)",
                api.id
            ),
        )
    })
}

fn schema_of(section: &Value) -> ApiResult<CompiledSchema> {
    let sdl = section.get("schema").and_then(Value::as_str).unwrap_or("");
    CompiledSchema::compile(sdl, &CostConfig::default()).map_err(|_| ApiError::internal())
}

fn list_of(costs: Option<&Value>) -> Value {
    let list: Vec<Value> = costs
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(coordinate, v)| {
            let (t, f) = coordinate.split_once('.')?;
            Some(json!({"type": t, "field": f, "complexityValue": v}))
        })
        .collect();
    json!({ "list": list })
}

async fn get_complexity(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let costs = section(&api)?.pointer("/cost/field_costs");
    Ok(Json(list_of(costs)).into_response())
}

async fn get_types(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let schema = schema_of(section(&api)?)?;
    let types: Vec<Value> = schema
        .object_fields()
        .into_iter()
        .map(|(t, fields)| json!({"type": t, "fieldList": fields}))
        .collect();
    Ok(Json(json!({ "typeList": types })).into_response())
}

/// The `Type.field: value` map of a PUT body; every problem reported.
fn read_list(body: &Value, schema: &CompiledSchema) -> ApiResult<BTreeMap<String, u64>> {
    let bad = |field: String, message: &str| FieldError {
        field,
        message: message.into(),
    };
    let Some(list) = body.get("list").and_then(Value::as_array) else {
        return Err(ApiError::invalid(vec![bad(
            "list".into(),
            "is required: an array of {type, field, complexityValue}",
        )]));
    };
    if list.len() > MAX_VALUES {
        return Err(ApiError::invalid(vec![bad(
            "list".into(),
            "holds more than 10000 values",
        )]));
    }
    let mut errors = Vec::new();
    let mut out = BTreeMap::new();
    for (i, item) in list.iter().enumerate() {
        let t = item.get("type").and_then(Value::as_str);
        let f = item.get("field").and_then(Value::as_str);
        let v = item.get("complexityValue").and_then(Value::as_u64);
        match (t, f) {
            (Some(t), Some(f)) if schema.field_id(t, f).is_some() => {
                if out.insert(format!("{t}.{f}"), v.unwrap_or(0)).is_some() {
                    errors.push(bad(
                        format!("list[{i}]"),
                        "repeats a type and field given before",
                    ));
                }
            }
            (Some(_), Some(_)) => errors.push(bad(
                format!("list[{i}].field"),
                "the schema has no such type and field",
            )),
            _ => errors.push(bad(
                format!("list[{i}]"),
                "needs a type and a field (strings)",
            )),
        }
        if v.is_none_or(|v| v > MAX_VALUE) {
            errors.push(bad(
                format!("list[{i}].complexityValue"),
                "must be an integer from 0 to 1000000",
            ));
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ApiError::invalid(errors))
    }
}

async fn put_complexity(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    // The body's shape is checked before the API is looked at: a bad body is a 400
    // whatever the API is.
    let unknown: Vec<FieldError> = body
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "list")
        .map(|(k, _)| FieldError {
            field: k.clone(),
            message: "is not a field of this body (only list)".into(),
        })
        .collect();
    if !unknown.is_empty() {
        return Err(ApiError::invalid(unknown));
    }
    let api = s.inner.store.get_api(&id).await?;
    let section = section(&api)?;
    let values = read_list(&body, &schema_of(section)?)?;
    // A merge patch: values no longer given are removed (null), the rest set.
    let mut costs: Map<String, Value> = section
        .pointer("/cost/field_costs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, _)| (k.clone(), Value::Null))
        .collect();
    costs.extend(values.into_iter().map(|(k, v)| (k, json!(v))));
    let patch = json!({"graphql": {"cost": {"field_costs": costs}}});
    let revision = Some(api.revision);
    crate::service::api::patch_once(&s, &caller, api, revision, &patch).await?;
    let stored = s.inner.store.get_api(&id).await?;
    let costs = section_costs(&stored);
    Ok(Json(list_of(costs.as_ref())).into_response())
}

fn section_costs(api: &turnpike_store::Api) -> Option<Value> {
    api.options
        .get("graphql")?
        .pointer("/cost/field_costs")
        .cloned()
}
