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
use turnpike_gateway::{Gateway, ServerSettings};
use turnpike_sync::FollowerConfig;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `turnpike up`: everything in one process, SQLite in the data dir.
#[derive(Debug, Clone, clap::Args)]
pub struct UpArgs {
    /// Where the SQLite database and the self-signed certificate live.
    #[arg(long, env = "TURNPIKE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Control plane (REST) port.
    #[arg(long, default_value_t = 9400)]
    pub cp_port: u16,
    /// Gateway HTTP port.
    #[arg(long, default_value_t = 8280)]
    pub http_port: u16,
    /// Password of the first admin (else one is generated and printed once).
    #[arg(long, env = "TURNPIKE_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// Directory of the built web portals (`ui/dist`); default: found next to the
    /// working directory or the binary.
    #[arg(long, env = "TURNPIKE_UI_DIR")]
    pub ui_dir: Option<PathBuf>,
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
    println!("control plane listening on http://{}", cp.addr);
    print_portals(&format!("http://{}", cp.addr), dir.as_deref());
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

async fn start_gateway(
    data_dir: PathBuf,
    http_port: u16,
    follow: FollowerConfig,
) -> Result<
    (
        turnpike_gateway::BoundGateway,
        turnpike_sync::FollowerHandle,
    ),
    BoxError,
> {
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(follow, snapshots.clone());
    let mut settings = ServerSettings::local(data_dir);
    settings.http_port = Some(http_port);
    settings.https_port = None;
    let bound = Gateway::builder(settings)
        .snapshots(snapshots)
        .bind()
        .await?;
    Ok((bound, follower))
}

/// `turnpike gateway --control-plane URL`: the gateway's own listeners and flags, its
/// snapshots followed from the control plane instead of read from a file.
pub async fn follow(args: turnpike_gateway::GatewayArgs) -> Result<(), BoxError> {
    let (Some(url), Some(token)) = (args.control_plane.clone(), args.gateway_token.clone()) else {
        return Err("--control-plane needs --gateway-token".into());
    };
    let mut cfg = FollowerConfig::new(url, token, args.gateway_id.clone());
    // One policy runtime for the process: counters survive every snapshot, and with
    // --redis they are the ones the cluster shares.
    let runtime = Arc::new(turnpike_config::PolicyRuntime::new());
    let _throttling = turnpike_gateway::start_throttling(&args, &runtime)?;
    cfg.runtime = runtime;
    // The last good snapshot, served on a start while the control plane is down.
    cfg.saved_snapshot = Some(args.data_dir.join("snapshot.json"));
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(cfg, snapshots.clone());
    // `/ready` fails until the follower serves a snapshot.
    let health = turnpike_gateway::Health::new(false);
    let mut ready = follower.ready();
    let loaded = health.clone();
    tokio::spawn(async move {
        if ready.wait_for(|r| *r).await.is_ok() {
            loaded.set_loaded();
        }
    });
    let result = turnpike_gateway::serve_until_terminated(&args, snapshots, health).await;
    follower.stop();
    result
}

pub async fn up(args: UpArgs) -> Result<(), BoxError> {
    std::fs::create_dir_all(&args.data_dir)?;
    let echo = turnpike_bench::echo::spawn(Default::default()).await?;
    let db = format!("sqlite://{}/turnpike.db", args.data_dir.display());
    let cp = runtime::start(&ControlPlaneArgs {
        database: db,
        bind: [127, 0, 0, 1].into(),
        port: args.cp_port,
        gateway_token: None,
        admin_password: args.admin_password.clone(),
        public_url: None,
    })
    .await?;
    let cfg = FollowerConfig::new(
        format!("http://{}", cp.addr),
        cp.gateway_token.clone(),
        "up",
    );
    let (bound, follower) = start_gateway(args.data_dir.clone(), args.http_port, cfg).await?;
    let version = ensure_demo_api(&cp.state, &format!("http://{echo}")).await?;
    follower.wait_for(version).await;
    let gw = bound.http_addr().ok_or("gateway has no HTTP listener")?;
    let ui_dir = turnpike_admin::ui::configure(
        &cp.state,
        &UiArgs {
            ui_dir: args.ui_dir.clone(),
            gateway_url: Some(format!("http://{gw}")),
        },
    );
    println!("Turnpike is up.");
    println!("  gateway:        http://{gw}");
    println!("  control plane:  http://{}/api/am/openapi.json", cp.addr);
    println!("  demo back end:  http://{echo} (echo)");
    match &cp.created_admin_password {
        Some(p) => println!(
            "  admin:          admin / {p}   (shown once; set TURNPIKE_ADMIN_PASSWORD to choose)"
        ),
        None => println!("  admin:          admin / (the password printed on first start)"),
    }
    println!("Try:");
    println!("  curl -s http://{gw}/demo/v1/hello -d 'hi'");
    println!(
        "  curl -s -u admin:PASSWORD http://{}/api/am/publisher/v1/apis",
        cp.addr
    );
    print_portals(&format!("http://{}", cp.addr), ui_dir.as_deref());
    if ui_dir.is_some() {
        println!(
            "Open http://{}/ in a browser and sign in as admin.",
            cp.addr
        );
    }
    bound.serve(turnpike_gateway::termination()).await?;
    follower.stop();
    cp.stop().await;
    Ok(())
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
            endpoints: vec![endpoint.to_string()],
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
            endpoints: vec![endpoint.to_string()],
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
