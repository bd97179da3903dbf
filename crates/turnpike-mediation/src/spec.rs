//! Compiling a [`TransformSpec`] (data) into a [`Transform`] (ready to run), and running
//! a transform's body step. Problems name the field relative to the spec
//! (`body.jq`, `headers.set.x-a`) so the config crate can prefix the document path.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use turnpike_model::mediation::{BodyFormat, OtherContent, TransformSpec};
use turnpike_policy::Problem;

use crate::error::MediationErrorKind;
use crate::jq::{Inputs, JqProgram, Limits};
use crate::ops::{HeaderOps, PathRewrite, QueryOps};
use crate::xml::{ArrayPaths, XmlLimits};
use crate::{json, payload_factory, xml};

/// Default largest body a transformation reads.
pub const DEFAULT_MAX_INPUT: usize = 4 << 20;

/// Which side of the exchange a transform works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Request,
    Response,
}

/// What the config crate resolved for a spec: its name, sizes and durations (parsed with
/// the file's units) and the resource's path parameters.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    pub name: String,
    pub side: Side,
    pub deadline: Option<Duration>,
    pub max_input: Option<usize>,
    pub max_output: Option<usize>,
    /// Parameter names of the resource template (empty at API level).
    pub path_params: &'a [&'a str],
}

/// One direction's compiled transformation.
#[derive(Debug)]
pub struct Transform {
    pub name: Arc<str>,
    pub headers: Option<HeaderOps>,
    pub query: Option<QueryOps>,
    pub path: Option<PathRewrite>,
    pub body: Option<BodyTransform>,
}

/// What to do with a body, decided from its content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyAction {
    Transform,
    Pass,
    Refuse,
}

/// The body step: read, run, write.
#[derive(Debug)]
pub struct BodyTransform {
    program: Option<JqProgram>,
    input: BodyFormat,
    output: BodyFormat,
    arrays: ArrayPaths,
    xml_root: Option<String>,
    other_content: OtherContent,
    limits: Limits,
    xml_limits: XmlLimits,
    max_input: usize,
    /// The content type written when the output format differs from the input's.
    output_type: Option<HeaderValue>,
}

/// Compiles `spec`; every problem is returned at once.
pub fn compile_transform(
    spec: &TransformSpec,
    cx: &Context<'_>,
) -> Result<Transform, Vec<Problem>> {
    let mut problems = Vec::new();
    let headers = spec.headers.as_ref().map(|h| {
        let mut p = Vec::new();
        let ops = HeaderOps::compile(h, &mut p);
        problems.extend(
            p.into_iter()
                .map(|f| Problem::new(format!("headers.{}", f.path), f.message)),
        );
        ops
    });
    let query = spec.query.as_ref().map(|q| {
        if cx.side == Side::Response {
            problems.push(Problem::new(
                "query".to_owned(),
                "a response has no query parameters".to_owned(),
            ));
        }
        let mut p = Vec::new();
        let ops = QueryOps::compile(q, &mut p);
        problems.extend(
            p.into_iter()
                .map(|f| Problem::new(format!("query.{}", f.path), f.message)),
        );
        ops
    });
    let path = spec.path.as_ref().and_then(|p| {
        if cx.side == Side::Response {
            problems.push(Problem::new(
                "path".to_owned(),
                "a response has no path".to_owned(),
            ));
            return None;
        }
        PathRewrite::compile(p, cx.path_params)
            .map_err(|m| problems.push(Problem::new("path".to_owned(), m)))
            .ok()
    });
    let body = spec
        .body
        .as_ref()
        .and_then(|b| compile_body(b, cx, &mut problems));
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Transform {
        name: cx.name.as_str().into(),
        headers: headers.filter(|h| !h.is_empty()),
        query: query.filter(|q| !q.is_empty()),
        path,
        body,
    })
}

