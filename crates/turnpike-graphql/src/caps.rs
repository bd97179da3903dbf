//! Caps checked before any analysis, while or right after parsing, so that a hostile
//! query costs at most a bounded parse: bytes, tokens and selection nesting (the parser
//! stops at them), then aliases, root fields and directives counted on the syntax tree
//! as written. Fields visited while expanding fragments are capped in the analysis.

use apollo_compiler::ast;

use crate::error::{ErrorCode, GraphqlError};

/// Pre-analysis caps; every one is on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub max_bytes: usize,
    pub max_tokens: usize,
    /// Selection-set nesting as written (fragments not expanded); the parser's
    /// recursion limit.
    pub max_nesting: usize,
    pub max_aliases: usize,
    pub max_root_fields: usize,
    pub max_directives: usize,
    /// Field selections visited while expanding fragments; stops fragment fan-out
    /// (a fragment spreading another twice, n levels deep, is 2^n fields).
    pub max_expanded_fields: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            max_bytes: 64 * 1024,
            max_tokens: 15_000,
            max_nesting: 64,
            max_aliases: 100,
            max_root_fields: 64,
            max_directives: 64,
            max_expanded_fields: 20_000,
        }
    }
}

fn too_large(what: &str, n: usize, cap: usize) -> GraphqlError {
    GraphqlError::new(
        ErrorCode::QueryTooLarge,
        format!("query has {what} {n}, over the cap of {cap}"),
    )
}

impl Caps {
    pub(crate) fn check_bytes(&self, query: &str) -> Result<(), GraphqlError> {
        if query.len() > self.max_bytes {
            return Err(too_large("bytes", query.len(), self.max_bytes));
        }
        Ok(())
    }

    /// Counts aliases, root fields and directives on the syntax tree.
    pub(crate) fn check_document(&self, doc: &ast::Document) -> Result<(), GraphqlError> {
        let mut count = Counts::default();
        for def in &doc.definitions {
            match def {
                ast::Definition::OperationDefinition(op) => {
                    count.directives += op.directives.len();
                    count.walk(&op.selection_set);
                    let roots = root_fields(doc, &op.selection_set, &mut Vec::new());
                    if roots > self.max_root_fields {
                        return Err(too_large("root fields", roots, self.max_root_fields));
                    }
                }
                ast::Definition::FragmentDefinition(f) => {
                    count.directives += f.directives.len();
                    count.walk(&f.selection_set);
                }
                _ => {}
            }
        }
        if count.aliases > self.max_aliases {
            return Err(too_large("aliases", count.aliases, self.max_aliases));
        }
        if count.directives > self.max_directives {
            return Err(too_large(
                "directives",
                count.directives,
                self.max_directives,
            ));
        }
        Ok(())
    }
}

#[derive(Default)]
struct Counts {
    aliases: usize,
    directives: usize,
}

impl Counts {
    fn walk(&mut self, set: &[ast::Selection]) {
        for sel in set {
            match sel {
                ast::Selection::Field(f) => {
                    self.aliases += usize::from(f.alias.is_some());
                    self.directives += f.directives.len();
                    self.walk(&f.selection_set);
                }
                ast::Selection::FragmentSpread(s) => self.directives += s.directives.len(),
                ast::Selection::InlineFragment(i) => {
                    self.directives += i.directives.len();
                    self.walk(&i.selection_set);
                }
            }
        }
    }
}

/// Root fields of one operation, through fragments spread or inlined at the root.
fn root_fields<'a>(
    doc: &'a ast::Document,
    set: &'a [ast::Selection],
    seen: &mut Vec<&'a str>,
) -> usize {
    let mut n = 0;
    for sel in set {
        match sel {
            ast::Selection::Field(_) => n += 1,
            ast::Selection::InlineFragment(i) => n += root_fields(doc, &i.selection_set, seen),
            ast::Selection::FragmentSpread(s) => {
                let name = s.fragment_name.as_str();
                if seen.contains(&name) {
                    continue;
                }
                seen.push(name);
                let frag = doc.definitions.iter().find_map(|d| match d {
                    ast::Definition::FragmentDefinition(f) if f.name == s.fragment_name => Some(f),
                    _ => None,
                });
                if let Some(f) = frag {
                    n += root_fields(doc, &f.selection_set, seen);
                }
            }
        }
    }
    n
}
