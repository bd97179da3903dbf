//! Load-test statistics: a [`Recorder`] per generator thread (HDR histogram of latencies in
//! microseconds, error and byte counters, per-second completion windows), merged into one and
//! turned into a [`Summary`] (the seeds' numbers, as text and JSON). Owns the warm-up cut:
//! a sample counts only if it was (meant to be) sent at or after the end of the warm-up and
//! completed before the end of the measurement. Knows nothing about HTTP or sockets.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram holds (longer ones are clamped to it): 10 minutes.
const MAX_LATENCY_US: u64 = 600_000_000;
/// Highest send lag the open loop's histogram holds, in nanoseconds: 10 s.
const MAX_LAG_NS: u64 = 10_000_000_000;

/// The measurement window of a run, as offsets from the run's start.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub warmup: Duration,
    pub duration: Duration,
}

impl Window {
    /// End of the measurement, from the run's start.
    pub fn end(&self) -> Duration {
        self.warmup + self.duration
    }
}

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A response with this status (>= 400 counts as an error, as JMeter does).
    Status(u16),
    /// No response: connect failure, reset, timeout.
    Failed,
}

/// Samples of one generator thread (or of a whole run, after [`Recorder::merge`]).
#[derive(Debug, Clone)]
pub struct Recorder {
    window: Window,
    hist: Histogram<u64>,
    failed: u64,
    status_errors: u64,
    sent: u64,
    received: u64,
    /// Completions per second of the measurement window.
    per_second: Vec<u64>,
    /// Open loop: how late each request was written after its due time, in ns.
    send_lag: Option<Histogram<u64>>,
    /// The samples kept for a JTL (`--jtl`), up to `sample_cap`.
    samples: Vec<Sample>,
    sample_cap: usize,
    /// In-window samples not kept because the cap was reached.
    samples_dropped: u64,
}

/// One request as a JTL row needs it (offsets from the run's start).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub start: Duration,
    pub elapsed: Duration,
    pub outcome: Outcome,
    pub sent: u64,
    pub received: u64,
    /// The generator's user (connection) that sent it.
    pub user: u32,
}

impl Recorder {
    pub fn new(window: Window) -> Self {
        // 3 significant figures: 0.1% error at any latency, a few hundred KiB per recorder.
        let hist = Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
            .expect("constant histogram bounds are valid");
        let secs = window.duration.as_secs_f64().ceil() as usize;
        Recorder {
            window,
            hist,
            failed: 0,
            status_errors: 0,
            sent: 0,
            received: 0,
            per_second: vec![0; secs.max(1)],
            send_lag: None,
            samples: Vec::new(),
            sample_cap: 0,
            samples_dropped: 0,
        }
    }

    /// Also measures send lag (open loop).
    pub fn with_send_lag(mut self) -> Self {
        self.send_lag = Some(
            Histogram::new_with_bounds(1, MAX_LAG_NS, 3)
                .expect("constant histogram bounds are valid"),
        );
        self
    }

    /// Also keeps up to `cap` in-window samples for a JTL.
    pub fn with_samples(mut self, cap: usize) -> Self {
        self.sample_cap = cap;
        self.samples = Vec::with_capacity(cap.min(1 << 16));
        self
    }

    /// Open loop: request due at `due` was written at `sent` (offsets from the start).
    pub fn record_send_lag(&mut self, due: Duration, sent: Duration) {
        if let Some(h) = &mut self.send_lag {
            if due >= self.window.warmup && due < self.window.end() {
                let ns = sent.saturating_sub(due).as_nanos() as u64;
                h.saturating_record(ns.clamp(1, MAX_LAG_NS));
            }
        }
    }

    /// Records `sample` and keeps it for a JTL when asked to.
    pub fn record_sample(&mut self, sample: Sample) -> bool {
        let end = sample.start + sample.elapsed;
        let inside = self.record(
            sample.start,
            end,
            sample.outcome,
            sample.sent,
            sample.received,
        );
        if inside && self.sample_cap > 0 {
            if self.samples.len() < self.sample_cap {
                self.samples.push(sample);
            } else {
                self.samples_dropped += 1;
            }
        }
        inside
    }