fn compile_body(
    b: &turnpike_model::mediation::BodySpec,
    cx: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Option<BodyTransform> {
    let code = match (&b.jq, &b.payload_factory) {
        (Some(_), Some(_)) => {
            problems.push(Problem::new(
                "body".to_owned(),
                "give either jq or payload_factory, not both".to_owned(),
            ));
            None
        }
        (Some(code), None) => Some((code.clone(), "body.jq")),
        (None, Some(pf)) => match payload_factory::convert(pf) {
            Ok(c) => Some((c.jq, "body.payload_factory")),
            Err(list) => {
                for why in list {
                    problems.push(Problem::new("body.payload_factory".to_owned(), why));
                }
                None
            }
        },
        (None, None) => None,
    };
    let program = code.and_then(|(code, field)| {
        JqProgram::compile(&code)
            .map_err(|e| problems.push(Problem::new(field.to_owned(), e.to_string())))
            .ok()
    });
    let arrays = ArrayPaths::new(&b.xml_arrays)
        .map_err(|m| problems.push(Problem::new("body.xml_arrays".to_owned(), m)))
        .unwrap_or_default();
    let input = b.input.unwrap_or(BodyFormat::Json);
    let output = b.output.unwrap_or(input);
    if let Some(root) = &b.xml_root {
        if output != BodyFormat::Xml {
            problems.push(Problem::new(
                "body.xml_root".to_owned(),
                "only used when the output is xml".to_owned(),
            ));
        } else if xml::val_to_xml(&jaq_json::Val::Null, Some(root), 1 << 10).is_err() {
            problems.push(Problem::new(
                "body.xml_root".to_owned(),
                format!("{root:?} is not an XML name"),
            ));
        }
    }
    if !b.xml_arrays.is_empty() && input != BodyFormat::Xml {
        problems.push(Problem::new(
            "body.xml_arrays".to_owned(),
            "only used when the input is xml".to_owned(),
        ));
    }
    let defaults = Limits::default();
    let limits = Limits {
        deadline: cx.deadline.unwrap_or(defaults.deadline),
        max_output: cx.max_output.unwrap_or(defaults.max_output),
        max_stack: defaults.max_stack,
    };
    let output_type = (output != input).then(|| match output {
        BodyFormat::Json => HeaderValue::from_static("application/json"),
        BodyFormat::Xml => HeaderValue::from_static("application/xml"),
    });
    Some(BodyTransform {
        program,
        input,
        output,
        arrays,
        xml_root: b.xml_root.clone(),
        other_content: b.other_content.unwrap_or(OtherContent::Pass),
        limits,
        xml_limits: XmlLimits::default(),
        max_input: cx.max_input.unwrap_or(DEFAULT_MAX_INPUT),
        output_type,
    })
}

fn is_xml(essence: &str) -> bool {
    essence == "application/xml" || essence == "text/xml" || essence.ends_with("+xml")
}

impl BodyTransform {
    /// Largest body read; the gateway refuses a larger one before buffering it all.
    pub fn max_input(&self) -> usize {
        self.max_input
    }

    /// The jq program (none for a plain format conversion).
    pub fn program(&self) -> Option<&JqProgram> {
        self.program.as_ref()
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether a body of this content type (and length, 0 for none) is transformed.
    /// An empty body without a content type is transformed (it reads as `null` in JSON).
    pub fn action(&self, content_type: Option<&HeaderValue>, empty: bool) -> BodyAction {
        let essence = content_type.and_then(|v| v.to_str().ok()).map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
        let reads = match (&essence, self.input) {
            (None, BodyFormat::Json) => empty,
            (None, BodyFormat::Xml) => false,
            (Some(e), BodyFormat::Json) => turnpike_policy::http::is_json(e.as_bytes()),
            (Some(e), BodyFormat::Xml) => is_xml(e),
        };
        match (reads, self.other_content) {
            (true, _) => BodyAction::Transform,
            (false, OtherContent::Pass) => BodyAction::Pass,
            (false, OtherContent::Refuse) => BodyAction::Refuse,
        }
    }

    /// The content type to write when it changes (json <-> xml).
    pub fn output_content_type(&self) -> Option<&HeaderValue> {
        self.output_type.as_ref()
    }

    /// Reads `body`, runs the program and writes the result: all or nothing.
    pub fn run(&self, body: &[u8], inputs: &Inputs<'_>) -> Result<Vec<u8>, MediationErrorKind> {
        if body.len() > self.max_input {
            return Err(MediationErrorKind::InputTooLarge(self.max_input));
        }
        let value = match self.input {
            BodyFormat::Json => json::parse(body)?,
            BodyFormat::Xml => xml::xml_to_val(body, &self.arrays, &self.xml_limits)
                .map_err(MediationErrorKind::BadXml)?,
        };
        let value = match &self.program {
            Some(p) => p.run(value, inputs, &self.limits)?,
            None => value,
        };
        match self.output {
            BodyFormat::Json => json::write(&value, self.limits.max_output),
            BodyFormat::Xml => {
                xml::val_to_xml(&value, self.xml_root.as_deref(), self.limits.max_output).map_err(
                    |e| match e {
                        xml::XmlError::TooLarge(n) => MediationErrorKind::OutputTooLarge(n),
                        other => MediationErrorKind::Unrepresentable {
                            format: "XML",
                            message: other.to_string(),
                        },
                    },
                )
            }
        }
    }
}
