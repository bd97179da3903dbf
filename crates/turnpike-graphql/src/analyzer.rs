//! The entry point: a compiled schema, the caps and the introspection switch of one
//! API, and a shared cache of analyses keyed by schema version and query text. A cache
//! hit costs a hash, a lookup and a comparison of the query text; an analysis whose
//! list sizes come from variables is walked again with the request's variables (no
//! parse). Invalid queries are cached too, so a flood of one bad query parses once.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use apollo_compiler::ast;
use apollo_compiler::parser::Parser;
use apollo_compiler::validation::{DiagnosticList, Valid};
use apollo_compiler::ExecutableDocument;
use serde_json::{Map, Value as Json};

use crate::access::FieldAccess;
use crate::analysis::{Analysis, Walker};
use crate::caps::Caps;
use crate::config::Limits;
use crate::error::{ErrorCode, GraphqlError, Location};
use crate::explain::Explain;
use crate::fastparse;
use crate::request::location;
use crate::schema::CompiledSchema;

struct Prepared {
    /// The validated document, kept only when the analysis depends on variables (it is
    /// walked again for each request's). Keeping every one held ~40 KB per cached query
    /// (Query 3) and made each cold analysis pay for freeing an evicted one; explain
    /// validates again when it is absent.
    doc: Option<Valid<ExecutableDocument>>,
    analysis: Arc<Analysis>,
}

struct Entry {
    version: u64,
    query: Box<str>,
    operation: Option<Box<str>>,
    result: Result<Prepared, Vec<GraphqlError>>,
}

/// Hit and miss counts of an [`AnalysisCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

/// Analyses shared by every API of a gateway process and kept across snapshot swaps;
/// entries of an old schema version are never returned for a new one and age out.
#[derive(Clone)]
pub struct AnalysisCache {
    entries: moka::sync::Cache<u64, Arc<Entry>, foldhash::fast::RandomState>,
    hasher: foldhash::fast::RandomState,
    stats: Arc<[AtomicU64; 2]>,
}

impl std::fmt::Debug for AnalysisCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnalysisCache")
            .field("entries", &self.entries.entry_count())
            .finish()
    }
}

impl AnalysisCache {
    /// A cache holding at most `capacity` analyses.
    pub fn new(capacity: u64) -> Self {
        AnalysisCache {
            entries: moka::sync::Cache::builder()
                .max_capacity(capacity)
                .build_with_hasher(foldhash::fast::RandomState::default()),
            hasher: foldhash::fast::RandomState::default(),
            stats: Arc::new([AtomicU64::new(0), AtomicU64::new(0)]),
        }
    }

    /// Whether `self` and `other` are handles of one cache (a gateway keeps one per
    /// policy runtime, across snapshot swaps).
    pub fn is_same(&self, other: &AnalysisCache) -> bool {
        Arc::ptr_eq(&self.stats, &other.stats)
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.stats[0].load(Ordering::Relaxed),
            misses: self.stats[1].load(Ordering::Relaxed),
        }
    }
}

impl Default for AnalysisCache {
    fn default() -> Self {
        AnalysisCache::new(10_000)
    }
}

/// One API's GraphQL front: validates and analyses queries against its schema.
#[derive(Debug, Clone)]
pub struct Analyzer {
    schema: Arc<CompiledSchema>,
    caps: Caps,
    introspection: bool,
    /// Deepest introspection selection answered ([`Analyzer::with_introspection_max_depth`]).
    introspection_max_depth: u32,
    cache: AnalysisCache,
    version: u64,
}

/// The introspection depth allowed unless an API sets another: the standard
/// introspection query (graphql-js `getIntrospectionQuery`) is 13 deep, newer clients
/// ask a few more `ofType` levels.
pub const DEFAULT_INTROSPECTION_MAX_DEPTH: u32 = 20;

impl Analyzer {
    pub fn new(
        schema: Arc<CompiledSchema>,
        caps: Caps,
        introspection: bool,
        cache: AnalysisCache,
    ) -> Self {
        let mut h = foldhash::fast::FixedState::with_seed(7).build_hasher();
        schema.version().hash(&mut h);
        format!("{caps:?}").hash(&mut h);
        Analyzer {
            version: h.finish(),
            schema,
            caps,
            introspection,
            introspection_max_depth: DEFAULT_INTROSPECTION_MAX_DEPTH,
            cache,
        }
    }

