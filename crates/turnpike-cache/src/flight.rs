//! Request collapsing: the misses in flight of one API, by key. The first miss of a key
//! leads ([`Flight`]); the others wait for it (bounded) and then look the key up again.
//!
//! Kept cheap for the common case, a miss nobody else waits for: a flight is one
//! allocation (its [`State`]) and one map entry keyed by the key's 64-bit hash (seeded
//! per process), and its end wakes nobody unless a follower registered. Two keys with
//! one hash only make a follower wait for the other key's leader and then find nothing,
//! so it goes upstream itself: a delay, never a wrong answer.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use foldhash::fast::RandomState;
use tokio::sync::Notify;

/// One flight, shared by its leader and its followers.
pub(crate) struct State {
    done: AtomicBool,
    waiters: AtomicUsize,
    notify: Notify,
}

/// The misses in flight of one API.
pub(crate) struct Flights {
    map: papaya::HashMap<u64, Arc<State>, RandomState>,
    hasher: RandomState,
}

impl Default for Flights {
    fn default() -> Flights {
        Flights {
            map: papaya::HashMap::with_hasher(RandomState::default()),
            hasher: RandomState::default(),
        }
    }
}

impl Flights {
    /// Leads the miss of `key` (`Ok`: `end` must be called when its answer is stored
    /// or known not to be), or joins the one in flight (`Err`: wait on it).
    pub(crate) fn join(&self, key: &str) -> Result<(u64, Arc<State>), Arc<State>> {
        let hash = self.hasher.hash_one(key);
        let state = Arc::new(State {
            done: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            notify: Notify::new(),
        });
        match self.map.pin().try_insert(hash, state.clone()) {
            Ok(_) => Ok((hash, state)),
            Err(occupied) => Err(occupied.current.clone()),
        }
    }

    /// Whether a miss of `key` is in flight.
    pub(crate) fn in_flight(&self, key: &str) -> bool {
        self.map.pin().contains_key(&self.hasher.hash_one(key))
    }

    /// Ends the flight `hash`: a later miss leads anew, and the followers wake.
    pub(crate) fn end(&self, hash: u64, state: &State) {
        let map = self.map.pin();
        // Only this flight's entry (the key may be led again already).
        let _ = map.remove_if(&hash, |_, current| std::ptr::eq(&**current, state));
        state.done.store(true, Ordering::SeqCst);
        // A follower registers before it checks `done`: either it sees `done`, or this
        // sees it waiting and wakes it.
        if state.waiters.load(Ordering::SeqCst) > 0 {
            state.notify.notify_waiters();
        }
    }
}

impl State {
    /// Waits (at most `limit`) until the flight ends.
    pub(crate) async fn wait(&self, limit: Duration) {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let notified = self.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !self.done.load(Ordering::SeqCst) {
            let _ = tokio::time::timeout(limit, notified).await;
        }
    }
}
