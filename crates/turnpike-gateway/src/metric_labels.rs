//! Prometheus label text shared by every /metrics section: the escaping the text format
//! asks for and the labels each per-API series carries.

/// The labels every per-API series carries: `api`, `version`, `context`, `id`.
pub(crate) fn api_labels(name: &str, version: &str, context: &str, id: &str) -> String {
    format!(
        "api=\"{}\",version=\"{}\",context=\"{}\",id=\"{}\"",
        escape(name),
        escape(version),
        escape(context),
        escape(id)
    )
}

/// A label value escaped for the Prometheus text format (backslash, quote, newline).
pub(crate) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
