//! The end-to-end harness: the real `palgraph` binary on a free port, on a fresh SQLite
//! file or a fresh Postgres schema, and a small SSE client.

#![allow(
    dead_code,
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use palgraph::testkit::backends::{remove_sqlite_files, temp_db_path, PgSchema};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub mod ledger;
pub mod pg_cluster;

/// A fresh SQLite file path (not created yet).
pub fn temp_sqlite_path() -> PathBuf {
    temp_db_path()
}

/// Which database the server uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A running server process.
pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    child: Child,
    schema: Option<std::sync::Arc<PgSchema>>,
    db: Option<PathBuf>,
    owns_db: bool,
    env: Vec<(String, String)>,
    pub database_url: Option<String>,
    /// The lines the process wrote to stderr, when kept ([`TestServer::start_logging`]).
    log: Option<Log>,
}

/// A server's stderr, line by line.
type Log = Arc<Mutex<Vec<String>>>;

impl TestServer {
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, &[]).await
    }

    pub async fn start_with(backend: Backend, env: &[(&str, &str)]) -> Self {
        Self::start_keeping(backend, env, None).await
    }

    /// [`TestServer::start_with`], keeping what the process writes to stderr (its log)
    /// instead of passing it through: [`TestServer::log_lines`].
    pub async fn start_logging(backend: Backend, env: &[(&str, &str)]) -> Self {
        Self::start_keeping(backend, env, Some(Log::default())).await
    }

    async fn start_keeping(backend: Backend, env: &[(&str, &str)], log: Option<Log>) -> Self {
        // The workspace builds reqwest with rustls and no default crypto provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (schema, db, database_url) = match backend {
            Backend::Sqlite => (None, Some(temp_db_path()), None),
            Backend::Postgres => {
                let s = PgSchema::create().await;
                let url = s.schema_url();
                (Some(std::sync::Arc::new(s)), None, Some(url))
            }
        };
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (child, base) = spawn(&db, &database_url, &env, log.as_ref()).await;
        TestServer {
            base,
            client: reqwest::Client::builder().build().unwrap(),
            child,
            schema,
            db,
            owns_db: true,
            env,
            database_url,
            log,
        }
    }

    /// A server on a Postgres database of the test's own (e.g. a [`pg_cluster::PgCluster`]).
    pub async fn start_on(database_url: &str, env: &[(&str, &str)]) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let database_url = Some(database_url.to_string());
        let (child, base) = spawn(&None, &database_url, &env, None).await;
        TestServer {
            base,
            client: reqwest::Client::builder().build().unwrap(),
            child,
            schema: None,
            db: None,
            owns_db: false,
            env,
            database_url,
            log: None,
        }
    }

    /// A server on `path`, a SQLite file the test wrote; the file goes with the server.
    pub async fn start_on_sqlite(path: PathBuf, env: &[(&str, &str)]) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let db = Some(path);
        let (child, base) = spawn(&db, &None, &env, None).await;
        TestServer {
            base,
            client: reqwest::Client::builder().build().unwrap(),
            child,
            schema: None,
            db,
            owns_db: true,
            env,
            database_url: None,
            log: None,
        }
    }

    /// Another server process on the same database (a replica), with extra settings.
    pub async fn replica(&self, extra: &[(&str, &str)]) -> Self {
        let mut env = self.env.clone();
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let (child, base) = spawn(&self.db, &self.database_url, &env, None).await;
        TestServer {
            base,
            client: reqwest::Client::builder().build().unwrap(),
            child,
            schema: self.schema.clone(),
            db: self.db.clone(),
            owns_db: false,
            env,
            database_url: self.database_url.clone(),
            log: None,
        }
    }

    /// Kills the process (SIGKILL) and starts a new one on the same database.
    pub async fn restart(&mut self) {
        self.kill().await;
        let (child, base) = spawn(&self.db, &self.database_url, &self.env, self.log.as_ref()).await;
        self.child = child;
        self.base = base;
    }

    /// The lines the process has written to stderr so far (empty unless started with
    /// [`TestServer::start_logging`]).
    pub fn log_lines(&self) -> Vec<String> {
        self.log
            .as_ref()
            .map(|l| l.lock().unwrap().clone())
            .unwrap_or_default()
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends SIGTERM (graceful shutdown) and waits for the process to exit.
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        if let Some(pid) = self.pid() {
            let _ = std::process::Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status();
        }
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("the server exits after SIGTERM")
            .expect("wait")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    pub async fn post_json(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self.post(path, body).await;
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(self.url(path)).send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn sse(&self, req: reqwest::RequestBuilder) -> Sse {
        let resp = req
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert!(
            resp.status().is_success(),
            "SSE request failed: {}",
            resp.status()
        );
        Sse::new(resp)
    }

    pub async fn new_thread(&self) -> String {
        let (s, t) = self.post_json("/threads", serde_json::json!({})).await;
        assert_eq!(s, 200, "{t}");
        t["thread_id"].as_str().unwrap().to_string()
    }

    /// Kills the process at once (SIGKILL).
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// A connection pool on the server's database (to inspect it).
    pub async fn pg_pool(&self) -> Option<sqlx::PgPool> {
        match (&self.schema, &self.database_url) {
            (Some(s), _) => Some(s.pool(2).await),
            (None, Some(url)) => Some(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(2)
                    .connect(url)
                    .await
                    .expect("connect to the server's database"),
            ),
            _ => None,
        }
    }

    /// The SQLite file, in SQLite mode.
    pub fn sqlite_path(&self) -> Option<&PathBuf> {
        self.db.as_ref()
    }
}

async fn spawn(
    db: &Option<PathBuf>,
    database_url: &Option<String>,
    env: &[(String, String)],
    log: Option<&Log>,
) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_palgraph"));
    cmd.arg("serve")
        .env("PALGRAPH_PORT", "0")
        .env("RUST_LOG", "warn")
        // Many servers share the test Postgres (max_connections 100): keep each small.
        .env("PALGRAPH_DB_CONNECTIONS", "6")
        .env_remove("DATABASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(if log.is_some() {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .kill_on_drop(true);
    if let Some(p) = db {
        cmd.env("PALGRAPH_DB", p);
    }
    if let Some(u) = database_url {
        cmd.env("DATABASE_URL", u);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start palgraph");
    if let (Some(log), Some(stderr)) = (log, child.stderr.take()) {
        let (log, mut lines) = (log.clone(), BufReader::new(stderr).lines());
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                log.lock().unwrap().push(l);
            }
        });
    }
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("palgraph printed its address in time")
        .expect("read stdout")
        .expect("palgraph exited before listening");
    let base = line
        .strip_prefix("palgraph listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .trim()
        .to_string();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, base)
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if self.owns_db {
            if let Some(p) = &self.db {
                remove_sqlite_files(p);
            }
        }
        let _ = self.schema.take();
    }
}

