//! Not a check: the tool call's hot path in this crate (the message read by the scanner,
//! the answer wrapped) run many times on the benchmark's shapes (bench/mcp-cases.sh),
//! for an instruction profile of this crate's part alone, without a gateway:
//!
//! ```text
//! cargo test --profile ci-bench -p turnpike-mcp --lib --no-run
//! valgrind --tool=callgrind --toggle-collect='*profile::tests::hot_path*' \
//!   target/ci-bench/deps/turnpike_mcp-HASH --ignored --exact profile::tests::hot_path_harness
//! ```
//!
//! Counts per call are the profile's total over [`ROUNDS`]; bench/mcp-callgrind.sh is
//! the measure of record.

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use rmcp::model::RequestId;

    use crate::tools::Catalog;
    use crate::{fast, wrap};

    const ROUNDS: usize = 1000;

    #[inline(never)]
    fn hot_path(catalog: &Catalog, messages: &[&str], answer: &[u8]) -> usize {
        let mut n = 0;
        for m in messages {
            let (_, call) = fast::tool_call(catalog, m, false).expect("read");
            n += usize::from(call.tool.is_some());
            let call = wrap::tests::call(RequestId::Number(1), 200, true, false);
            let (body, _) = wrap::body(call, std::hint::black_box(answer));
            n += body.len();
        }
        n
    }

    #[test]
    #[ignore = "a profiling harness, not a check"]
    fn hot_path_harness() {
        let catalog = Catalog::new(crate::args::tests::tools());
        let messages = [
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "getItem", "arguments": {"id": "7", "mode": "fast"}}}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "putItem", "arguments": {"id": 7, "body": {"name": "Rex", "tag": "dog"}}}}"#,
        ];
        let answer = Bytes::from_static(br#"{"name": "Rex", "tag": "dog"}"#);
        let mut n = 0;
        for _ in 0..ROUNDS {
            n += hot_path(&catalog, std::hint::black_box(&messages), &answer);
        }
        assert!(n > 0);
    }
}
