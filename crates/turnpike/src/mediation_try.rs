//! `turnpike mediation-try`: runs an API's transformation from a declarative file on a
//! sample request (or, with `--status`, a sample response) and prints what it became, or
//! the error with the policy's name; nothing is deployed.
//!
//! ```text
//! turnpike mediation-try --config apis.yaml --api /orders/v1 \
//!     --method PUT --path /orders/7 --body sample.json
//! ```

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use turnpike_config::{MediationPolicy, MediationSample, Snapshot};

#[derive(Debug, Clone, clap::Args)]
pub struct TryArgs {
    /// The declarative file (the DB-less format).
    #[arg(long)]
    pub config: PathBuf,
    /// The API: its id `/{context}/{version}` or its name.
    #[arg(long)]
    pub api: String,
    #[arg(long, default_value = "POST")]
    pub method: String,
    /// The path below `/{context}/{version}`, with an optional `?query`.
    #[arg(long, default_value = "/")]
    pub path: String,
    /// Header `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// File holding the body (`-` for standard input); empty when omitted.
    #[arg(long)]
    pub body: Option<PathBuf>,
    /// Content type of the body.
    #[arg(long, default_value = "application/json")]
    pub content_type: String,
    /// Run the response side on an upstream answer with this status.
    #[arg(long)]
    pub status: Option<u16>,
}

pub fn run(args: TryArgs) -> anyhow::Result<()> {
    let snap = Snapshot::load(&args.config).map_err(|e| anyhow!("{e}"))?;
    let api = snap
        .apis
        .iter()
        .find(|a| args.api == a.name || args.api == turnpike_model::api_id(&a.context, &a.version))
        .ok_or_else(|| anyhow!("no API {:?} in {}", args.api, args.config.display()))?;
    let found = api.chain.find::<MediationPolicy>();
    let Some(m) = found.map(MediationPolicy::mediation) else {
        return Err(anyhow!("API {:?} has no mediation", args.api));
    };
    let (path, query) = match args.path.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (args.path.clone(), None),
    };
    let mut headers = http::HeaderMap::new();
    for h in &args.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| anyhow!("header {h:?} is not `Name: value`"))?;
        headers.append(
            http::HeaderName::from_bytes(k.trim().as_bytes())?,
            http::HeaderValue::from_str(v.trim())?,
        );
    }
    let body = match &args.body {
        None => Vec::new(),
        Some(p) if p.as_os_str() == "-" => {
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)?;
            b
        }
        Some(p) => std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
    };
    if !body.is_empty() && !headers.contains_key(http::header::CONTENT_TYPE) {
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_str(&args.content_type)?,
        );
    }
    let sample = MediationSample {
        method: http::Method::from_bytes(args.method.as_bytes())?,
        path,
        query,
        headers,
        body,
        status: args.status,
    };
    match m.try_run(sample) {
        Ok(t) => {
            println!(
                "policy: {}",
                t.policy.as_deref().unwrap_or("(none applies)")
            );
            match &t.query {
                Some(q) => println!("path: {}?{q}", t.path),
                None => println!("path: {}", t.path),
            }
            for (k, v) in &t.headers {
                println!("{k}: {}", String::from_utf8_lossy(v.as_bytes()));
            }
            println!();
            println!("{}", String::from_utf8_lossy(&t.body));
            Ok(())
        }
        Err((policy, e)) => Err(anyhow!("transformation {policy:?} failed: {e}")),
    }
}
