//! GraphQL APIs in the Publisher API:
//!
//! - `POST /apis/import-graphql-schema` creates a GRAPHQL API from an SDL schema, in the
//!   forms WSO2 clients send it (multipart `file` + `additionalProperties`, JSON
//!   `{"definition": SDL, "additionalProperties": {...}}`, or the SDL itself as
//!   `application/graphql` with the API's fields in the query). The API
//!   gets one resource (`/*`, GET and POST), a `graphql` section holding the schema, and
//!   one operation per root field of Query, Mutation and Subscription (as WSO2 lists
//!   them), to which scopes can then be given. An invalid schema is 400 with each
//!   problem and its line.
//! - `POST /apis/{id}/graphql/explain` answers depth, cost, the per-field breakdown and
//!   a tier's limits for a query (`query`, `operationName`, `variables`, `tier`) without
//!   running it; a query that does not validate is 400 `validation_failed` listing each
//!   problem with its line and column.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use turnpike_graphql::{AnalysisCache, CompiledSchema, CostConfig};

use crate::auth::{ApiCreator, ApiViewer};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::JsonBody;
use crate::import::source::RawBody;
use crate::AppState;

/// The GraphQL import and the operation explainer of a GraphQL API.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/apis/import-graphql-schema", post(import_graphql_schema))
        .route("/apis/{id}/graphql/explain", post(explain))
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::invalid(vec![FieldError {
        field: field.into(),
        message: message.into(),
    }])
}

/// The SDL and the API's fields, whatever the form.
fn read_schema(
    ctype: &str,
    body: &[u8],
    q: &HashMap<String, String>,
) -> ApiResult<(String, Option<Value>)> {
    let mime = ctype
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime == "application/graphql" {
        let sdl = String::from_utf8(body.to_vec())
            .map_err(|_| invalid("file", "the schema is not UTF-8"))?;
        return Ok((sdl, crate::import::source::query_props(q)?));
    }
    let (source, props) = crate::import::source::read_request(ctype, body, q)?;
    match source {
        crate::import::source::Source::Inline(Value::String(sdl)) => Ok((sdl, props)),
        crate::import::source::Source::Inline(_) => Err(invalid(
            "definition",
            "must be the schema's SDL as a string",
        )),
        crate::import::source::Source::Url(_) => Err(invalid(
            "url",
            "send the schema itself (file or definition); URLs are for OpenAPI imports",
        )),
        crate::import::source::Source::Archive(_) => Err(invalid(
            "file",
            "send the schema's SDL as text; a zip is for OpenAPI imports",
        )),
    }
}

/// Every problem of an SDL document as field errors (`file`, with the line).
fn schema_problems(sdl: &str) -> Result<CompiledSchema, ApiError> {
    CompiledSchema::compile(sdl, &CostConfig::default()).map_err(|e| {
        ApiError::invalid(
            e.errors
                .iter()
                .map(|err| FieldError {
                    field: "file".into(),
                    message: err.to_string(),
                })
                .collect(),
        )
    })
}

/// The `graphql` section of a new API: the schema and one operation per root field.
fn graphql_section(sdl: &str, schema: &CompiledSchema) -> Value {
    let operations: Vec<Value> = ["query", "mutation", "subscription"]
        .iter()
        .flat_map(|kind| {
            schema
                .operations(kind)
                .into_iter()
                .map(move |name| json!({"name": name, "type": kind}))
        })
        .collect();
    let mut section = json!({ "schema": sdl });
    if !operations.is_empty() {
        section["operations"] = Value::Array(operations);
    }
    section
}

pub(crate) async fn import_graphql_schema(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let ctype = crate::import::source::content_type(&headers);
    let (sdl, props) = read_schema(ctype, &body, &q)?;
    let schema = schema_problems(&sdl)?;
    let mut props = props.unwrap_or_else(|| json!({}));
    crate::import::wso2_aliases::endpoint_config(&mut props);
    let Some(obj) = props.as_object_mut() else {
        return Err(invalid("additionalProperties", "must be a JSON object"));
    };
    if !obj.contains_key("context") {
        return Err(invalid("additionalProperties.context", "is required"));
    }
    obj.entry("type").or_insert_with(|| json!("GRAPHQL"));
    obj.entry("resources")
        .or_insert_with(|| json!([{"path": "/*", "methods": ["GET", "POST"]}]));
    // The file's fields given in `additionalProperties.graphql` (limits, tiers...) are
    // kept; the schema and the operations come from the document.
    let mut section = graphql_section(&sdl, &schema);
    if let Some(Value::Object(given)) = obj.remove("graphql") {
        for (k, v) in given {
            if k != "schema" && (k != "operations" || !v.is_null()) {
                section[k.as_str()] = v;
            }
        }
    }
    obj.insert("graphql".into(), section);
    let input = crate::service::api::validated(&s, &props, None).await?;
    crate::service::api::insert_api(&s, &caller, &input, "import").await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ExplainBody {
    query: String,
    operation_name: Option<String>,
    variables: Option<Map<String, Value>>,
    /// A subscription tier of the API's `graphql.tiers`; the default limits otherwise.
    tier: Option<String>,
}

pub(crate) async fn explain(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let body: ExplainBody =
        serde_json::from_value(v).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let Some(section) = api.options.get("graphql") else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_graphql",
            format!("API {id} has no GraphQL schema (import one with import-graphql-schema)"),
        ));
    };
    let spec: turnpike_model::graphql::GraphqlSpec =
        serde_json::from_value(section.clone()).map_err(|e| invalid("graphql", e.to_string()))?;
    let compiled = turnpike_graphql::compile(&spec, AnalysisCache::new(16)).map_err(|p| {
        ApiError::invalid(
            p.into_iter()
                .map(|p| FieldError {
                    field: format!("graphql.{}", p.path),
                    message: p.message,
                })
                .collect(),
        )
    })?;
    if let Some(t) = &body.tier {
        if !spec.tiers.contains_key(t) {
            return Err(invalid(
                "tier",
                format!("the API's graphql section has no tier {t:?}"),
            ));
        }
    }
    let tier = compiled.tier(body.tier.as_deref());
    match compiled.analyzer.explain(
        &body.query,
        body.operation_name.as_deref(),
        body.variables.as_ref(),
        &tier.limits,
    ) {
        Ok(e) => Ok(axum::Json(e).into_response()),
        Err(errors) => Err(ApiError::invalid(
            errors
                .iter()
                .map(|e| FieldError {
                    field: "query".into(),
                    message: e.to_string(),
                })
                .collect(),
        )),
    }
}
