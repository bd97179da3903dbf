//! The explain answer: what a query costs without running it (depth, complexity, the
//! root fields, one row per merged field) and the limits it is held to.

use serde::Serialize;

use crate::analysis::{Analysis, RootField};
use crate::config::{CostModel, Limits};

/// One merged field of the query: its response path, schema coordinate, depth, own cost,
/// multiplier and the subtotal of its subtree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakdownRow {
    pub path: String,
    pub coordinate: String,
    pub depth: u32,
    pub own_cost: u64,
    pub multiplier: u64,
    pub subtotal: u64,
}

/// Serializable explain document.
#[derive(Debug, Clone, Serialize)]
pub struct Explain {
    pub operation: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_name: Option<String>,
    pub model: &'static str,
    pub depth: u32,
    pub complexity: u64,
    pub root_fields: Vec<RootField>,
    pub fields: Vec<BreakdownRow>,
    pub limits: LimitsView,
    pub within_limits: bool,
}

/// Limits as they appear in an explain answer.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LimitsView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_complexity: Option<u64>,
}

impl Explain {
    pub(crate) fn new(analysis: &Analysis, mut rows: Vec<BreakdownRow>, limits: &Limits) -> Self {
        // Rows arrive children-first; response order reads better.
        rows.sort_by(|a, b| a.path.cmp(&b.path));
        Explain {
            operation: analysis.kind.as_str(),
            operation_name: analysis.operation_name.clone(),
            model: match analysis.model {
                CostModel::Wso2 => "wso2",
                CostModel::Directives => "directives",
            },
            depth: analysis.depth,
            complexity: analysis.complexity,
            root_fields: analysis.root_fields.clone(),
            fields: rows,
            limits: LimitsView {
                max_depth: limits.max_depth,
                max_complexity: limits.max_complexity,
            },
            within_limits: limits.max_depth.is_none_or(|m| analysis.depth <= m)
                && limits
                    .max_complexity
                    .is_none_or(|m| analysis.complexity <= m),
        }
    }
}
