//! The REST routes of the three portals' APIs: each file maps a resource's URLs to
//! handlers that check the caller, read the body and answer; what a write means (validate,
//! store, the gateways' own compile) is `crate::service`'s, imports are `crate::import`'s.

pub mod admin;
pub mod analytics;
pub(crate) mod audit;
pub(crate) mod devportal;
pub(crate) mod documents;
pub mod environments;
pub(crate) mod export;
pub(crate) mod keys;
pub(crate) mod mediation_try;
pub(crate) mod portal_settings;
pub(crate) mod publisher;
pub(crate) mod ready;
pub(crate) mod throttle_settings;
pub(crate) mod try_it;
pub(crate) mod users;
