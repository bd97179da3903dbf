//! The file's `throttling:` section: the tiers table (seeded with WSO2's defaults), each
//! application's tier, and the settings that belong to no tier (the unauthenticated tier
//! and the rate-limit header style, `PUT /settings/throttling`).

use turnpike_model::throttling::{
    AdvancedPolicy, ApplicationThrottle, ApplicationTier, HeaderStyle, Limit, SubscriptionTier,
    ThrottleSpec, TimeUnit,
};
use turnpike_store::Store;

use crate::error::{ApiError, ApiResult};

/// The store setting that holds the throttling settings that belong to no tier.
pub(crate) const SETTINGS_KEY: &str = "throttling";

/// The `throttling:` section from the tiers table (seeded with WSO2's defaults) and each
/// application's tier. Subscriptions (with their tiers) travel in the `security:` section.
pub(crate) async fn throttling_spec(store: &Store) -> Result<ThrottleSpec, ApiError> {
    use turnpike_store::TierKind;
    let mut spec = ThrottleSpec::default();
    for t in store.list_tiers(TierKind::Subscription).await? {
        spec.subscription_tiers.push(SubscriptionTier {
            name: t.name.clone(),
            description: Some(t.description.clone()).filter(|d| !d.is_empty()),
            quota: tier_limit(&t),
            burst: tier_option(&t, "burst"),
            tokens: tier_option(&t, "tokenLimits").unwrap_or_default(),
            models: tier_option(&t, "models").unwrap_or_default(),
            stop_on_quota: tier_option(&t, "stopOnQuota").unwrap_or(true),
        });
    }
    for t in store.list_tiers(TierKind::Application).await? {
        spec.application_tiers.push(ApplicationTier {
            name: t.name.clone(),
            description: Some(t.description.clone()).filter(|d| !d.is_empty()),
            quota: tier_limit(&t),
            tokens: tier_option(&t, "tokenLimits").unwrap_or_default(),
        });
    }
    for t in store.list_tiers(TierKind::Advanced).await? {
        spec.advanced_policies.push(AdvancedPolicy {
            name: t.name.clone(),
            description: Some(t.description.clone()).filter(|d| !d.is_empty()),
            default_limit: tier_limit(&t),
            groups: tier_option(&t, "conditionalGroups").unwrap_or_default(),
            tokens: tier_option(&t, "tokenLimits").unwrap_or_default(),
        });
    }
    // An application whose tier was deleted counts on no application tier rather than
    // making every gateway refuse the snapshot.
    spec.applications = store
        .application_tiers()
        .await?
        .into_iter()
        .filter(|(_, tier)| spec.application_tiers.iter().any(|t| &t.name == tier))
        .map(|(application, tier)| ApplicationThrottle { application, tier })
        .collect();
    apply_to(store, &mut spec).await?;
    Ok(spec)
}

/// One of a tier's options in the file's type (checked when it was stored; a value that
/// no longer reads is left out and logged).
fn tier_option<T: serde::de::DeserializeOwned>(t: &turnpike_store::Tier, key: &str) -> Option<T> {
    let v = t.options.get(key)?;
    serde_json::from_value(v.clone())
        .map_err(|e| tracing::warn!(tier = %t.name, key, error = %e, "control plane: unreadable tier option"))
        .ok()
}

/// `request_count` (or the `dataAmount` option, bytes) per `unit_seconds` as the file
/// writes it (the largest whole unit); neither is unlimited.
fn tier_limit(t: &turnpike_store::Tier) -> Option<Limit> {
    let bytes: Option<u64> = tier_option(t, "dataAmount");
    let count = match bytes {
        Some(b) => b,
        None => u64::try_from(t.request_count?).unwrap_or(0),
    };
    let secs = u64::try_from(t.unit_seconds).unwrap_or(60).max(1);
    let unit = [
        TimeUnit::Month,
        TimeUnit::Day,
        TimeUnit::Hour,
        TimeUnit::Minute,
        TimeUnit::Second,
    ]
    .into_iter()
    .find(|u| secs % u.seconds() == 0)
    .unwrap_or(TimeUnit::Second);
    let limit = match bytes {
        Some(_) => Limit::bytes(count, unit),
        None => Limit::requests(count, unit),
    };
    Some(Limit {
        every: u32::try_from(secs / unit.seconds()).unwrap_or(u32::MAX),
        ..limit
    })
}

/// Fills `spec`'s unauthenticated tier and header style from the stored settings.
pub(crate) async fn apply_to(store: &Store, spec: &mut ThrottleSpec) -> ApiResult<()> {
    let Some(v) = store.setting(SETTINGS_KEY).await? else {
        return Ok(());
    };
    spec.unauthenticated_tier = v["unauthenticatedTier"].as_str().map(str::to_string);
    if let Ok(h) = serde_json::from_value::<HeaderStyle>(v["rateLimitHeaders"].clone()) {
        spec.headers = h;
    }
    Ok(())
}