    /// The kept samples, in the order they completed per thread.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// In-window samples beyond the cap, not kept.
    pub fn samples_dropped(&self) -> u64 {
        self.samples_dropped
    }

    /// Records one request meant to be sent at `start` that ended at `end` (offsets from the
    /// run's start). Returns whether it fell inside the measurement window.
    pub fn record(
        &mut self,
        start: Duration,
        end: Duration,
        outcome: Outcome,
        sent: u64,
        received: u64,
    ) -> bool {
        if start < self.window.warmup || end >= self.window.end() {
            return false;
        }
        match outcome {
            Outcome::Failed => self.failed += 1,
            Outcome::Status(code) => {
                if code >= 400 {
                    self.status_errors += 1;
                }
                let us = end.saturating_sub(start).as_micros() as u64;
                self.hist.saturating_record(us.clamp(1, MAX_LATENCY_US));
            }
        }
        self.sent += sent;
        self.received += received;
        let sec = (end - self.window.warmup).as_secs() as usize;
        if let Some(slot) = self.per_second.get_mut(sec) {
            *slot += 1;
        }
        true
    }

    /// Adds another recorder's samples (same window) to this one.
    pub fn merge(&mut self, other: &Recorder) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.failed += other.failed;
        self.status_errors += other.status_errors;
        self.sent += other.sent;
        self.received += other.received;
        for (a, b) in self.per_second.iter_mut().zip(&other.per_second) {
            *a += b;
        }
        match (&mut self.send_lag, &other.send_lag) {
            (Some(a), Some(b)) => {
                let _ = a.add(b);
            }
            (None, Some(b)) => self.send_lag = Some(b.clone()),
            _ => {}
        }
        let room = self.sample_cap.saturating_sub(self.samples.len());
        let take = other.samples.len().min(room);
        self.samples.extend_from_slice(&other.samples[..take]);
        self.samples_dropped += other.samples_dropped + (other.samples.len() - take) as u64;
    }

    /// The statistics of the measurement window.
    pub fn summary(&self) -> Summary {
        let secs = self.window.duration.as_secs_f64().max(1e-9);
        let h = &self.hist;
        let samples = h.len() + self.failed;
        let errors = self.failed + self.status_errors;
        let ms = |us: f64| us / 1000.0;
        let q = |p: f64| {
            if h.is_empty() {
                0.0
            } else {
                ms(h.value_at_quantile(p) as f64)
            }
        };
        let (min, max, mean, stdev) = if h.is_empty() {
            (0.0, 0.0, 0.0, 0.0)
        } else {
            (
                ms(h.min() as f64),
                ms(h.max() as f64),
                ms(h.mean()),
                ms(h.stdev()),
            )
        };
        Summary {
            samples,
            errors,
            error_pct: if samples == 0 {
                0.0
            } else {
                100.0 * errors as f64 / samples as f64
            },
            duration_s: secs,
            throughput_rps: samples as f64 / secs,
            received_kbps: self.received as f64 / 1024.0 / secs,
            sent_kbps: self.sent as f64 / 1024.0 / secs,
            avg_ms: mean,
            stddev_ms: stdev,
            min_ms: min,
            max_ms: max,
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            per_second: self.per_second.clone(),
            percentile_curve: percentile_curve(h),
            histogram: histogram_bins(h, 40),
            send_lag: self
                .send_lag
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(SendLag::of),
        }
    }
}

