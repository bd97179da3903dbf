//! Where batches of events go: the [`Sink`] interface the pipeline drains into, and the
//! JSON-lines file sink (one event per line, for ELK, Loki or Fluent Bit).

use std::path::PathBuf;

use tokio::io::AsyncWriteExt;

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
            EventFormat::Turnpike => serde_json::to_writer(&mut *out, e),
            EventFormat::Wso2 => serde_json::to_writer(&mut *out, &crate::wso2::event(e)),
        };
        if written.is_ok() {
            out.push(b'\n');
        }
    }
}

/// Appends events to a file, one JSON object a line (the file is created if missing).
pub struct JsonLinesSink {
    path: PathBuf,
    format: EventFormat,
    file: Option<tokio::fs::File>,
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
        self.buf.clear();
        for e in batch {
            self.format.write_line(e, &mut self.buf);
        }
        if self.file.is_none() {
            let f = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .await?;
            self.file = Some(f);
        }
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        let written = async {
            f.write_all(&self.buf).await?;
            f.flush().await
        }
        .await;
        if written.is_err() {
            // Reopen next time (the file may have been rotated away).
            self.file = None;
        }
        Ok(written?)
    }
}
