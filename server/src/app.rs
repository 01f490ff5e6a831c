//! Wiring: configuration, the database (SQLite file by default, Postgres with
//! `DATABASE_URL`), the graphs, the run machinery, the router, graceful shutdown.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use palgraph::checkpoint::{Checkpointer, PostgresCheckpointer, SqliteCheckpointer};
use palgraph::CompiledGraph;
use tokio_util::sync::CancellationToken;

use crate::api::auth::{AuthConfig, JwtSettings, LOCAL_USER};
use crate::api::chat::{ChatBinding, ChatRequest};
use crate::api::{router, AppState};
use crate::graphs::Graphs;
use crate::runs::{RunSettings, Runs};
use crate::store::postgres::PgStore;
use crate::store::sqlite::SqliteStore;
use crate::store::Store;
use palgraph_nodes::documents::{
    seed_samples, DocumentStore, PostgresDocumentStore, SqliteDocumentStore,
};
use palgraph_nodes::{ChatTurn, PalAssistDeps};

/// `palgraph serve` settings (flags or environment).
#[derive(clap::Args, Clone, Debug)]
pub struct ServeConfig {
    /// Address to listen on. Without auth only loopback addresses are allowed.
    #[arg(long, env = "PALGRAPH_HOST", default_value = "127.0.0.1")]
    pub host: IpAddr,
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
    /// Accepted JWT audiences (`aud`), comma-separated; unset: `aud` is not checked.
    #[arg(long, env = "PALGRAPH_JWT_AUDIENCE", value_delimiter = ',')]
    pub jwt_audience: Vec<String>,
    /// Accepted JWT issuers (`iss`), comma-separated; unset: `iss` is not checked.
    #[arg(long, env = "PALGRAPH_JWT_ISSUER", value_delimiter = ',')]
    pub jwt_issuer: Vec<String>,
    /// API keys: `key=user,key2=user2`.
    #[arg(long, env = "PALGRAPH_API_KEYS", hide_env_values = true)]
    pub api_keys: Option<String>,
    /// Trust this request header as the user id (only behind a proxy that sets it).
    #[arg(long, env = "PALGRAPH_TRUSTED_USER_HEADER")]
    pub trusted_user_header: Option<String>,
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
    /// Claims of one run before it fails (a run that takes its process down every time).
    #[arg(long, env = "PALGRAPH_MAX_ATTEMPTS", default_value_t = 20)]
    pub max_attempts: i64,
    /// Seconds a connection has to send a request head, and may sit idle between requests.
    #[arg(long, env = "PALGRAPH_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
    /// Connections served at once (at most the process's open-file limit less a reserve);
    /// more wait in the listen backlog.
    #[arg(long, env = "PALGRAPH_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
}

