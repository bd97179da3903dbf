//! A whole declarative file applied in ONE write transaction (`POST
//! /api/am/publisher/v1/apply`): the file's tiers and throttling settings, then each API
//! created or updated (matched by context + version), secured as its `auth:` says and
//! published; with `prune`, live APIs the file does not list are demoted to CREATED.
//! Every problem found on the way (the whole-file compile first, then each object read
//! as its REST body would be, a context held by another API) is collected, and any
//! problem rolls the whole transaction back: the store is as before, one version bump
//! or none. A dry run is the same run rolled back at the end, so it reports exactly the
//! real run's changes and errors.
//!
//! Reads outside the transaction (tiers, settings, API security) see the state it
//! started from: this process holds the writer lock and, on PostgreSQL, every control
//! plane waits on the version row, so nothing commits meanwhile.

use serde_json::{json, Value};
use turnpike_model::security::ApiAuthSpec;
use turnpike_model::{ApiSpec, GatewayFile};
use turnpike_store::{Api, LifecycleAction, LifecycleState, StoreError, TierKind, WriteTx};

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::service::apply_plan::{
    desired, differs, replacing, soap_import, tier_as_written, wanted_auth, wanted_tiers,
    TIER_FIELDS,
};
use crate::AppState;

/// The most APIs one file may hold.
pub const MAX_APIS: usize = 1000;

/// The most applications (and subscriptions of one application) a file or an export
/// holds.
pub const MAX_APPLICATIONS: usize = 10_000;

/// What a run does besides reconciling the file's objects.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    /// Roll back at the end instead of committing.
    pub dry_run: bool,
    /// Demote live APIs the file does not list.
    pub prune: bool,
}

/// What a run changed (or, dry, would change), one line per change, and the version it
/// committed (`None`: a dry run, or nothing to change).
pub(crate) struct Outcome {
    pub changes: Vec<String>,
    pub version: Option<u64>,
    /// What the run could not do and did not refuse the file for (a key reference to a
    /// key this control plane does not have).
    pub warnings: Vec<String>,
}

/// One run: its transaction, the lines it prints and the problems it found.
pub(crate) struct Run<'a> {
    pub(crate) s: &'a AppState,
    caller: &'a Caller,
    pub(crate) tx: WriteTx<'a>,
    lines: Vec<String>,
    pub(crate) problems: Vec<FieldError>,
    pub(crate) warnings: Vec<String>,
}

