//! The database subcommands of the binary: `migrate` (apply, or `--check` to say what an
//! upgrade would do without writing), `backup` and `restore`. SQLite through
//! turnpike-store (an online `VACUUM INTO` copy; a restore by rename); PostgreSQL through
//! its own tools, `pg_dump` and `pg_restore`, run here when they are installed, printed
//! as a recipe otherwise. docs/upgrading.md and docs/operations.md say when to use each.

use std::path::PathBuf;
use std::process::Command;

use turnpike_store::{MigrationStatus, Store};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The database a subcommand works on.
#[derive(Debug, Clone, clap::Args)]
pub struct DatabaseArg {
    /// `sqlite://PATH` or `postgres://USER@HOST:PORT/DB` (the control plane's).
    #[arg(
        long,
        env = "TURNPIKE_DATABASE",
        default_value = "sqlite://./data/turnpike.db"
    )]
    pub database: String,
}

/// `turnpike migrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub db: DatabaseArg,
    /// Only say what an upgrade would do (pending migrations); writes nothing. Exits 1
    /// when migrations are pending, 2 when the database is newer than this binary.
    #[arg(long)]
    pub check: bool,
}

/// `turnpike backup`.
#[derive(Debug, Clone, clap::Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub db: DatabaseArg,
    /// The backup file to write (never overwritten).
    #[arg(short = 'o', long)]
    pub out: PathBuf,
}

/// `turnpike restore`.
#[derive(Debug, Clone, clap::Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub db: DatabaseArg,
    /// The backup file (`turnpike backup`'s output).
    #[arg(short = 'f', long)]
    pub from: PathBuf,
}

fn describe(status: &MigrationStatus) -> String {
    let mut out = format!(
        "schema version {} (this binary's head: {})\n",
        status.current, status.head
    );
    for m in &status.pending {
        out.push_str(&format!("  pending: {:>3} {}\n", m.version, m.name));
    }
    if !status.unknown.is_empty() {
        out.push_str(&format!(
            "  applied by a newer release, unknown here: {:?} (roll back by restoring the backup taken before that upgrade)\n",
            status.unknown
        ));
    }
    if status.up_to_date() {
        out.push_str("  up to date: nothing to apply\n");
    }
    out
}

pub async fn migrate(args: MigrateArgs) -> Result<(), BoxError> {
    let url = &args.db.database;
    let status = turnpike_store::migration_status(url).await?;
    print!("{}: {}", turnpike_store::redact_url(url), describe(&status));
    if args.check {
        let code = match (status.unknown.is_empty(), status.pending.is_empty()) {
            (false, _) => 2,
            (true, false) => 1,
            (true, true) => 0,
        };
        std::process::exit(code);
    }
    if !status.unknown.is_empty() {
        return Err("the database is newer than this binary; refusing to migrate".into());
    }
    let store = Store::open(url).await?;
    store.close().await;
    let after = turnpike_store::migration_status(url).await?;
    print!("migrated: {}", describe(&after));
    Ok(())
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Runs a PostgreSQL tool; when it is not installed, prints the command to run instead.
fn pg_tool(tool: &str, args: &[&str], shown: &str) -> Result<(), BoxError> {
    match Command::new(tool).args(args).status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{tool} failed ({s})").into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("{tool} is not installed here; run it where it is:\n  {shown}");
            Err(format!("{tool} not found").into())
        }
        Err(e) => Err(format!("running {tool}: {e}").into()),
    }
}

pub async fn backup(args: BackupArgs) -> Result<(), BoxError> {
    let url = &args.db.database;
    let out = args.out.to_string_lossy().to_string();
    if is_postgres(url) {
        // Custom format: compressed, restored table by table with pg_restore.
        let shown = format!(
            "pg_dump --format=custom --file {out} --dbname '{}'",
            turnpike_store::redact_url(url)
        );
        pg_tool(
            "pg_dump",
            &["--format=custom", "--file", &out, "--dbname", url],
            &shown,
        )?;
        println!("backup written: {out} (pg_dump custom format)");
        return Ok(());
    }
    let status = turnpike_store::backup_sqlite(url, &args.out).await?;
    println!(
        "backup written: {out} (schema version {}, consistent copy taken online)",
        status.current
    );
    Ok(())
}

pub async fn restore(args: RestoreArgs) -> Result<(), BoxError> {
    let url = &args.db.database;
    let from = args.from.to_string_lossy().to_string();
    if is_postgres(url) {
        let shown = format!(
            "pg_restore --clean --if-exists --no-owner --dbname '{}' {from}",
            turnpike_store::redact_url(url)
        );
        pg_tool(
            "pg_restore",
            &[
                "--clean",
                "--if-exists",
                "--no-owner",
                "--dbname",
                url,
                &from,
            ],
            &shown,
        )?;
    } else {
        let status = turnpike_store::restore_sqlite(&args.from, url).await?;
        println!("restored {from} (schema version {})", status.current);
    }
    println!("start the control plane: it migrates an older backup forward; gateways that served newer versions resynchronise with a full snapshot");
    Ok(())
}