/// One server-sent event.
#[derive(Clone, Debug, PartialEq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub id: Option<String>,
    pub data: Value,
}

/// A minimal SSE reader.
pub struct Sse {
    pub headers: reqwest::header::HeaderMap,
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: String,
    pub comments: usize,
}

impl Sse {
    pub fn new(resp: reqwest::Response) -> Self {
        Sse {
            headers: resp.headers().clone(),
            body: Box::pin(resp.bytes_stream()),
            buf: String::new(),
            comments: 0,
        }
    }

    /// A stream that has ended already (a reconnect that failed).
    pub fn empty() -> Self {
        Sse {
            headers: reqwest::header::HeaderMap::new(),
            body: Box::pin(futures_util::stream::empty()),
            buf: String::new(),
            comments: 0,
        }
    }

    /// The next event; `None` when the stream ends. Panics after 30 s of silence.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(pos) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..pos + 2).collect();
                let (mut event, mut id, mut data) = (None, None, Vec::new());
                let mut only_comments = true;
                for line in block.lines() {
                    if let Some(c) = line.strip_prefix(':') {
                        let _ = c;
                        self.comments += 1;
                        continue;
                    }
                    only_comments = false;
                    if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_string());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_string());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                    }
                }
                if only_comments || data.is_empty() {
                    continue;
                }
                let joined = data.join("\n");
                let data = serde_json::from_str(&joined).unwrap_or(Value::String(joined));
                return Some(SseEvent { event, id, data });
            }
            match tokio::time::timeout(Duration::from_secs(30), self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(Some(Err(_))) | Ok(None) => return None,
                Err(_) => panic!("no SSE event for 30 s"),
            }
        }
    }

    /// Every remaining event.
    pub async fn all(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }
}

/// Runs the test body on SQLite and on Postgres.
#[macro_export]
macro_rules! both_backends {
    ($name:ident, $body:path) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $body(Backend::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $body(Backend::Postgres).await;
            }
        }
    };
}

/// The python of a virtualenv `dir/.venv` holding `dir/requirements.txt` (pinned versions
/// from PyPI), made once and remade when the requirements change. Needs python3.
pub fn python_venv(dir: &std::path::Path) -> PathBuf {
    fn run(cmd: &mut std::process::Command, what: &str) {
        let status = cmd
            .stdin(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("{what}: could not start ({e}); python3 is needed"));
        assert!(status.success(), "{what} failed: {status}");
    }
    let venv = dir.join(".venv");
    let python = venv.join("bin").join("python");
    let requirements = dir.join("requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .unwrap_or_else(|e| panic!("{}: {e}", requirements.display()));
    let stamp = venv.join(".palgraph-requirements");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return python;
    }
    let started = Instant::now();
    if !python.exists() {
        run(
            std::process::Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv),
            "python3 -m venv",
        );
    }
    run(
        std::process::Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements),
        "pip install -r requirements.txt",
    );
    std::fs::write(&stamp, &wanted).unwrap();
    eprintln!("set up {} in {:.1?}", venv.display(), started.elapsed());
    python
}

/// A child's pipe read to its end in a task of its own, as text.
fn read_to_string(
    pipe: Option<impl tokio::io::AsyncRead + Send + Unpin + 'static>,
) -> tokio::task::JoinHandle<String> {
    use tokio::io::AsyncReadExt;
    tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf).await;
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs an SDK flow script (its command ready but for stdio) against a server: it must
/// exit successfully within 150 s and print its `checks passed` line. Its output is shown,
/// also when it times out (then it is killed and the output shows the last step reached).
pub async fn run_flow_script(mut cmd: Command, what: &str) {
    let started = Instant::now();
    let mut child = cmd
        .env_remove("LANGGRAPH_API_KEY")
        .env_remove("LANGSMITH_API_KEY")
        .env_remove("LANGCHAIN_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("could not run {what}: {e}"));
    let stdout = read_to_string(child.stdout.take());
    let stderr = read_to_string(child.stderr.take());
    let status = tokio::time::timeout(Duration::from_secs(150), child.wait()).await;
    if status.is_err() {
        let _ = child.kill().await;
    }
    let stdout = stdout.await.unwrap_or_default();
    let stderr = stderr.await.unwrap_or_default();
    println!("{stdout}");
    eprintln!("{stderr}");
    let status = status
        .unwrap_or_else(|_| panic!("{what} did not finish within 150 s (its output is above)"))
        .unwrap();
    assert!(
        status.success(),
        "{what} failed ({status}) after {:.1?}",
        started.elapsed()
    );
    assert!(stdout.contains("checks passed"), "{what} ran to its end");
}
