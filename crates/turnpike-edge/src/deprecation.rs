//! The deprecation policy: a `DEPRECATED` API (or one with `deprecation:` dates) tells
//! its clients on every response, the gateway's errors included: `Deprecation: @<unix
//! seconds>` (RFC 9745), `Sunset: <HTTP-date>` (RFC 8594) and
//! `Link: <url>; rel="deprecation"`. The header values are built once per snapshot.

use std::sync::Arc;

use http::header::{HeaderName, HeaderValue, LINK};
use http::response;
use turnpike_model::policy::DeprecationSpec;
use turnpike_model::ApiSpec;
use turnpike_policy::{
    BuildCx, GatewayError, Hooks, Policy, PolicyKind, Problem, RequestCtx, Stage,
};

static DEPRECATION: HeaderName = HeaderName::from_static("deprecation");
static SUNSET: HeaderName = HeaderName::from_static("sunset");

pub struct DeprecationPolicy {
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Policy for DeprecationPolicy {
    fn name(&self) -> &'static str {
        "deprecation"
    }

    fn hooks(&self) -> Hooks {
        Hooks::RESPONSE_HEADERS
    }

    fn on_response_headers(
        &self,
        _ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        for (name, value) in &self.headers {
            resp.headers.append(name.clone(), value.clone());
        }
        Ok(())
    }
}

/// The policy of an API whose lifecycle is `deprecated` or that has `deprecation:`
/// dates (checked into `problems`, under `at` = `apis[i].deprecation`). Without a
/// `since`, the API is deprecated from `now` (Unix seconds), the snapshot's compile.
fn build(
    at: &str,
    deprecated: bool,
    spec: Option<&DeprecationSpec>,
    now: u64,
    problems: &mut Vec<Problem>,
) -> Option<Arc<DeprecationPolicy>> {
    if !deprecated && spec.is_none() {
        return None;
    }
    let mut date = |field: &str, v: Option<&String>| -> Option<i64> {
        let v = v?;
        let parsed = parse_date(v);
        if parsed.is_none() {
            problems.push(Problem::new(
                format!("{at}.{field}"),
                format!("{v:?} is not a date such as 2026-06-30 or 2026-06-30T12:00:00Z"),
            ));
        }
        parsed
    };
    let since = date("since", spec.and_then(|s| s.since.as_ref()));
    let sunset = date("sunset", spec.and_then(|s| s.sunset.as_ref()));
    let mut headers = Vec::new();
    let since = since.or_else(|| i64::try_from(now).ok());
    if let Some(v) = since.and_then(|s| HeaderValue::from_str(&format!("@{s}")).ok()) {
        headers.push((DEPRECATION.clone(), v));
    }
    if let Some(v) = sunset.and_then(|s| HeaderValue::from_str(&http_date(s)).ok()) {
        headers.push((SUNSET.clone(), v));
    }
    if let Some(link) = spec.and_then(|s| s.link.as_ref()) {
        let ok = (link.starts_with("https://") || link.starts_with("http://"))
            && !link.contains(['<', '>', ' ', '"']);
        match HeaderValue::from_str(&format!("<{link}>; rel=\"deprecation\"")) {
            Ok(v) if ok => headers.push((LINK, v)),
            _ => problems.push(Problem::new(
                format!("{at}.link"),
                format!("{link:?} is not an http(s) URL"),
            )),
        }
    }
    Some(Arc::new(DeprecationPolicy { headers }))
}

