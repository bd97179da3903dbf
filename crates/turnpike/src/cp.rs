//! The control-plane subcommands of the binary: `control-plane`, `up` (control plane +
//! gateway + echo demo back end in one process) and `gateway --control-plane` (a gateway fed by a
//! control plane). Thin glue over turnpike-admin, turnpike-sync, turnpike-gateway and the
//! bench kit's echo server.

use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use turnpike_admin::runtime::{self, ControlPlaneArgs};
use turnpike_admin::ui::UiArgs;
use turnpike_config::Snapshot;
use turnpike_gateway::GatewayArgs;
use turnpike_sync::FollowerConfig;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `turnpike up`: everything in one process, SQLite in the data dir. Its gateway is the
/// one `turnpike gateway --control-plane` runs, with the same flags (HTTPS, metrics,
/// access log, Redis, limits), following this process's own control plane.
#[derive(Debug, Clone, clap::Args)]
pub struct UpArgs {
    /// Control plane (REST) port (0: any free port).
    #[arg(long, default_value_t = 9400)]
    pub cp_port: u16,
    /// Password of the first admin (else one is generated and printed once).
    #[arg(long, env = "TURNPIKE_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// Directory of the built web portals (`ui/dist`); default: found next to the
    /// working directory or the binary.
    #[arg(long, env = "TURNPIKE_UI_DIR")]
    pub ui_dir: Option<PathBuf>,
    /// The gateway's flags; `--data-dir` also holds the SQLite database, and
    /// `--gateway-token` chooses the token other gateways follow this one with.
    #[command(flatten)]
    pub gateway: GatewayArgs,
}

/// `turnpike control-plane`: the control plane's flags and the web portals'.
#[derive(Debug, Clone, clap::Args)]
pub struct ControlPlaneCmd {
    #[command(flatten)]
    pub cp: ControlPlaneArgs,
    #[command(flatten)]
    pub ui: UiArgs,
}

/// Prints where the portals are, or how to build them.
fn print_portals(url: &str, dir: Option<&std::path::Path>) {
    match dir {
        Some(d) => println!("  web portals:    {url}/   (files from {})", d.display()),
        None => println!(
            "  web portals:    not built (cd ui && npm ci && npm run build; or --ui-dir DIR)"
        ),
    }
}

pub async fn control_plane(cmd: ControlPlaneCmd) -> Result<(), BoxError> {
    let args = cmd.cp;
    let cp = runtime::start(&args).await?;
    let dir = turnpike_admin::ui::configure(&cp.state, &cmd.ui);
    println!("control plane listening on {}", cp.url);
    print_portals(&cp.url, dir.as_deref());
    if let Some(p) = &cp.created_admin_password {
        println!("admin user created: admin / {p}   (shown once)");
    }
    if args.gateway_token.is_none() {
        println!(
            "gateway token (pass with --gateway-token): {}",
            cp.gateway_token
        );
    }
    turnpike_gateway::termination().await;
    cp.stop().await;
    Ok(())
}

/// `turnpike gateway --control-plane URL`: the gateway's own listeners and flags, its
/// snapshots followed from the control plane instead of read from a file.
pub async fn follow(args: GatewayArgs) -> Result<(), BoxError> {
    let Some(token) = args.gateway_token.clone() else {
        return Err("--control-plane needs --gateway-token".into());
    };
    let mut cfg = FollowerConfig::new(args.control_plane.join(","), token, args.gateway_id.clone());
    if !(args.control_plane_failback.is_finite() && args.control_plane_failback >= 0.0) {
        return Err("--control-plane-failback is seconds, 0 or more".into());
    }
    cfg.failback_after = std::time::Duration::from_secs_f64(args.control_plane_failback);
    let following = follow_with(&args, cfg).await?;
    let result = following.gateway.serve_until_terminated().await;
    following.follower.stop();
    result
}

