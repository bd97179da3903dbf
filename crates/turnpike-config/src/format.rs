//! The YAML file format: text to [`GatewayFile`] with serde (unknown fields refused),
//! then validation, with every problem placed at its line and column.

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
    let file = parse(text).map_err(|p| invalid(source_name, vec![p]))?;
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

/// serde_yaml stops at the first shape error; its message already names the path.
fn parse(text: &str) -> Result<GatewayFile, Problem> {
    // A file of only comments is an empty gateway, not an error.
    if serde_yaml::Deserializer::from_str(text).next().is_none() {
        return Ok(GatewayFile::default());
    }
    let de = serde_yaml::Deserializer::from_str(text);
    GatewayFile::deserialize(de).map_err(|e| {
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
    })
}
