//! Serving graphs: [`Server::builder`] registers them (and whatever routes and start-up
//! work they bring), opens the database, starts the run machinery and binds the listener;
//! [`Server::serve`] serves until a stop signal, then drains.
//!
//! ```no_run
//! use palgraph::State;
//! use palgraph_server::Server;
//!
//! #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
//! struct Ticket {
//!     text: String,
//! }
//!
//! # async fn serve(graph: palgraph::CompiledGraph<Ticket>) -> Result<(), palgraph_server::ServeError> {
//! Server::builder()
//!     .compiled_graph("triage", "Sorts support tickets", graph)
//!     .serve_from_env()
//!     .await
//! # }
//! //! ```

mod exposure;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use aide::axum::ApiRouter;
use async_trait::async_trait;
use palgraph::checkpoint::Checkpointer;
use palgraph::{CompiledGraph, State};
use tokio_util::sync::CancellationToken;

use crate::api::web::WebModule;
use crate::api::{router, AppParts, AppState};
use crate::auth::{AuthSettingError, LOCAL_USER};
use crate::config::ServeConfig;
use crate::database::{Database, DatabaseError};
use crate::graphs::{GraphEntry, Graphs};
use crate::listen::HttpLimits;
use crate::runs::Runs;

/// An error of a graph's registration or an extension's start-up work.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A setting in the environment does not parse.
    #[error(transparent)]
    Config(#[from] clap::Error),
    /// An authentication setting is refused.
    #[error(transparent)]
    Auth(#[from] AuthSettingError),
    /// `PALGRAPH_HOST` does not resolve to an address.
    #[error("PALGRAPH_HOST `{host}` does not resolve to an address to listen on (give an IP address such as 127.0.0.1, or a host name such as localhost)")]
    Host {
        /// The host as configured.
        host: String,
        /// Why it did not resolve.
        #[source]
        source: std::io::Error,
    },
    /// Listening beyond loopback without authentication.
    #[error("refusing to listen on {0} without authentication: configure PALGRAPH_JWT_SECRET, PALGRAPH_API_KEYS or PALGRAPH_TRUSTED_USER_HEADER, or listen on 127.0.0.1")]
    Unprotected(std::net::IpAddr),
    /// Listening beyond loopback with a trusted user header, unacknowledged.
    #[error("refusing to listen on {addr} with PALGRAPH_TRUSTED_USER_HEADER `{header}`: anyone who can reach this port can send that header and act as any user. Listen on 127.0.0.1 behind your proxy, or, if only a proxy can reach this address and it sets `{header}` on every request (replacing any the client sent), set PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY=true")]
    TrustedHeaderExposed {
        /// The first address beyond loopback.
        addr: std::net::IpAddr,
        /// The trusted header.
        header: String,
    },
    /// The database could not be opened.
    #[error(transparent)]
    Database(#[from] DatabaseError),
    /// A graph's registration or an extension's start-up failed.
    #[error("{what}: {source}")]
    Registration {
        /// Which graph or extension.
        what: String,
        /// What failed.
        #[source]
        source: BoxError,
    },
    /// The address could not be bound, or serving failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What registrations and extensions can use: the opened database, the checkpointer on
/// it, and the authentication mode.
#[derive(Clone)]
pub struct ServeContext {
    /// The database.
    pub database: Database,
    /// The checkpointer on it (the graphs' storage).
    pub checkpointer: Arc<dyn Checkpointer>,
    /// The user of the auth-less local mode, when authentication is off.
    pub local_user: Option<&'static str>,
    /// The long-term store, unscoped (runs and `/store/*` see it through their user's
    /// [`palgraph::store::Scoped`] view).
    pub long_term: Arc<dyn palgraph::store::Store>,
}

/// Something a graph brings besides itself: start-up work on the database (migrations,
/// seed data), routes of its own, and a part of the chat page (panels, `@` mentions, a
/// citation viewer).
#[async_trait]
pub trait Extension: Send + Sync + 'static {
    /// Its name (in errors).
    fn name(&self) -> &str;

    /// Runs once the database is open, before the server takes requests.
    async fn start(&self, _ctx: &ServeContext) -> Result<(), BoxError> {
        Ok(())
    }

    /// Its routes (registered documented; they see the server's `AppState` and `User`).
    fn routes(&self, _ctx: &ServeContext) -> ApiRouter<AppState> {
        ApiRouter::new()
    }

    /// Its part of the chat page: JavaScript modules and style sheets served at
    /// `/ext/{id}/{file}`, whose entry the page imports at start (see [`WebModule`]).
    fn web(&self) -> Option<WebModule> {
        None
    }
}

type GraphFactory = Box<dyn FnOnce(&ServeContext) -> Result<GraphEntry, BoxError> + Send>;

/// Registers graphs and extensions, then binds a [`Server`].
#[derive(Default)]
#[must_use]
pub struct ServerBuilder {
    config: Option<ServeConfig>,
    graphs: Vec<(String, GraphFactory)>,
    extensions: Vec<Arc<dyn Extension>>,
    default_chat: Option<String>,
    store_index: Option<palgraph::store::IndexConfig>,
}

impl ServerBuilder {
    /// Serves with these settings (otherwise: from the environment).
    pub fn config(mut self, config: ServeConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Registers a graph made once the database is open (it gets the server's checkpointer
    /// through `ctx`, and may build what it needs on the database).
    pub fn graph(
        mut self,
        graph_id: &str,
        make: impl FnOnce(&ServeContext) -> Result<GraphEntry, BoxError> + Send + 'static,
    ) -> Self {
        self.graphs.push((graph_id.to_string(), Box::new(make)));
        self
    }

    /// Registers a compiled graph, run on the server's checkpointer.
    pub fn compiled_graph<S: State>(
        self,
        graph_id: &str,
        description: &str,
        graph: CompiledGraph<S>,
    ) -> Self {
        let (id, description) = (graph_id.to_string(), description.to_string());
        self.graph(graph_id, move |ctx| {
            let graph = graph.with_checkpointer(ctx.checkpointer.clone());
            Ok(GraphEntry::new(&id, &description, Arc::new(graph)))
        })
    }

    /// Registers a compiled graph whose state keeps a `messages` list of the engine's
    /// messages, served on `/chat` too (with [`MessagesChat`](crate::MessagesChat)).
    pub fn chat_graph<S: State>(
        self,
        graph_id: &str,
        description: &str,
        graph: CompiledGraph<S>,
    ) -> Self {
        self.chat_graph_with(graph_id, description, graph, crate::MessagesChat)
    }

    /// Registers a compiled graph served on `/chat` too, speaking the chat contract
    /// through `chat` (how a message becomes its input, and its state and prompts the
    /// contract's events).
    pub fn chat_graph_with<S: State>(
        self,
        graph_id: &str,
        description: &str,
        graph: CompiledGraph<S>,
        chat: impl crate::ChatAdapter,
    ) -> Self {
        let (id, description) = (graph_id.to_string(), description.to_string());
        self.graph(graph_id, move |ctx| {
            let graph = graph.with_checkpointer(ctx.checkpointer.clone());
            Ok(GraphEntry::new(&id, &description, Arc::new(graph)).chat(Arc::new(chat)))
        })
    }

    /// Adds an extension (start-up work and routes).
    pub fn extension(mut self, extension: impl Extension) -> Self {
        self.extensions.push(Arc::new(extension));
        self
    }

    /// Makes the long-term store (`/store/*`, `ctx.store()`) search by meaning with this
    /// index (an embedder, the fields to embed); without one it searches by text.
    pub fn store_index(mut self, index: palgraph::store::IndexConfig) -> Self {
        self.store_index = Some(index);
        self
    }

    /// Makes `graph_id` the chat graph of new conversations (default: the first chat
    /// graph registered).
    pub fn default_chat(mut self, graph_id: &str) -> Self {
        self.default_chat = Some(graph_id.to_string());
        self
    }

    /// Opens the database, registers everything, starts the run machinery and binds the
    /// listener (it serves once [`Server::serve`] runs).
    ///
    /// # Errors
    /// See [`ServeError`].
    pub async fn bind(self) -> Result<(Server, tokio::net::TcpListener), ServeError> {
        let cfg = match self.config {
            Some(c) => c,
            None => ServeConfig::from_env()?,
        };
        let auth = cfg.auth()?;
        let addrs = exposure::resolve(&cfg.host, cfg.port).await?;
        exposure::check(&addrs, &auth, cfg.trusted_user_header_behind_proxy)?;
        let worker_id = crate::runs::new_worker_id();
        // The recorder first, so that what the start records (e.g. a takeover) counts.
        let recorder = cfg.metrics.then(crate::prometheus::install);
        let database = Database::open_as(&cfg, Some(&worker_id)).await?;
        let metrics = match recorder {
            Some(Ok(_)) => crate::prometheus::Metrics::new(database.clone())
                .inspect_err(|e| tracing::warn!(error = %e, "serving without metrics"))
                .ok(),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "serving without metrics");
                None
            }
            None => None,
        };
        let long_term = database.long_term_store(self.store_index.clone());
        let ctx = ServeContext {
            checkpointer: database.checkpointer(),
            database: database.clone(),
            local_user: (!auth.enabled()).then_some(LOCAL_USER),
            long_term: long_term.clone(),
        };
        for e in &self.extensions {
            e.start(&ctx)
                .await
                .map_err(|source| ServeError::Registration {
                    what: format!("extension `{}`", e.name()),
                    source,
                })?;
        }
        let mut graphs = Graphs::default();
        for (id, make) in self.graphs {
            let entry = make(&ctx).map_err(|source| ServeError::Registration {
                what: format!("graph `{id}`"),
                source,
            })?;
            graphs.insert(entry);
        }
        if let Some(g) = &self.default_chat {
            graphs.set_default_chat(g);
        }
        let runs = Runs::with_worker_id(
            database.store(),
            graphs.clone(),
            crate::runs::RunSettings::of(&cfg),
            worker_id,
        );
        runs.set_long_term_store(long_term.clone());
        runs.start();
        let shutdown = CancellationToken::new();
        crate::api::langgraph::store_items::sweep_expired_items(
            long_term.clone(),
            shutdown.clone(),
        );
        let state = AppState::new(AppParts {
            runs,
            long_term,
            store: database.store(),
            crons: crate::crons::CronStore::new(database.clone()),
            graphs,
            auth: Arc::new(auth),
            shutdown: shutdown.clone(),
            metrics,
            max_response_bytes: cfg.max_response_bytes(),
            max_batch_runs: usize::try_from(cfg.max_batch_runs).unwrap_or(usize::MAX),
        });
        crate::api::langgraph::cron_scheduler::spawn(
            state.clone(),
            crate::api::langgraph::cron_scheduler::SchedulerSettings::of(&cfg),
        );
        crate::api::langgraph::thread_ttl::spawn_sweeper(
            state.clone(),
            Duration::from_secs(cfg.thread_ttl_sweep_secs),
        );
        let routes: Vec<ApiRouter<AppState>> =
            self.extensions.iter().map(|e| e.routes(&ctx)).collect();
        let page =
            crate::api::web::Page::new(self.extensions.iter().filter_map(|e| e.web()).collect())
                .map_err(|e| ServeError::Registration {
                    what: "the extensions' web modules".into(),
                    source: Box::new(e),
                })?;
        let listener = tokio::net::TcpListener::bind(&addrs[..]).await?;
        let addr = listener.local_addr()?;
        let health = match cfg.health_port {
            Some(port) => {
                // The same host as the API, where the API's listener is bound.
                let l = tokio::net::TcpListener::bind(SocketAddr::new(addr.ip(), port)).await?;
                tracing::info!(address = %l.local_addr()?, "health probes on their own port");
                Some(l)
            }
            None => None,
        };
        Ok((
            Server {
                addr,
                health,
                app: router(
                    state.clone(),
                    routes,
                    Arc::new(page),
                    &cfg.cors_origins(),
                    cfg.request_rate(),
                ),
                state,
                shutdown,
                grace: Duration::from_secs(cfg.grace_secs),
                limits: crate::listen::HttpLimits::of(&cfg),
            },
            listener,
        ))
    }

    /// Binds, says where (`palgraph listening on http://...` on stdout), and serves until
    /// SIGTERM or Ctrl-C.
    ///
    /// # Errors
    /// See [`ServeError`].
    pub async fn serve_from_env(self) -> Result<(), ServeError> {
        let (server, listener) = self.bind().await?;
        println!("palgraph listening on http://{}", server.addr);
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        server.serve(listener, shutdown_signal()).await
    }
}

/// A bound server.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its state.
    pub state: AppState,
    /// The health port's listener, when one is configured.
    health: Option<tokio::net::TcpListener>,
    app: axum::Router,
    shutdown: CancellationToken,
    grace: Duration,
    limits: HttpLimits,
}

impl Server {
    /// Registers graphs and extensions.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// Serves until `stop` resolves; then stops claiming runs, lets running ones finish
    /// within the grace period, hands the rest back, and closes the streams.
    ///
    /// # Errors
    /// Serving failed.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let runs = self.state.runs.clone();
        let token = self.shutdown.clone();
        let grace = self.grace;
        // On stop: readiness turns 503 and new runs are refused at once (the process is
        // draining), running runs get the grace period, the rest are handed back, then open
        // streams end and the listener closes.
        let drained = async move {
            stop.await;
            tracing::info!("shutting down: no new runs; waiting for running ones");
            runs.shutdown(grace).await;
            token.cancel();
        };
        // The health port answers until the API's listener has closed.
        let health_stop = CancellationToken::new();
        if let Some(health) = self.health {
            let app = self.app.clone();
            let stop = health_stop.clone();
            tokio::spawn(async move {
                let stopped = stop.cancelled_owned();
                if let Err(e) = crate::listen::serve_health(health, app, stopped).await {
                    tracing::warn!(error = %e, "the health port stopped");
                }
            });
        }
        let served = crate::listen::serve(
            listener,
            self.app,
            self.limits,
            drained,
            Duration::from_secs(5),
        )
        .await;
        health_stop.cancel();
        served?;
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
