//! The server under test: `palgraph serve` on loopback (port 0), started on a database
//! (see [`Backend::server_env`]), its address read from its first line of output, and its
//! memory and CPU read from `/proc`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::backend::Backend;

/// A running `palgraph serve`.
pub struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) pid: u32,
}

impl Server {
    /// A server on `db`.
    pub async fn start(path: &Path, db: &Backend) -> anyhow::Result<Server> {
        Self::start_with(path, db, &[]).await
    }

    /// A server on `db` with extra environment variables.
    pub async fn start_with(
        path: &Path,
        db: &Backend,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Server> {
        let mut child = Command::new(path)
            .arg("serve")
            .env("PALGRAPH_PORT", "0")
            .env_remove("DATABASE_URL")
            .env_remove("PALGRAPH_DB")
            .envs(db.server_env())
            .env("RUST_LOG", "warn")
            .env_remove("OPENAI_API_KEY")
            .env_remove("PALASSIST_OFFLINE_PACE_MS")
            // The load generator is one address standing for many users: no per-client rate.
            .env("PALGRAPH_RATE_PER_SEC", "0")
            // Traces only where a set-up asks for them (`--observability`).
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| {
                format!(
                    "start {} (build it with cargo build --release -p palgraph-app)",
                    path.display()
                )
            })?;
        let pid = child.id().context("server pid")?;
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .context("the server did not print its address")??
            .context("the server exited")?;
        let base = line
            .strip_prefix("palgraph listening on ")
            .with_context(|| format!("unexpected first line {line}"))?
            .trim()
            .to_string();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Server { child, base, pid })
    }

    /// Stops the server the way an operator would (SIGTERM), waiting up to 30 s for it to
    /// exit before killing it; it is idle, so it has nothing to hand back.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status()
            .await
            .map(|s| s.success())
            .unwrap_or(false);
        if sent
            && tokio::time::timeout(Duration::from_secs(30), self.child.wait())
                .await
                .is_ok()
        {
            return Ok(());
        }
        self.child.kill().await.context("kill the server")?;
        Ok(())
    }

    /// Resident memory, KiB.
    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    }

    /// CPU time used so far (user + system), seconds.
    pub fn cpu_s(&self) -> f64 {
        let ticks = std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .ok()
            .and_then(|s| {
                let rest = s.rsplit_once(')')?.1;
                let f: Vec<&str> = rest.split_whitespace().collect();
                Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
            })
            .unwrap_or(0);
        ticks as f64 / 100.0
    }
}

/// The default server binary: `palgraph` next to this one.
pub fn default_path() -> anyhow::Result<PathBuf> {
    Ok(std::env::current_exe()?.with_file_name("palgraph"))
}