/// Applies `file`; any problem rolls everything back and is answered with every
/// problem found.
pub(crate) async fn apply(
    s: &AppState,
    caller: &Caller,
    file: &GatewayFile,
    opts: Options,
) -> ApiResult<Outcome> {
    let max_apps = MAX_APPLICATIONS;
    if file.apis.len() > MAX_APIS || file.applications.len() > max_apps {
        return Err(ApiError::bad_request(format!(
            "the file lists {} APIs and {} applications; at most {MAX_APIS} and {max_apps} per apply",
            file.apis.len(),
            file.applications.len()
        )));
    }
    let tx = s.inner.store.begin_write().await?;
    let problems = crate::service::apply_check::problems(&s.inner.store, file).await?;
    if !problems.is_empty() {
        return Err(ApiError::invalid(problems));
    }
    let mut run = Run {
        s,
        caller,
        tx,
        lines: Vec::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    run.tiers(file).await?;
    run.throttling_settings(file).await?;
    let existing = run.tx.all_apis().await?;
    for (i, spec) in file.apis.iter().enumerate() {
        run.api(i, spec, &existing).await?;
    }
    if opts.prune {
        run.prune(file, &existing).await?;
    }
    run.applications(file).await?;
    run.finish(opts.dry_run).await
}

impl Run<'_> {
    /// Commits, or rolls back a dry run, a run with nothing to change or one that found
    /// a problem (then answered with every problem).
    async fn finish(self, dry_run: bool) -> ApiResult<Outcome> {
        let Run {
            tx,
            caller,
            lines,
            problems,
            warnings,
            ..
        } = self;
        if !problems.is_empty() {
            return Err(ApiError::invalid(problems));
        }
        if dry_run || lines.is_empty() {
            // Dropped, not committed: rolled back.
            return Ok(Outcome {
                changes: lines,
                version: None,
                warnings,
            });
        }
        let summary = format!("apply: {} change(s)", lines.len());
        let version = tx.commit(&caller.name, &summary).await?;
        Ok(Outcome {
            changes: lines,
            version: Some(version),
            warnings,
        })
    }

    pub(crate) fn line(&mut self, verb: &str, what: &str) {
        self.lines.push(format!("{verb:<7} {what}"));
    }

    /// Records a refusal of the object at `at` (its field errors under that path); an
    /// error that is not about the input stops the run.
    fn refused(&mut self, at: &str, e: ApiError) -> ApiResult<()> {
        if e.status != http::StatusCode::BAD_REQUEST {
            return Err(e);
        }
        if e.errors.is_empty() {
            self.problems.push(FieldError {
                field: at.to_string(),
                message: e.message,
            });
        }
        for f in e.errors {
            let field = match f.field.is_empty() {
                true => at.to_string(),
                false => format!("{at}.{}", f.field),
            };
            self.problems.push(FieldError {
                field,
                message: f.message,
            });
        }
        Ok(())
    }

    /// Creates or replaces the file's tiers.
    async fn tiers(&mut self, file: &GatewayFile) -> ApiResult<()> {
        for (family, want) in wanted_tiers(file) {
            let kind = TierKind::parse(family).ok_or_else(ApiError::internal)?;
            let name = want["name"].as_str().unwrap_or_default().to_string();
            let at = format!("throttling.{family} tier {name}");
            let current = match self.s.inner.store.get_tier(kind, &name).await {
                Ok(t) => Some(t),
                Err(StoreError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
            let Some(current) = current else {
                self.line("create", &format!("{family} tier {name}"));
                match crate::rest::admin::tier_body(&want, kind, None, None) {
                    Ok(t) => {
                        self.tx.create_tier(&t).await?;
                    }
                    Err(e) => self.refused(&at, e)?,
                }
                continue;
            };
            let mut body = serde_json::to_value(&current).map_err(|_| ApiError::internal())?;
            if tier_as_written(&body) == want {
                continue;
            }
            self.line("update", &format!("{family} tier {name}"));
            // A merge patch: what the file leaves out goes back to its default.
            let mut patch = want.clone();
            for k in TIER_FIELDS {
                if patch.get(k).is_none() {
                    patch[k] = Value::Null;
                }
            }
            crate::merge::merge_patch(&mut body, &patch);
            match crate::rest::admin::tier_body(&body, kind, Some(&name), None) {
                Ok(t) => {
                    self.tx.update_tier(&t, Some(current.revision)).await?;
                }
                Err(e) => self.refused(&at, e)?,
            }
        }
        Ok(())
    }

    /// Sets the unauthenticated tier and the rate-limit header style when they differ
    /// from the file's (a throttling section that leaves them out wants the defaults).
    async fn throttling_settings(&mut self, file: &GatewayFile) -> ApiResult<()> {
        // A file without a throttling section leaves the environment's throttling alone
        // (as it leaves its tiers), so a publisher without the admin role can apply APIs.
        if file.throttling.is_empty() {
            return Ok(());
        }
        let want = json!({
            "unauthenticatedTier": file.throttling.unauthenticated_tier,
            "rateLimitHeaders": file.throttling.headers,
        });
        if crate::rest::throttle_settings::current(&self.s.inner.store).await? == want {
            return Ok(());
        }
        self.line("update", "throttling settings");
        let key = crate::snapshot::throttling::SETTINGS_KEY;
        self.tx.set_setting(key, &want).await?;
        Ok(())
    }

    /// Creates or updates one API of the file, secures and publishes it.
    async fn api(&mut self, i: usize, spec: &ApiSpec, existing: &[Api]) -> ApiResult<()> {
        let at = format!("apis[{i}]");
        let label = format!("{} {}", spec.context, spec.version);
        let mut want = desired(spec);
        // A SOAP API listing no resources gets them from its WSDL.
        let wsdl_resources = spec.soap.is_some() && spec.resources.is_empty();
        if let (true, Some(obj)) = (wsdl_resources, want.as_object_mut()) {
            obj.remove("resources");
        }
        let auth = wanted_auth(spec);
        let found = existing
            .iter()
            .find(|a| a.context == spec.context && a.version == spec.version);
        let written = match found {
            None => self.create(&at, spec, &want, &auth, &label).await?,
            Some(cur) => {
                if wsdl_resources {
                    want["resources"] = json!(cur.resources);
                }
                self.update(&at, cur, &want, &auth, &label).await?
            }
        };
        let Some((id, state)) = written else {
            return Ok(());
        };
        let action = match state {
            LifecycleState::Created | LifecycleState::Prototyped => LifecycleAction::Publish,
            LifecycleState::Blocked => LifecycleAction::RePublish,
            _ => return Ok(()),
        };
        self.line("publish", &label);
        self.tx.change_lifecycle(&id, action, None).await?;
        Ok(())
    }

    /// Creates an API (refused when another API holds its context, as WSO2 refuses a
    /// duplicate context); its id and state, `None` when refused.
    async fn create(
        &mut self,
        at: &str,
        spec: &ApiSpec,
        want: &Value,
        auth: &ApiAuthSpec,
        label: &str,
    ) -> ApiResult<Option<(String, LifecycleState)>> {
        let holders = self.tx.names_at_context(&spec.context).await?;
        if let Some(other) = holders.iter().find(|n| **n != spec.name) {
            self.problems.push(FieldError {
                field: format!("{at}.context"),
                message: format!(
                    "{} is held by the API {other:?}: a new version keeps its API's name, another API needs another context",
                    spec.context
                ),
            });
            return Ok(None);
        }
        let input = match &spec.soap {
            Some(soap) => crate::import::wsdl::soap_input(self.s, &soap_import(soap, want))
                .await
                .map(|(input, _, _)| input),
            None => parsed(want),
        };
        let input = match input {
            Ok(input) => input,
            Err(e) => return self.refused(at, e).map(|_| None),
        };
        let scope_errors = crate::security::scopes_need_auth(&input.resources, Some(auth));
        if !scope_errors.is_empty() {
            return self
                .refused(at, ApiError::invalid(scope_errors))
                .map(|_| None);
        }
        self.line("create", label);
        let api = self.tx.create_api(&input, &self.caller.name).await?;
        if json!(auth) != json!(ApiAuthSpec::default()) {
            self.line("secure", label);
            self.secure(&api.id, auth).await?;
        }
        Ok(Some((api.id, api.lifecycle_status)))
    }

    /// Makes a stored API the file's: its fields (a merge patch that also clears the
    /// gateway settings the file leaves out) and its security.
    async fn update(
        &mut self,
        at: &str,
        cur: &Api,
        want: &Value,
        auth: &ApiAuthSpec,
        label: &str,
    ) -> ApiResult<Option<(String, LifecycleState)>> {
        let stored = crate::security::stored_auth(&self.s.inner.store, &cur.id)
            .await?
            .unwrap_or_default();
        let resecure = json!(stored) != json!(auth);
        // The order of the lines a client sees: secure before adding scopes, open after
        // dropping them (one transaction, so only the final pair is checked).
        if resecure && !auth.is_open() {
            self.line("secure", label);
        }
        let mut body = serde_json::to_value(cur).map_err(|_| ApiError::internal())?;
        if differs(&body, want) {
            self.line("update", label);
            crate::merge::merge_patch(&mut body, &replacing(want));
            let mut input = match parsed(&body) {
                Ok(input) => input,
                Err(e) => return self.refused(at, e).map(|_| None),
            };
            let scope_errors = crate::security::scopes_need_auth(&input.resources, Some(auth));
            if !scope_errors.is_empty() {
                return self
                    .refused(at, ApiError::invalid(scope_errors))
                    .map(|_| None);
            }
            input.definition = cur.definition.clone();
            self.tx
                .update_api(&cur.id, &input, Some(cur.revision))
                .await?;
        }
        if resecure && auth.is_open() {
            self.line("secure", label);
        }
        if resecure {
            self.secure(&cur.id, auth).await?;
        }
        Ok(Some((cur.id.clone(), cur.lifecycle_status)))
    }

    async fn secure(&mut self, id: &str, auth: &ApiAuthSpec) -> ApiResult<()> {
        let stored = serde_json::to_string(auth).map_err(|_| ApiError::internal())?;
        self.tx.set_api_security(id, Some(&stored)).await?;
        Ok(())
    }

    /// Demotes the live APIs the file does not list.
    async fn prune(&mut self, file: &GatewayFile, existing: &[Api]) -> ApiResult<()> {
        for cur in existing {
            let listed = file
                .apis
                .iter()
                .any(|s| cur.context == s.context && cur.version == s.version);
            let live = matches!(
                cur.lifecycle_status,
                LifecycleState::Published | LifecycleState::Prototyped
            );
            if listed || !live {
                continue;
            }
            self.line("demote", &format!("{} {}", cur.context, cur.version));
            self.tx
                .change_lifecycle(&cur.id, LifecycleAction::DemoteToCreated, None)
                .await?;
        }
        Ok(())
    }
}

/// The API a REST body describes, read as `POST /apis` and `PATCH /apis/{id}` read it.
fn parsed(body: &Value) -> ApiResult<turnpike_store::ApiInput> {
    let (input, f) = crate::service::api_body::parse_api(body, None);
    f.into_result()?;
    input.ok_or_else(|| ApiError::bad_request("invalid API"))
}
