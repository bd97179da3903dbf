//! The circuit of one endpoint on a manual clock: WSO2's suspension timeline.

use std::sync::Arc;
use std::time::Duration;

use turnpike_model::clock::{ManualClock, UnixNanos};

use super::*;

fn resilience(consecutive: u32, ratio: Option<f64>) -> Circuit {
    Circuit {
        suspension: Suspension {
            on: Counted::default(),
            initial: Duration::from_secs(1),
            factor: 2.0,
            max: Duration::from_secs(3),
        },
        breaker: Breaker {
            consecutive_failures: consecutive,
            failure_ratio: ratio,
            window: 4,
        },
    }
}

fn state(clock: &ManualClock) -> Arc<EndpointState> {
    EndpointRegistry::with_clock(Arc::new(clock.clone())).state("/a/v1", "http://x")
}

const PROBE: Duration = Duration::from_secs(10);

#[test]
fn suspension_grows_by_its_factor_up_to_the_maximum_and_a_success_resets_it() {
    let clock = ManualClock::new(UnixNanos::from_secs(1000));
    let r = resilience(2, None);
    let s = state(&clock);
    s.failed(&r);
    assert_eq!(s.health(), EndpointHealth::Active, "one failure of two");
    s.failed(&r);
    assert_eq!(s.health(), EndpointHealth::Suspended);
    assert!(!s.admits(PROBE));
    clock.advance(Duration::from_millis(999));
    assert!(!s.admits(PROBE), "still inside the 1 s suspension");
    clock.advance(Duration::from_millis(1));
    assert!(s.admits(PROBE), "the probe");
    assert_eq!(s.health(), EndpointHealth::Probing);
    assert!(!s.admits(PROBE), "one probe at a time");
    s.failed(&r);
    assert_eq!(
        s.health(),
        EndpointHealth::Suspended,
        "a failed probe suspends at once"
    );
    clock.advance(Duration::from_millis(1999));
    assert!(!s.admits(PROBE), "second suspension: 2 s");
    clock.advance(Duration::from_millis(1));
    assert!(s.admits(PROBE));
    s.failed(&r);
    clock.advance(Duration::from_millis(2999));
    assert!(!s.admits(PROBE), "third: 4 s capped at 3 s");
    clock.advance(Duration::from_millis(1));
    assert!(s.admits(PROBE));
    s.succeeded(&r);
    assert_eq!(s.health(), EndpointHealth::Active);
    s.failed(&r);
    s.failed(&r);
    clock.advance(Duration::from_secs(1));
    assert!(
        s.admits(PROBE),
        "after a success the suspension starts again at 1 s"
    );
    assert_eq!(s.suspensions(), 4);
}

#[test]
fn a_lost_probe_is_replaced_after_its_time() {
    let clock = ManualClock::new(UnixNanos::from_secs(1000));
    let r = resilience(1, None);
    let s = state(&clock);
    s.failed(&r);
    clock.advance(Duration::from_secs(1));
    assert!(s.admits(PROBE));
    clock.advance(PROBE);
    assert!(s.admits(PROBE), "the first probe never reported");
}

#[test]
fn the_failure_ratio_opens_the_circuit_at_the_end_of_a_window() {
    let clock = ManualClock::new(UnixNanos::from_secs(1000));
    let r = resilience(100, Some(0.5));
    let s = state(&clock);
    s.failed(&r);
    s.succeeded(&r);
    s.failed(&r);
    assert_eq!(s.health(), EndpointHealth::Active);
    s.succeeded(&r);
    // 2 of 4 failed, but the window closed on a success: the next failure is judged in
    // the next window.
    assert_eq!(s.health(), EndpointHealth::Active);
    for _ in 0..3 {
        s.succeeded(&r);
    }
    s.failed(&r);
    assert_eq!(s.health(), EndpointHealth::Active, "1 of 4");
    s.failed(&r);
    s.failed(&r);
    s.succeeded(&r);
    s.failed(&r);
    assert_eq!(s.health(), EndpointHealth::Suspended, "3 of 4");
}

#[test]
fn health_checks_need_their_thresholds_in_a_row() {
    let clock = ManualClock::new(UnixNanos::from_secs(1000));
    let s = state(&clock);
    assert!(!s.checked(false, 2, 2));
    assert!(!s.checked(true, 2, 2), "a pass resets the failures");
    assert!(!s.checked(false, 2, 2));
    assert!(s.checked(false, 2, 2));
    assert_eq!(s.health(), EndpointHealth::Unhealthy);
    assert!(!s.admits(PROBE));
    assert!(!s.checked(true, 2, 2));
    assert!(s.checked(true, 2, 2));
    assert_eq!(s.health(), EndpointHealth::Active);
}

#[test]
fn the_registry_keeps_a_state_while_a_snapshot_holds_it() {
    let clock = ManualClock::new(UnixNanos::from_secs(1000));
    let reg = EndpointRegistry::with_clock(Arc::new(clock));
    let a = reg.state("/a/v1", "http://x");
    let b = reg.state("/a/v1", "http://x");
    assert!(Arc::ptr_eq(&a, &b));
    assert!(!Arc::ptr_eq(&a, &reg.state("/b/v1", "http://x")));
    let _guard = a.start();
    assert_eq!(b.in_flight(), 1);
    drop(_guard);
    assert_eq!(b.in_flight(), 0);
    drop((a, b));
    let c = reg.state("/a/v1", "http://x");
    assert_eq!(c.in_flight(), 0);
}
