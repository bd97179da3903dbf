//! The JSON-lines writer (`json_line`) against `serde_json`: the same bytes for any event,
//! strings with quotes, backslashes, control characters and non-ASCII text included.

use proptest::prelude::*;
use turnpike_analytics::{json_line, AiUsage, Event, Latency, Outcome};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z/{}.-]{0,24}",
        any::<String>(),
        "[\"\\\\\u{0}-\u{1f}\u{7f}é€𝄞a]{0,16}"
    ]
}

fn opt() -> impl Strategy<Value = Option<String>> {
    prop::option::of(text())
}

prop_compose! {
    fn event()(
        time_ms in any::<i64>(),
        strings in prop::collection::vec(text(), 5),
        options in prop::collection::vec(opt(), 12),
        outcome in prop::sample::select(Outcome::ALL.to_vec()),
        status in any::<u16>(),
        upstream_status in prop::option::of(any::<u16>()),
        numbers in prop::collection::vec(any::<u64>(), 7),
    ) -> Event {
        Event {
            time_ms,
            time: strings[0].clone(),
            request_id: strings[1].clone(),
            gateway: strings[2].clone(),
            outcome,
            reason: options[0].clone(),
            error_code: options[1].clone(),
            api_name: options[2].clone(),
            api_context: options[3].clone(),
            api_version: options[4].clone(),
            resource: options[5].clone(),
            method: strings[3].clone(),
            application_id: options[6].clone(),
            application_name: options[7].clone(),
            subscriber: options[8].clone(),
            key_type: options[9].clone(),
            status,
            upstream_status,
            bytes_in: numbers[0],
            bytes_out: numbers[1],
            latency: Latency {
                before_us: numbers[2],
                upstream_us: numbers[3],
                after_us: numbers[4],
                total_us: numbers[5],
            },
            snapshot_version: numbers[6],
            client_ip: options[10].clone(),
            trace_id: options[11].clone(),
            ai: (numbers[6] % 2 == 0).then(|| AiUsage {
                provider: strings[0].clone(),
                model: strings[1].clone(),
                prompt_tokens: numbers[0],
                completion_tokens: numbers[1],
                cached_tokens: numbers[2],
                total_tokens: numbers[3],
                estimated: numbers[4] % 2 == 0,
                ttft_us: upstream_status.map(u64::from),
                tokens_per_second: Some(numbers[5] as f64 / 7.0),
            }),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("TURNPIKE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn writes_what_serde_json_writes(e in event()) {
        let mut mine = Vec::new();
        json_line::write(&e, &mut mine);
        let theirs = serde_json::to_vec(&e).unwrap_or_default();
        prop_assert_eq!(String::from_utf8_lossy(&mine), String::from_utf8_lossy(&theirs));
    }
}
