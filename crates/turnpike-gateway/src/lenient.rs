//! The per-API leniencies about request paths (`paths:` of an API, docs/security.md
//! "Request paths"): `;` parameters stripped, letters matched in any case. The normaliser
//! runs before routing, but these options belong to the API a path routes to, so the
//! decision takes a trial route on the snapshot the request loaded, then writes the one
//! path that routing, authorisation, throttling conditions and the upstream all see.
//! Cold: a request comes here only when its path has a `;`, or when some API of the
//! snapshot is case-insensitive.

use std::borrow::Cow;

use bytes::Bytes;
use http::request;
use http::uri::PathAndQuery;
use http::Uri;
use turnpike_config::{
    fold_case, normalise_path_stripping_parameters, MatrixParameters, PathError, PathsSpec,
    Snapshot,
};

use crate::error::{ErrorKind, GatewayError};
use crate::headers::request_host;

/// Whether a path could change when lower-cased or be refused by [`fold_case`]: it has
/// an upper-case letter or anything beyond ASCII (raw or escaped).
#[inline]
pub(crate) fn may_fold(path: &str) -> bool {
    path.bytes()
        .any(|b| b.is_ascii_uppercase() || b == b'%' || b >= 0x80)
}

/// Settles the request's path: `;` parameters are stripped when the API the stripped
/// path routes to allows it (refused otherwise), and a path that routes, as it is or
/// lower-cased, to a case-insensitive API becomes its lower-case form. Rewrites the
/// request's URI when the path changed.
#[cold]
pub(crate) fn settle_path(
    snap: &Snapshot,
    parts: &mut request::Parts,
    lenient: Lenient,
) -> Result<(), GatewayError> {
    let refuse = |e: PathError| GatewayError::with_source(ErrorKind::InvalidPath, e);
    let host = request_host(parts);
    let raw = parts.uri.path();
    let mut path = match lenient {
        Lenient::Parameters => normalise_path_stripping_parameters(raw).map_err(refuse)?,
        Lenient::No => Cow::Borrowed(raw),
    };
    let mut api = trial(snap, host, parts, &path);
    if snap.folds_case() && may_fold(&path) {
        let as_is = api.map(|a| a.case_insensitive);
        // A case-sensitive API that matched the path as written keeps it; otherwise the
        // lower-case form decides, if it lands on a case-insensitive API.
        if as_is != Some(false) {
            if let Cow::Owned(folded) = fold_case(&path).map_err(refuse)? {
                let other = trial(snap, host, parts, &folded);
                if as_is == Some(true) || other.is_some_and(|a| a.case_insensitive) {
                    (api, path) = (other, Cow::Owned(folded));
                }
            }
        }
    }
    if lenient == Lenient::Parameters
        && !api.is_some_and(|a| a.matrix_parameters == MatrixParameters::Strip)
    {
        return Err(refuse(PathError::Parameters));
    }
    if let Cow::Owned(path) = path {
        if path != parts.uri.path() {
            set_path(parts, path)?;
        }
    }
    Ok(())
}

/// The path options of the API a path routes to.
fn trial(
    snap: &Snapshot,
    host: Option<&str>,
    parts: &request::Parts,
    path: &str,
) -> Option<PathsSpec> {
    snap.route(host, &parts.method, path).api().map(|a| a.paths)
}

/// What the normaliser left for the matched API to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lenient {
    /// Nothing: the path is in its normal form.
    No,
    /// The path has `;` parameters: refused unless the API it routes to strips them.
    Parameters,
}

/// Replaces the request's path by its normal form (`turnpike_config::normalise_path`)
/// before anything looks at it, so routing, auth, throttling conditions and the upstream
/// request all see the same path; refuses the forms the normaliser refuses.
pub(crate) fn normalise_uri(parts: &mut request::Parts) -> Result<Lenient, GatewayError> {
    let normal = match turnpike_config::normalise_path(parts.uri.path()) {
        Ok(std::borrow::Cow::Borrowed(_)) => return Ok(Lenient::No),
        Ok(std::borrow::Cow::Owned(p)) => p,
        Err(turnpike_config::PathError::Parameters) => return Ok(Lenient::Parameters),
        Err(e) => return Err(GatewayError::with_source(ErrorKind::InvalidPath, e)),
    };
    set_path(parts, normal)?;
    Ok(Lenient::No)
}

/// Replaces the request's path, keeping its query.
pub(crate) fn set_path(parts: &mut request::Parts, path: String) -> Result<(), GatewayError> {
    let mut pq = path;
    if let Some(q) = parts.uri.query() {
        pq.push('?');
        pq.push_str(q);
    }
    let mut uri = std::mem::take(&mut parts.uri).into_parts();
    uri.path_and_query = Some(
        PathAndQuery::from_maybe_shared(Bytes::from(pq))
            .map_err(|e| GatewayError::with_source(ErrorKind::InvalidPath, e))?,
    );
    parts.uri =
        Uri::from_parts(uri).map_err(|e| GatewayError::with_source(ErrorKind::InvalidPath, e))?;
    Ok(())
}
