//! The server's settings: every one a flag and an environment variable (`palgraph serve
//! --help` lists them), and a field a program embedding the server can set in code.

use std::path::PathBuf;

use crate::auth::{AuthConfig, AuthSettingError, JwtSettings};

/// `palgraph serve` settings (flags or environment).
#[derive(clap::Args, Clone, Debug)]
pub struct ServeConfig {
    /// Address or host name to listen on: an IP address (`127.0.0.1`, `::1`, `0.0.0.0`) or a
    /// name resolved at start (`localhost`), listening on the first of its addresses that
    /// can be bound. Without authentication every address the name resolves to must be a
    /// loopback address.
    #[arg(long, env = "PALGRAPH_HOST", default_value = "127.0.0.1")]
    pub host: String,
    /// Port (0 picks a free one; the address is printed on start).
    #[arg(long, env = "PALGRAPH_PORT", default_value_t = 8123)]
    pub port: u16,
    /// Postgres URL; when absent the embedded SQLite file is used.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
    /// The SQLite file (embedded mode).
    #[arg(long, env = "PALGRAPH_DB", default_value = "palgraph.db")]
    pub sqlite_path: PathBuf,
    /// HS256 secret of bearer JWTs (`sub` = user), at least 32 bytes; Supabase's JWT
    /// secret works.
    #[arg(long, env = "PALGRAPH_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// Refuse JWTs without `exp`.
    #[arg(long, env = "PALGRAPH_JWT_REQUIRE_EXP", default_value_t = true, action = clap::ArgAction::Set)]
    pub jwt_require_exp: bool,
    /// Leeway for a JWT's `exp` and `nbf`, in seconds.
    #[arg(long, env = "PALGRAPH_JWT_LEEWAY_SECS", default_value_t = 60)]
    pub jwt_leeway_secs: u64,
    /// Accepted JWT audiences (`aud`), comma-separated: a token must carry one of them (a
    /// token without `aud` is refused); unset: `aud` is not checked.
    #[arg(long, env = "PALGRAPH_JWT_AUDIENCE", value_delimiter = ',')]
    pub jwt_audience: Vec<String>,
    /// Accepted JWT issuers (`iss`), comma-separated: a token must carry one of them (a
    /// token without `iss` is refused); unset: `iss` is not checked.
    #[arg(long, env = "PALGRAPH_JWT_ISSUER", value_delimiter = ',')]
    pub jwt_issuer: Vec<String>,
    /// API keys: `key=user,key2=user2` (the last `=` of an entry ends its key, so a key may
    /// end in base64 `=` padding). An entry without `=` or a key given twice is refused.
    #[arg(long, env = "PALGRAPH_API_KEYS", hide_env_values = true)]
    pub api_keys: Option<String>,
    /// Trust this request header as the user id (only behind a proxy that sets it). A
    /// credential header (`authorization`, `x-api-key`, `cookie`, `proxy-authorization`)
    /// is refused.
    #[arg(long, env = "PALGRAPH_TRUSTED_USER_HEADER")]
    pub trusted_user_header: Option<String>,
    /// Acknowledges that only a proxy reaches this server and that it sets the trusted user
    /// header on every request, replacing any the client sent: required to listen beyond
    /// loopback with `--trusted-user-header`, since anyone who can reach the port can send
    /// that header and act as any user.
    #[arg(long, env = "PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY", default_value_t = false, action = clap::ArgAction::Set)]
    pub trusted_user_header_behind_proxy: bool,
    /// Seconds a worker's lease on a run lasts without a heartbeat.
    #[arg(long, env = "PALGRAPH_LEASE_SECS", default_value_t = 30)]
    pub lease_secs: u64,
    /// Seconds running runs get to finish on SIGTERM before they are handed back.
    #[arg(long, env = "PALGRAPH_SHUTDOWN_GRACE_SECS", default_value_t = 20)]
    pub grace_secs: u64,
    /// Runs executed at once by this process.
    #[arg(long, env = "PALGRAPH_MAX_RUNS", default_value_t = 256)]
    pub max_runs: usize,
    /// Postgres connections of this process.
    #[arg(long, env = "PALGRAPH_DB_CONNECTIONS", default_value_t = 32)]
    pub db_connections: u32,
    /// Seconds a run keeps retrying after storage errors (connection lost, database
    /// restarting, deadlocks) before it fails; it continues from its last checkpoint.
    #[arg(long, env = "PALGRAPH_STORAGE_RETRY_SECS", default_value_t = 60)]
    pub storage_retry_secs: u64,
    /// Milliseconds the event writer gathers a run's events before it stores them: token
    /// deltas of one message within the window become one row (watchers on this replica
    /// see every event at once; on other replicas, up to this much later).
    #[arg(long, env = "PALGRAPH_EVENT_FLUSH_MS", default_value_t = 50)]
    pub event_flush_ms: u64,
    /// Seconds a finished run's events are kept for replays (reconnects, joins); after that
    /// a replay gets only the run's outcome. 0 keeps them until the thread is deleted.
    #[arg(long, env = "PALGRAPH_EVENT_RETENTION_SECS", default_value_t = 3600)]
    pub event_retention_secs: u64,
    /// Seconds between a replica's sweeps of threads whose time to live (the `ttl` of
    /// `POST /threads` and `PATCH /threads/{id}`) has run out.
    #[arg(long, env = "PALGRAPH_THREAD_TTL_SWEEP_SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub thread_ttl_sweep_secs: u64,
    /// Claims of one run before it fails (a run that takes its process down every time).
    #[arg(long, env = "PALGRAPH_MAX_ATTEMPTS", default_value_t = 20)]
    pub max_attempts: i64,
    /// Origins allowed to call the API from a browser (comma-separated, e.g.
    /// `http://localhost:3000`, or `*`); none by default.
    #[arg(long, env = "PALGRAPH_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
    /// Seconds a connection has to send a request head, and may sit idle between requests.
    #[arg(long, env = "PALGRAPH_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
    /// Seconds a request's whole body has to arrive, from the end of its head; a slower
    /// body is answered 408 and its connection closed.
    #[arg(long, env = "PALGRAPH_BODY_TIMEOUT_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_secs: u64,
    /// Connections served at once (at most the process's open-file limit less a reserve).
    /// Beyond it, up to 64 more are accepted and answered `/healthz`, `/ok` and `/readyz`
    /// and a 503 for anything else; more wait in the listen backlog.
    #[arg(long, env = "PALGRAPH_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
    /// Connections served at once from one IP address; more are answered 429 (health
    /// probes still answered). Behind a proxy every client has the proxy's address: raise
    /// it to the proxy's connection pool.
    #[arg(long, env = "PALGRAPH_MAX_CONNECTIONS_PER_CLIENT", default_value_t = 1024,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_client: u64,
    /// Bytes of one list response (a thread's history): it ends after the item that takes
    /// it past this, and the client asks again with `before` for the rest.
    #[arg(long, env = "PALGRAPH_MAX_RESPONSE_BYTES", default_value_t = 32 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_response_bytes: u64,
    /// Requests a second each client may make (its user when authenticated, else its IP
    /// address); more are answered 429 with `Retry-After`. 0 turns the limit off.
    #[arg(long, env = "PALGRAPH_RATE_PER_SEC", default_value_t = 200)]
    pub rate_per_sec: u32,
    /// Requests a client may make at once after a quiet spell (at least the rate).
    #[arg(long, env = "PALGRAPH_RATE_BURST", default_value_t = 2000)]
    pub rate_burst: u32,
    /// Also serve `/healthz`, `/ok` and `/readyz` on this port (same host), where no client
    /// of the API can crowd the probes out; unset: only on the API's port.
    #[arg(long, env = "PALGRAPH_HEALTH_PORT")]
    pub health_port: Option<u16>,
    /// Serve Prometheus metrics at `GET /metrics` (protected like the API when auth is on);
    /// `false` turns them off (the route answers 404, nothing is recorded).
    #[arg(long, env = "PALGRAPH_METRICS", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics: bool,
    /// Milliseconds between a replica's looks for due cron ticks.
    #[arg(long, env = "PALGRAPH_CRON_POLL_MS", default_value_t = 1000)]
    pub cron_poll_ms: u64,
    /// Seconds a replica holds a cron tick it took before another may take it (a replica
    /// that died holding it).
    #[arg(long, env = "PALGRAPH_CRON_CLAIM_SECS", default_value_t = 30)]
    pub cron_claim_secs: u64,
    /// Worker threads of the server's async runtime (default: one per core). Where
    /// Postgres shares a small machine with the server, fewer workers than cores spend
    /// less CPU per request: workers that wake each other and wait on the same cores cost
    /// CPU without serving more (see `benchmarks/README.md`, "Server worker threads").
    #[arg(long, env = "PALGRAPH_WORKERS", value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: Option<u16>,
    /// Runs one `POST /runs/batch` may create; a longer batch is refused (422) before
    /// any run of it is created.
    #[arg(long, env = "PALGRAPH_MAX_BATCH_RUNS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_batch_runs: u64,
    /// Tasks one step of a run may plan (nodes and `Send`s): a command whose `goto` sends
    /// more is refused (422); a node whose sends go over it fails its run.
    #[arg(long, env = "PALGRAPH_MAX_SENDS_PER_STEP", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_sends_per_step: u64,
    /// Tasks of one run's step that run at once; the step's other tasks start as those
    /// finish. A run's `config.max_concurrency` may ask for fewer, not more.
    #[arg(long, env = "PALGRAPH_MAX_CONCURRENCY", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_concurrency: u64,
    /// The largest text one PalAssist document may hold, in bytes (UTF-8): `POST
    /// /documents` answers 413 for a larger one and stores none of the upload's documents.
    /// A document is analysed once, when it is stored, taking about half a second of CPU a
    /// MiB.
    #[arg(long, env = "PALGRAPH_MAX_DOCUMENT_BYTES", default_value_t = 8 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub max_document_bytes: u64,
    /// The most PalAssist documents one user may keep: `POST /documents` answers 409
    /// (`too_many_documents`) past it and stores none of the upload's documents.
    #[arg(long, env = "PALGRAPH_MAX_DOCUMENTS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_documents: u64,
}

