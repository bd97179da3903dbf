//! MCP sessions: issued by `initialize` (`Mcp-Session-Id`), required after, ended by
//! `DELETE` or after an idle time, at most a set number per API. They live in the
//! gateway's runtime, keyed by the API's id, so a snapshot swap keeps them; lock-free
//! maps (papaya), touched only by MCP endpoints' requests.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use http::HeaderName;
use turnpike_policy::RequestCtx;

/// The header carrying a session's id, both ways.
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// Every API's sessions on this gateway (in the runtime's type map).
#[derive(Default)]
pub struct Registry {
    apis: papaya::HashMap<String, Arc<Sessions>>,
}

impl Registry {
    /// The sessions of the API with this id.
    pub fn for_api(&self, api_id: &str) -> Arc<Sessions> {
        let apis = self.apis.pin();
        if let Some(s) = apis.get(api_id) {
            return s.clone();
        }
        apis.get_or_insert_with(api_id.to_owned(), || Arc::new(Sessions::default()))
            .clone()
    }
}

/// How many sessions an API keeps and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_sessions: usize,
    pub idle_secs: u64,
}

/// One session: who opened it, the protocol version it agreed, when it was last used.
struct Session {
    caller: u64,
    version: &'static str,
    last_seen: AtomicU64,
    /// A proxied server's own session id for this session (never shown to the client),
    /// set once its `initialize` answered: one per server of a multiplexed endpoint, in
    /// the section's order (see [`Remote`]).
    upstream: OnceLock<Box<[Remote]>>,
}

/// One remote server's side of a proxied session: `None` a server left out (it did not
/// initialise), `Some("")` one that gave no session id, else its id.
pub type Remote = Option<Box<str>>;

/// What a session id names now.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// A live session of this caller, with its protocol version.
    Live(&'static str),
    /// No session (never issued, ended, expired, or another caller's).
    Unknown,
}

/// One API's sessions. Hashed with foldhash, not SipHash: the keys are this server's
/// random ids (a lookup of an id a client made up inserts nothing), and each call
/// looks its session up.
#[derive(Default)]
pub struct Sessions {
    map: papaya::HashMap<u128, Session, foldhash::fast::RandomState>,
}

impl Sessions {
    /// Opens a session for `caller`; `None` when the API has `max_sessions` live ones.
    pub fn open(
        &self,
        caller: u64,
        version: &'static str,
        now: u64,
        limits: Limits,
    ) -> Option<u128> {
        if self.map.len() >= limits.max_sessions {
            self.sweep(now, limits.idle_secs);
            if self.map.len() >= limits.max_sessions {
                return None;
            }
        }
        let id: u128 = rand::random();
        let s = Session {
            caller,
            version,
            last_seen: AtomicU64::new(now),
            upstream: OnceLock::new(),
        };
        self.map.pin().insert(id, s);
        Some(id)
    }

    /// The session `id` of `caller`, its idle clock restarted; an expired one is
    /// dropped.
    pub fn touch(&self, id: u128, caller: u64, now: u64, idle_secs: u64) -> Found {
        let map = self.map.pin();
        let Some(s) = map.get(&id) else {
            return Found::Unknown;
        };
        if s.caller != caller {
            return Found::Unknown;
        }
        if now.saturating_sub(s.last_seen.load(Ordering::Relaxed)) > idle_secs {
            map.remove(&id);
            return Found::Unknown;
        }
        s.last_seen.store(now, Ordering::Relaxed);
        Found::Live(s.version)
    }

    /// Ends `caller`'s session `id`; whether there was one.
    pub fn close(&self, id: u128, caller: u64) -> bool {
        let map = self.map.pin();
        matches!(map.remove_if(&id, |_, s| s.caller == caller), Ok(Some(_)))
    }

    /// Records the proxied server's session id for session `id` (once).
    pub fn bind_upstream(&self, id: u128, upstream: &str) {
        self.bind_remotes(id, Box::new([Some(upstream.into())]));
    }

    /// The proxied server's session id for session `id`, if it gave one.
    pub fn upstream_of(&self, id: u128) -> Option<Box<str>> {
        self.with_remotes(id, |r| r.first().cloned().flatten())
            .flatten()
    }

    /// Records the remote sessions of session `id`, one per server (once).
    pub fn bind_remotes(&self, id: u128, remotes: Box<[Remote]>) {
        if let Some(s) = self.map.pin().get(&id) {
            let _ = s.upstream.set(remotes);
        }
    }

    /// `f` of the remote sessions of session `id` (`None`: no session, or none bound).
    pub fn with_remotes<R>(&self, id: u128, f: impl FnOnce(&[Remote]) -> R) -> Option<R> {
        Some(f(self.map.pin().get(&id)?.upstream.get()?))
    }

    /// Drops the sessions idle longer than `idle_secs` (cold: when the cap is reached).
    #[cold]
    fn sweep(&self, now: u64, idle_secs: u64) {
        self.map
            .pin()
            .retain(|_, s| now.saturating_sub(s.last_seen.load(Ordering::Relaxed)) <= idle_secs);
    }

