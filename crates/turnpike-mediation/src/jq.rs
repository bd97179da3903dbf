//! jq programs on the jaq interpreter. A [`JqProgram`] is compiled once (when a snapshot
//! is built) and then run many times, each run on its own thread's stack with:
//! - a deadline, checked every [`CHECK_EVERY`] interpreter steps;
//! - a stack budget, checked at every step, so a runaway recursion becomes an error
//!   instead of overflowing the gateway thread's stack;
//! - an output-size cap, checked while the output is written.
//!
//! The interpreter calls [`HasLut::lut`] on every term it evaluates; the run's data type
//! counts those calls, which gives the checks a place to run without patching jaq. A
//! check that fails unwinds out of the interpreter with a private payload
//! (`resume_unwind`, so no panic message is printed) that [`JqProgram::run`] catches and
//! turns into a typed error.
//!
//! The program sees the body as `.` and these variables: `$path` (path parameters),
//! `$query` (query parameters; a repeated one keeps its last value), `$headers` (lower-case
//! names; repeated ones joined with ", "), `$identity` (`null` on open APIs, else
//! `{app, app_name, subscriber, subject, client_id, scopes, claims}`), `$method`, and
//! `$status` (the upstream's status on the response side, else `null`). Each variable is
//! built only if the program's text names it.
//!
//! jq's `env`/`$ENV` are not available (a program must not read the gateway's
//! environment), `input`/`inputs` are not defined, and `debug`/`stderr` print nothing.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use jaq_core::box_iter::box_once;
use jaq_core::data::HasLut;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::native::{v, Fun};
use jaq_core::{Compiler, Ctx, DataT, Native, ValT as _, Vars};
use jaq_json::Val;

use crate::error::MediationErrorKind;
use crate::json;

/// How often (in interpreter steps) the deadline is compared with the clock (a power
/// of two).
pub const CHECK_EVERY: u32 = 1024;

/// Per-run bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time a run may take.
    pub deadline: Duration,
    /// Largest output, in bytes (serialized).
    pub max_output: usize,
    /// Stack a run may use below where it started, in bytes.
    pub max_stack: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_millis(100),
            max_output: 4 << 20,
            max_stack: 256 << 10,
        }
    }
}

/// A program that does not compile: what and where (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct CompileError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// The global variables a program may read, in the order they are bound.
const GLOBALS: [&str; 6] = [
    "$path",
    "$query",
    "$headers",
    "$identity",
    "$method",
    "$status",
];

/// The authenticated caller, as the gateway's auth step saw it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    pub app: Option<&'a str>,
    pub app_name: Option<&'a str>,
    pub subscriber: Option<&'a str>,
    pub subject: &'a str,
    pub client_id: Option<&'a str>,
    pub scopes: &'a [String],
    /// Claims kept from the token.
    pub claims: &'a [(&'a str, &'a str)],
}

/// What a run may read besides the body.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// Path parameters of the matched resource template, by name.
    pub path_params: &'a [(&'a str, &'a str)],
    /// The raw query string (without '?').
    pub query: Option<&'a str>,
    pub headers: Option<&'a http::HeaderMap>,
    pub caller: Option<Caller<'a>>,
    pub method: &'a str,
    /// The upstream's status (response side).
    pub status: Option<u16>,
}

/// A compiled jq program, shared by every request of a snapshot.
pub struct JqProgram {
    filter: jaq_core::Filter<RunData>,
    /// Which of [`GLOBALS`] the program names.
    uses: [bool; GLOBALS.len()],
    /// Token claims the program names literally (`$identity.claims.tier`).
    claims: Box<[Box<str>]>,
}

impl std::fmt::Debug for JqProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JqProgram")
            .field("uses", &self.uses)
            .finish_non_exhaustive()
    }
}

