//! Core sets for the matrix's processes (a plan's `pin`): the gateway on its own cores,
//! the back end and the generator on the others, as bench/proxy-vs-nginx.sh pins them, so
//! the generator measures the gateway rather than competing with it. Children are
//! started under `taskset -c LIST`; the generator (this process, all its threads, and the
//! threads it starts later, which inherit it) is moved with `taskset -a -p -c LIST PID`.
//! The crate forbids `unsafe`, so the affinity syscall is taskset's.

use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::setup::{CoreSets, Pin, PinWord};

/// What the report says about pinning.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Pinning {
    pub gateway: Option<String>,
    pub backend: Option<String>,
    pub generator: Option<String>,
    /// Why nothing (or only part) is pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Pinning {
    /// One line for the report.
    pub fn describe(&self) -> String {
        let part = |what: &str, set: &Option<String>| match set {
            Some(s) => format!("{what} on CPU {s}"),
            None => format!("{what} unpinned"),
        };
        let mut s = [
            part("gateway", &self.gateway),
            part("back end", &self.backend),
            part("generator", &self.generator),
        ]
        .join(", ");
        if let Some(n) = &self.note {
            s.push_str(&format!(" ({n})"));
        }
        s
    }

    /// `cmd` prefixed with `taskset -c set` when `set` is given.
    pub fn command(set: Option<&str>, exe: &std::path::Path) -> tokio::process::Command {
        match set {
            Some(cpus) => {
                let mut c = tokio::process::Command::new("taskset");
                c.args(["-c", cpus]).arg(exe);
                c
            }
            None => tokio::process::Command::new(exe),
        }
    }
}

/// The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status).
pub fn allowed() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|list| parse_list(list.trim()))
        .unwrap_or_default()
}

/// `0-2,5` -> [0, 1, 2, 5]; malformed parts are skipped.
pub fn parse_list(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let range = match part.split_once('-') {
            Some((a, b)) => a.parse::<usize>().ok().zip(b.parse::<usize>().ok()),
            None => part.parse::<usize>().ok().map(|a| (a, a)),
        };
        if let Some((a, b)) = range.filter(|(a, b)| a <= b && b - a < 4096) {
            out.extend(a..=b);
        }
    }
    out
}

fn join(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The core sets a plan asks for on a machine with `cpus` allowed: `auto` gives the
/// gateway the upper half (rounded down) and the back end and generator the rest (each
/// its own half of it when it has two or more: on 4 CPUs gateway 2,3, back end 1,
/// generator 0; on 2 CPUs gateway 1, back end and generator 0); with
/// fewer than two CPUs, or `off`, nothing is pinned. `own_gateway` is false when the
/// gateway is not the matrix's (a target): it is then left alone.
pub fn plan(pin: &Pin, cpus: &[usize], own_gateway: bool) -> Pinning {
    let mut p = match pin {
        Pin::Word(PinWord::Off) => Pinning {
            note: Some("pin: off".into()),
            ..Pinning::default()
        },
        Pin::Word(PinWord::Auto) if cpus.len() < 2 => Pinning {
            note: Some(format!("{} CPU allowed: nothing to split", cpus.len())),
            ..Pinning::default()
        },
        Pin::Word(PinWord::Auto) => {
            let (low, high) = cpus.split_at(cpus.len() - cpus.len() / 2);
            // The back end takes the upper half of the rest when it has two or more.
            let (generator, backend) = match low.len() {
                1 => (low, low),
                n => low.split_at(n - n / 2),
            };
            Pinning {
                gateway: Some(join(high)),
                backend: Some(join(backend)),
                generator: Some(join(generator)),
                note: None,
            }
        }
        Pin::Sets(CoreSets {
            gateway,
            backend,
            generator,
        }) => Pinning {
            gateway: gateway.clone(),
            backend: backend.clone(),
            generator: generator.clone(),
            note: None,
        },
    };
    if !own_gateway && p.gateway.take().is_some() {
        p.note = Some("the target gateway is not the matrix's to pin".into());
    }
    p
}

/// Moves this process to the generator's set; when taskset cannot run (not installed, or
/// the set refused), nothing is pinned and the note says why, so that children are never
/// started through a missing `taskset`.
pub fn apply(p: Pinning) -> Pinning {
    let unpinned = |why: String| Pinning {
        note: Some(why),
        ..Pinning::default()
    };
    if p.gateway.is_none() && p.backend.is_none() && p.generator.is_none() {
        return p;
    }
    if let Err(e) = Command::new("taskset").arg("-V").output() {
        return unpinned(format!("taskset: {e}"));
    }
    match &p.generator {
        Some(set) => match pin_self(set) {
            Ok(()) => p,
            Err(e) => unpinned(e),
        },
        None => p,
    }
}

/// Moves this process (every thread, and threads started later) to `cpus`.
pub fn pin_self(cpus: &str) -> Result<(), String> {
    let out = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &std::process::id().to_string()])
        .output()
        .map_err(|e| format!("taskset: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "taskset -c {cpus}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Checks every set of `sets` against the allowed CPUs.
pub fn check(sets: &CoreSets, cpus: &[usize]) -> Vec<String> {
    let mut errors = Vec::new();
    for (name, set) in [
        ("gateway", &sets.gateway),
        ("backend", &sets.backend),
        ("generator", &sets.generator),
    ] {
        let Some(set) = set else { continue };
        let list = parse_list(set);
        if list.is_empty() || list.iter().any(|c| !cpus.contains(c)) {
            errors.push(format!(
                "pin.{name}: {set:?} is not a list of allowed CPUs ({})",
                join(cpus)
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_auto_splits_the_allowed_cpus() {
        assert_eq!(parse_list("0-2,5"), vec![0, 1, 2, 5]);
        assert_eq!(parse_list("3"), vec![3]);
        assert!(parse_list("x,2-1").is_empty());
        let two = plan(&Pin::default(), &[0, 1], true);
        assert_eq!(two.gateway.as_deref(), Some("1"));
        assert_eq!(two.generator.as_deref(), Some("0"));
        assert_eq!(two.backend.as_deref(), Some("0"));
        let eight = plan(&Pin::default(), &(0..8).collect::<Vec<_>>(), true);
        assert_eq!(eight.gateway.as_deref(), Some("4,5,6,7"));
        assert_eq!(eight.generator.as_deref(), Some("0,1"));
        assert_eq!(eight.backend.as_deref(), Some("2,3"));
        let three = plan(&Pin::default(), &[0, 1, 2], true);
        assert_eq!(
            (
                three.gateway.as_deref(),
                three.backend.as_deref(),
                three.generator.as_deref()
            ),
            (Some("2"), Some("1"), Some("0"))
        );
        let one = plan(&Pin::default(), &[0], true);
        assert!(one.gateway.is_none() && one.note.is_some());
        let off = plan(&Pin::Word(PinWord::Off), &[0, 1], true);
        assert_eq!(
            off.describe(),
            "gateway unpinned, back end unpinned, generator unpinned (pin: off)"
        );
        let target = plan(&Pin::default(), &[0, 1], false);
        assert!(target.gateway.is_none() && target.generator.is_some());
        let sets = CoreSets {
            gateway: Some("1".into()),
            backend: Some("7".into()),
            generator: None,
        };
        let errors = check(&sets, &[0, 1]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("pin.backend"));
    }
}
