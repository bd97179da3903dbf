//! Request collapsing: the misses in flight of one API, by key. The first miss of a key
//! leads ([`Led`]); the others wait for it (bounded) and then look the key up again.
//!
//! Kept cheap for the common case, a miss nobody else waits for: leading is one
//! compare-and-swap of the key's tag (its 64-bit hash, seeded per process) into a slot
//! of a fixed table, and ending it one swap: no allocation, no lock, no map. Only a
//! follower marks the slot and makes a [`State`] to wait on (under a mutex only
//! followers and their leader take); a leader whose slot another key holds falls back
//! to a map of flights (one allocation). Two keys with one tag only make a follower
//! wait for the other key's leader and then find nothing, so it goes upstream itself:
//! a delay, never a wrong answer.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use foldhash::fast::RandomState;
use tokio::sync::Notify;

/// Slots of the fast table (a power of two): 2 KiB per API.
const SLOTS: usize = 256;
/// In a slot's word: set on every tag (so a tag is never the free word, 0)...
const LED: u64 = 1;
/// ...and set by the first follower: the leader's end then wakes the followers.
const FOLLOWED: u64 = 2;

/// One flight's followers' wait, shared by them and (at its end) their leader.
pub(crate) struct State {
    done: AtomicBool,
    waiters: AtomicUsize,
    notify: Notify,
}

/// The misses in flight of one API.
pub(crate) struct Flights {
    /// Each slot: free (0), or the tag of the key whose miss leads there (`| FOLLOWED`
    /// once a follower waits on it).
    slots: Box<[AtomicU64]>,
    /// The followers' states of slot flights, by tag.
    followed: Mutex<HashMap<u64, Arc<State>, RandomState>>,
    /// Flights whose slot another key held, by tag.
    map: papaya::HashMap<u64, Arc<State>, RandomState>,
    hasher: RandomState,
}

impl Default for Flights {
    fn default() -> Flights {
        Flights {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            followed: Mutex::new(HashMap::default()),
            map: papaya::HashMap::with_hasher(RandomState::default()),
            hasher: RandomState::default(),
        }
    }
}

/// A led flight, ended by [`Flights::end`].
pub(crate) enum Led {
    Slot { index: usize, tag: u64 },
    Map { tag: u64, state: Arc<State> },
}

/// What a follower waits on (`None`: the flight it found ended meanwhile).
pub(crate) struct Follow(Option<Arc<State>>);

impl Flights {
    fn tag(&self, key: &str) -> (usize, u64) {
        let tag = self.hasher.hash_one(key) & !FOLLOWED | LED;
        // The low bits are the markers: the slot comes from the high ones.
        (((tag >> 32) as usize) & (SLOTS - 1), tag)
    }

    fn slot(&self, index: usize) -> &AtomicU64 {
        // `index` is masked to the table's size.
        &self.slots[index & (SLOTS - 1)]
    }

    /// Leads the miss of `key` (`Ok`: [`end`](Flights::end) it when its answer is stored
    /// or known not to be), or follows the one in flight (`Err`: wait on it).
    pub(crate) fn join(&self, key: &str) -> Result<Led, Follow> {
        let (index, tag) = self.tag(key);
        let slot = self.slot(index);
        match slot.compare_exchange(0, tag, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => Ok(Led::Slot { index, tag }),
            Err(word) if word & !FOLLOWED == tag => Err(self.follow(slot, tag)),
            // Another key leads in this slot: the map, one allocation.
            Err(_) => self.join_map(tag),
        }
    }

    fn join_map(&self, tag: u64) -> Result<Led, Follow> {
        let state = Arc::new(State::new());
        match self.map.pin().try_insert(tag, state.clone()) {
            Ok(_) => Ok(Led::Map { tag, state }),
            Err(occupied) => Err(Follow(Some(occupied.current.clone()))),
        }
    }