    /// The deepest introspection selection answered (counted from the operation's root).
    pub fn with_introspection_max_depth(mut self, max: u32) -> Self {
        self.introspection_max_depth = max;
        self
    }

    pub fn schema(&self) -> &Arc<CompiledSchema> {
        &self.schema
    }

    pub fn cache(&self) -> &AnalysisCache {
        &self.cache
    }

    /// Parses (or finds in the cache), validates and analyses `query`; refuses
    /// introspection when the API turned it off.
    pub fn analyze(
        &self,
        query: &str,
        operation_name: Option<&str>,
        variables: Option<&Map<String, Json>>,
    ) -> Result<Arc<Analysis>, Vec<GraphqlError>> {
        let entry = self.entry(query, operation_name);
        let prepared = entry.result.as_ref().map_err(Clone::clone)?;
        let analysis = match (&prepared.doc, variables) {
            (Some(doc), Some(_)) => Arc::new(self.walk(doc, operation_name, variables, query)?),
            _ => prepared.analysis.clone(),
        };
        if !self.introspection {
            if let Some(offset) = analysis.introspection {
                return Err(vec![GraphqlError::new(
                    ErrorCode::IntrospectionDisabled,
                    "introspection is disabled for this API",
                )
                .at(offset.map(|o| location(query, o)))]);
            }
        }
        if analysis.introspection_depth > self.introspection_max_depth {
            let offset = analysis.introspection.flatten();
            return Err(vec![GraphqlError::new(
                ErrorCode::MaxDepthExceeded,
                format!(
                    "introspection depth {} exceeds the maximum of {} (introspection_max_depth)",
                    analysis.introspection_depth, self.introspection_max_depth
                ),
            )
            .at(offset.map(|o| location(query, o)))]);
        }
        Ok(analysis)
    }

    /// Holds an analysis to a tier's limits and a caller's field access.
    pub fn check(
        &self,
        analysis: &Analysis,
        query: &str,
        limits: &Limits,
        access: Option<&FieldAccess>,
    ) -> Result<(), GraphqlError> {
        let at = analysis.operation_offset.map(|o| location(query, o));
        if let Some(max) = limits.max_depth {
            if analysis.depth > max {
                return Err(GraphqlError::new(
                    ErrorCode::MaxDepthExceeded,
                    format!(
                        "query depth {} exceeds the maximum of {max}",
                        analysis.depth
                    ),
                )
                .at(at));
            }
        }
        if let Some(max) = limits.max_complexity {
            if analysis.complexity > max {
                return Err(GraphqlError::new(
                    ErrorCode::MaxComplexityExceeded,
                    format!(
                        "query complexity {} exceeds the maximum of {max}",
                        analysis.complexity
                    ),
                )
                .at(at));
            }
        }
        match access {
            Some(a) => a.check(&self.schema, analysis, query),
            None => Ok(()),
        }
    }

    /// Depth, complexity, root fields and the per-field breakdown, held to `limits`,
    /// without running anything.
    pub fn explain(
        &self,
        query: &str,
        operation_name: Option<&str>,
        variables: Option<&Map<String, Json>>,
        limits: &Limits,
    ) -> Result<Explain, Vec<GraphqlError>> {
        let entry = self.entry(query, operation_name);
        let prepared = entry.result.as_ref().map_err(Clone::clone)?;
        let revalidated;
        let doc = match &prepared.doc {
            Some(doc) => doc,
            None => {
                revalidated = self.validate(query)?;
                &revalidated
            }
        };
        let op = doc.operations.get(operation_name).map_err(|e| {
            vec![GraphqlError::new(
                ErrorCode::OperationNotFound,
                e.message().to_string(),
            )]
        })?;
        let walker = Walker::new(
            &self.schema,
            doc,
            op,
            variables,
            self.caps.max_expanded_fields,
            true,
        );
        let (analysis, rows) = walker
            .run(op.location().map(|l| l.offset()))
            .map_err(|e| vec![e])?;
        Ok(Explain::new(&analysis, rows.unwrap_or_default(), limits))
    }

