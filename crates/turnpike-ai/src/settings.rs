//! Reading a guard's or a cache's written settings: a duration within bounds, its
//! problem reported under the setting's path.

use std::time::Duration;

use turnpike_model::Quantity;
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::BuildCx;

/// `q` as a duration in `(0, max]`; `default` when absent, or bad (with a problem).
pub(crate) fn duration(
    cx: &mut BuildCx<'_>,
    field: &str,
    q: Option<&Quantity>,
    default: Duration,
    max: Duration,
) -> Duration {
    match q.map(parse_duration) {
        None => default,
        Some(Ok(d)) if d > Duration::ZERO && d <= max => d,
        Some(Ok(_)) => {
            cx.problem(field, format!("more than 0 and at most {}s", max.as_secs()));
            default
        }
        Some(Err(e)) => {
            cx.problem(field, e);
            default
        }
    }
}
