//! Why a file could not become a snapshot. The problem types live in the kernel
//! (`turnpike_policy::problem`), where every policy kind reports its own.

pub use turnpike_policy::problem::{Location, Problem, Problems};

/// Why a file could not become a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A failure without a place in a file (kept for callers such as a reload task).
    #[error("{0}")]
    Invalid(String),
    /// The text is not a valid file: syntax, shape or meaning. Display lists every
    /// problem on its own line.
    #[error("{0}")]
    Problems(Problems),
}

impl ConfigError {
    /// The problems, when the file was read but refused.
    pub fn problems(&self) -> &[Problem] {
        match self {
            ConfigError::Io { .. } | ConfigError::Invalid(_) => &[],
            ConfigError::Problems(p) => &p.list,
        }
    }
}
