//! The per-API leniencies about request paths (`paths:` of an API, docs/security.md
//! "Request paths"): `;` parameters stripped, letters matched in any case. The normaliser
//! runs before routing, but these options belong to the API a path routes to, so the
//! decision takes a trial route on the snapshot the request loaded, then writes the one
//! path that routing, authorisation, throttling conditions and the upstream all see.
//! Cold: a request comes here only when its path has a `;`, or when some API of the
//! snapshot is case-insensitive.

use std::borrow::Cow;

use http::request;
use turnpike_config::{
    fold_case, normalise_path_stripping_parameters, MatrixParameters, PathError, PathsSpec,
    Snapshot,
};

use crate::error::{ErrorKind, GatewayError};
use crate::proxy::{request_host, set_path, Lenient};

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
