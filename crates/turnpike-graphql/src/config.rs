//! What an API's GraphQL analysis is configured with, as ready values (the declarative
//! file's spelling lives in `turnpike-model`; `turnpike-config` converts).

/// Which cost model turns a query into one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CostModel {
    /// WSO2 API Manager's complexity: a field costs its own cost (default 1) plus its
    /// children, times the sum of its list-size arguments when it has any.
    #[default]
    Wso2,
    /// IBM's GraphQL cost spec as Apollo Router applies it: `@cost(weight:)` on fields,
    /// arguments and types (objects 1, leaves 0 by default), `@listSize` for lists.
    Directives,
}

/// The cost model and its tables.
#[derive(Debug, Clone)]
pub struct CostConfig {
    pub model: CostModel,
    /// Own cost of a field with no entry in `field_costs` (WSO2 model).
    pub default_field_cost: u32,
    /// `("Type.field", cost)` overrides (WSO2 model).
    pub field_costs: Vec<(String, u32)>,
    /// Names of Int arguments that size a list, on every field that has them.
    pub default_list_arguments: Vec<String>,
    /// `("Type.field", [argument names])`: replaces the default names for that field;
    /// an empty list says the field has no list-size argument.
    pub list_arguments: Vec<(String, Vec<String>)>,
    /// Size assumed for a list field with neither a slicing argument nor `assumedSize`
    /// (directives model).
    pub default_list_size: u32,
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig {
            model: CostModel::Wso2,
            default_field_cost: 1,
            field_costs: Vec::new(),
            default_list_arguments: vec!["first".into(), "last".into(), "limit".into()],
            list_arguments: Vec::new(),
            default_list_size: 10,
        }
    }
}

/// Limits checked after analysis (per subscription tier, or the API's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub max_depth: Option<u32>,
    pub max_complexity: Option<u64>,
}
