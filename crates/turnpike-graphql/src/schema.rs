//! A GraphQL schema compiled once per snapshot: the validated SDL, a dense id for every
//! field of every object and interface type (field-level access is a bit test), and per
//! field what the cost models need (own cost, list-size arguments, `@cost` weights,
//! `@listSize`). A cost table naming a field or argument the schema lacks is an error
//! here, at configuration time, never at request time.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use apollo_compiler::ast::{Directive, Value};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Schema};

use crate::config::{CostConfig, CostModel};
use crate::error::{ErrorCode, GraphqlError, Location};

/// Dense index of a schema field (`Type.field`).
pub type FieldId = u32;

/// What the cost models know about one field.
#[derive(Debug, Clone)]
pub(crate) struct FieldInfo {
    pub coordinate: String,
    pub parent: Name,
    pub returns: Name,
    /// WSO2 model: own cost and the Int arguments summed as the multiplier.
    pub wso2_cost: u64,
    pub list_args: Vec<Name>,
    /// Directives model.
    pub weight: u64,
    pub arg_weights: Vec<(Name, u64)>,
    pub is_list: bool,
    pub slicing: Vec<Name>,
    pub assumed_size: Option<u64>,
    pub sized_fields: Vec<Name>,
}

/// The schema could not be compiled; every problem is listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid GraphQL schema: {}", .errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
pub struct SchemaError {
    pub errors: Vec<GraphqlError>,
}

/// Type name -> field name -> id, looked up for every field of every cold analysis
/// (foldhash: the keys are the schema's names, not the client's).
type Ids =
    HashMap<Name, HashMap<Name, FieldId, foldhash::fast::RandomState>, foldhash::fast::RandomState>;

/// A validated schema plus its cost tables.
#[derive(Debug)]
pub struct CompiledSchema {
    pub(crate) schema: Valid<Schema>,
    pub(crate) model: CostModel,
    pub(crate) default_list_size: u64,
    version: u64,
    ids: Ids,
    pub(crate) fields: Vec<FieldInfo>,
    /// Object type -> interfaces it implements (a denial on an object's field also
    /// covers the interface field through which the object can be selected).
    pub(crate) interfaces_of: HashMap<Name, Vec<Name>>,
    sdl: String,
}

impl CompiledSchema {
    /// Parses and validates `sdl`, then applies `cost`'s tables.
    pub fn compile(sdl: &str, cost: &CostConfig) -> Result<Self, SchemaError> {
        let schema =
            Schema::parse_and_validate(sdl, "schema.graphql").map_err(|e| SchemaError {
                errors: e
                    .errors
                    .iter()
                    .map(|d| {
                        let loc = d.line_column_range().map(|r| Location {
                            line: r.start.line,
                            column: r.start.column,
                        });
                        GraphqlError::new(ErrorCode::ValidationFailed, d.error.to_string()).at(loc)
                    })
                    .collect(),
            })?;
        let mut errors = Vec::new();
        let costs: HashMap<&str, u32> = cost
            .field_costs
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        let list_args: HashMap<&str, &Vec<String>> = cost
            .list_arguments
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let mut ids = Ids::default();
        let mut fields = Vec::new();
        let mut interfaces_of = HashMap::new();
        for (type_name, ty) in &schema.types {
            let (defs, type_directives) = match ty {
                ExtendedType::Object(o) => {
                    interfaces_of.insert(
                        type_name.clone(),
                        o.implements_interfaces
                            .iter()
                            .map(|i| i.name.clone())
                            .collect(),
                    );
                    (&o.fields, &o.directives)
                }
                ExtendedType::Interface(i) => (&i.fields, &i.directives),
                _ => continue,
            };
            let _ = type_directives;
            for (field_name, def) in defs {
                let coordinate = format!("{type_name}.{field_name}");
                let named = def.ty.inner_named_type();
                let returns_composite = schema.types.get(named).is_some_and(|t| !t.is_leaf());
                let configured = list_args.get(coordinate.as_str());
                let list_arg_names: Vec<Name> = def
                    .arguments
                    .iter()
                    .filter(|a| a.ty.inner_named_type() == "Int")
                    .filter(|a| match configured {
                        Some(names) => names.iter().any(|n| n == a.name.as_str()),
                        None => cost
                            .default_list_arguments
                            .iter()
                            .any(|n| n == a.name.as_str()),
                    })
                    .map(|a| a.name.clone())
                    .collect();
                if let Some(names) = configured {
                    for n in names.iter() {
                        let ok = def
                            .arguments
                            .iter()
                            .any(|a| a.name == n.as_str() && a.ty.inner_named_type() == "Int");
                        if !ok {
                            errors.push(config_error(format!(
                                "list_arguments: {coordinate} has no Int argument `{n}`"
                            )));
                        }
                    }
                }
                let type_weight = schema
                    .types
                    .get(named)
                    .and_then(|t| weight(t.directives().get("cost").map(|d| &***d)));
                let list_size = def.directives.get("listSize");
                let info = FieldInfo {
                    coordinate: coordinate.clone(),
                    parent: type_name.clone(),
                    returns: named.clone(),
                    wso2_cost: u64::from(
                        costs
                            .get(coordinate.as_str())
                            .copied()
                            .unwrap_or(cost.default_field_cost),
                    ),
                    list_args: list_arg_names,
                    weight: weight(def.directives.get("cost").map(|d| &**d))
                        .or(type_weight)
                        .unwrap_or(u64::from(returns_composite)),
                    arg_weights: def
                        .arguments
                        .iter()
                        .filter_map(|a| {
                            weight(a.directives.get("cost").map(|d| &**d))
                                .map(|w| (a.name.clone(), w))
                        })
                        .collect(),
                    is_list: def.ty.is_list(),
                    slicing: list_size
                        .and_then(|d| d.specified_argument_by_name("slicingArguments"))
                        .map(names_in)
                        .unwrap_or_default(),
                    assumed_size: list_size
                        .and_then(|d| d.specified_argument_by_name("assumedSize"))
                        .and_then(int_of),
                    sized_fields: list_size
                        .and_then(|d| d.specified_argument_by_name("sizedFields"))
                        .map(names_in)
                        .unwrap_or_default(),
                };
                let id = FieldId::try_from(fields.len()).unwrap_or(FieldId::MAX);
                fields.push(info);
                ids.entry(type_name.clone())
                    .or_default()
                    .insert(field_name.clone(), id);
            }
        }
        for key in costs.keys() {
            if lookup(&ids, key).is_none() {
                errors.push(config_error(format!(
                    "field_costs: no field {key} in the schema"
                )));
            }
        }
        for key in list_args.keys() {
            if lookup(&ids, key).is_none() {
                errors.push(config_error(format!(
                    "list_arguments: no field {key} in the schema"
                )));
            }
        }
        if !errors.is_empty() {
            return Err(SchemaError { errors });
        }
        let mut h = foldhash::fast::FixedState::with_seed(0x7475_726e_7069_6b65).build_hasher();
        sdl.hash(&mut h);
        format!("{cost:?}").hash(&mut h);
        Ok(CompiledSchema {
            schema,
            model: cost.model,
            default_list_size: u64::from(cost.default_list_size),
            version: h.finish(),
            ids,
            fields,
            interfaces_of,
            sdl: sdl.to_owned(),
        })
    }