    fn entry(&self, query: &str, operation_name: Option<&str>) -> Arc<Entry> {
        let key = self
            .cache
            .hasher
            .hash_one((self.version, query, operation_name));
        if let Some(e) = self.cache.entries.get(&key) {
            if e.version == self.version
                && &*e.query == query
                && e.operation.as_deref() == operation_name
            {
                self.cache.stats[0].fetch_add(1, Ordering::Relaxed);
                return e;
            }
        }
        self.cache.stats[1].fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry {
            version: self.version,
            query: query.into(),
            operation: operation_name.map(Into::into),
            result: self.prepare(query, operation_name),
        });
        self.cache.entries.insert(key, entry.clone());
        entry
    }

    /// The cold path: caps, parse, validate, analyse without variables.
    fn prepare(
        &self,
        query: &str,
        operation_name: Option<&str>,
    ) -> Result<Prepared, Vec<GraphqlError>> {
        let doc = self.validate(query)?;
        let analysis = self.walk(&doc, operation_name, None, query)?;
        Ok(Prepared {
            doc: analysis.variable_dependent.then_some(doc),
            analysis: Arc::new(analysis),
        })
    }

    /// Caps, parse, validation. The fast parser builds the AST unless it declines the
    /// text; its spans carry exact offsets but not this query's source text, so a
    /// document that fails validation is parsed again by apollo-compiler for diagnostics
    /// with lines and columns (invalid queries are cached too, so that costs once per
    /// text).
    fn validate(&self, query: &str) -> Result<Valid<ExecutableDocument>, Vec<GraphqlError>> {
        self.caps.check_bytes(query).map_err(|e| vec![e])?;
        let (ast, fast) = match fastparse::parse(query, self.caps.max_tokens, self.caps.max_nesting)
        {
            Ok(ast) => (ast, true),
            Err(_) => (self.parse(query)?, false),
        };
        self.caps.check_document(&ast).map_err(|e| vec![e])?;
        match ast.to_executable_validate(self.schema.schema()) {
            Ok(doc) => Ok(doc),
            Err(_) if fast => self
                .parse(query)?
                .to_executable_validate(self.schema.schema())
                .map_err(|e| diagnostics(&e.errors, false)),
            Err(e) => Err(diagnostics(&e.errors, false)),
        }
    }

    /// apollo-compiler's own parse, with the caps as its limits.
    fn parse(&self, query: &str) -> Result<ast::Document, Vec<GraphqlError>> {
        Parser::new()
            .token_limit(self.caps.max_tokens)
            .recursion_limit(self.caps.max_nesting)
            .parse_ast(query, "query.graphql")
            .map_err(|e| diagnostics(&e.errors, true))
    }

    fn walk(
        &self,
        doc: &Valid<ExecutableDocument>,
        operation_name: Option<&str>,
        variables: Option<&Map<String, Json>>,
        query: &str,
    ) -> Result<Analysis, Vec<GraphqlError>> {
        let op = doc.operations.get(operation_name).map_err(|e| {
            vec![GraphqlError::new(
                ErrorCode::OperationNotFound,
                e.message().to_string(),
            )]
        })?;
        let _ = query;
        Walker::new(
            &self.schema,
            doc,
            op,
            variables,
            self.caps.max_expanded_fields,
            false,
        )
        .run(op.location().map(|l| l.offset()))
        .map(|(a, _)| a)
        .map_err(|e| vec![e])
    }
}

fn diagnostics(list: &DiagnosticList, parsing: bool) -> Vec<GraphqlError> {
    list.iter()
        .map(|d| {
            let message = d.error.to_string();
            let code = if !parsing {
                ErrorCode::ValidationFailed
            } else if message.contains("limit") {
                ErrorCode::QueryTooLarge
            } else {
                ErrorCode::ParseFailed
            };
            let loc = d.line_column_range().map(|r| Location {
                line: r.start.line,
                column: r.start.column,
            });
            GraphqlError::new(code, message).at(loc)
        })
        .collect()
}
