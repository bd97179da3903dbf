//! Where batches of events go: the [`Sink`] interface the pipeline drains into, and the
//! JSON-lines file sink (one event per line, for ELK, Loki or Fluent Bit).

use std::path::PathBuf;

use crate::event::Event;

/// A sink could not take a batch.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Other(String),
}

/// Receives batches of events, in order, from one background task. A slow or stuck
/// sink only makes the gateway's queue drop its oldest events.
#[async_trait::async_trait]
pub trait Sink: Send + 'static {
    async fn write(&mut self, batch: &[Event]) -> Result<(), SinkError>;
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

/// Appends events to a file, one JSON object a line (the file is created if missing).
/// Each batch's lines are written by one blocking `write_all` on tokio's blocking pool,
/// the buffer handed over and back (tokio's `fs::File` would copy it first).
pub struct JsonLinesSink {
    path: PathBuf,
    format: EventFormat,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

impl JsonLinesSink {
    pub fn new(path: impl Into<PathBuf>, format: EventFormat) -> JsonLinesSink {
        JsonLinesSink {
            path: path.into(),
            format,
            file: None,
            buf: Vec::new(),
        }
    }
}

#[async_trait::async_trait]
impl Sink for JsonLinesSink {
    async fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for e in batch {
            self.format.write_line(e, &mut buf);
        }
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
