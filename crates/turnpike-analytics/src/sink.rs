//! Where the pipeline's output goes: the [`Sink`] interface it drains into (batches of
//! raw events, or per-minute rollup rows made in the gateway), and the JSON-lines file
//! sink (one event or one row a line, for ELK, Loki or Fluent Bit).

use std::path::PathBuf;

use crate::audit::AuditRecord;
use crate::event::Event;
use crate::rollup::Row;

/// A sink could not take a batch.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Other(String),
}

/// What a sink takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// One event per request ([`Sink::write`]).
    Events,
    /// Per-minute rollup rows, summed in the gateway ([`Sink::write_rollups`]): a
    /// request costs a hash lookup instead of a formatted event.
    Rollups,
}

/// Receives batches of events (or rollup rows), in order, from one background task. A
/// slow or stuck sink only makes the gateway's queue drop its oldest events.
#[async_trait::async_trait]
pub trait Sink: Send + 'static {
    /// What the pipeline should hand this sink.
    fn takes(&self) -> Takes {
        Takes::Events
    }

    async fn write(&mut self, batch: &[Event]) -> Result<(), SinkError>;

    /// Called at every shipping interval with nothing new to write (and at shutdown): a
    /// sink holding a backlog (the control plane's spool) sends it.
    async fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// What the sink keeps waiting and dropped, for `/metrics` (shipping only).
    fn spool_stats(&self) -> Option<std::sync::Arc<crate::spool::SpoolStats>> {
        None
    }

    /// MCP tool-call audit records (`crate::audit`), in order, whatever the sink takes.
    async fn write_audits(&mut self, records: &[AuditRecord]) -> Result<(), SinkError> {
        let _ = records;
        Err(SinkError::Other("this sink keeps no audit records".into()))
    }

    /// Called instead of [`Sink::write`] when [`Sink::takes`] says rollups.
    async fn write_rollups(&mut self, rows: &[Row]) -> Result<(), SinkError> {
        let _ = rows;
        Err(SinkError::Other(
            "this sink takes events, not rollups".into(),
        ))
    }
}

/// What an analytics file holds (`--analytics-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// One event per request, with these field names.
    Events(EventFormat),
    /// One per-minute rollup row per key a line, written every shipping interval.
    Rollups,
}

impl Default for FileFormat {
    fn default() -> Self {
        FileFormat::Events(EventFormat::Turnpike)
    }
}

impl From<EventFormat> for FileFormat {
    fn from(f: EventFormat) -> Self {
        FileFormat::Events(f)
    }
}

impl FileFormat {
    /// `turnpike`, `wso2` (events) or `rollups`.
    pub fn parse(s: &str) -> Result<FileFormat, String> {
        match s {
            "rollups" => Ok(FileFormat::Rollups),
            other => EventFormat::parse(other)
                .map(FileFormat::Events)
                .map_err(|_| format!("`{other}`: expected turnpike, wso2 or rollups")),
        }
    }
}

/// Which field names a written event uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventFormat {
    /// Turnpike's (docs/analytics.md).
    #[default]
    Turnpike,
    /// WSO2 API Manager's analytics event names (`apiName`, `proxyResponseCode`...).
    Wso2,
}

impl EventFormat {
    pub fn parse(s: &str) -> Result<EventFormat, String> {
        match s {
            "turnpike" => Ok(EventFormat::Turnpike),
            "wso2" => Ok(EventFormat::Wso2),
            other => Err(format!("`{other}`: expected turnpike or wso2")),
        }
    }

    /// Appends `e` as one JSON line.
    pub fn write_line(self, e: &Event, out: &mut Vec<u8>) {
        let written = match self {
            EventFormat::Turnpike => {
                crate::json_line::write(e, out);
                Ok(())
            }
            EventFormat::Wso2 => serde_json::to_writer(&mut *out, &crate::wso2::event(e)),
        };
        if written.is_ok() {
            out.push(b'\n');
        }
    }
}

/// Appends events (or rollup rows) to a file, one JSON object a line (the file is
/// created if missing). Each batch's lines are written by one blocking `write_all` on
/// tokio's blocking pool, the buffer handed over and back (tokio's `fs::File` would copy
/// it first).
pub struct JsonLinesSink {
    path: PathBuf,
    format: FileFormat,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

impl JsonLinesSink {
    pub fn new(path: impl Into<PathBuf>, format: impl Into<FileFormat>) -> JsonLinesSink {
        JsonLinesSink {
            path: path.into(),
            format: format.into(),
            file: None,
            buf: Vec::new(),
        }
    }
}

#[async_trait::async_trait]
impl Sink for JsonLinesSink {
    fn takes(&self) -> Takes {
        match self.format {
            FileFormat::Events(_) => Takes::Events,
            FileFormat::Rollups => Takes::Rollups,
        }
    }

    async fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        let FileFormat::Events(format) = self.format else {
            return Err(SinkError::Other("this file takes rollups".into()));
        };
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for e in batch {
            format.write_line(e, &mut buf);
        }
        self.append(buf).await
    }

    async fn write_rollups(&mut self, rows: &[Row]) -> Result<(), SinkError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for r in rows {
            if serde_json::to_writer(&mut buf, r).is_ok() {
                buf.push(b'\n');
            }
        }
        self.append(buf).await
    }

    /// One `{"mcp_audit": {...}}` line a record, beside the events or rows.
    async fn write_audits(&mut self, records: &[AuditRecord]) -> Result<(), SinkError> {
        #[derive(serde::Serialize)]
        struct Line<'a> {
            mcp_audit: &'a AuditRecord,
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for r in records {
            if serde_json::to_writer(&mut buf, &Line { mcp_audit: r }).is_ok() {
                buf.push(b'\n');
            }
        }
        self.append(buf).await
    }
}

impl JsonLinesSink {
    async fn append(&mut self, buf: Vec<u8>) -> Result<(), SinkError> {
        let file = self.file.take();
        let path = self.path.clone();
        let (file, buf, written) = tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            let file = match file {
                Some(f) => Ok(f),
                None => std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path),
            };
            match file {
                Ok(mut f) => {
                    let written = f.write_all(&buf);
                    (Some(f), buf, written)
                }
                Err(e) => (None, buf, Err(e)),
            }
        })
        .await
        .map_err(|e| SinkError::Other(format!("analytics writer: {e}")))?;
        self.buf = buf;
        // On an error the file is reopened next time (it may have been rotated away).
        self.file = file.filter(|_| written.is_ok());
        Ok(written?)
    }
}
