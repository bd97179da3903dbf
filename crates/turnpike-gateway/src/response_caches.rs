//! Each response cache's admission mode as Prometheus series, read at scrape time from
//! the stores the current snapshot's caches share (docs/caching.md, "Admission"): whether
//! the store is selective (1: a miss stores only a key asked before) and how many
//! misses it left unstored for that. Only APIs with a cache have any.

use std::fmt::Write as _;

use turnpike_config::Snapshot;

use crate::metric_labels::api_labels;

pub(crate) const M_CACHE_SELECTIVE: &str = "turnpike_cache_selective";
pub(crate) const M_CACHE_UNADMITTED: &str = "turnpike_cache_unadmitted_total";

pub(crate) fn render(snap: &Snapshot, out: &mut String) {
    let stores: Vec<_> = snap
        .apis
        .iter()
        .filter_map(|api| {
            let store = turnpike_cache::api_store(&api.chain)?;
            let labels = api_labels(&api.name, &api.version, &api.context, &api.labelled_id());
            Some((labels, store))
        })
        .collect();
    if stores.is_empty() {
        return;
    }
    let _ = writeln!(out, "# HELP {M_CACHE_SELECTIVE} 1 while the response cache stores only keys asked before (adaptive admission)\n# TYPE {M_CACHE_SELECTIVE} gauge");
    for (labels, store) in &stores {
        let v = u8::from(store.selective());
        let _ = writeln!(out, "{M_CACHE_SELECTIVE}{{{labels}}} {v}");
    }
    let _ = writeln!(out, "# HELP {M_CACHE_UNADMITTED} Cache misses not stored because the store was selective\n# TYPE {M_CACHE_UNADMITTED} counter");
    for (labels, store) in &stores {
        let _ = writeln!(
            out,
            "{M_CACHE_UNADMITTED}{{{labels}}} {}",
            store.unadmitted_total()
        );
    }
}