    /// Changes whenever the SDL or the cost configuration changes: the analysis cache
    /// key.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The schema as written.
    pub fn sdl(&self) -> &str {
        &self.sdl
    }

    /// The validated schema.
    pub fn schema(&self) -> &Valid<Schema> {
        &self.schema
    }

    /// Id of `Type.field`.
    pub fn field_id(&self, type_name: &str, field: &str) -> Option<FieldId> {
        self.ids.get(type_name)?.get(field).copied()
    }

    /// `Type.field` for an id.
    pub fn coordinate(&self, id: FieldId) -> &str {
        self.fields
            .get(id as usize)
            .map_or("?", |f| f.coordinate.as_str())
    }

    pub(crate) fn info(&self, id: FieldId) -> Option<&FieldInfo> {
        self.fields.get(id as usize)
    }

    pub(crate) fn field_count(&self) -> usize {
        self.fields.len()
    }

    /// Ids of every field declared on `type_name`.
    pub(crate) fn fields_of(&self, type_name: &str) -> impl Iterator<Item = FieldId> + '_ {
        self.ids
            .get(type_name)
            .into_iter()
            .flat_map(|m| m.values().copied())
    }

    /// Every object and interface type with its fields, sorted by name (introspection's
    /// own `__` types left out): what complexity values can be given to.
    pub fn object_fields(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = self
            .ids
            .iter()
            .filter(|(t, _)| !t.starts_with("__"))
            .map(|(t, fields)| {
                let mut names: Vec<String> = fields.keys().map(|f| f.to_string()).collect();
                names.sort();
                (t.to_string(), names)
            })
            .collect();
        out.sort();
        out
    }

    /// The root operation type names (query, mutation, subscription).
    pub fn root_type_names(&self) -> Vec<(&'static str, String)> {
        use apollo_compiler::ast::OperationType as T;
        [
            (T::Query, "query"),
            (T::Mutation, "mutation"),
            (T::Subscription, "subscription"),
        ]
        .into_iter()
        .filter_map(|(t, n)| {
            self.schema
                .root_operation(t)
                .map(|name| (n, name.to_string()))
        })
        .collect()
    }

    /// Root fields (operations) of `kind` (`query`, `mutation`, `subscription`).
    pub fn operations(&self, kind: &str) -> Vec<String> {
        self.root_type_names()
            .into_iter()
            .filter(|(k, _)| *k == kind)
            .flat_map(|(_, t)| {
                self.schema
                    .get_object(&t)
                    .map(|o| o.fields.keys().map(|k| k.to_string()).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect()
    }
}

fn lookup(ids: &Ids, coordinate: &str) -> Option<FieldId> {
    let (t, f) = coordinate.split_once('.')?;
    ids.get(t)?.get(f).copied()
}

fn config_error(message: String) -> GraphqlError {
    GraphqlError::new(ErrorCode::ValidationFailed, message)
}

/// `@cost(weight: N)`; the weight is an Int (Apollo) or a numeric String (IBM).
fn weight(cost: Option<&Directive>) -> Option<u64> {
    let v = cost?.specified_argument_by_name("weight")?;
    match v.as_ref() {
        Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f.max(0.0) as u64),
        other => int_of_value(other),
    }
}

fn int_of(v: &apollo_compiler::Node<Value>) -> Option<u64> {
    int_of_value(v.as_ref())
}

fn int_of_value(v: &Value) -> Option<u64> {
    match v {
        Value::Int(i) => i.try_to_i32().ok().map(|n| n.max(0) as u64),
        _ => None,
    }
}

fn names_in(v: &apollo_compiler::Node<Value>) -> Vec<Name> {
    match v.as_ref() {
        Value::List(items) => items
            .iter()
            .filter_map(|i| match i.as_ref() {
                Value::String(s) => Name::new(s).ok(),
                _ => None,
            })
            .collect(),
        Value::String(s) => Name::new(s).ok().into_iter().collect(),
        _ => Vec::new(),
    }
}