    /// How many sessions are held.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

/// Who a session belongs to: the caller's subject and application (0 on an open API),
/// hashed with a seed of this process's (foldhash, sixteen bytes a step: FNV, a byte at
/// a time, cost ~3 instructions for each byte of every call's subject and application).
pub(crate) fn caller_key(ctx: &RequestCtx) -> u64 {
    static SEED: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    match ctx.identity() {
        None => 0,
        Some(i) => {
            let app = i.principal.application_id.as_deref().unwrap_or("");
            SEED.get_or_init(Default::default)
                .hash_one((&*i.subject, app))
        }
    }
}

/// A session id as the `Mcp-Session-Id` header carries it: 32 lower-case hex digits.
pub fn format_id(id: u128) -> String {
    format!("{id:032x}")
}

/// The session id of a header value; `None` for anything else.
pub fn parse_id(text: &[u8]) -> Option<u128> {
    let digits: &[u8; 32] = text.try_into().ok()?;
    // Eight digits at a time (a word's bytes tested and folded together, ~25
    // instructions): a table lookup per digit cost ~260 a call, `from_str_radix` ~800.
    let mut id = 0u128;
    for eight in digits.chunks_exact(8) {
        let word: &[u8; 8] = eight.try_into().ok()?;
        id = id << 32 | u128::from(hex8(u64::from_le_bytes(*word))?);
    }
    Some(id)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` strictly between `above` and `below` (both at most
/// 128): exact per byte, no carry crosses a byte.
fn between(x: u64, above: u64, below: u64) -> u64 {
    let low = x & LOW7;
    (ONES * (127 + below)).wrapping_sub(low) & !x & (low + ONES * (127 - above)) & HIGH
}

/// Eight hex digits (either case, the first in the word's lowest byte) as a number.
fn hex8(word: u64) -> Option<u32> {
    let digit = between(word, 0x2F, 0x3A);
    // `A`-`F` folded onto `a`-`f` (no other byte folds there).
    let letter = between(word | (ONES * 0x20), 0x60, 0x67);
    if digit | letter != HIGH {
        return None;
    }
    // Each byte's value: its low nibble, plus 9 for a letter (`a` is 0x61).
    let v = (word & (ONES * 0x0F)) + (letter >> 7) * 9;
    // Bytes n0..n7 (n0 lowest) into n0 n1 .. n7, n0 the highest nibble.
    let v = ((v & 0x00FF_00FF_00FF_00FF) << 4) | ((v >> 8) & 0x00FF_00FF_00FF_00FF);
    let v = ((v & 0x0000_FFFF_0000_FFFF) << 8) | ((v >> 16) & 0x0000_FFFF_0000_FFFF);
    Some((((v & 0xFFFF) << 16) | ((v >> 32) & 0xFFFF)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_sessions: 2,
        idle_secs: 60,
    };

    #[test]
    fn sessions_are_bounded_bound_to_their_caller_and_expire() {
        let s = Sessions::default();
        let a = s.open(1, "2025-06-18", 0, LIMITS).expect("first");
        let b = s.open(1, "2025-06-18", 0, LIMITS).expect("second");
        assert_eq!(s.open(1, "2025-06-18", 0, LIMITS), None, "the cap holds");
        assert_eq!(s.touch(a, 2, 10, 60), Found::Unknown, "another caller's");
        assert_eq!(s.touch(a, 1, 50, 60), Found::Live("2025-06-18"));
        // At 100 b has idled past 60 s (a was used at 50): the full map drops it.
        assert!(
            s.open(1, "2025-06-18", 100, LIMITS).is_some(),
            "an expired one made room"
        );
        assert_eq!(s.touch(b, 1, 100, 60), Found::Unknown);
        assert_eq!(s.len(), 2);
        assert!(!s.close(a, 2));
        assert!(s.close(a, 1));
        assert_eq!(s.touch(a, 1, 101, 60), Found::Unknown, "closed");
    }

    #[test]
    fn ids_round_trip_and_refuse_other_text() {
        let id = 0x0123_4567_89ab_cdef_0011_2233_4455_6677u128;
        assert_eq!(parse_id(format_id(id).as_bytes()), Some(id));
        assert_eq!(parse_id(b"xyz"), None);
        assert_eq!(parse_id(&[b'g'; 32]), None);
        assert_eq!(
            parse_id(b"0123456789ABCDEFabcdef0123456789"),
            Some(0x0123_4567_89ab_cdef_abcd_ef01_2345_6789)
        );
        // Every byte that is no hex digit refuses the id, wherever it is.
        for b in (0..=255u8).filter(|b| !b.is_ascii_hexdigit()) {
            for at in 0..32 {
                let mut id = *b"00000000000000000000000000000000";
                id[at] = b;
                assert_eq!(parse_id(&id), None, "byte {b} at {at}");
            }
        }
    }
}