/// A gateway bound from its flags and fed by a control-plane follower.
struct Following {
    gateway: turnpike_gateway::FlagGateway,
    follower: turnpike_sync::FollowerHandle,
    _throttling: turnpike_gateway::ThrottleTasks,
    /// Marks the snapshot stale past `--max-snapshot-age` (aborted on drop).
    _age: Option<AbortOnDrop>,
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The long-poll's wait under a maximum snapshot age: a quarter of it (whole seconds, 1
/// to 30), so that a healthy follower confirms its snapshot several times per age.
fn long_poll_wait(max_age: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_secs((max_age / 4).as_secs().clamp(1, 30))
}

/// The gateway of `gateway --control-plane` and of `up`: one policy runtime for the
/// process (throttle counters survive every snapshot and, with --redis, are the ones the
/// cluster shares), the follower swapping snapshots (and saving the last good one in the
/// data dir), `/ready` failing until it serves one, the listeners the flags describe,
/// opened only once the saved snapshot is served (or known missing), and credentials
/// refused once the snapshot is older than `--max-snapshot-age`.
async fn follow_with(args: &GatewayArgs, mut cfg: FollowerConfig) -> Result<Following, BoxError> {
    let max_age = args.max_snapshot_age()?;
    let runtime = Arc::new(turnpike_gateway::policy_runtime());
    args.share_public_url(&runtime);
    let throttling = turnpike_gateway::start_throttling(args, &runtime)?;
    cfg.runtime = runtime;
    cfg.tls = args.control_plane_tls()?;
    cfg.saved_snapshot = Some(args.data_dir.join("snapshot.json"));
    if let Some(age) = max_age {
        cfg.wait = cfg.wait.min(long_poll_wait(age));
    }
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(cfg, snapshots.clone());
    // Before any listener opens: a restarted gateway's first request must meet its
    // saved APIs, not an empty router (404 "no API matches").
    follower.restored().await;
    let health = turnpike_gateway::Health::new(*follower.ready().borrow());
    let age = max_age.map(|max| {
        let confirmed = follower.confirmed();
        AbortOnDrop(turnpike_gateway::health::watch_age(
            health.clone(),
            max,
            move || confirmed.at(),
        ))
    });
    let mut ready = follower.ready();
    let loaded = health.clone();
    tokio::spawn(async move {
        if ready.wait_for(|r| *r).await.is_ok() {
            loaded.set_loaded();
        }
    });
    match turnpike_gateway::bind_from_args(args, snapshots, health).await {
        Ok(gateway) => Ok(Following {
            gateway,
            follower,
            _throttling: throttling,
            _age: age,
        }),
        Err(e) => {
            follower.stop();
            Err(e)
        }
    }
}

pub async fn up(args: UpArgs) -> Result<(), BoxError> {
    if args.gateway.config.is_some() || !args.gateway.control_plane.is_empty() {
        return Err("`turnpike up` follows its own control plane: --config and --control-plane are `turnpike gateway` flags".into());
    }
    let data_dir = &args.gateway.data_dir;
    std::fs::create_dir_all(data_dir)?;
    let echo = turnpike_bench::echo::spawn(Default::default()).await?;
    let db = format!("sqlite://{}/turnpike.db", data_dir.display());
    let cp = runtime::start(&ControlPlaneArgs {
        database: db,
        bind: [127, 0, 0, 1].into(),
        port: args.cp_port,
        gateway_token: args.gateway.gateway_token.clone(),
        admin_password: args.admin_password.clone(),
        public_url: None,
        analytics: Default::default(),
        gateway_max_lag: 30.0,
        max_import_size: turnpike_admin::DEFAULT_IMPORT_LIMIT,
        tls: Default::default(),
    })
    .await?;
    let cfg = FollowerConfig::new(
        format!("http://{}", cp.addr),
        cp.gateway_token.clone(),
        args.gateway.gateway_id.clone(),
    );
    // The gateway ships its analytics to this control plane, as a follower does.
    let mut gateway_args = args.gateway.clone();
    gateway_args.control_plane = vec![format!("http://{}", cp.addr)];
    gateway_args.gateway_token = Some(cp.gateway_token.clone());
    let following = follow_with(&gateway_args, cfg).await?;
    // The Developer Portal's URLs are this gateway's (an admin's own environments win).
    turnpike_admin::environments::default_to(
        &cp.state,
        following
            .gateway
            .bound
            .http_addr()
            .map(|a| format!("http://{a}")),
        following
            .gateway
            .bound
            .https_addr()
            .map(|a| format!("https://{a}")),
    )
    .await
    .map_err(|e| format!("setting the gateway environment: {e:?}"))?;
    let version = ensure_demo_api(&cp.state, &format!("http://{echo}")).await?;
    following.follower.wait_for(version).await;
    let bound = &following.gateway.bound;
    let gw = match (bound.http_addr(), bound.https_addr()) {
        (Some(a), _) => format!("http://{a}"),
        (None, Some(a)) => format!("https://{a}"),
        (None, None) => {
            return Err("the gateway has no listener (--http-port and --https-port are off)".into())
        }
    };
    let ui_dir = turnpike_admin::ui::configure(
        &cp.state,
        &UiArgs {
            ui_dir: args.ui_dir.clone(),
            gateway_url: Some(gw.clone()),
        },
    );
    let admin_password = known_admin_password(&cp, args.admin_password.as_deref()).await;
    print_up(&UpUrls {
        gw: &gw,
        tls: bound.http_addr().and(bound.https_addr()),
        cp: cp.addr,
        echo,
        gateway_token: &cp.gateway_token,
    });
    print_admin_and_curls(&gw, cp.addr, admin_password.as_deref());
    print_portals(&format!("http://{}", cp.addr), ui_dir.as_deref());
    if ui_dir.is_some() {
        println!(
            "Open http://{}/ in a browser and sign in as admin.",
            cp.addr
        );
    }
    let result = following.gateway.serve_until_terminated().await;
    following.follower.stop();
    cp.stop().await;
    result
}

/// Where `turnpike up` listens, for its banner.
struct UpUrls<'a> {
    gw: &'a str,
    /// The HTTPS listener when there is also a plain one (else `gw` is it).
    tls: Option<std::net::SocketAddr>,
    cp: std::net::SocketAddr,
    echo: std::net::SocketAddr,
    gateway_token: &'a str,
}