impl ServeConfig {
    /// The multi-threaded tokio runtime `palgraph serve` runs on: [`Self::workers`] worker
    /// threads, or one per core (tokio's default, which also reads
    /// `TOKIO_WORKER_THREADS`). A program that embeds the server may build its runtime
    /// here to honour the setting.
    ///
    /// # Errors
    /// The runtime could not be started (threads or the I/O driver).
    pub fn runtime(&self) -> std::io::Result<tokio::runtime::Runtime> {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.enable_all();
        if let Some(n) = self.workers {
            b.worker_threads(usize::from(n));
        }
        b.build()
    }

    /// The authentication settings, checked: an empty or short secret, an empty, user-less
    /// or repeated API key, or an empty or credential header name is an error, never
    /// authentication quietly off or a key quietly given to another user.
    ///
    /// # Errors
    /// See [`AuthSettingError`].
    pub fn auth(&self) -> Result<AuthConfig, AuthSettingError> {
        let jwt = self.jwt_secret.as_ref().map(|s| JwtSettings {
            secret: s.as_bytes().to_vec(),
            require_exp: self.jwt_require_exp,
            leeway_secs: self.jwt_leeway_secs,
            audience: non_empty(&self.jwt_audience),
            issuer: non_empty(&self.jwt_issuer),
        });
        AuthConfig::new(
            jwt,
            self.api_keys.as_deref(),
            self.trusted_user_header.as_deref(),
        )
    }
}

