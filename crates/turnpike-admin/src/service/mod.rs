//! What the routes and the importers call to change an API: the REST body read into
//! the store's input, validated (fields, tiers, the gateways' own compile), stored.

pub(crate) mod api;
pub(crate) mod api_body;
pub(crate) mod apply;
pub(crate) mod apply_apps;
pub(crate) mod apply_check;
pub(crate) mod apply_plan;
pub(crate) mod cache_body;
pub(crate) mod cors_body;
