//! The `applications:` section of an applied file, in the same transaction as its APIs:
//! each application (matched by owner and name) created when missing or given the
//! file's tier and description, each subscription ensured (the API by context and
//! version, as this transaction sees it, so an API the same file creates counts), and
//! each key reference checked. Keys are never created or regenerated: a reference to a
//! key the control plane does not have is a warning, not a refusal (an export applied
//! to a new environment names keys that only the old one has).

use turnpike_model::applications::{ApplicationSpec, KeyRef};
use turnpike_model::GatewayFile;
use turnpike_store::{Api, Application, StoreError};

use crate::error::{ApiResult, FieldError};
use crate::service::apply::{Run, MAX_APPLICATIONS};

impl Run<'_> {
    /// Ensures every application of the file.
    pub(crate) async fn applications(&mut self, file: &GatewayFile) -> ApiResult<()> {
        if file.applications.is_empty() {
            return Ok(());
        }
        let apis = self.tx.all_apis().await?;
        for (i, spec) in file.applications.iter().enumerate() {
            let at = format!("applications[{i}]");
            match self.s.inner.store.user(&spec.owner).await {
                Ok(_) => {}
                Err(StoreError::NotFound(_)) => {
                    self.problem(&format!("{at}.owner"), format!("no user {:?}", spec.owner));
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            let Some(app) = self.application(&at, spec).await? else {
                continue;
            };
            self.subscriptions(&at, spec, &app, &apis).await?;
            self.keys(spec, &app).await?;
        }
        Ok(())
    }

    fn problem(&mut self, field: &str, message: String) {
        self.problems.push(FieldError {
            field: field.to_string(),
            message,
        });
    }

    /// The stored application, created or updated as the file says (`None`: refused).
    async fn application(
        &mut self,
        at: &str,
        spec: &ApplicationSpec,
    ) -> ApiResult<Option<Application>> {
        let tier = spec.tier.as_deref().unwrap_or("Unlimited");
        let label = format!("application {}/{}", spec.owner, spec.name);
        let owned = self
            .s
            .inner
            .store
            .list_applications(Some(spec.owner.as_str()), None, MAX_APPLICATIONS as i64, 0)
            .await?;
        let written = match owned.items.into_iter().find(|a| a.name == spec.name) {
            None => {
                self.line("create", &label);
                let (owner, name) = (&spec.owner, &spec.name);
                self.tx
                    .create_application(owner, name, tier, &spec.description)
                    .await
            }
            Some(cur) if cur.throttling_policy == tier && cur.description == spec.description => {
                return Ok(Some(cur))
            }
            Some(cur) => {
                self.line("update", &label);
                let rev = Some(cur.revision);
                self.tx
                    .update_application(&cur.id, &cur.name, tier, &spec.description, rev)
                    .await
            }
        };
        match written {
            Ok(app) => Ok(Some(app)),
            // Checked before any statement runs: the transaction is still usable.
            Err(StoreError::NotFound(m)) => {
                self.problem(&format!("{at}.tier"), format!("no {m}"));
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Subscribes the application to the APIs the file lists that it is not subscribed to.
    async fn subscriptions(
        &mut self,
        at: &str,
        spec: &ApplicationSpec,
        app: &Application,
        apis: &[Api],
    ) -> ApiResult<()> {
        let store = &self.s.inner.store;
        let limit = MAX_APPLICATIONS as i64;
        let current = store
            .list_subscriptions(Some(app.id.as_str()), None, limit, 0)
            .await?
            .items;
        for (j, sub) in spec.subscriptions.iter().enumerate() {
            let field = format!("{at}.subscriptions[{j}]");
            let Some(api) = apis
                .iter()
                .find(|a| a.context == sub.context && a.version == sub.version)
            else {
                let what = format!("no API {} {}", sub.context, sub.version);
                self.problem(&field, what);
                continue;
            };
            if current.iter().any(|s| s.api_id == api.id) {
                continue;
            }
            self.line(
                "subscribe",
                &format!(
                    "{}/{} to {} {} at {}",
                    spec.owner, spec.name, sub.context, sub.version, sub.tier
                ),
            );
            match self.tx.subscribe(&app.id, &api.id, &sub.tier).await {
                Ok(_) => {}
                // The state and tier checks run before the insert.
                Err(StoreError::Conflict(m)) => self.problem(&field, m),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Warns about each key reference the application does not have.
    async fn keys(&mut self, spec: &ApplicationSpec, app: &Application) -> ApiResult<()> {
        if spec.keys.is_empty() {
            return Ok(());
        }
        let store = &self.s.inner.store;
        let clients = store.oauth_clients(&app.id).await?;
        let api_keys = store.api_keys(&app.id).await?;
        for key in &spec.keys {
            let KeyRef {
                key_type,
                consumer_key,
                api_key,
            } = key;
            let found = match (consumer_key, api_key) {
                (Some(ck), _) => clients
                    .iter()
                    .any(|c| &c.client_id == ck && &c.key_type == key_type),
                (None, Some(name)) => api_keys
                    .iter()
                    .any(|k| &k.name == name && &k.key_type == key_type),
                (None, None) => false,
            };
            if !found {
                let what = consumer_key
                    .as_deref()
                    .map(|c| format!("consumer key {c}"))
                    .or_else(|| api_key.as_deref().map(|n| format!("API key {n:?}")))
                    .unwrap_or_else(|| "a key reference naming no key".into());
                self.warnings.push(format!(
                    "application {}/{} has no {key_type} {what}: keys are never created by apply; generate one in the Developer Portal",
                    spec.owner, spec.name
                ));
            }
        }
        Ok(())
    }
}