impl ServeConfig {
    /// The settings from the environment alone (`PALGRAPH_*`, `DATABASE_URL`), with the
    /// defaults for what is not set.
    ///
    /// # Errors
    /// A variable whose value does not parse.
    pub fn from_env() -> Result<Self, clap::Error> {
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            cfg: ServeConfig,
        }
        <Wrapper as clap::Parser>::try_parse_from(["palgraph"]).map(|w| w.cfg)
    }

    /// Bytes of one list response.
    pub fn max_response_bytes(&self) -> usize {
        usize::try_from(self.max_response_bytes).unwrap_or(usize::MAX)
    }

    /// Each client's request rate; `None` when turned off.
    pub fn request_rate(&self) -> Option<RequestRate> {
        (self.rate_per_sec > 0).then_some(RequestRate {
            per_second: self.rate_per_sec,
            burst: self.rate_burst.max(self.rate_per_sec),
        })
    }

    /// The origins allowed to call the API from a browser.
    pub fn cors_origins(&self) -> Vec<String> {
        self.cors_origins
            .iter()
            .map(|s| s.trim().trim_end_matches('/').to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

fn non_empty(items: &[String]) -> Vec<String> {
    items
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// How many requests one client may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRate {
    /// Sustained requests a second.
    pub per_second: u32,
    /// Requests at once after a quiet spell.
    pub burst: u32,
}