impl ServeConfig {
    /// The authentication settings, checked: an empty or short secret, an empty API key or
    /// user, or an empty header name is an error, never authentication quietly off.
    ///
    /// # Errors
    /// See [`crate::api::auth::AuthSettingError`].
    pub fn auth(&self) -> Result<AuthConfig, crate::api::auth::AuthSettingError> {
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

fn non_empty(items: &[String]) -> Vec<String> {
    items
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The opened database.
#[derive(Clone)]
pub enum Database {
    /// Embedded.
    Sqlite(sqlx::SqlitePool),
    /// Production.
    Postgres(sqlx::PgPool),
}

impl Database {
    /// Opens (and migrates) the configured database.
    ///
    /// # Errors
    /// When it cannot be opened or its schema is newer than this binary.
    pub async fn open(cfg: &ServeConfig) -> anyhow::Result<Self> {
        Self::open_as(cfg, None).await
    }

    /// Opens the database with every Postgres connection announcing `worker_id` (so other
    /// processes can tell this one is alive and take its runs over at once when it is not).
    ///
    /// # Errors
    /// When it cannot be opened or its schema is newer than this binary.
    pub async fn open_as(cfg: &ServeConfig, worker_id: Option<&str>) -> anyhow::Result<Self> {
        let app_name =
            worker_id.map(|w| format!("{}{w}", crate::store::postgres::APPLICATION_PREFIX));
        let migrators = [
            palgraph_nodes::documents::MIGRATIONS,
            crate::store::MIGRATIONS,
        ];
        Ok(match &cfg.database_url {
            Some(url) => {
                let pool =
                    palgraph::db::open_postgres_as(url, cfg.db_connections, app_name.as_deref())
                        .await
                        .with_context(|| {
                            "opening the Postgres database (DATABASE_URL)".to_string()
                        })?;
                for m in migrators {
                    m.apply_postgres(&pool)
                        .await
                        .context("migrating Postgres")?;
                }
                Database::Postgres(pool)
            }
            None => {
                let pool = palgraph::db::open_sqlite(&cfg.sqlite_path)
                    .await
                    .with_context(|| {
                        format!("opening the SQLite database {}", cfg.sqlite_path.display())
                    })?;
                for m in migrators {
                    m.apply_sqlite(&pool).await.context("migrating SQLite")?;
                }
                Database::Sqlite(pool)
            }
        })
    }

    /// The checkpointer on it.
    pub fn checkpointer(&self) -> Arc<dyn Checkpointer> {
        match self {
            Database::Sqlite(p) => Arc::new(SqliteCheckpointer::new(p.clone())),
            Database::Postgres(p) => Arc::new(PostgresCheckpointer::new(p.clone())),
        }
    }

    /// The server's store on it.
    pub fn store(&self) -> Arc<dyn Store> {
        match self {
            Database::Sqlite(p) => Arc::new(SqliteStore::new(p.clone())),
            Database::Postgres(p) => Arc::new(PgStore::new(p.clone())),
        }
    }

    /// The document store on it.
    pub fn documents(&self) -> Arc<dyn DocumentStore> {
        match self {
            Database::Sqlite(p) => Arc::new(SqliteDocumentStore::new(p.clone())),
            Database::Postgres(p) => Arc::new(PostgresDocumentStore::new(p.clone())),
        }
    }
}

fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    schemars::schema_for!(T).to_value()
}

/// The graphs served, on `cp`: PalAssist (over `deps`) and the example graphs.
pub fn graphs(cp: Arc<dyn Checkpointer>, deps: PalAssistDeps) -> anyhow::Result<Graphs> {
    let mut g = Graphs::default();
    let palassist: CompiledGraph<palgraph_nodes::AgentState> =
        palgraph_graphs::palassist::graph(deps)?.with_checkpointer(cp.clone());
    let (state_schema, input_schema) =
        palgraph_graphs::registry::schemas(palgraph_graphs::palassist::NAME).unwrap_or((
            serde_json::json!({"type": "object"}),
            serde_json::json!({"type": "object"}),
        ));
    g.add(
        palgraph_graphs::palassist::NAME,
        "PalAssist: answers compliance questions from your documents, asking when unsure",
        Arc::new(palassist),
        state_schema,
        input_schema,
    );
    let approval: CompiledGraph<palgraph_graphs::approval::ApprovalState> =
        palgraph_graphs::approval::graph()?.with_checkpointer(cp.clone());
    g.add(
        "approval",
        "Drafts a text and asks a person to approve it (human in the loop)",
        Arc::new(approval),
        serde_json::json!({"type": "object"}),
        serde_json::json!({"type": "object"}),
    );
    let fanout: CompiledGraph<palgraph_graphs::fanout::ReviewState> =
        palgraph_graphs::fanout::graph()?.with_checkpointer(cp.clone());
    g.add(
        "fanout",
        "Three reviewers in parallel, one summary (fan-out / fan-in)",
        Arc::new(fanout),
        serde_json::json!({"type": "object"}),
        serde_json::json!({"type": "object"}),
    );
    let streaming: CompiledGraph<palgraph_graphs::streaming::StreamingState> =
        palgraph_graphs::streaming::graph()?.with_checkpointer(cp);
    g.add(
        "streaming",
        "Answers word by word, streaming each word; stops cleanly when cancelled",
        Arc::new(streaming),
        serde_json::json!({"type": "object"}),
        serde_json::json!({"type": "object"}),
    );
    let _ = schema_of::<serde_json::Value>;
    Ok(g)
}

/// A running server.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its state.
    pub state: AppState,
    shutdown: CancellationToken,
    grace: Duration,
    limits: crate::listen::HttpLimits,
}

impl Server {
    /// Builds everything and binds the listener (it serves once [`Server::serve`] runs).
    ///
    /// # Errors
    /// Configuration, database or bind errors.
    pub async fn bind(cfg: &ServeConfig) -> anyhow::Result<(Self, tokio::net::TcpListener)> {
        let auth = cfg.auth()?;
        if !auth.enabled() && !cfg.host.is_loopback() {
            anyhow::bail!(
                "refusing to listen on {} without authentication: configure PALGRAPH_JWT_SECRET, \
                 PALGRAPH_API_KEYS or PALGRAPH_TRUSTED_USER_HEADER, or listen on 127.0.0.1",
                cfg.host
            );
        }
        let worker_id = crate::runs::new_worker_id();
        let db = Database::open_as(cfg, Some(&worker_id)).await?;
        let store = db.store();
        let docs = db.documents();
        if !auth.enabled() {
            let added = seed_samples(docs.as_ref(), LOCAL_USER).await?;
            if added > 0 {
                tracing::info!(
                    documents = added,
                    "added the sample documents for the local user"
                );
            }
        }
        let llm =
            palgraph_nodes::llm::from_env().context("configuring the LLM (OPENAI_* variables)")?;
        let mut graphs = graphs(db.checkpointer(), PalAssistDeps::new(llm, docs.clone()))?;
        if std::env::var("PALGRAPH_FAULT_GRAPH").is_ok_and(|v| v == "1") {
            crate::fault::prepare(&db).await?;
            graphs.add(
                "ledger",
                "Fault-test graph: three durable side effects recorded in ledger_effects",
                Arc::new(crate::fault::graph(db.clone(), db.checkpointer())?),
                serde_json::json!({"type": "object"}),
                serde_json::json!({"type": "object"}),
            );
        }
        let runs = Runs::with_worker_id(
            store.clone(),
            graphs.clone(),
            RunSettings {
                lease: Duration::from_secs(cfg.lease_secs.max(1)),
                max_concurrent: cfg.max_runs.max(1),
                storage_retry: Duration::from_secs(cfg.storage_retry_secs),
                max_attempts: cfg.max_attempts.max(1),
                ..Default::default()
            },
            worker_id,
        );
        runs.start();
        let shutdown = CancellationToken::new();
        let state = AppState {
            runs,
            store,
            graphs,
            auth: Arc::new(auth),
            chat: Some(chat_binding()),
            docs: Some(docs),
            shutdown: shutdown.clone(),
        };
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(cfg.host, cfg.port))
            .await
            .with_context(|| format!("binding {}:{}", cfg.host, cfg.port))?;
        let addr = listener.local_addr()?;
        let ceiling = crate::listen::connection_ceiling().unwrap_or(cfg.max_connections);
        if cfg.max_connections > ceiling {
            tracing::warn!(
                asked = cfg.max_connections,
                serving = ceiling,
                "PALGRAPH_MAX_CONNECTIONS is above what the open-file limit allows"
            );
        }
        Ok((
            Server {
                addr,
                state,
                shutdown,
                grace: Duration::from_secs(cfg.grace_secs),
                limits: crate::listen::HttpLimits {
                    header_timeout: Duration::from_secs(cfg.header_timeout_secs.max(1)),
                    max_connections: cfg.max_connections.min(ceiling).max(1),
                },
            },
            listener,
        ))
    }

