//! The YAML file format: text to [`GatewayFile`] with serde (unknown fields refused),
//! then validation, with every problem placed at its line and column. Nesting deeper
//! than `depth::MAX_DEPTH` is refused before parsing. When the file does not have the
//! right shape, each API and each top-level section is deserialised on its own so that
//! every broken one is reported (serde stops at the first error inside one of them).

use std::path::Path;

use serde::Deserialize;
use turnpike_model::GatewayFile;

use crate::error::{ConfigError, Location, Problem, Problems};
use crate::snapshot::Snapshot;
use crate::spans::Spans;

pub(crate) fn from_yaml(
    text: &str,
    source_name: &str,
    version: u64,
    runtime: &crate::PolicyRuntime,
) -> Result<Snapshot, ConfigError> {
    let file = parse(text).map_err(|list| invalid(source_name, list))?;
    crate::compile_checked(file, version, runtime).map_err(|mut list| {
        let spans = Spans::scan(text);
        for p in &mut list {
            p.location = spans.find(&p.path);
        }
        list.sort_by_key(|p| p.location.map(|l| (l.line, l.column)));
        invalid(source_name, list)
    })
}

fn invalid(source_name: &str, list: Vec<Problem>) -> ConfigError {
    ConfigError::Problems(Problems {
        source_name: source_name.to_owned(),
        list,
    })
}

fn parse(text: &str) -> Result<GatewayFile, Vec<Problem>> {
    if let Err(e) = crate::depth::check_depth(text) {
        return Err(vec![Problem {
            path: String::new(),
            location: Some(e.location),
            message: e.to_string(),
        }]);
    }
    // A file of only comments is an empty gateway, not an error.
    if serde_yaml::Deserializer::from_str(text).next().is_none() {
        return Ok(GatewayFile::default());
    }
    let de = serde_yaml::Deserializer::from_str(text);
    GatewayFile::deserialize(de).map_err(|first| {
        // The first broken item (in document order) is serde's own error, placed
        // exactly; the others are placed at the node their path names.
        let mut all = shape_problems(text);
        match all.first_mut() {
            Some(p) => *p = problem(&first),
            None => all.push(problem(&first)),
        }
        all
    })
}

/// serde_yaml's error as a problem at its place; its message already names the path.
fn problem(e: &serde_yaml::Error) -> Problem {
    let location = e.location().map(|l| Location {
        line: l.line(),
        column: l.column(),
    });
    let mut message = e.to_string();
    if let Some(l) = &e.location() {
        let suffix = format!(" at line {} column {}", l.line(), l.column());
        if let Some(stripped) = message.strip_suffix(&suffix) {
            message = stripped.to_owned();
        }
    }
    Problem {
        path: String::new(),
        location,
        message,
    }
}

/// Every shape error of a syntactically valid file: the document as a YAML value, then
/// each API and each other top-level member deserialised on its own, each error placed
/// at its path's line (`spans.rs`). Empty when the value cannot be built (a syntax
/// error: the first error is the only one worth reading) or nothing fails this way.
#[cold]
fn shape_problems(text: &str) -> Vec<Problem> {
    use serde_yaml::Value;
    let Ok(Value::Mapping(top)) = serde_yaml::from_str::<Value>(text) else {
        return Vec::new();
    };
    let spans = Spans::scan(text);
    let mut out = Vec::new();
    let mut report = |path: String, e: serde_path_to_error::Error<serde_yaml::Error>| {
        let inner = e.path().to_string();
        let full = match (path.is_empty(), inner.as_str()) {
            (_, "." | "") => path,
            (true, _) => inner,
            (false, i) if i.starts_with('[') => format!("{path}{i}"),
            (false, i) => format!("{path}.{i}"),
        };
        out.push(Problem {
            location: spans.find(&full),
            message: e.into_inner().to_string(),
            path: full,
        });
    };
    for (key, value) in &top {
        let key = key.as_str().unwrap_or_default().to_owned();
        match (key.as_str(), value) {
            ("apis", Value::Sequence(apis)) => {
                for (i, api) in apis.iter().enumerate() {
                    if let Err(e) =
                        serde_path_to_error::deserialize::<_, turnpike_model::ApiSpec>(api)
                    {
                        report(format!("apis[{i}]"), e);
                    }
                }
            }
            _ => {
                let mut one = serde_yaml::Mapping::new();
                one.insert(Value::String(key.clone()), value.clone());
                if let Err(e) =
                    serde_path_to_error::deserialize::<_, GatewayFile>(Value::Mapping(one))
                {
                    report(String::new(), e);
                }
            }
        }
    }
    out.sort_by_key(|p| p.location.map(|l| (l.line, l.column)));
    out
}

/// Loading a snapshot from YAML lives with the YAML reader, so the snapshot does not
/// import the format that builds it.
impl Snapshot {
    /// Reads, validates and compiles a YAML file (version 1).
    pub fn load(path: &Path) -> Result<Snapshot, ConfigError> {
        Self::load_with(path, &crate::PolicyRuntime::new())
    }

    /// [`Snapshot::load`] against a gateway's long-lived policy runtime.
    pub fn load_with(path: &Path, runtime: &crate::PolicyRuntime) -> Result<Snapshot, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_yaml_with(&text, &path.display().to_string(), runtime)
    }

    /// Validates and compiles YAML text; `source_name` names it in errors.
    pub fn from_yaml(text: &str, source_name: &str) -> Result<Snapshot, ConfigError> {
        Self::from_yaml_with(text, source_name, &crate::PolicyRuntime::new())
    }

    /// [`Snapshot::from_yaml`] against a gateway's long-lived policy runtime.
    pub fn from_yaml_with(
        text: &str,
        source_name: &str,
        runtime: &crate::PolicyRuntime,
    ) -> Result<Snapshot, ConfigError> {
        from_yaml(text, source_name, 1, runtime)
    }
}
