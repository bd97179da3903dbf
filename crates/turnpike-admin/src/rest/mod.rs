//! The REST routes of the three portals' APIs: each file maps a resource's URLs to
//! handlers that check the caller, read the body and answer; what a write means (validate,
//! store, the gateways' own compile) is `crate::service`'s, imports are `crate::import`'s.

pub mod admin;
pub(crate) mod ai_prices;
pub(crate) mod analytics;
pub(crate) mod apply;
pub(crate) mod audit;
pub(crate) mod client_metadata_documents;
pub(crate) mod client_registration;
pub(crate) mod devportal;
pub(crate) mod documents;
pub mod environments;
pub(crate) mod export;
pub(crate) mod graphql_policies;
pub(crate) mod keys;
pub(crate) mod mcp_audit;
pub(crate) mod mcp_tools;
pub(crate) mod mediation_try;
pub(crate) mod portal_settings;
pub(crate) mod publisher;
pub(crate) mod ready;
pub(crate) mod sdk;
pub(crate) mod throttle_settings;
pub(crate) mod try_it;
pub(crate) mod users;

use axum::routing::get;
use axum::Router;

use crate::AppState;

/// The Publisher, DevPortal and Admin APIs, the gateways' API (snapshot long-poll,
/// analytics ingest) and the OpenAPI document of them all, by prefix.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .nest(
            "/api/am/publisher/v1",
            publisher::routes()
                .merge(apply::routes())
                .merge(keys::publisher_routes())
                .merge(documents::publisher_routes())
                .merge(admin::publisher_routes())
                .merge(analytics::publisher_routes())
                .merge(graphql_policies::routes())
                .merge(mcp_tools::publisher_routes())
                .merge(mcp_audit::publisher_routes()),
        )
        .nest(
            "/api/am/devportal/v1",
            devportal::routes()
                .merge(keys::devportal_routes())
                .merge(users::devportal_routes())
                .merge(documents::devportal_routes())
                .merge(try_it::routes())
                .merge(sdk::routes())
                .merge(portal_settings::devportal_routes())
                .merge(analytics::devportal_routes())
                .merge(admin::devportal_routes())
                .merge(mcp_tools::devportal_routes()),
        )
        .nest(
            "/api/am/admin/v1",
            admin::routes()
                .merge(users::admin_routes())
                .merge(export::routes())
                .merge(environments::admin_routes())
                .merge(throttle_settings::admin_routes())
                .merge(portal_settings::admin_routes())
                .merge(client_registration::admin_routes())
                .merge(client_metadata_documents::admin_routes())
                .merge(audit::admin_routes())
                .merge(analytics::admin_routes())
                .merge(ai_prices::admin_routes())
                .merge(mcp_audit::admin_routes()),
        )
        .nest(
            "/api/am/gateway/v1",
            crate::snapshot::routes().merge(analytics::gateway_routes()),
        )
        .route("/api/am/openapi.json", get(openapi))
}

async fn openapi() -> axum::Json<serde_json::Value> {
    axum::Json(crate::openapi::doc::document())
}