impl JqProgram {
    /// Parses and compiles `code` against jq's standard library (less `env`, `input`).
    pub fn compile(code: &str) -> Result<JqProgram, CompileError> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let loader = Loader::new(defs);
        let arena = Arena::default();
        let modules = loader
            .load(&arena, File { code, path: () })
            .map_err(|errs| load_error(code, errs))?;
        let filter = Compiler::default()
            .with_funs(natives())
            .with_global_vars(GLOBALS)
            .compile(modules)
            .map_err(|errs| undefined_error(code, errs))?;
        let uses = GLOBALS.map(|name| names_variable(code, name));
        let claims = claim_names(code).into();
        Ok(JqProgram {
            filter,
            uses,
            claims,
        })
    }

    /// Whether the program names the global variable `name` (`"$method"`).
    pub fn reads(&self, name: &str) -> bool {
        GLOBALS
            .iter()
            .zip(self.uses)
            .any(|(g, used)| used && *g == name)
    }

    /// The token claims the program names literally, as `$identity.claims.name` or
    /// `$identity.claims["name"]`: the gateway keeps exactly these of each verified
    /// token (a claim reached another way reads as `null`).
    pub fn claim_names(&self) -> &[Box<str>] {
        &self.claims
    }

    /// Runs the program on `input` (the parsed body) and writes its one output as JSON.
    pub fn run_to_json(
        &self,
        input: Val,
        inputs: &Inputs<'_>,
        limits: &Limits,
    ) -> Result<Vec<u8>, MediationErrorKind> {
        let out = self.run(input, inputs, limits)?;
        json::write(&out, limits.max_output)
    }

    /// Runs the program on `input` and returns its one output.
    pub fn run(
        &self,
        input: Val,
        inputs: &Inputs<'_>,
        limits: &Limits,
    ) -> Result<Val, MediationErrorKind> {
        let marker = 0u8;
        let budget = Budget {
            started: Instant::now(),
            deadline: limits.deadline,
            steps: Cell::new(0),
            stack_base: std::ptr::addr_of!(marker) as usize,
            max_stack: limits.max_stack,
        };
        let vars = Vars::new(self.globals(inputs));
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            let data = Guarded {
                lut: &self.filter.lut,
                budget: &budget,
            };
            let ctx = Ctx::<RunData>::new(data, vars);
            let mut outputs = self.filter.id.run((ctx, input));
            let first = match outputs.next() {
                None => return Err(MediationErrorKind::NoOutput),
                Some(r) => r.map_err(exception)?,
            };
            match outputs.next() {
                None => Ok(first),
                Some(_) => Err(MediationErrorKind::ManyOutputs),
            }
        }));
        match result {
            Ok(r) => r,
            Err(payload) => Err(match payload.downcast_ref::<Stop>() {
                Some(Stop::Deadline) => MediationErrorKind::Deadline(limits.deadline),
                Some(Stop::Stack) => MediationErrorKind::StackLimit,
                None => MediationErrorKind::Internal,
            }),
        }
    }

    /// The values of [`GLOBALS`], `null` for those the program does not name.
    fn globals(&self, inputs: &Inputs<'_>) -> [Val; GLOBALS.len()] {
        let [path, query, headers, identity, method, status] = self.uses;
        [
            if path {
                path_var(inputs.path_params)
            } else {
                Val::Null
            },
            if query {
                query_var(inputs.query)
            } else {
                Val::Null
            },
            if headers {
                headers_var(inputs.headers)
            } else {
                Val::Null
            },
            if identity {
                identity_var(inputs.caller.as_ref())
            } else {
                Val::Null
            },
            if method {
                str_val(inputs.method)
            } else {
                Val::Null
            },
            match (status, inputs.status) {
                (true, Some(s)) => Val::from(s as isize),
                _ => Val::Null,
            },
        ]
    }
}

/// Why a run was stopped from inside the interpreter.
enum Stop {
    Deadline,
    Stack,
}

/// The run's bookkeeping, read by [`Guarded::lut`].
struct Budget {
    started: Instant,
    deadline: Duration,
    steps: Cell<u32>,
    stack_base: usize,
    max_stack: usize,
}