fn print_up(u: &UpUrls<'_>) {
    println!("Turnpike is up.");
    println!("  gateway:        {}", u.gw);
    if let Some(tls) = u.tls {
        println!("  gateway (TLS):  https://{tls}");
    }
    println!("  control plane:  http://{}/api/am/openapi.json", u.cp);
    println!(
        "  gateway token:  {}   (more gateways: turnpike gateway --control-plane http://{} --gateway-token {})",
        u.gateway_token, u.cp, u.gateway_token
    );
    println!("  demo back end:  http://{} (echo)", u.echo);
}

/// The admin's password when this process knows it: generated by this start, or given
/// (`TURNPIKE_ADMIN_PASSWORD`, which scripts/quickstart.sh keeps in the data dir) and
/// still the admin's, so that the printed curl lines work as pasted.
async fn known_admin_password(cp: &runtime::Running, given: Option<&str>) -> Option<String> {
    if let Some(p) = &cp.created_admin_password {
        return Some(p.clone());
    }
    let given = given?;
    match cp.state.store().verify_password("admin", given).await {
        Ok(Some(_)) => Some(given.to_owned()),
        _ => None,
    }
}

/// The admin line and, after `Try:`, curl lines ready to paste: real URLs, the real
/// password (single-quoted for the shell), `-k` for a self-signed certificate.
fn print_admin_and_curls(gw: &str, cp: std::net::SocketAddr, password: Option<&str>) {
    match password {
        Some(p) => println!(
            "  admin:          admin / {p}   (set TURNPIKE_ADMIN_PASSWORD to choose it on first start)"
        ),
        None => println!(
            "  admin:          admin / (the password printed on first start; pass it as TURNPIKE_ADMIN_PASSWORD to have it used below)"
        ),
    }
    println!("Try:");
    let insecure = if gw.starts_with("https") { "k" } else { "" };
    println!("  curl -s{insecure} {gw}/demo/v1/hello -d 'hi'");
    if let Some(p) = password {
        let user = shell_single_quoted(&format!("admin:{p}"));
        println!("  curl -s -u {user} http://{cp}/api/am/publisher/v1/apis");
    }
}

/// `s` as one shell word, whatever it holds.
fn shell_single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Creates and publishes the demo API (`/demo/v1`, default version) unless it exists.
async fn ensure_demo_api(
    state: &turnpike_admin::AppState,
    endpoint: &str,
) -> Result<u64, BoxError> {
    let store = state.store();
    if store.find_api("/demo", "v1").await?.is_none() {
        let input = turnpike_store::ApiInput {
            name: "Demo".into(),
            context: "/demo".into(),
            version: "v1".into(),
            is_default: true,
            api_type: "HTTP".into(),
            description: "Echo demo API created by `turnpike up`".into(),
            endpoints: vec![endpoint.into()],
            sandbox_endpoints: Vec::new(),
            resources: vec![turnpike_store::Resource {
                path: "/*".into(),
                methods: ["GET", "POST", "PUT", "DELETE"].map(String::from).to_vec(),
                scopes: Vec::new(),
                ..Default::default()
            }],
            tiers: vec!["Unlimited".into()],
            definition: None,
            options: Default::default(),
        };
        let mut tx = store.begin_write().await?;
        let api = tx.create_api(&input, "system").await?;
        // Open, so the printed curl line works without a token (APIs default to OAuth2).
        tx.set_api_security(&api.id, Some(r#""none""#)).await?;
        tx.change_lifecycle(&api.id, turnpike_store::LifecycleAction::Publish, None)
            .await?;
        tx.commit("system", "demo API").await?;
    } else if let Some(api) = store.find_api("/demo", "v1").await? {
        // The echo back end's port changes on every start: point the demo at it.
        let mut tx = store.begin_write().await?;
        let input = turnpike_store::ApiInput {
            name: api.name,
            context: api.context,
            version: api.version,
            is_default: api.is_default_version,
            api_type: api.api_type,
            description: api.description,
            endpoints: vec![endpoint.into()],
            sandbox_endpoints: api.sandbox_endpoints,
            resources: api.resources,
            tiers: api.policies,
            definition: api.definition,
            options: api.options,
        };
        tx.update_api(&api.id, &input, None).await?;
        tx.commit("system", "demo API endpoint").await?;
    }
    Ok(store.current_version().await?)
}
