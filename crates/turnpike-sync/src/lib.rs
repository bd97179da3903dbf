//! Snapshot distribution. [`wire`] is the format both ends share: a declarative file split
//! into keyed parts (APIs by id, subscriptions in hash buckets, named sections), the
//! structural hash over them, and the delta between two versions; the control plane
//! builds deltas with it (this crate without its default `follower` feature depends on
//! `turnpike-model` and serde only).
//!
//! With `follower` (the default), the gateway side: [`spawn`] long-polls
//! `GET /api/am/gateway/v1/snapshot?after=V` (version as cursor, gateway token as bearer),
//! asks for a delta against the file it holds, applies it, checks the result's hash against
//! the one the control plane announced (a full snapshot is fetched when it differs),
//! compiles it with `turnpike_config::compile_with` off the request threads, and swaps it
//! into the gateway's one `ArcSwap<Snapshot>`, and keeps the last good one on disk for a
//! restart while the control plane is down. Never depends on the store or the admin API.

pub mod wire;

#[cfg(feature = "follower")]
mod follower;
#[cfg(feature = "follower")]
mod saved;

#[cfg(feature = "follower")]
pub use follower::{
    spawn, Confirmed, FollowerConfig, FollowerHandle, Stats, StatusReport, SyncError,
};
#[cfg(feature = "follower")]
pub use saved::SavedError;

/// Response header: `full` (the body is the declarative file as JSON) or `delta` (the
/// body is a [`wire::Delta`]).
pub const KIND_HEADER: &str = "x-turnpike-kind";
/// Request header: the follower can apply a delta against the version and hash it names in
/// `x-turnpike-serving` and `x-turnpike-serving-hash`.
pub const ACCEPT_DELTA_HEADER: &str = "x-turnpike-accept-delta";
