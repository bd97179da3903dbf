//! A `tools/call` message's params as read, by the serde reader (`exchange.rs`) or the
//! scanner (`fast.rs`): what both give the exchange.

use std::borrow::Cow;

use crate::args;

/// `tools/call`'s params as read from the message: the tool's name, and its arguments
/// read against the tool's plan when the name came first (as the SDKs write it), else as
/// raw text read once the name is known. The members this server does not use are
/// checked as the SDK types them (`_meta`, `inputResponses`, `requestState`), so a
/// malformed one is refused as before.
pub(crate) struct CallRead<'a> {
    pub name: Option<Cow<'a, str>>,
    /// The named tool's index in the catalog (looked up once, as the name is read).
    pub tool: Option<usize>,
    pub arguments: Arguments<'a>,
    /// The first thing wrong with the params' meaning (answered `Invalid params`).
    pub problem: Option<String>,
}

pub(crate) enum Arguments<'a> {
    Absent,
    Raw(&'a str),
    Read(Result<args::Values<'a>, String>),
}
