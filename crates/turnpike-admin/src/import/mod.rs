//! Imports that create an API from a description: OpenAPI 3, WSDL 1.1, a GraphQL schema;
//! the request shapes WSO2 clients send, and WSO2's field names where they mean ours.

pub(crate) mod document;
pub(crate) mod graphql;
pub(crate) mod openapi;
pub(crate) mod openapi_security;
pub(crate) mod source;
pub(crate) mod wsdl;
pub(crate) mod wso2_aliases;

use axum::Router;

use crate::AppState;

/// Every import's routes (under the Publisher API).
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .merge(openapi::routes())
        .merge(graphql::routes())
        .merge(wsdl::routes())
}
