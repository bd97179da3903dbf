//! JMeter's CSV results format (JTL): `turnpike bench run --jtl FILE` writes the kit's
//! samples in JMeter's default column set, so JMeter's own tools (its HTML dashboard,
//! listeners, plugins) open them; `turnpike bench report --from-jtl FILE` reads a JTL that
//! JMeter (or the kit) wrote and prints the seeds' numbers per label, like JMeter's
//! Aggregate Report. Columns are found by the header line, so a JTL with a different column
//! selection reads as long as it has `timeStamp` and `elapsed`. `timeStamp` is the sample's
//! start in epoch milliseconds (JMeter's shipped `sampleresult.timestamp.start=true`);
//! `elapsed` is whole milliseconds, so latencies read back are exact to about 1 ms.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::stats::{Outcome, Recorder, Sample, Summary, Window};
use crate::BenchError;

/// JMeter's default CSV columns, in its order.
pub const HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,\
dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

/// Most distinct labels a JTL may have (each gets a histogram).
const MAX_LABELS: usize = 1000;
/// The label of the all-samples row (JMeter's Aggregate Report calls it TOTAL).
pub const TOTAL: &str = "TOTAL";

/// What every row of a run shares.
#[derive(Debug, Clone)]
pub struct JtlRun<'a> {
    pub label: &'a str,
    pub url: &'a str,
    /// Users (closed loop) or connections (open loop): grpThreads and allThreads.
    pub threads: usize,
    /// Wall-clock time of the run's start (sample offsets are from it).
    pub started: SystemTime,
}

