//! A `tools/call` message, the endpoint's hot path, read by the hand-written [`Scan`] in
//! one pass: the envelope, the tool's name looked up as it is read, the arguments read
//! against the tool's plan. It gives up (`None`) on anything it is not sure of, which
//! the serde reader (`rpc::parse_with` and `CallSeed`) then decides as before: another
//! method, a notification, an id that is not a plain string or integer, a repeated
//! member, an escape in a compared text, the members `result`, `error`, `_meta`,
//! `inputResponses` and `requestState` (the SDK's types check those), an unknown tool
//! or argument, anything [`Scan`] gives up on. What it reads, it reads as the serde
//! reader does (`fuzz.rs`: `tool_calls_read_the_same_in_one_pass_or_after`).

use std::borrow::Cow;

use rmcp::model::RequestId;

use crate::args::Values;
use crate::call::{Arguments, CallRead};
use crate::rpc;
use crate::scan::{Expected, Scan};
use crate::tools::{CallPlan, Catalog};

/// The envelope's members in the order senders write them (then `result` and `error`,
/// which only a response has): compared in place (`Scan::object_of`).
const ENVELOPE: [Expected; 6] = [
    Expected::new("jsonrpc"),
    Expected::new("id"),
    Expected::new("method"),
    Expected::new("params"),
    Expected::new("result"),
    Expected::new("error"),
];
/// `tools/call`'s params: the two this path reads, then those the SDK's types check.
const PARAMS: [Expected; 5] = [
    Expected::new("name"),
    Expected::new("arguments"),
    Expected::new("_meta"),
    Expected::new("inputResponses"),
    Expected::new("requestState"),
];
const VERSION: Expected = Expected::new("2.0");
const TOOLS_CALL: Expected = Expected::new("tools/call");

/// The call's id and params, when the message is a `tools/call` this path reads whole.
/// `raw_arguments`: the arguments kept as their text (an audited API's).
pub(crate) fn tool_call<'a>(
    catalog: &Catalog,
    text: &'a str,
    raw_arguments: bool,
) -> Option<(RequestId, CallRead<'a>)> {
    let mut s = Scan::new(text);
    let mut id = None;
    let mut call = None;
    // The params' text, when they came before the method.
    let mut early = None;
    let mut seen = 0u8;
    s.object_of(&ENVELOPE, |s, key| {
        let bit = match key {
            0..4 => 1 << key,
            4 | 5 => return None,
            _ => return s.value().map(drop),
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match bit {
            1 => s.str_is(&VERSION).then_some(()),
            2 => {
                id = Some(rpc::request_id(s.value()?)?);
                Some(())
            }
            4 => s.str_is(&TOOLS_CALL).then_some(()),
            _ if seen & 4 != 0 => {
                call = Some(params(catalog, s, raw_arguments)?);
                Some(())
            }
            _ => {
                early = Some(s.value()?);
                Some(())
            }
        }
    })?;
    s.end()?;
    if seen != 15 {
        return None;
    }
    let call = match (call, early) {
        (Some(call), _) => call,
        (None, Some(text)) => {
            let mut s = Scan::new(text);
            let call = params(catalog, &mut s, raw_arguments)?;
            s.end()?;
            call
        }
        (None, None) => return None,
    };
    Some((id?, call))
}

/// `tools/call`'s params: a known tool's name, its arguments.
fn params<'a>(catalog: &Catalog, s: &mut Scan<'a>, raw_arguments: bool) -> Option<CallRead<'a>> {
    let mut name = None;
    let mut tool = None;
    let mut arguments = Arguments::Absent;
    // The arguments' text, when they came before the name or are kept as text.
    let mut text = None;
    let mut seen = 0u8;
    s.object_of(&PARAMS, |s, key| {
        let bit = match key {
            0 | 1 => 1 << key,
            2..5 => return None,
            _ => return s.value().map(drop),
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        if bit == 1 {
            let n = s.plain_str()?;
            tool = Some(*catalog.by_name.get(n)?);
            name = Some(n);
            return Some(());
        }
        match tool.filter(|_| !raw_arguments) {
            Some(i) => arguments = Arguments::Read(Ok(arguments_of(&catalog.tools[i].plan, s)?)),
            None => text = Some(s.value()?),
        }
        Some(())
    })?;
    let tool = tool?;
    match (text, raw_arguments) {
        (Some("null"), true) => arguments = Arguments::Absent,
        (Some(t), true) => arguments = Arguments::Raw(t),
        (Some(t), false) => {
            let mut s = Scan::new(t);
            arguments = Arguments::Read(Ok(arguments_of(&catalog.tools[tool].plan, &mut s)?));
            s.end()?;
        }
        (None, _) => {}
    }
    Some(CallRead {
        name: Some(Cow::Borrowed(name?)),
        tool: Some(tool),
        arguments,
        problem: None,
    })
}

/// The arguments object (or `null`: none) against the tool's plan, each known name's
/// value as its text (a `null` one absent; a repeated name: its last value).
fn arguments_of<'a>(plan: &CallPlan, s: &mut Scan<'a>) -> Option<Values<'a>> {
    let mut values = Values::absent(plan.args.len());
    if s.ahead()? == b'n' {
        return (s.value()? == "null").then_some(values);
    }
    s.object_of(&plan.keys, |s, i| {
        let v = s.value()?;
        *values.get_mut(i)? = (v != "null").then_some(v);
        Some(())
    })?;
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::tests::{read_call, Way};

    /// The messages the SDKs send (and the benchmarks) take this path, and read as the
    /// serde reader reads them.
    #[test]
    fn sdk_shaped_calls_are_read_here_as_serde_reads_them() {
        let catalog = Catalog::new(crate::args::tests::tools());
        for body in [
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "getItem", "arguments": {"id": "7", "n": 3}}}"#,
            r#"{"method":"tools/call","params":{"name":"putItem","arguments":{"id":4,"body":{"a":[1,2.5]}}},"jsonrpc":"2.0","id":"abc"}"#,
            r#"{"params":{"arguments":{"id":"x","tags":["a","b"],"mode":null},"name":"getItem"},"id":7,"jsonrpc":"2.0","method":"tools/call","x":{}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"addNote","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"addNote"}}"#,
        ] {
            for way in [Way::Fast, Way::FastRaw] {
                let fast = read_call(&catalog, body.as_bytes(), way);
                assert!(fast.is_ok(), "{body} {way:?}: {fast:?}");
                assert_eq!(
                    fast,
                    read_call(&catalog, body.as_bytes(), Way::After),
                    "{body}"
                );
            }
        }
    }

    #[test]
    fn what_it_is_not_sure_of_is_left_to_serde() {
        let catalog = Catalog::new(crate::args::tests::tools());
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"getItem"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"getItem"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"getItem"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getItem","_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getItem","arguments":{"c":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getItem","arguments":{"n":1e3}}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"getItem"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getItem"}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        ] {
            let not_here = Err("not read here".into());
            assert_eq!(
                read_call(&catalog, body.as_bytes(), Way::Fast),
                not_here,
                "{body}"
            );
            // Arguments kept as text are read by serde_json after.
            let raw = read_call(&catalog, body.as_bytes(), Way::FastRaw);
            let after = read_call(&catalog, body.as_bytes(), Way::After);
            assert!(raw == not_here || raw == after, "{body}: {raw:?}");
        }
    }
}