impl Budget {
    #[inline]
    fn tick(&self) {
        let marker = 0u8;
        let here = std::ptr::addr_of!(marker) as usize;
        if self.stack_base.saturating_sub(here) > self.max_stack {
            panic::resume_unwind(Box::new(Stop::Stack));
        }
        let steps = self.steps.get().wrapping_add(1);
        self.steps.set(steps);
        if steps & (CHECK_EVERY - 1) == 0 && self.started.elapsed() > self.deadline {
            panic::resume_unwind(Box::new(Stop::Deadline));
        }
    }
}

/// The data a run carries: the lookup table and the budget that guards it.
struct RunData;

impl DataT for RunData {
    type V<'a> = Val;
    type Data<'a> = Guarded<'a>;
}

#[derive(Clone, Copy)]
struct Guarded<'a> {
    lut: &'a jaq_core::Lut<RunData>,
    budget: &'a Budget,
}

impl<'a> HasLut<'a, RunData> for Guarded<'a> {
    #[inline]
    fn lut(&self) -> &'a jaq_core::Lut<RunData> {
        self.budget.tick();
        self.lut
    }
}

/// jq's standard natives, with those that reach outside the run replaced, and `range`
/// replaced by one that counts its outputs as steps (jaq's own generates them natively,
/// so `[range(1e12)]` would neither call the interpreter nor meet the deadline).
fn natives() -> impl Iterator<Item = Fun<RunData>> {
    const REPLACED: [&str; 4] = ["env", "stderr_empty", "debug_empty", "range"];
    jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs())
        .filter(|(name, _, _)| !REPLACED.contains(name))
        .chain(replacements::<RunData>())
}

/// Built generically, as jaq builds its own, so the fn items coerce to jaq's pointers.
fn replacements<D: DataT>() -> [Fun<D>; 4]
where
    for<'a> D::V<'a>: jaq_std::ValT,
    for<'a> D::Data<'a>: Budgeted<'a>,
{
    [
        ("range", v(3), Native::new(guarded_range::<D>)),
        (
            "env",
            v(0),
            Native::new(|_| box_once(D::V::from_map([]).map_err(jaq_core::Exn::from))),
        ),
        (
            "stderr_empty",
            v(0),
            Native::new(|_| Box::new(std::iter::empty())),
        ),
        (
            "debug_empty",
            v(0),
            Native::new(|_| Box::new(std::iter::empty())),
        ),
    ]
}

/// Run data that carries a [`Budget`].
trait Budgeted<'a> {
    fn budget(&self) -> &'a Budget;
}

impl<'a> Budgeted<'a> for Guarded<'a> {
    fn budget(&self) -> &'a Budget {
        self.budget
    }
}