/// Writes `samples` as a JTL, in completion order like JMeter.
pub fn write(path: &Path, run: &JtlRun<'_>, samples: &[Sample]) -> Result<(), BenchError> {
    let io = |e: std::io::Error| BenchError::Io(format!("writing {}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(io)?;
    let mut out = BufWriter::new(file);
    let mut order: Vec<&Sample> = samples.iter().collect();
    order.sort_by_key(|s| s.start + s.elapsed);
    let base = run.started.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (label, url) = (csv_field(run.label), csv_field(run.url));
    writeln!(out, "{HEADER}").map_err(io)?;
    for s in order {
        let ts = (base + s.start).as_millis();
        let elapsed = round_ms(s.elapsed);
        let (code, message, success) = match s.outcome {
            Outcome::Status(c) => {
                let reason = http::StatusCode::from_u16(c)
                    .ok()
                    .and_then(|c| c.canonical_reason())
                    .unwrap_or("");
                (c.to_string(), reason.to_string(), c < 400)
            }
            Outcome::Failed => (
                "Non HTTP response code: turnpike.NoResponse".to_string(),
                "Non HTTP response message: no response (connect, reset or timeout)".to_string(),
                false,
            ),
        };
        writeln!(
            out,
            "{ts},{elapsed},{label},{code},{message},turnpike 1-{user},text,{success},,{bytes},{sent},{n},{n},{url},{elapsed},0,0",
            user = s.user + 1,
            bytes = s.received,
            sent = s.sent,
            n = run.threads,
        )
        .map_err(io)?;
    }
    out.flush().map_err(io)
}

fn round_ms(d: Duration) -> u128 {
    (d.as_micros() + 500) / 1000
}

/// A CSV field, quoted when it holds a delimiter, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Splits one CSV line into fields (RFC 4180 quoting, as JMeter writes it).
fn split_csv(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.is_empty() => quoted = true,
            (',', false) => fields.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// Where the columns the report needs are.
struct Columns {
    ts: usize,
    elapsed: usize,
    label: Option<usize>,
    code: Option<usize>,
    success: Option<usize>,
    bytes: Option<usize>,
    sent: Option<usize>,
}

impl Columns {
    fn of(header: &str) -> Result<Self, BenchError> {
        let names = split_csv(header.trim_end());
        let find = |n: &str| names.iter().position(|h| h == n);
        let need = |n: &str| {
            find(n).ok_or_else(|| {
                BenchError::Usage(format!(
                    "not a JMeter CSV result file: the header has no {n} column (JTLs need a header line: jmeter.save.saveservice.print_field_names=true)"
                ))
            })
        };
        Ok(Columns {
            ts: need("timeStamp")?,
            elapsed: need("elapsed")?,
            label: find("label"),
            code: find("responseCode"),
            success: find("success"),
            bytes: find("bytes"),
            sent: find("sentBytes"),
        })
    }
}

/// One row, as the report uses it.
struct Row {
    ts_ms: u64,
    elapsed_ms: u64,
    label: String,
    outcome: Outcome,
    bytes: u64,
    sent: u64,
}

fn parse_row(cols: &Columns, line: &str, n: usize) -> Result<Row, BenchError> {
    let f = split_csv(line);
    let get = |i: Option<usize>| i.and_then(|i| f.get(i)).map(String::as_str);
    let num = |i: usize, what: &str| {
        get(Some(i))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                BenchError::Usage(format!(
                    "line {n}: {what} is not a whole number (timeStamp must be epoch ms: jmeter.save.saveservice.timestamp_format=ms)"
                ))
            })
    };
    let code = get(cols.code).and_then(|c| c.trim().parse::<u16>().ok());
    let success = get(cols.success).is_none_or(|s| s.trim().eq_ignore_ascii_case("true"));
    let outcome = match (code, success) {
        (Some(c), true) => Outcome::Status(c),
        (Some(c), false) if c >= 400 => Outcome::Status(c),
        _ if success => Outcome::Status(200),
        _ => Outcome::Failed,
    };
    let opt_num = |i: Option<usize>| get(i).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    Ok(Row {
        ts_ms: num(cols.ts, "timeStamp")?,
        elapsed_ms: num(cols.elapsed, "elapsed")?,
        label: get(cols.label).unwrap_or("").to_string(),
        outcome,
        bytes: opt_num(cols.bytes),
        sent: opt_num(cols.sent),
    })
}

/// Calls `each` for every data row of the JTL at `path`.
fn rows(
    path: &Path,
    mut each: impl FnMut(Row) -> Result<(), BenchError>,
) -> Result<(), BenchError> {
    let io = |e: std::io::Error| BenchError::Io(format!("reading {}: {e}", path.display()));
    let mut lines = BufReader::new(std::fs::File::open(path).map_err(io)?).lines();
    let header = lines
        .next()
        .transpose()
        .map_err(io)?
        .ok_or_else(|| BenchError::Usage(format!("{} is empty", path.display())))?;
    let cols = Columns::of(&header)?;
    for (i, line) in lines.enumerate() {
        let line = line.map_err(io)?;
        if !line.trim().is_empty() {
            each(parse_row(&cols, &line, i + 2)?)?;
        }
    }
    Ok(())
}

/// The statistics of a JTL, per label and in total (last), over JMeter's window: from the
/// first sample's start to the last sample's end.
pub fn summaries(path: &Path) -> Result<Vec<(String, Summary)>, BenchError> {
    let (mut first, mut last) = (u64::MAX, 0u64);
    rows(path, |r| {
        first = first.min(r.ts_ms);
        last = last.max(r.ts_ms + r.elapsed_ms);
        Ok(())
    })?;
    if first == u64::MAX {
        return Err(BenchError::Usage(format!(
            "{} has no samples",
            path.display()
        )));
    }
    // One millisecond more so the last sample's end falls inside the window.
    let window = Window {
        warmup: Duration::ZERO,
        duration: Duration::from_millis(last - first + 1),
    };
    let mut total = Recorder::new(window);
    let mut labels: BTreeMap<String, Recorder> = BTreeMap::new();
    rows(path, |r| {
        let start = Duration::from_millis(r.ts_ms - first);
        let end = start + Duration::from_millis(r.elapsed_ms);
        if !labels.contains_key(&r.label) && labels.len() >= MAX_LABELS {
            return Err(BenchError::Usage(format!(
                "more than {MAX_LABELS} distinct labels in {}",
                path.display()
            )));
        }
        let rec = labels
            .entry(r.label)
            .or_insert_with(|| Recorder::new(window));
        rec.record(start, end, r.outcome, r.sent, r.bytes);
        total.record(start, end, r.outcome, r.sent, r.bytes);
        Ok(())
    })?;
    let mut out: Vec<(String, Summary)> =
        labels.into_iter().map(|(l, r)| (l, r.summary())).collect();
    out.push((TOTAL.to_string(), total.summary()));
    Ok(out)
}

/// JMeter's Aggregate Report as a Markdown table.
pub fn markdown(rows: &[(String, Summary)]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, s)| {
            vec![
                label.clone(),
                s.samples.to_string(),
                format!("{:.1}", s.avg_ms),
                format!("{:.1}", s.p50_ms),
                format!("{:.1}", s.p90_ms),
                format!("{:.1}", s.p95_ms),
                format!("{:.1}", s.p99_ms),
                format!("{:.1}", s.min_ms),
                format!("{:.1}", s.max_ms),
                format!("{:.2} %", s.error_pct),
                format!("{:.1}", s.throughput_rps),
                format!("{:.1}", s.received_kbps),
                format!("{:.1}", s.sent_kbps),
            ]
        })
        .collect();
    crate::report::md_table(
        &[
            "Label",
            "# Samples",
            "Average ms",
            "Median",
            "90% Line",
            "95% Line",
            "99% Line",
            "Min",
            "Max",
            "Error %",
            "Throughput /s",
            "Received KB/s",
            "Sent KB/s",
        ],
        &body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_quote_and_split_back() {
        let line = [
            csv_field("a,b"),
            csv_field("say \"hi\""),
            csv_field("plain"),
        ]
        .join(",");
        assert_eq!(split_csv(&line), vec!["a,b", "say \"hi\"", "plain"]);
        assert_eq!(split_csv("1,,3"), vec!["1", "", "3"]);
    }

    #[test]
    fn elapsed_rounds_to_the_nearest_millisecond() {
        assert_eq!(round_ms(Duration::from_micros(1499)), 1);
        assert_eq!(round_ms(Duration::from_micros(1500)), 2);
        assert_eq!(round_ms(Duration::from_micros(400)), 0);
    }

    #[test]
    fn a_header_without_elapsed_is_refused_with_the_reason() {
        let err = Columns::of("timeStamp,label").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("elapsed")));
    }
}
