//! Two stores on one real PostgreSQL behave as two control planes: each learns the
//! other's versions, their writes stay serial (dense versions), one at a time leads the
//! derived-state jobs, and manifests and gateway status written by one are read by the
//! other.

use std::time::Duration;

use turnpike_store::testing::PgServer;
use turnpike_store::{GatewayContact, PasswordParams, Store};

async fn open(url: &str) -> Store {
    Store::open_with(url, PasswordParams::insecure_fast())
        .await
        .expect("open store")
}

async fn commit(s: &Store, what: &str) -> u64 {
    s.begin_write()
        .await
        .expect("begin")
        .commit("t", what)
        .await
        .expect("commit")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_postgres_act_as_one_cluster() {
    let pg = PgServer::start();
    let url = pg.create_database("cluster").await;
    let (a, b) = tokio::join!(open(&url), open(&url));

    // A commit on one reaches the other's version watch.
    let mut rx = b.watch_version();
    let v = commit(&a, "on a").await;
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|x| *x >= v))
        .await
        .expect("b never saw a's version")
        .expect("watch closed");

    // Concurrent writers in two processes keep versions dense.
    let start = a.current_version().await.expect("version");
    let writes = |s: Store, tag: &'static str| async move {
        for i in 0..10 {
            commit(&s, &format!("{tag} {i}")).await;
        }
    };
    tokio::join!(writes(a.clone(), "a"), writes(b.clone(), "b"));
    assert_eq!(a.current_version().await.expect("version"), start + 20);
    let audit = a
        .audit_log(&Default::default(), 100, 0)
        .await
        .expect("audit");
    let mut versions: Vec<u64> = audit.items.iter().map(|e| e.version as u64).collect();
    versions.sort_unstable();
    assert_eq!(
        versions[versions.len() - 20..],
        (start + 1..=start + 20).collect::<Vec<_>>()[..],
        "versions are not dense"
    );

    // One leader at a time: exactly one of two concurrent maintenance passes runs.
    let (ma, mb) = tokio::join!(a.maintain(), b.maintain());
    let ran = [ma.expect("maintain a"), mb.expect("maintain b")];
    assert_eq!(
        ran.iter().filter(|r| r.is_some()).count(),
        1,
        "both or neither pruned: {ran:?}"
    );
    let (leader, other) = if ran[0].is_some() { (&a, &b) } else { (&b, &a) };
    assert!(other.maintain().await.expect("maintain").is_none());
    // The leader's session ends: the other takes over at its next check.
    leader.resign().await;
    assert!(other.maintain().await.expect("maintain").is_some());
    assert!(leader.maintain().await.expect("maintain").is_none());

    // A manifest kept by one is read by the other; a second save keeps the first.
    a.save_manifest(v, "h1", "{\"m\":1}").await.expect("save");
    b.save_manifest(v, "h2", "{\"m\":2}").await.expect("save");
    assert_eq!(
        b.manifest(v, "h1").await.expect("read").as_deref(),
        Some("{\"m\":1}")
    );
    assert_eq!(b.manifest(v, "h2").await.expect("read"), None);

    // A gateway polling one is listed by the other, with how far behind it is.
    a.record_gateway_contact(&GatewayContact {
        id: "g1",
        version: v,
        hash: "abc",
        poll_wait_ms: 30_000,
        control_plane: "cp-a",
    })
    .await
    .expect("contact");
    assert!(b
        .record_gateway_report("g1", Some(12), "{\"applyMs\":12}")
        .await
        .expect("report"));
    assert!(!b
        .record_gateway_report("unknown", None, "{}")
        .await
        .expect("report"));
    let list = b.gateway_statuses().await.expect("list");
    assert_eq!(list.len(), 1);
    let g = &list[0];
    assert_eq!(
        (g.id.as_str(), g.version, g.hash.as_str()),
        ("g1", v, "abc")
    );
    assert_eq!(g.apply_ms, Some(12));
    assert_eq!(g.control_plane, "cp-a");
    let next_commit = a.commit_time(v + 1).await.expect("commit time");
    assert!(next_commit.is_some());
    assert_eq!(
        g.behind_since_ms, next_commit,
        "behind since its next version"
    );
    a.close().await;
    b.close().await;
}
