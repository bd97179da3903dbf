//! `--pid`: samples a process's resident memory and CPU use, and the machine's load
//! average, from /proc while a run measures. Linux only; elsewhere sampling reports nothing.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Clock ticks per second of /proc/PID/stat times (USER_HZ, 100 on every Linux port that
/// matters; reading sysconf would need libc for one constant).
const TICKS_PER_SEC: f64 = 100.0;

/// What the sampler saw during the measurement.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Resources {
    pub pid: u32,
    pub samples: usize,
    pub rss_avg_mb: f64,
    pub rss_max_mb: f64,
    /// CPU use of the process over the whole window, in % of one core.
    pub cpu_pct: f64,
    /// Seconds of CPU (user + system) the process used during the window.
    pub cpu_seconds: f64,
    pub loadavg_avg: f64,
    pub loadavg_max: f64,
}

/// One reading: (cpu ticks, rss kB, 1-minute load average).
fn read(pid: u32) -> Option<(u64, u64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; fields after its ')' are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 11 and 12 after the name.
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0);
    Some((ticks, rss_kb, load))
}

/// Whether `pid` can be sampled.
pub fn available(pid: u32) -> bool {
    read(pid).is_some()
}

/// Waits `delay` (the warm-up), then samples every `every` for `duration`.
pub async fn sample(pid: u32, delay: Duration, duration: Duration, every: Duration) -> Resources {
    tokio::time::sleep(delay).await;
    let started = Instant::now();
    let Some((t0, _, _)) = read(pid) else {
        return Resources {
            pid,
            ..Resources::default()
        };
    };
    let mut rss = Vec::new();
    let mut load = Vec::new();
    let mut last_ticks = t0;
    let mut interval = tokio::time::interval(every);
    interval.tick().await;
    while started.elapsed() < duration {
        interval.tick().await;
        let Some((ticks, rss_kb, l)) = read(pid) else {
            break;
        };
        last_ticks = ticks;
        rss.push(rss_kb as f64 / 1024.0);
        load.push(l);
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let cpu_seconds = (last_ticks - t0) as f64 / TICKS_PER_SEC;
    let avg = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    Resources {
        pid,
        samples: rss.len(),
        rss_avg_mb: avg(&rss),
        rss_max_mb: max(&rss),
        cpu_pct: 100.0 * cpu_seconds / secs,
        cpu_seconds,
        loadavg_avg: avg(&load),
        loadavg_max: max(&load),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn samples_this_process() {
        let pid = std::process::id();
        assert!(available(pid));
        let r = sample(
            pid,
            Duration::ZERO,
            Duration::from_millis(120),
            Duration::from_millis(20),
        )
        .await;
        assert!(r.samples >= 2, "{r:?}");
        assert!(r.rss_max_mb > 0.0 && r.rss_avg_mb > 0.0);
        assert!(r.cpu_pct >= 0.0);
    }

    #[tokio::test]
    async fn missing_process_reports_no_samples() {
        assert!(!available(u32::MAX));
        let r = sample(
            u32::MAX,
            Duration::ZERO,
            Duration::from_millis(10),
            Duration::from_millis(5),
        )
        .await;
        assert_eq!(r.samples, 0);
    }
}
