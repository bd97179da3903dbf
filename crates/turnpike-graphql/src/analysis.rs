//! The static analysis of one operation against a compiled schema. Fragments (named
//! and inline) are expanded and fields are merged by response key, so a field is
//! counted once per response path however many fragments select it; a fragment cycle
//! (refused by validation anyway) is cut, and a fan-out of fragments is bounded by the
//! `max_expanded_fields` cap.
//!
//! Depth is WSO2's (graphql-java's): the longest chain of fields, a root field being 1.
//! Complexity follows the configured [`CostModel`]:
//! - WSO2: `c(f) = m(f) * (own(f) + sum c(children))`, `own` = the field's cost
//!   (default 1), `m` = the sum of the field's list-size Int arguments present, 1 when
//!   none is.
//! - Directives: `c(f) = args(f) + m(f) * (weight(f) + sum c(children))`, `weight` from
//!   `@cost` (objects 1, leaves 0), `m` for a list = its largest slicing argument, else
//!   `assumedSize`, else the default list size; `sizedFields` moves `m` onto the named
//!   children (connections).

use apollo_compiler::ast::OperationType;
use apollo_compiler::executable::{Field, Operation, Selection, SelectionSet};
use apollo_compiler::{ExecutableDocument, Name, Node};
use serde_json::{Map, Value as Json};

use crate::config::CostModel;
use crate::error::{ErrorCode, GraphqlError};
use crate::explain::BreakdownRow;
use crate::schema::{CompiledSchema, FieldId, FieldInfo};

/// Query, mutation or subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OperationKind {
    Query,
    Mutation,
    Subscription,
}

impl OperationKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            OperationKind::Query => "query",
            OperationKind::Mutation => "mutation",
            OperationKind::Subscription => "subscription",
        }
    }
}

/// One root field of the operation: what WSO2 calls an operation, the unit of
/// per-operation auth, scopes and throttling.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RootField {
    pub name: String,
    pub response_key: String,
    pub kind: OperationKind,
    pub depth: u32,
    pub complexity: u64,
    /// Byte offset in the query text (for error locations).
    #[serde(skip)]
    pub offset: Option<usize>,
}

/// What a query costs and touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    pub kind: OperationKind,
    pub operation_name: Option<String>,
    pub depth: u32,
    pub complexity: u64,
    pub model: CostModel,
    pub root_fields: Vec<RootField>,
    /// Schema fields selected, each once, with the byte offset of its first use.
    pub(crate) fields: Vec<(FieldId, Option<usize>)>,
    /// Offset of the first `__schema` / `__type`.
    pub(crate) introspection: Option<Option<usize>>,
    /// Depth of the deepest introspection selection, from the operation's root (0 when
    /// none). Introspection is counted here only: `depth` and `complexity` leave it out.
    pub introspection_depth: u32,
    /// A multiplier came from a variable: a cache hit must recompute with the request's
    /// variables (a walk, no parse).
    pub(crate) variable_dependent: bool,
    pub(crate) operation_offset: Option<usize>,
}

impl Analysis {
    /// Whether the operation selects `__schema` or `__type`.
    pub fn uses_introspection(&self) -> bool {
        self.introspection.is_some()
    }

    /// Ids of the schema fields the query selects.
    pub fn field_ids(&self) -> impl Iterator<Item = FieldId> + '_ {
        self.fields.iter().map(|(id, _)| *id)
    }
}

/// One response key at one level: the fields of every fragment that share it, each
/// with the type of the selection set it is in. Most keys have one field: it is kept
/// inline, so only a merge allocates.
struct Group<'a> {
    key: &'a Name,
    first: (&'a Node<Field>, &'a Name),
    more: Vec<(&'a Node<Field>, &'a Name)>,
}

impl<'a> Group<'a> {
    fn items(&self) -> impl Iterator<Item = (&'a Node<Field>, &'a Name)> + '_ {
        std::iter::once(self.first).chain(self.more.iter().copied())
    }
}

pub(crate) struct Walker<'a> {
    schema: &'a CompiledSchema,
    doc: &'a ExecutableDocument,
    op: &'a Operation,
    variables: Option<&'a Map<String, Json>>,
    budget: usize,
    seen: Vec<u64>,
    fields: Vec<(FieldId, Option<usize>)>,
    introspection: Option<Option<usize>>,
    introspection_depth: u32,
    variable_dependent: bool,
    breakdown: Option<Vec<BreakdownRow>>,
    path: Vec<String>,
    /// Emptied child-group buffers, reused level by level instead of allocated per field.
    spare: Vec<Vec<Group<'a>>>,
    /// The fragment names being expanded (cycle guard), reused.
    expanding: Vec<&'a Name>,
}

fn offset_of<T>(node: &Node<T>) -> Option<usize> {
    node.location().map(|l| l.offset())
}

