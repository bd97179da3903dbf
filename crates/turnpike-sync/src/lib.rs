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
//! compiles it off the request threads (a delta: only the APIs it changed,
//! `turnpike_config::compile_changes`), and swaps it
//! into the gateway's one `ArcSwap<Snapshot>`, and keeps the last good one on disk for a
//! restart while the control plane is down. Never depends on the store or the admin API.

pub mod wire;

#[cfg(feature = "follower")]
mod apply;
#[cfg(feature = "follower")]
mod carry;
#[cfg(feature = "follower")]
mod follower;
#[cfg(feature = "follower")]
mod report;
#[cfg(feature = "follower")]
mod saved;

#[cfg(feature = "follower")]
pub use follower::{spawn, Confirmed, FollowerConfig, FollowerHandle, Stats, SyncError};
#[cfg(feature = "follower")]
pub use report::{StatusReport, CHECK_EVERY, MAX_REPORTED_ENDPOINTS, REFRESH_EVERY};
#[cfg(feature = "follower")]
pub use saved::SavedError;

/// Response header: `full` (the body is the declarative file as JSON) or `delta` (the
/// body is a [`wire::Delta`]).
pub const KIND_HEADER: &str = "x-turnpike-kind";
/// Request header: the follower can apply a delta against the version and hash it names in
/// `x-turnpike-serving` and `x-turnpike-serving-hash`.
pub const ACCEPT_DELTA_HEADER: &str = "x-turnpike-accept-delta";
/// Request and response header: the snapshot wire version the sender speaks. A follower
/// that sends none speaks version 1 (the format before this header).
pub const WIRE_HEADER: &str = "x-turnpike-wire";
/// The wire version of this build. 1: full files and deltas as JSON, the version, hash
/// and kind headers. 2: version 1 plus [`WIRE_HEADER`] both ways. Bodies only grow by
/// fields an older follower never receives unless a newer feature is used (its types
/// refuse unknown fields); docs/upgrading.md says what that means for an upgrade.
pub const WIRE_VERSION: u32 = 2;
/// The oldest follower a control plane of this build serves: one version older. An older
/// one is answered `426` (`wire_version_unsupported`) and keeps its last good snapshot.
pub const OLDEST_WIRE: u32 = WIRE_VERSION - 1;