/// Open loop: how late requests were written after their due time (microseconds).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SendLag {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl SendLag {
    fn of(h: &Histogram<u64>) -> Self {
        let us = |ns: u64| ns as f64 / 1000.0;
        SendLag {
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// (percentile, latency ms) at 0, 10, ..., 90, 95, 99, 99.9, 99.99, 100.
fn percentile_curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut ps: Vec<f64> = (0..10).map(|i| i as f64 * 10.0).collect();
    ps.extend([95.0, 99.0, 99.9, 99.99, 100.0]);
    ps.into_iter()
        .map(|p| (p, h.value_at_quantile(p / 100.0) as f64 / 1000.0))
        .collect()
}

/// `bins` equal-width bins from min to the 99.9th percentile (the tail beyond goes in the
/// last bin): (bin upper edge ms, count).
fn histogram_bins(h: &Histogram<u64>, bins: usize) -> Vec<(f64, u64)> {
    if h.is_empty() || bins == 0 {
        return Vec::new();
    }
    let lo = h.min() as f64;
    let hi = (h.value_at_quantile(0.999) as f64).max(lo + 1.0);
    let width = (hi - lo) / bins as f64;
    let mut out: Vec<(f64, u64)> = (1..=bins)
        .map(|i| ((lo + width * i as f64) / 1000.0, 0))
        .collect();
    for v in h.iter_recorded() {
        let x = v.value_iterated_to() as f64;
        let i = (((x - lo) / width) as usize).min(bins - 1);
        out[i].1 += v.count_at_value();
    }
    out
}

/// What one run measured: the seeds' numbers plus the curves the charts need.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub samples: u64,
    pub errors: u64,
    pub error_pct: f64,
    pub duration_s: f64,
    pub throughput_rps: f64,
    pub received_kbps: f64,
    pub sent_kbps: f64,
    pub avg_ms: f64,
    pub stddev_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    /// Completions in each second of the measurement.
    pub per_second: Vec<u64>,
    /// (percentile, ms) points of the latency percentile curve.
    pub percentile_curve: Vec<(f64, f64)>,
    /// (bin upper edge ms, count) of the latency histogram.
    pub histogram: Vec<(f64, u64)>,
    /// Open loop: the send-time error distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag: Option<SendLag>,
}

