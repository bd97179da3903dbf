//! Field-level access (Tyk's field-based permissions): which schema fields a caller may
//! select, compiled against the schema into a bit set so a check is one bit test per
//! field the query touches.

use crate::analysis::Analysis;
use crate::error::{ErrorCode, GraphqlError};
use crate::schema::{CompiledSchema, FieldId, SchemaError};

/// A compiled allow or deny list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldAccess {
    denied: Vec<u64>,
}

impl FieldAccess {
    /// Denies each `Type.field`, and for a bare `Type` every field of it and every field
    /// that returns it. Denying an object's field also denies the same field on the
    /// interfaces the object implements, through which it could be selected.
    pub fn deny<S: AsRef<str>>(schema: &CompiledSchema, rules: &[S]) -> Result<Self, SchemaError> {
        let mut access = FieldAccess {
            denied: vec![0; schema.field_count().div_ceil(64)],
        };
        let ids = resolve(schema, rules)?;
        for id in ids {
            access.set(id);
            let Some(info) = schema.info(id) else {
                continue;
            };
            let field = info.coordinate.rsplit('.').next().unwrap_or_default();
            for iface in schema.interfaces_of.get(&info.parent).into_iter().flatten() {
                if let Some(i) = schema.field_id(iface, field) {
                    access.set(i);
                }
            }
        }
        Ok(access)
    }

    /// Allows only the listed `Type.field`s (a bare `Type`: all its fields); every
    /// other schema field, root fields included, is denied.
    pub fn allow<S: AsRef<str>>(schema: &CompiledSchema, rules: &[S]) -> Result<Self, SchemaError> {
        let n = schema.field_count();
        let mut denied = vec![u64::MAX; n.div_ceil(64)];
        if !n.is_multiple_of(64) {
            if let Some(last) = denied.last_mut() {
                *last = (1u64 << (n % 64)) - 1;
            }
        }
        for rule in rules {
            let rule = rule.as_ref();
            let found: Vec<FieldId> = match rule.split_once('.') {
                Some((t, f)) => schema.field_id(t, f).into_iter().collect(),
                None => schema.fields_of(rule).collect(),
            };
            if found.is_empty() {
                return Err(unknown(rule));
            }
            for id in found {
                if let Some(w) = denied.get_mut(id as usize / 64) {
                    *w &= !(1u64 << (id % 64));
                }
            }
        }
        Ok(FieldAccess { denied })
    }

    /// Adds `other`'s denials to this set.
    pub fn merge_denied(&mut self, other: &FieldAccess) {
        for (w, o) in self.denied.iter_mut().zip(&other.denied) {
            *w |= *o;
        }
    }

    fn set(&mut self, id: FieldId) {
        if let Some(w) = self.denied.get_mut(id as usize / 64) {
            *w |= 1u64 << (id % 64);
        }
    }

    pub fn is_denied(&self, id: FieldId) -> bool {
        self.denied
            .get(id as usize / 64)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    /// The first denied field the query selects, as an error naming it.
    pub fn check(
        &self,
        schema: &CompiledSchema,
        analysis: &Analysis,
        query: &str,
    ) -> Result<(), GraphqlError> {
        match analysis.fields.iter().find(|(id, _)| self.is_denied(*id)) {
            None => Ok(()),
            Some((id, offset)) => Err(GraphqlError::new(
                ErrorCode::FieldNotAllowed,
                format!("field `{}` is not allowed", schema.coordinate(*id)),
            )
            .at(offset.map(|o| crate::request::location(query, o)))),
        }
    }
}

fn unknown(rule: &str) -> SchemaError {
    SchemaError {
        errors: vec![GraphqlError::new(
            ErrorCode::ValidationFailed,
            format!("field access: no type or field `{rule}` in the schema"),
        )],
    }
}

fn resolve<S: AsRef<str>>(
    schema: &CompiledSchema,
    rules: &[S],
) -> Result<Vec<FieldId>, SchemaError> {
    let mut out = Vec::new();
    for rule in rules {
        let rule = rule.as_ref();
        match rule.split_once('.') {
            Some((t, f)) => out.push(schema.field_id(t, f).ok_or_else(|| unknown(rule))?),
            None => {
                let before = out.len();
                out.extend(schema.fields_of(rule));
                out.extend(
                    schema
                        .fields
                        .iter()
                        .enumerate()
                        .filter(|(_, i)| i.returns == rule)
                        .filter_map(|(n, _)| FieldId::try_from(n).ok()),
                );
                if out.len() == before && schema.schema.types.get(rule).is_none() {
                    return Err(unknown(rule));
                }
            }
        }
    }
    Ok(out)
}