    /// Marks the slot followed and takes (or makes) its flight's state, unless the
    /// flight ended meanwhile. The leader's end swaps its word out before it locks:
    /// a follower that still sees the word under the lock is seen by that end.
    fn follow(&self, slot: &AtomicU64, tag: u64) -> Follow {
        let marked = slot.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| {
            (w & !FOLLOWED == tag).then_some(tag | FOLLOWED)
        });
        if marked.is_err() {
            return Follow(None);
        }
        let mut followed = self.followed.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.load(Ordering::SeqCst) != tag | FOLLOWED {
            return Follow(None);
        }
        let state = followed
            .entry(tag)
            .or_insert_with(|| Arc::new(State::new()));
        Follow(Some(state.clone()))
    }

    /// Whether a miss of `key` is in flight.
    pub(crate) fn in_flight(&self, key: &str) -> bool {
        let (index, tag) = self.tag(key);
        self.slot(index).load(Ordering::SeqCst) & !FOLLOWED == tag
            || self.map.pin().contains_key(&tag)
    }

    /// Ends a flight: a later miss leads anew, and the followers wake.
    pub(crate) fn end(&self, led: &Led) {
        match led {
            Led::Slot { index, tag } => {
                let word = self.slot(*index).swap(0, Ordering::SeqCst);
                if word == *tag | FOLLOWED {
                    let state = {
                        let mut followed =
                            self.followed.lock().unwrap_or_else(PoisonError::into_inner);
                        followed.remove(tag)
                    };
                    if let Some(state) = state {
                        state.finish();
                    }
                }
            }
            Led::Map { tag, state } => {
                // Only this flight's entry (the key may be led again already).
                let map = self.map.pin();
                let _ = map.remove_if(tag, |_, current| Arc::ptr_eq(current, state));
                state.finish();
            }
        }
    }
}

impl State {
    fn new() -> State {
        State {
            done: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            notify: Notify::new(),
        }
    }

    /// The flight ended: its followers wake (a follower registers before it checks
    /// `done`: either it sees `done`, or this sees it waiting and wakes it).
    fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }
}

impl Follow {
    /// Waits (at most `limit`) until the flight ends.
    pub(crate) async fn wait(&self, limit: Duration) {
        let Some(state) = &self.0 else {
            return;
        };
        state.waiters.fetch_add(1, Ordering::SeqCst);
        let notified = state.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !state.done.load(Ordering::SeqCst) {
            let _ = tokio::time::timeout(limit, notified).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Two keys whose tags share a slot (found by trying keys: the seed is per process).
    fn same_slot(f: &Flights) -> (String, String) {
        let mut seen = HashMap::new();
        for i in 0.. {
            let key = format!("GET /k{i}");
            let (index, _) = f.tag(&key);
            if let Some(other) = seen.insert(index, key.clone()) {
                return (other, key);
            }
        }
        unreachable!()
    }

    #[tokio::test]
    async fn a_follower_of_a_slot_flight_wakes_when_it_ends() {
        let f = Arc::new(Flights::default());
        let Ok(led) = f.join("GET /a") else {
            panic!("the first miss leads")
        };
        assert!(matches!(led, Led::Slot { .. }));
        assert!(f.in_flight("GET /a"));
        let Err(follow) = f.join("GET /a") else {
            panic!("the second follows")
        };
        let waiting = tokio::spawn(async move {
            let t = Instant::now();
            follow.wait(Duration::from_secs(10)).await;
            t.elapsed()
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        f.end(&led);
        let waited = waiting.await.expect("the follower ran");
        assert!(
            waited < Duration::from_secs(5),
            "woken by the end, not the limit"
        );
        assert!(!f.in_flight("GET /a"));
        assert!(matches!(f.join("GET /a"), Ok(Led::Slot { .. })), "led anew");
    }

    #[tokio::test]
    async fn a_key_whose_slot_is_taken_leads_in_the_map_and_is_followed_there() {
        let f = Flights::default();
        let (first, second) = same_slot(&f);
        let Ok(a) = f.join(&first) else {
            panic!("leads")
        };
        let Ok(b) = f.join(&second) else {
            panic!("another key in the same slot leads too")
        };
        assert!(matches!(b, Led::Map { .. }));
        assert!(f.in_flight(&second));
        let Err(follow) = f.join(&second) else {
            panic!("the map flight is followed")
        };
        f.end(&b);
        // Ended: the follower does not wait at all.
        tokio::time::timeout(Duration::from_secs(1), follow.wait(Duration::from_secs(10)))
            .await
            .expect("no wait after the end");
        assert!(!f.in_flight(&second));
        assert!(f.in_flight(&first));
        f.end(&a);
        assert!(!f.in_flight(&first));
    }

    #[tokio::test]
    async fn a_flight_that_ended_before_its_follower_marked_it_is_not_waited_for() {
        let f = Flights::default();
        let Ok(led) = f.join("GET /b") else {
            panic!("leads")
        };
        let (index, tag) = f.tag("GET /b");
        f.end(&led);
        let follow = f.follow(f.slot(index), tag);
        assert!(follow.0.is_none());
        assert!(f.followed.lock().expect("unpoisoned").is_empty());
    }
}