impl Summary {
    /// The seeds' numbers as aligned text lines.
    pub fn to_text(&self) -> String {
        let (lo, hi) = self
            .per_second
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &n| (lo.min(n), hi.max(n)));
        format!(
            "samples      {}\nerrors       {} ({:.2} %)\nthroughput   {:.1} req/s (per-second min {} max {})\n\
             received     {:.1} KB/s\nsent         {:.1} KB/s\n\
             latency ms   avg {:.3}  stddev {:.3}  min {:.3}  max {:.3}\n\
             percentiles  p50 {:.3}  p90 {:.3}  p95 {:.3}  p99 {:.3}  p99.9 {:.3}\n",
            self.samples,
            self.errors,
            self.error_pct,
            self.throughput_rps,
            if lo == u64::MAX { 0 } else { lo },
            hi,
            self.received_kbps,
            self.sent_kbps,
            self.avg_ms,
            self.stddev_ms,
            self.min_ms,
            self.max_ms,
            self.p50_ms,
            self.p90_ms,
            self.p95_ms,
            self.p99_ms,
            self.p999_ms
        ) + &self
            .send_lag
            .as_ref()
            .map(|l| {
                format!(
                    "send lag us  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1} (write time - due time)\n",
                    l.p50_us, l.p99_us, l.p999_us, l.max_us
                )
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn window(warmup: u64, duration: u64) -> Window {
        Window {
            warmup: ms(warmup),
            duration: ms(duration),
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-9)
    }

    #[test]
    fn percentiles_mean_and_stddev_of_1_to_1000_ms() {
        let mut r = Recorder::new(window(0, 10_000));
        for i in 1..=1000u64 {
            assert!(r.record(ms(0), ms(i), Outcome::Status(200), 10, 20));
        }
        let s = r.summary();
        assert_eq!(s.samples, 1000);
        assert_eq!(s.errors, 0);
        assert!(close(s.p50_ms, 500.0, 0.002), "p50 {}", s.p50_ms);
        assert!(close(s.p90_ms, 900.0, 0.002), "p90 {}", s.p90_ms);
        assert!(close(s.p99_ms, 990.0, 0.002), "p99 {}", s.p99_ms);
        assert!(close(s.p999_ms, 999.0, 0.002), "p99.9 {}", s.p999_ms);
        assert!(close(s.min_ms, 1.0, 0.002) && close(s.max_ms, 1000.0, 0.002));
        assert!(close(s.avg_ms, 500.5, 0.002), "avg {}", s.avg_ms);
        // Population standard deviation of 1..=1000 is sqrt((1000^2 - 1) / 12) = 288.67.
        assert!(close(s.stddev_ms, 288.67, 0.005), "stddev {}", s.stddev_ms);
        assert!(close(s.throughput_rps, 100.0, 1e-9));
        assert!(close(s.sent_kbps, 1000.0 * 10.0 / 1024.0 / 10.0, 1e-9));
        assert!(close(s.received_kbps, 1000.0 * 20.0 / 1024.0 / 10.0, 1e-9));
    }

    #[test]
    fn constant_latency_has_zero_stddev() {
        let mut r = Recorder::new(window(0, 1000));
        for _ in 0..100 {
            r.record(ms(10), ms(40), Outcome::Status(200), 0, 0);
        }
        let s = r.summary();
        assert!(close(s.avg_ms, 30.0, 0.002));
        assert!(s.stddev_ms < 0.05, "stddev {}", s.stddev_ms);
    }

    #[test]
    fn warmup_and_tail_samples_are_cut() {
        let mut r = Recorder::new(window(1000, 2000));
        assert!(
            !r.record(ms(999), ms(1500), Outcome::Status(200), 0, 0),
            "sent in warm-up"
        );
        assert!(r.record(ms(1000), ms(1500), Outcome::Status(200), 0, 0));
        assert!(r.record(ms(2900), ms(2999), Outcome::Status(200), 0, 0));
        assert!(
            !r.record(ms(2900), ms(3000), Outcome::Status(200), 0, 0),
            "ended after"
        );
        assert_eq!(r.summary().samples, 2);
    }

    #[test]
    fn throughput_windows_count_completions_per_second() {
        let mut r = Recorder::new(window(500, 3000));
        // 10 in the first second of measurement, 20 in the second, 5 in the third.
        for (sec, n) in [(0u64, 10), (1, 20), (2, 5)] {
            for i in 0..n {
                let end = ms(500 + sec * 1000 + i * 10 + 5);
                r.record(end - ms(1), end, Outcome::Status(200), 0, 0);
            }
        }
        let s = r.summary();
        assert_eq!(s.per_second, vec![10, 20, 5]);
        assert!(close(s.throughput_rps, 35.0 / 3.0, 1e-9));
    }

    #[test]
    fn errors_count_failures_and_4xx_5xx() {
        let mut r = Recorder::new(window(0, 1000));
        r.record(ms(0), ms(1), Outcome::Status(200), 0, 0);
        r.record(ms(0), ms(1), Outcome::Status(302), 0, 0);
        r.record(ms(0), ms(1), Outcome::Status(503), 0, 0);
        r.record(ms(0), ms(1), Outcome::Failed, 0, 0);
        let s = r.summary();
        assert_eq!((s.samples, s.errors), (4, 2));
        assert!(close(s.error_pct, 50.0, 1e-9));
    }

    #[test]
    fn merge_adds_samples_and_windows() {
        let mut a = Recorder::new(window(0, 2000));
        let mut b = Recorder::new(window(0, 2000));
        a.record(ms(0), ms(100), Outcome::Status(200), 1, 1);
        b.record(ms(0), ms(1100), Outcome::Status(200), 1, 1);
        b.record(ms(0), ms(1200), Outcome::Failed, 1, 0);
        a.merge(&b);
        let s = a.summary();
        assert_eq!((s.samples, s.errors), (3, 1));
        assert_eq!(s.per_second, vec![1, 2]);
        assert!(close(s.max_ms, 1100.0, 0.002));
    }

    #[test]
    fn histogram_bins_hold_every_sample_and_curve_is_monotonic() {
        let mut r = Recorder::new(window(0, 10_000));
        for i in 1..=500u64 {
            r.record(ms(0), ms(i), Outcome::Status(200), 0, 0);
        }
        let s = r.summary();
        assert_eq!(s.histogram.len(), 40);
        assert_eq!(s.histogram.iter().map(|b| b.1).sum::<u64>(), 500);
        assert!(s.percentile_curve.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn empty_summary_is_zero_not_nan() {
        let s = Recorder::new(window(0, 1000)).summary();
        assert_eq!(s.samples, 0);
        assert!(s.avg_ms == 0.0 && s.error_pct == 0.0 && s.p99_ms == 0.0);
        assert!(s.histogram.is_empty());
    }
}