    /// Serves until `stop` resolves; then stops claiming runs, lets running ones finish
    /// within the grace period, hands the rest back, and closes the streams.
    ///
    /// # Errors
    /// Server errors.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let runs = self.state.runs.clone();
        let token = self.shutdown.clone();
        let grace = self.grace;
        // The router is made once (served as it is, axum would rebuild it per connection).
        let app = router(self.state.clone());
        // On stop: readiness turns 503 and new runs are refused at once (the process is
        // draining), running runs get the grace period, the rest are handed back, then open
        // streams end and the listener closes.
        let drained = async move {
            stop.await;
            tracing::info!("shutting down: no new runs; waiting for running ones");
            runs.shutdown(grace).await;
            token.cancel();
        };
        crate::listen::serve(listener, app, self.limits, drained, Duration::from_secs(5)).await?;
        Ok(())
    }
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// `/chat` runs PalAssist: a chat request becomes PalAssist's turn input.
pub fn chat_binding() -> ChatBinding {
    ChatBinding {
        graph_id: palgraph_graphs::palassist::NAME.to_string(),
        turn_input: Arc::new(|req: &ChatRequest| {
            let update = palgraph_nodes::turn_input(ChatTurn {
                message: req.message.clone(),
                tiptap_json: req.tiptap_json.clone(),
                tagged_doc_ids: req.tagged_doc_ids.clone(),
                tagged_set_ids: req.tagged_set_ids.clone(),
                action: req.action.clone(),
                enable_web_search: req.enable_web_search,
            });
            serde_json::to_value(update).map_err(|e| e.to_string())
        }),
    }
}
