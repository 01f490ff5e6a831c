//! A PostgreSQL cluster of the test's own, on its own port and data directory, that the
//! test may restart and stop (the shared one on 5432 is never touched). Made with the
//! machine's `initdb` / `pg_ctl` (run as the `postgres` user when the test runs as root) and
//! removed when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A running cluster.
pub struct PgCluster {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
}

fn bin_dir() -> PathBuf {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("pg_ctl").exists() {
            return dir;
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.sort();
    found
        .into_iter()
        .rev()
        .find(|b| b.join("pg_ctl").exists())
        .expect("initdb and pg_ctl (PostgreSQL server binaries) are needed for this test")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl PgCluster {
    /// Creates and starts a cluster (trust authentication, user `postgres`).
    pub fn start() -> Self {
        let bin = bin_dir();
        let dir = std::env::temp_dir().join(format!(
            "palgraph-pg-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        ));
        std::fs::create_dir_all(&dir).expect("create the cluster's directory");
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .expect("chown");
            assert!(ok.success(), "chown the cluster directory to postgres");
        }
        let c = PgCluster {
            dir,
            bin,
            port: free_port(),
        };
        let data = c.data();
        c.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap_or_default(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        c.ctl(&["start", "-w", "-t", "60"]);
        c
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn run(&self, program: &str, args: &[&str]) {
        let exe = self.bin.join(program);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd
            .args(args)
            .current_dir(&self.dir)
            .output()
            .unwrap_or_else(|e| panic!("could not run {program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn ctl(&self, args: &[&str]) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=64MB",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log");
        let data = self.data();
        let mut all = vec![
            "-D",
            data.to_str().unwrap_or_default(),
            "-l",
            log.to_str().unwrap_or_default(),
            "-o",
            &opts,
        ];
        all.extend_from_slice(args);
        let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        self.run("pg_ctl", &refs);
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Restarts it (fast shutdown: every session is terminated, as a real restart does);
    /// returns how long it took.
    pub fn restart(&self) -> Duration {
        let t = Instant::now();
        self.ctl(&["restart", "-m", "fast", "-w", "-t", "60"]);
        t.elapsed()
    }

    /// Stops it (fast shutdown).
    pub fn stop(&self) {
        self.ctl(&["stop", "-m", "fast", "-w", "-t", "60"]);
    }

    /// Crashes it (immediate shutdown: no checkpoint, no WAL flush; the next start
    /// recovers from the WAL on disk, as after a power cut of the database).
    pub fn crash(&self) {
        self.ctl(&["stop", "-m", "immediate", "-w", "-t", "60"]);
    }

    /// Starts it again after [`PgCluster::stop`] or [`PgCluster::crash`].
    pub fn start_again(&self) {
        self.ctl(&["start", "-w", "-t", "60"]);
    }

    /// Its server log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data();
        let args = [
            "-D",
            data.to_str().unwrap_or_default(),
            "stop",
            "-m",
            "immediate",
        ];
        let exe = self.bin.join("pg_ctl");
        let _ = if is_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        };
        let _ = std::fs::remove_dir_all(self.path());
    }
}
