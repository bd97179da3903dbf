//! The chain's semantics without sockets: request hooks run front to back and stop at
//! the first answer, response hooks run back to front over the policies whose request
//! side ran, `on_complete` runs over every policy that has it, a pending (async) hook is
//! awaited, a body hook sees and rewrites the body, and a path rewrite shows in the
//! upstream target.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{request, response, HeaderValue, Response, StatusCode, Uri};
use turnpike_policy::{
    Answer, Chain, Completion, ErrorKind, Flow, GatewayError, Hooks, Policy, RequestCtx, Step,
    Timings, UpstreamTarget,
};

type Log = Arc<Mutex<Vec<String>>>;

/// Records every hook it sees; answers on the request side when told to.
struct Probe {
    name: &'static str,
    log: Log,
    answer: Option<fn() -> Result<Flow, GatewayError>>,
    wait: bool,
}

impl Probe {
    fn new(name: &'static str, log: &Log) -> Arc<Probe> {
        Arc::new(Probe {
            name,
            log: log.clone(),
            answer: None,
            wait: false,
        })
    }

    fn note(&self, what: &str) {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{}:{what}", self.name));
    }
}

impl Policy for Probe {
    fn name(&self) -> &'static str {
        self.name
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS | Hooks::REQUEST_BODY | Hooks::RESPONSE_HEADERS | Hooks::COMPLETE
    }

    fn on_request_headers<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
    ) -> Step<'a> {
        let answer = self.answer.map_or(Ok(Flow::Continue), |f| f());
        if self.wait {
            return Step::Pending(Box::pin(async move {
                tokio::task::yield_now().await;
                self.note("req(waited)");
                answer
            }));
        }
        self.note("req");
        Step::Done(answer)
    }

    fn on_request_body<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        self.note(&format!("body={}", String::from_utf8_lossy(body)));
        let mut next = body.to_vec();
        next.extend_from_slice(self.name.as_bytes());
        *body = Bytes::from(next);
        Step::CONTINUE
    }

    fn on_response_headers(
        &self,
        _ctx: &mut RequestCtx,
        _resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        self.note("resp");
        Ok(())
    }

    fn on_complete(&self, _ctx: &RequestCtx, done: &Completion) {
        self.note(&format!("done={}", done.status.as_u16()));
    }
}

fn ctx(path: &str) -> RequestCtx {
    let uri: Uri = path.parse().unwrap_or_default();
    RequestCtx::new(
        HeaderValue::from_static("rid"),
        SocketAddr::from(([127, 0, 0, 1], 1)),
        false,
        UpstreamTarget::suffix(uri, 0),
    )
}

fn parts() -> (request::Parts, response::Parts) {
    let req = http::Request::get("/")
        .body(())
        .unwrap_or_default()
        .into_parts()
        .0;
    let resp = Response::new(()).into_parts().0;
    (req, resp)
}

fn taken(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner()))
}

fn done(status: u16) -> Completion<'static> {
    Completion {
        status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        error: None,
        aborted: false,
        timings: Timings::default(),
        bytes_in: 0,
        bytes_out: 0,
        method: http::Method::GET,
        upstream_status: None,
        api: None,
        started: std::time::Instant::now(),
    }
}

#[tokio::test]
async fn request_side_in_order_response_side_reversed_complete_for_all() {
    let log = Log::default();
    let chain = Chain::new(vec![
        Probe::new("a", &log),
        Probe::new("b", &log),
        Probe::new("c", &log),
    ]);
    let (mut req, mut resp) = parts();
    let mut c = ctx("/x");
    assert!(chain.request_headers(&mut c, &mut req).await.is_ok());
    let mut body = Bytes::from_static(b"<");
    assert!(chain
        .request_body(&mut c, &mut req, &mut body)
        .await
        .is_ok());
    assert_eq!(
        &body[..],
        b"<abc",
        "each body hook sees the previous one's rewrite"
    );
    assert!(chain
        .response_headers(&mut c, &mut resp, chain.len())
        .is_ok());
    chain.complete(&c, &done(200));
    assert_eq!(
        taken(&log),
        [
            "a:req",
            "b:req",
            "c:req",
            "a:body=<",
            "b:body=<a",
            "c:body=<ab",
            "c:resp",
            "b:resp",
            "a:resp",
            "c:done=200",
            "b:done=200",
            "a:done=200"
        ]
    );
}

#[tokio::test]
async fn a_respond_stops_the_request_side_and_only_earlier_policies_see_the_response() {
    let log = Log::default();
    let stopper = Arc::new(Probe {
        name: "b",
        log: log.clone(),
        answer: Some(|| {
            let mut r = Response::new(Bytes::from_static(b"cached"));
            *r.status_mut() = StatusCode::ACCEPTED;
            Ok(Flow::Respond(r))
        }),
        wait: false,
    });
    let chain = Chain::new(vec![Probe::new("a", &log), stopper, Probe::new("c", &log)]);
    let (mut req, mut resp) = parts();
    let mut c = ctx("/x");
    let stop = match chain.request_headers(&mut c, &mut req).await {
        Err(s) => s,
        Ok(()) => panic!("the chain did not stop"),
    };
    assert_eq!(stop.at, 1);
    assert!(matches!(&stop.answer, Answer::Respond(r) if r.status() == StatusCode::ACCEPTED));
    assert!(chain.response_headers(&mut c, &mut resp, stop.at).is_ok());
    chain.complete(&c, &done(202));
    assert_eq!(
        taken(&log),
        [
            "a:req",
            "b:req",
            "a:resp",
            "c:done=202",
            "b:done=202",
            "a:done=202"
        ]
    );
}