/// `2026-06-30` or `2026-06-30T12:00:00Z` (UTC) as Unix seconds.
fn parse_date(s: &str) -> Option<i64> {
    let (day, time) = match s.split_once(['T', 't']) {
        Some((d, t)) => (d, Some(t.strip_suffix(['Z', 'z'])?)),
        None => (s, None),
    };
    let num = |p: &str, len: usize| -> Option<i64> {
        (p.len() == len && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let mut d = day.split('-');
    let (y, m, dd) = (num(d.next()?, 4)?, num(d.next()?, 2)?, num(d.next()?, 2)?);
    if d.next().is_some() || !(1..=12).contains(&m) || dd < 1 || dd > days_in_month(y, m) {
        return None;
    }
    let secs = match time {
        None => 0,
        Some(t) => {
            let mut t = t.split(':');
            let (h, mi, se) = (num(t.next()?, 2)?, num(t.next()?, 2)?, num(t.next()?, 2)?);
            if t.next().is_some() || h > 23 || mi > 59 || se > 59 {
                return None;
            }
            h * 3600 + mi * 60 + se
        }
    };
    Some(turnpike_model::clock::days_from_civil(y, m, dd) * 86_400 + secs)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP-date of RFC 9110.
fn http_date(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = turnpike_model::clock::civil_from_days(days);
    format!(
        "{}, {day:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize % 12],
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// The deprecation kind: a `DEPRECATED` lifecycle or `deprecation:` dates, read from
/// the API.
pub struct Deprecation;

impl PolicyKind for Deprecation {
    const NAME: &'static str = "deprecation";
    type Spec = ApiSpec;

    fn stage(_: &ApiSpec) -> Stage {
        Stage::Edge
    }

    fn build(api: &ApiSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let deprecated = api
            .lifecycle
            .as_deref()
            .is_some_and(|l| l.eq_ignore_ascii_case("DEPRECATED"));
        Some(build(
            &cx.at,
            deprecated,
            api.deprecation.as_ref(),
            cx.runtime.clock().now_secs(),
            cx.problems,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use turnpike_model::clock::ManualClock;
    use turnpike_model::GatewayFile;
    use turnpike_policy::{Runtime, Scratch};

    use super::*;
    use crate::testing::{build, ctx, response};

    /// The headers API `api`'s policy writes, built on a clock at `now`, and the
    /// problems' paths.
    fn headers(api: &ApiSpec, now: u64) -> (Vec<(String, String)>, Vec<String>) {
        let rt = Runtime::default().with_clock(Arc::new(ManualClock::at_secs(now)));
        let file = GatewayFile::default();
        let at = "apis[0].deprecation";
        let (built, problems) = build::<Deprecation>(api, at, &file, &rt, &mut Scratch::default());
        let mut resp = response();
        if let Some(p) = built {
            assert!(p.on_response_headers(&mut ctx(), &mut resp).is_ok());
        }
        let written = resp
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
            .collect();
        (written, problems)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_deprecated_api_without_dates_is_deprecated_from_the_clock() {
        let api = ApiSpec {
            lifecycle: Some("deprecated".into()),
            ..ApiSpec::default()
        };
        assert_eq!(
            headers(&api, 1_700_000_000),
            (pairs(&[("deprecation", "@1700000000")]), vec![])
        );
        assert_eq!(headers(&ApiSpec::default(), 1), (vec![], vec![]));
    }

    #[test]
    fn dates_and_link_become_headers_and_bad_ones_problems() {
        let spec = |link: &str| DeprecationSpec {
            since: Some("1994-11-06T08:49:37Z".into()),
            sunset: Some("2026-06-30".into()),
            link: Some(link.into()),
        };
        let api = ApiSpec {
            deprecation: Some(spec("https://example.com/d")),
            ..ApiSpec::default()
        };
        let expected = pairs(&[
            ("deprecation", "@784111777"),
            ("sunset", "Tue, 30 Jun 2026 00:00:00 GMT"),
            ("link", "<https://example.com/d>; rel=\"deprecation\""),
        ]);
        assert_eq!(headers(&api, 5), (expected, vec![]));
        let bad = ApiSpec {
            deprecation: Some(DeprecationSpec {
                sunset: Some("June".into()),
                ..spec("ftp://x")
            }),
            ..ApiSpec::default()
        };
        let paths = ["apis[0].deprecation.sunset", "apis[0].deprecation.link"];
        assert_eq!(headers(&bad, 5).1, paths);
    }

    #[test]
    fn dates_parse_and_format_as_http_dates() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("1994-11-06T08:49:37Z"), Some(784_111_777));
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse_date("2024-02-29"), Some(1_709_164_800));
        for bad in [
            "2023-02-29",
            "2026-13-01",
            "2026-6-30",
            "2026-06-30T25:00:00Z",
            "2026-06-30T12:00:00",
            "2026-06-30T12:00:00+02:00",
            "",
            "+026-06-30",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn any_text_parses_or_is_refused_without_panic(s in "\\PC{0,24}") {
            let _ = parse_date(&s);
        }

        #[test]
        fn a_formatted_time_parses_back(secs in 0i64..253_402_300_799) {
            let d = http_date(secs);
            // `Sun, 06 Nov 1994 08:49:37 GMT` -> `1994-11-06T08:49:37Z`.
            let p: Vec<&str> = d.split([' ', ',']).filter(|s| !s.is_empty()).collect();
            let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                "Oct", "Nov", "Dec"].iter().position(|m| *m == p[2]).map(|i| i + 1);
            let iso = format!("{}-{:02}-{}T{}Z", p[3], month.unwrap_or(0), p[1], p[4]);
            prop_assert_eq!(parse_date(&iso), Some(secs));
        }
    }
}
