//! The AI price table (docs/analytics.md "Cost of AI calls"), what the `ai` analytics
//! report prices tokens with: `GET /api/am/admin/v1/ai-prices` lists every priced model
//! (the built-in list prices and the control plane's edits, which win), `PUT
//! /ai-prices/{name}` sets a model's price in USD per million tokens, `DELETE
//! /ai-prices/{name}` removes an edit (the built-in price, if any, applies again).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use turnpike_analytics::prices::{Price, BUILT_IN};

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::http::JsonBody;
use crate::validate::Fields;
use crate::AppState;

/// The highest price accepted, USD per million tokens.
const MAX_USD_PER_MILLION: f64 = 1_000_000.0;
/// The longest model name.
const MAX_MODEL: usize = 200;

pub fn admin_routes() -> Router<AppState> {
    Router::new()
        .route("/ai-prices", get(list))
        .route("/ai-prices/{name}", put(set).delete(remove))
}

fn usd(micro: u64) -> f64 {
    micro as f64 / 1e6
}

fn price_json(model: &str, p: Price, source: &str) -> Value {
    json!({
        "model": model,
        "inputPerMillion": usd(p.input),
        "outputPerMillion": usd(p.output),
        "cachedInputPerMillion": usd(p.cached_input),
        "source": source,
    })
}

async fn list(State(s): State<AppState>, _c: Admin) -> ApiResult<Response> {
    let mut all: BTreeMap<String, Value> = BUILT_IN
        .iter()
        .map(|(m, p)| ((*m).to_string(), price_json(m, *p, "built-in")))
        .collect();
    for (m, p) in s.inner.store.ai_prices().await? {
        let v = price_json(&m, p, "edited");
        all.insert(m, v);
    }
    let list: Vec<Value> = all.into_values().collect();
    Ok(Json(json!({"count": list.len(), "list": list})).into_response())
}

/// A price field in USD per million tokens, as millionths of a dollar.
fn micro_usd(f: &mut Fields<'_>, name: &'static str, required: bool) -> Option<u64> {
    match f.value(name).map(Value::as_f64) {
        None if required => {
            f.err(name, "is required");
            None
        }
        None => None,
        Some(Some(x)) if (0.0..=MAX_USD_PER_MILLION).contains(&x) => Some((x * 1e6).round() as u64),
        Some(_) => {
            f.err(
                name,
                format!("must be a number of USD per million tokens, 0 to {MAX_USD_PER_MILLION}"),
            );
            None
        }
    }
}

async fn set(
    State(s): State<AppState>,
    _c: Admin,
    Path(name): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    if name.is_empty() || name.chars().count() > MAX_MODEL || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "the model name must be 1 to {MAX_MODEL} characters without control characters"
        )));
    }
    let mut f = Fields::new(&v, "");
    let input = micro_usd(&mut f, "inputPerMillion", true);
    let output = micro_usd(&mut f, "outputPerMillion", true);
    let cached = micro_usd(&mut f, "cachedInputPerMillion", false);
    f.finish_unknown();
    f.into_result()?;
    let (Some(input), Some(output)) = (input, output) else {
        return Err(ApiError::bad_request(
            "inputPerMillion and outputPerMillion are required",
        ));
    };
    let p = Price {
        input,
        output,
        cached_input: cached.unwrap_or(input),
    };
    s.inner
        .store
        .put_ai_price(&name, p, turnpike_store::now_ms() / 1000)
        .await?;
    Ok(Json(price_json(&name, p, "edited")).into_response())
}

async fn remove(
    State(s): State<AppState>,
    _c: Admin,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    if !s.inner.store.delete_ai_price(&name).await? {
        return Err(ApiError::not_found(format!(
            "no edited price for model {name:?}"
        )));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