/// `range($from; $to; $by)` as jaq defines it, one budget step per output.
fn guarded_range<D: DataT>(mut cv: jaq_core::Cv<'_, D>) -> jaq_core::ValXs<'_, D::V<'_>>
where
    for<'a> D::V<'a>: jaq_std::ValT,
    for<'a> D::Data<'a>: Budgeted<'a>,
{
    use std::cmp::Ordering::{Equal, Greater, Less};
    let by = cv.0.pop_var();
    let to = cv.0.pop_var();
    let from = cv.0.pop_var();
    let budget = cv.0.data().budget();
    let direction = by.partial_cmp(&D::V::from(0usize)).unwrap_or(Equal);
    let mut next = Some(from);
    Box::new(std::iter::from_fn(move || {
        budget.tick();
        let x = next.take()?;
        let more = match direction {
            Greater => x < to,
            Less => x > to,
            Equal => x != to,
        };
        if !more {
            return None;
        }
        match x.clone() + by.clone() {
            Ok(n) => next = Some(n),
            Err(e) => return Some(Err(jaq_core::Exn::from(e))),
        }
        Some(Ok(x))
    }))
}

/// True if `name` (`$path`) occurs in `code` as a whole variable name. A false positive
/// (inside a string) only costs building the variable.
/// The names after `$identity.claims.` (an identifier) or `$identity.claims["` (a
/// string without escapes) in the jq program `code`, deduplicated: what
/// [`JqProgram::claim_names`] reports, without compiling.
pub fn claim_names(code: &str) -> Vec<Box<str>> {
    const PREFIX: &str = "$identity.claims";
    let mut out: Vec<Box<str>> = Vec::new();
    for (at, _) in code.match_indices(PREFIX) {
        let rest = &code[at + PREFIX.len()..];
        let name = if let Some(r) = rest.strip_prefix('.') {
            let end = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(r.len());
            r.get(..end).filter(|n| !n.is_empty())
        } else if let Some(r) = rest
            .strip_prefix("[\"")
            .or_else(|| rest.strip_prefix(".\""))
        {
            r.find('"')
                .and_then(|end| r.get(..end))
                .filter(|n| !n.is_empty() && !n.contains('\\'))
        } else {
            None
        };
        if let Some(n) = name {
            if !out.iter().any(|o| **o == *n) {
                out.push(n.into());
            }
        }
    }
    out
}

fn names_variable(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        !code[at + name.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn exception(e: jaq_core::Exn<'_, Val>) -> MediationErrorKind {
    match e.get_err() {
        Ok(err) => MediationErrorKind::Program(truncate(err.to_string())),
        Err(exn) => match exn.get_halt() {
            Ok(code) => MediationErrorKind::Program(format!("halt with exit code {code}")),
            Err(_) => MediationErrorKind::Program("unexpected break".to_owned()),
        },
    }
}

/// Error messages can quote whole values: keep them short.
fn truncate(mut s: String) -> String {
    const MAX: usize = 300;
    if s.len() > MAX {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("...");
    }
    s
}

fn str_val(s: &str) -> Val {
    Val::utf8_str(s.as_bytes().to_vec())
}

fn object<'a>(pairs: impl IntoIterator<Item = (&'a str, Val)>) -> Val {
    Val::obj(pairs.into_iter().map(|(k, v)| (str_val(k), v)).collect())
}

fn path_var(params: &[(&str, &str)]) -> Val {
    object(params.iter().map(|(k, v)| (*k, str_val(v))))
}

fn query_var(query: Option<&str>) -> Val {
    let pairs = form_urlencoded::parse(query.unwrap_or("").as_bytes());
    Val::obj(pairs.map(|(k, v)| (str_val(&k), str_val(&v))).collect())
}

fn headers_var(headers: Option<&http::HeaderMap>) -> Val {
    let Some(headers) = headers else {
        return Val::obj(Default::default());
    };
    let mut map = jaq_json::Map::default();
    for name in headers.keys() {
        let mut joined = String::new();
        for (i, value) in headers.get_all(name).iter().enumerate() {
            if i > 0 {
                joined.push_str(", ");
            }
            joined.push_str(&String::from_utf8_lossy(value.as_bytes()));
        }
        map.insert(str_val(name.as_str()), str_val(&joined));
    }
    Val::obj(map)
}

fn opt_str(s: Option<&str>) -> Val {
    s.map_or(Val::Null, str_val)
}

fn identity_var(caller: Option<&Caller<'_>>) -> Val {
    let Some(c) = caller else {
        return Val::Null;
    };
    object([
        ("app", opt_str(c.app)),
        ("app_name", opt_str(c.app_name)),
        ("subscriber", opt_str(c.subscriber)),
        ("subject", str_val(c.subject)),
        ("client_id", opt_str(c.client_id)),
        ("scopes", c.scopes.iter().map(|s| str_val(s)).collect()),
        (
            "claims",
            object(c.claims.iter().map(|(k, v)| (*k, str_val(v)))),
        ),
    ])
}

/// 1-based line and column of byte `offset` in `code`.
fn position(code: &str, offset: usize) -> (usize, usize) {
    let before = &code[..offset.min(code.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn at(code: &str, part: &str, message: String) -> CompileError {
    let span = jaq_core::load::span(code, part);
    let (line, column) = position(code, span.start);
    CompileError {
        line,
        column,
        message,
    }
}

fn load_error<P>(code: &str, errs: jaq_core::load::Errors<&str, P>) -> CompileError {
    use jaq_core::load::Error;
    let first = errs.into_iter().next().map(|(_, e)| e);
    match first {
        Some(Error::Lex(errs)) => match errs.into_iter().next() {
            Some((expect, found)) => at(code, found, format!("expected {}", lex_expect(&expect))),
            None => whole(code, "syntax error"),
        },
        Some(Error::Parse(errs)) => match errs.into_iter().next() {
            Some((expect, found)) => {
                let found_text = if found.is_empty() {
                    "end of program".to_owned()
                } else {
                    format!("{found:?}")
                };
                at(
                    code,
                    found,
                    format!("expected {}, found {found_text}", expect.as_str()),
                )
            }
            None => whole(code, "syntax error"),
        },
        Some(Error::Io(errs)) => whole(
            code,
            &errs
                .into_iter()
                .next()
                .map_or("cannot load a module".to_owned(), |(path, e)| {
                    format!("cannot load module {path:?}: {e}")
                }),
        ),
        None => whole(code, "syntax error"),
    }
}

fn lex_expect(e: &jaq_core::load::lex::Expect<&str>) -> &'static str {
    use jaq_core::load::lex::Expect;
    match e {
        Expect::Delim("(") | Expect::Delim("[") | Expect::Delim("{") | Expect::Delim("\"") => {
            e.as_str()
        }
        Expect::Delim(_) => "a closing delimiter",
        other => other.as_str(),
    }
}

fn undefined_error<P>(code: &str, errs: jaq_core::compile::Errors<&str, P>) -> CompileError {
    use jaq_core::compile::Undefined;
    let first = errs
        .into_iter()
        .next()
        .and_then(|(_, list)| list.into_iter().next());
    match first {
        Some((name, undefined)) => {
            let what = match undefined {
                Undefined::Var => format!("undefined variable {name}"),
                Undefined::Filter(arity) => format!("undefined filter {name}/{arity}"),
                Undefined::Mod => format!("undefined module {name}"),
                Undefined::Label => format!("undefined label {name}"),
                _ => format!("undefined symbol {name}"),
            };
            at(code, name, what)
        }
        None => whole(code, "the program does not compile"),
    }
}

fn whole(_code: &str, message: &str) -> CompileError {
    CompileError {
        line: 1,
        column: 1,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: &str, input: &str) -> Result<String, MediationErrorKind> {
        let p = JqProgram::compile(code).expect("compiles");
        let input = json::parse(input.as_bytes()).expect("json");
        p.run_to_json(input, &Inputs::default(), &Limits::default())
            .map(|b| String::from_utf8(b).expect("utf8"))
    }

    #[test]
    fn names_the_variables_and_claims_it_reads() {
        let p = JqProgram::compile(
            r#"{t: $identity.claims.tier, o: $identity.claims["org.unit"], m: $method, again: $identity.claims.tier}"#,
        )
        .expect("compiles");
        assert!(p.reads("$method") && p.reads("$identity"));
        assert!(!p.reads("$status") && !p.reads("$nope"));
        let names: Vec<&str> = p.claim_names().iter().map(|n| &**n).collect();
        assert_eq!(names, ["tier", "org.unit"]);
        let p = JqProgram::compile("$identity.claims").expect("compiles");
        assert!(p.claim_names().is_empty());
    }

    #[test]
    fn runs_a_program_on_the_body() {
        assert_eq!(
            run("{b: .a}", r#"{"a":[1]}"#).as_deref(),
            Ok(r#"{"b":[1]}"#)
        );
    }

    #[test]
    fn globals_are_bound_in_order() {
        let p = JqProgram::compile(
            "[$path.id, $query.q, $headers[\"x-a\"], $method, $status, $identity.app]",
        )
        .expect("compiles");
        let mut headers = http::HeaderMap::new();
        headers.insert("x-a", http::HeaderValue::from_static("h"));
        let inputs = Inputs {
            path_params: &[("id", "7")],
            query: Some("q=s%20t&q=last"),
            headers: Some(&headers),
            caller: Some(Caller {
                app: Some("app1"),
                subject: "alice",
                ..Caller::default()
            }),
            method: "POST",
            status: Some(201),
        };
        let out = p
            .run_to_json(Val::Null, &inputs, &Limits::default())
            .expect("runs");
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            r#"["7","last","h","POST",201,"app1"]"#
        );
    }

    #[test]
    fn env_is_empty_and_env_var_is_undefined() {
        assert_eq!(run("env", "null").as_deref(), Ok("{}"));
        let e = JqProgram::compile("$ENV.HOME").expect_err("undefined");
        assert!(e.message.contains("$ENV"), "{e}");
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let e = JqProgram::compile("{a: .b,\n  c: (.d }").expect_err("bad");
        assert_eq!(e.line, 2, "{e}");
        let e = JqProgram::compile(".a | nosuch(1)").expect_err("undefined");
        assert_eq!((e.line, e.column), (1, 6), "{e}");
        assert!(e.message.contains("nosuch"), "{e}");
    }

    #[test]
    fn deadline_stops_an_endless_loop() {
        let p = JqProgram::compile("def f: f; f").expect("compiles");
        let limits = Limits {
            deadline: Duration::from_millis(20),
            ..Limits::default()
        };
        let r = p.run(Val::Null, &Inputs::default(), &limits);
        assert!(
            matches!(
                r,
                Err(MediationErrorKind::Deadline(_) | MediationErrorKind::StackLimit)
            ),
            "{r:?}"
        );
        for code in [
            "last(range(1e15))",
            "[range(1e15)] | length",
            "[limit(1e15; repeat(1))]",
        ] {
            let p = JqProgram::compile(code).expect("compiles");
            let r = p.run(Val::Null, &Inputs::default(), &limits);
            assert!(
                matches!(r, Err(MediationErrorKind::Deadline(_))),
                "{code}: {r:?}"
            );
        }
        let p = JqProgram::compile("[range(0; 10; 3)], [range(5; 0; -2)]").expect("compiles");
        let r = p.run_to_json(Val::Null, &Inputs::default(), &Limits::default());
        assert_eq!(r, Err(MediationErrorKind::ManyOutputs));
        let p =
            JqProgram::compile("[range(0; 10; 3), range(5; 0; -2), range(3)]").expect("compiles");
        let r = p.run_to_json(Val::Null, &Inputs::default(), &Limits::default());
        assert_eq!(r.as_deref(), Ok(&b"[0,3,6,9,5,3,1,0,1,2]"[..]));
    }

    #[test]
    fn deep_recursion_is_an_error_not_a_crash() {
        let p = JqProgram::compile("def f: 1 + f; f").expect("compiles");
        let r = p.run(Val::Null, &Inputs::default(), &Limits::default());
        assert!(matches!(r, Err(MediationErrorKind::StackLimit)), "{r:?}");
    }

    #[test]
    fn output_count_and_size_are_checked() {
        assert_eq!(run("empty", "1"), Err(MediationErrorKind::NoOutput));
        assert_eq!(run(".[]", "[1,2]"), Err(MediationErrorKind::ManyOutputs));
        let p = JqProgram::compile("[range(1000)]").expect("compiles");
        let limits = Limits {
            max_output: 100,
            ..Limits::default()
        };
        let r = p.run_to_json(Val::Null, &Inputs::default(), &limits);
        assert_eq!(r, Err(MediationErrorKind::OutputTooLarge(100)));
    }

    #[test]
    fn program_errors_carry_the_message() {
        match run("error(\"nope\")", "null") {
            Err(MediationErrorKind::Program(m)) => assert!(m.contains("nope"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            run("halt", "null"),
            Err(MediationErrorKind::Program(_))
        ));
    }

    /// A documented difference from jq (docs/mediation.md): jaq does not create objects
    /// through a missing key when updating a nested path.
    #[test]
    fn nested_update_through_a_missing_key_fails_unlike_jq() {
        assert!(matches!(
            run(".meta.seen = true", "{}"),
            Err(MediationErrorKind::Program(_))
        ));
        assert_eq!(
            run(".meta = ((.meta // {}) + {seen: true})", "{}").as_deref(),
            Ok(r#"{"meta":{"seen":true}}"#)
        );
    }

    #[test]
    fn programs_are_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<JqProgram>();
    }
}
