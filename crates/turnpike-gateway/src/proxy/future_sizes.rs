//! The request path's future sizes, checked. hyper moves each connection's service
//! future into its slot (`Dispatch::recv_msg`, a `memcpy` of the whole future per
//! request), and every nested async level is laid out inside it: a state that only some
//! APIs reach (connecting, buffering, an AI provider's retry loop) costs every request
//! its bytes unless it is boxed. Sizes come from the types, without running anything.

#![allow(unreachable_code, unused_variables, clippy::diverging_sub_expression)]

use std::mem::size_of;

use crate::client_body::ClientBody;
use crate::conn::ConnCtx;
use crate::upstream::forward;

/// The size of what `make` would return (it is never called).
fn size_of_return<R>(_make: impl FnOnce() -> R) -> usize {
    size_of::<R>()
}

/// What one request's future holds: printed (`cargo test -p turnpike-gateway --lib
/// future_sizes -- --nocapture`) for whoever shrinks them next.
fn sizes() -> Vec<(&'static str, usize)> {
    vec![
        (
            "proxy::handle",
            size_of_return(|| super::handle(todo!(), todo!())),
        ),
        (
            "proxy::exchange",
            size_of_return(|| {
                super::exchange(todo!(), todo!(), todo!(), None, todo!(), todo!(), None)
            }),
        ),
        (
            "proxy::request_side",
            size_of_return(|| {
                super::request_side(todo!(), todo!(), todo!(), None, todo!(), todo!(), None)
            }),
        ),
        (
            "forward::forward",
            size_of_return(|| {
                forward::forward(todo!(), todo!(), todo!(), todo!(), todo!(), todo!())
            }),
        ),
        (
            "forward::attempt",
            size_of_return(|| {
                forward::attempt(
                    todo!(),
                    todo!(),
                    todo!(),
                    todo!(),
                    todo!(),
                    todo!(),
                    todo!(),
                    None,
                    todo!(),
                )
            }),
        ),
        (
            "h1::exchange",
            size_of_return(|| {
                crate::upstream::h1::exchange::exchange(todo!(), todo!(), todo!(), todo!(), todo!())
            }),
        ),
        (
            "pool::checkout_direct",
            size_of_return(|| {
                let p: &crate::upstream::pool::EndpointPool = todo!();
                p.checkout_direct(todo!())
            }),
        ),
        ("tokio::time::Sleep", size_of::<tokio::time::Sleep>()),
        ("RequestCtx", size_of::<turnpike_policy::RequestCtx>()),
        ("request::Parts", size_of::<http::request::Parts>()),
        ("response::Parts", size_of::<http::response::Parts>()),
        ("ClientBody", size_of::<ClientBody>()),
        ("forward::Upstream", size_of::<forward::Upstream>()),
        (
            "ResponseBody",
            size_of::<crate::response_body::ResponseBody>(),
        ),
        ("Arc<ConnCtx>", size_of::<std::sync::Arc<ConnCtx>>()),
    ]
}

/// The bound on `handle`'s future: 3,968 bytes on 2026-11-27 before it was shrunk,
/// 2,296 after (bench/RESULTS.md, "The per-request future shrunk"). A change that
/// grows it past this puts a state every request copies on the path of every API:
/// box that state instead (or raise the bound with a measurement that says why).
const HANDLE_MAX: usize = 2_400;

#[test]
fn future_sizes() {
    let sizes = sizes();
    for (name, n) in &sizes {
        println!("{name:<24} {n:>6}");
    }
    let handle = sizes[0].1;
    assert!(
        handle <= HANDLE_MAX,
        "proxy::handle's future is {handle} bytes, over {HANDLE_MAX}: hyper copies it per request"
    );
}