fn too_many_fields(cap: usize) -> GraphqlError {
    GraphqlError::new(
        ErrorCode::QueryTooLarge,
        format!("query expands to more than {cap} fields (fragments included)"),
    )
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        schema: &'a CompiledSchema,
        doc: &'a ExecutableDocument,
        op: &'a Operation,
        variables: Option<&'a Map<String, Json>>,
        max_expanded_fields: usize,
        breakdown: bool,
    ) -> Self {
        Walker {
            schema,
            doc,
            op,
            variables,
            budget: max_expanded_fields,
            seen: vec![0; schema.field_count().div_ceil(64)],
            fields: Vec::new(),
            introspection: None,
            introspection_depth: 0,
            variable_dependent: false,
            breakdown: breakdown.then(Vec::new),
            path: Vec::new(),
            spare: Vec::new(),
            expanding: Vec::new(),
        }
    }

    pub(crate) fn run(
        mut self,
        op_offset: Option<usize>,
    ) -> Result<(Analysis, Option<Vec<BreakdownRow>>), GraphqlError> {
        let kind = match self.op.operation_type {
            OperationType::Query => OperationKind::Query,
            OperationType::Mutation => OperationKind::Mutation,
            OperationType::Subscription => OperationKind::Subscription,
        };
        let cap = self.budget;
        let mut groups = Vec::new();
        self.collect(&self.op.selection_set, &mut groups, cap)?;
        let mut root_fields = Vec::with_capacity(groups.len());
        let (mut depth, mut complexity) = (0u32, 0u64);
        for g in &groups {
            let (c, d) = self.group(g, 1, None, cap)?;
            depth = depth.max(d);
            complexity = complexity.saturating_add(c);
            root_fields.push(RootField {
                name: g.first.0.name.to_string(),
                response_key: g.key.to_string(),
                kind,
                depth: d,
                complexity: c,
                offset: offset_of(g.first.0),
            });
        }
        if kind == OperationKind::Mutation && self.schema.model == CostModel::Directives {
            // Apollo's demand control: a mutation costs 10 before its fields.
            complexity = complexity.saturating_add(10);
        }
        let analysis = Analysis {
            kind,
            operation_name: self.op.name.as_ref().map(|n| n.to_string()),
            depth,
            complexity,
            model: self.schema.model,
            root_fields,
            fields: self.fields,
            introspection: self.introspection,
            introspection_depth: self.introspection_depth,
            variable_dependent: self.variable_dependent,
            operation_offset: op_offset,
        };
        Ok((analysis, self.breakdown))
    }

    /// Gathers the fields of `set` by response key, expanding fragments.
    fn collect(
        &mut self,
        set: &'a SelectionSet,
        groups: &mut Vec<Group<'a>>,
        cap: usize,
    ) -> Result<(), GraphqlError> {
        for sel in &set.selections {
            match sel {
                Selection::Field(f) => {
                    self.budget = self
                        .budget
                        .checked_sub(1)
                        .ok_or_else(|| too_many_fields(cap))?;
                    let key = f.response_key();
                    match groups.iter_mut().find(|g| g.key == key) {
                        Some(g) => g.more.push((f, &set.ty)),
                        None => groups.push(Group {
                            key,
                            first: (f, &set.ty),
                            more: Vec::new(),
                        }),
                    }
                }
                Selection::InlineFragment(i) => self.collect(&i.selection_set, groups, cap)?,
                Selection::FragmentSpread(s) => {
                    if self.expanding.contains(&&s.fragment_name) {
                        continue; // a cycle: validation refuses it; never loop
                    }
                    if let Some(frag) = self.doc.fragments.get(&s.fragment_name) {
                        self.expanding.push(&s.fragment_name);
                        let done = self.collect(&frag.selection_set, groups, cap);
                        self.expanding.pop();
                        done?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Complexity and depth of one merged field.
    fn group(
        &mut self,
        g: &Group<'a>,
        depth: u32,
        sized_by_parent: Option<u64>,
        cap: usize,
    ) -> Result<(u64, u32), GraphqlError> {
        let mut info: Option<&'a FieldInfo> = None;
        for (f, parent) in g.items() {
            let name = f.name.as_str();
            if (name == "__schema" || name == "__type") && self.introspection.is_none() {
                self.introspection = Some(offset_of(f));
            }
            if let Some(id) = self.schema.field_id(parent, name) {
                self.mark(id, offset_of(f));
                info = info.or_else(|| self.schema.info(id));
            }
        }
        let mut children = self.spare.pop().unwrap_or_default();
        let expanding = std::mem::take(&mut self.expanding);
        for (f, _) in g.items() {
            self.collect(&f.selection_set, &mut children, cap)?;
        }
        self.expanding = expanding;
        if self.breakdown.is_some() {
            self.path.push(g.key.to_string());
        }
        let field = g.first.0;
        let (own, args, mult, sized) = match (self.schema.model, info) {
            (CostModel::Wso2, Some(i)) => (i.wso2_cost, 0, self.wso2_multiplier(field, i), 1),
            (CostModel::Wso2, None) => (1, 0, 1, 1),
            (CostModel::Directives, Some(i)) => self.directive_costs(field, i),
            (CostModel::Directives, None) => (0, 0, 1, 1),
        };
        let mut child_sum = 0u64;
        let mut max_depth = depth;
        for c in &children {
            let by_parent = match info {
                Some(i) if i.sized_fields.iter().any(|s| s == c.first.0.name.as_str()) => {
                    Some(sized)
                }
                _ => None,
            };
            let (cc, cd) = self.group(c, depth + 1, by_parent, cap)?;
            child_sum = child_sum.saturating_add(cc);
            max_depth = max_depth.max(cd);
        }
        children.clear();
        self.spare.push(children);
        if matches!(field.name.as_str(), "__schema" | "__type") {
            return Ok(self.introspection_root(field, depth, max_depth));
        }
        // A connection's slicing argument sizes its `sizedFields` instead of their own.
        let mult = sized_by_parent.unwrap_or(mult);
        let total = args.saturating_add(mult.saturating_mul(own.saturating_add(child_sum)));
        if let Some(rows) = self.breakdown.as_mut() {
            rows.push(BreakdownRow {
                path: self.path.join("."),
                coordinate: info.map_or_else(|| field.name.to_string(), |i| i.coordinate.clone()),
                depth,
                own_cost: own,
                multiplier: mult,
                subtotal: total,
            });
            self.path.pop();
        }
        Ok((total, max_depth))
    }

    /// An introspection field's subtree is counted on its own (`introspection_max_depth`):
    /// neither the tier's depth nor its complexity sees it.
    fn introspection_root(&mut self, field: &Field, depth: u32, max_depth: u32) -> (u64, u32) {
        self.introspection_depth = self.introspection_depth.max(max_depth);
        if let Some(rows) = self.breakdown.as_mut() {
            rows.push(BreakdownRow {
                path: self.path.join("."),
                coordinate: field.name.to_string(),
                depth,
                own_cost: 0,
                multiplier: 1,
                subtotal: 0,
            });
            self.path.pop();
        }
        (0, depth.saturating_sub(1))
    }

    fn mark(&mut self, id: FieldId, offset: Option<usize>) {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        if let Some(w) = self.seen.get_mut(word) {
            if *w & bit == 0 {
                *w |= bit;
                self.fields.push((id, offset));
            }
        }
    }

    /// Sum of the list-size arguments present; 1 when none is (WSO2).
    fn wso2_multiplier(&mut self, field: &Field, info: &FieldInfo) -> u64 {
        let mut sum = None::<u64>;
        for name in &info.list_args {
            if let Some(n) = self.int_argument(field, name) {
                sum = Some(sum.unwrap_or(0).saturating_add(n));
            }
        }
        sum.unwrap_or(1)
    }

    /// (own weight, argument weights, list multiplier, multiplier for sized fields).
    fn directive_costs(&mut self, field: &Field, info: &FieldInfo) -> (u64, u64, u64, u64) {
        let args = info
            .arg_weights
            .iter()
            .filter(|(n, _)| field.specified_argument_by_name(n).is_some())
            .fold(0u64, |acc, (_, w)| acc.saturating_add(*w));
        let mut slice = None::<u64>;
        for name in &info.slicing {
            if let Some(n) = self.int_argument(field, name) {
                slice = Some(slice.map_or(n, |s| s.max(n)));
            }
        }
        let size = slice
            .or(info.assumed_size)
            .unwrap_or(self.schema.default_list_size);
        if info.sized_fields.is_empty() {
            let mult = if info.is_list { size } else { 1 };
            (info.weight, args, mult, 1)
        } else {
            (info.weight, args, 1, size)
        }
    }

    /// An Int argument's value: literal, variable (request value, else the variable's
    /// default) or the schema's default. Negative values count as 0.
    fn int_argument(&mut self, field: &Field, name: &Name) -> Option<u64> {
        use apollo_compiler::ast::Value;
        let clamp = |n: i64| n.clamp(0, i64::from(i32::MAX)) as u64;
        let literal = |v: &Value| match v {
            Value::Int(i) => i.try_to_i32().ok().map(|n| clamp(i64::from(n))),
            _ => None,
        };
        match field.specified_argument_by_name(name).map(|v| v.as_ref()) {
            Some(Value::Variable(var)) => {
                self.variable_dependent = true;
                match self.variables.and_then(|m| m.get(var.as_str())) {
                    Some(j) => j.as_i64().map(clamp),
                    None => self
                        .op
                        .variables
                        .iter()
                        .find(|d| d.name == *var)
                        .and_then(|d| d.default_value.as_ref())
                        .and_then(|v| literal(v)),
                }
            }
            Some(v) => literal(v),
            None => field
                .definition
                .argument_by_name(name)
                .and_then(|a| a.default_value.as_ref())
                .and_then(|v| literal(v)),
        }
    }
}