#[tokio::test]
async fn an_error_stops_like_a_respond_and_a_pending_hook_is_awaited() {
    let log = Log::default();
    let waiting = Arc::new(Probe {
        name: "a",
        log: log.clone(),
        answer: None,
        wait: true,
    });
    let refusing = Arc::new(Probe {
        name: "b",
        log: log.clone(),
        answer: Some(|| Err(GatewayError::new(ErrorKind::MissingCredentials))),
        wait: false,
    });
    let chain = Chain::new(vec![waiting, refusing, Probe::new("c", &log)]);
    let (mut req, _) = parts();
    let mut c = ctx("/x");
    let stop = match chain.request_headers(&mut c, &mut req).await {
        Err(s) => s,
        Ok(()) => panic!("the chain did not stop"),
    };
    assert_eq!(stop.at, 1);
    assert!(
        matches!(&stop.answer, Answer::Error(e) if e.kind.spec().status == StatusCode::UNAUTHORIZED)
    );
    assert_eq!(taken(&log), ["a:req(waited)", "b:req"]);
}

/// Fails on the response side.
struct FailingResponse;

impl Policy for FailingResponse {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn hooks(&self) -> Hooks {
        Hooks::RESPONSE_HEADERS
    }
    fn on_response_headers(
        &self,
        _ctx: &mut RequestCtx,
        _resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        Err(GatewayError::new(ErrorKind::Internal))
    }
}

#[tokio::test]
async fn a_response_side_error_names_its_policy_so_outer_ones_still_run() {
    let log = Log::default();
    let chain = Chain::new(vec![Probe::new("a", &log), Arc::new(FailingResponse)]);
    let (_, mut resp) = parts();
    let mut c = ctx("/x");
    let at = match chain.response_headers(&mut c, &mut resp, chain.len()) {
        Err((at, _)) => at,
        Ok(()) => panic!("no error"),
    };
    assert_eq!(at, 1);
    assert!(chain.response_headers(&mut c, &mut resp, at).is_ok());
    assert_eq!(taken(&log), ["a:resp"]);
}

/// Rewrites the upstream path and query.
struct Rewrite;

impl Policy for Rewrite {
    fn name(&self) -> &'static str {
        "rewrite"
    }
    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS
    }
    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
    ) -> Step<'a> {
        let path = format!("/v2{}", ctx.upstream.path());
        let r = ctx
            .upstream
            .set_path(&path)
            .and_then(|()| ctx.upstream.set_query(Some("rewritten=1")))
            .map(|()| Flow::Continue)
            .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e));
        Step::Done(r)
    }
}

#[tokio::test]
async fn a_policy_rewrites_the_upstream_path_and_query() {
    let chain = Chain::new(vec![Arc::new(Rewrite)]);
    let (mut req, _) = parts();
    let uri: Uri = "/pets/v1/cats/1?x=1".parse().unwrap_or_default();
    let mut c = RequestCtx::new(
        HeaderValue::from_static("rid"),
        SocketAddr::from(([127, 0, 0, 1], 1)),
        false,
        UpstreamTarget::suffix(uri, "/pets/v1".len()),
    );
    assert_eq!(c.upstream.path(), "/cats/1");
    assert_eq!(c.upstream.query(), Some("x=1"));
    assert!(chain.request_headers(&mut c, &mut req).await.is_ok());
    let mut line = String::new();
    c.upstream.write_to("/base", &mut line);
    assert_eq!(line, "/base/v2/cats/1?rewritten=1");
    assert!(c.upstream.set_path("no-slash").is_err());
    assert!(c.upstream.set_path("/a b").is_err());
    assert!(c.upstream.set_query(Some("a#b")).is_err());
}

#[test]
fn hooks_are_a_set() {
    let h = Hooks::PRE_ROUTE | Hooks::COMPLETE;
    assert!(h.contains(Hooks::PRE_ROUTE));
    assert!(h.contains(Hooks::COMPLETE));
    assert!(!h.contains(Hooks::REQUEST_BODY));
    assert!(!h.contains(Hooks::NONE));
    let chain = Chain::new(vec![]);
    assert!(chain.is_empty());
    assert!(!chain.hooks().contains(Hooks::COMPLETE));
}

/// Wants every response body whole (a body transform's default).
struct WholeBodies;

impl Policy for WholeBodies {
    fn name(&self) -> &'static str {
        "whole"
    }
    fn hooks(&self) -> Hooks {
        Hooks::RESPONSE_BODY
    }
}

#[test]
fn event_streams_and_grpc_are_never_buffered_for_a_body_policy() {
    let chain = Chain::new(vec![Arc::new(WholeBodies) as Arc<dyn Policy>]);
    let c = ctx("/x");
    let with = |ct: &'static str| {
        let (_, mut resp) = parts();
        resp.headers
            .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(ct));
        chain.wants_response_body(&c, &resp, chain.len())
    };
    assert!(with("application/json"));
    assert!(!with("text/event-stream"));
    assert!(!with("application/grpc"));
}
