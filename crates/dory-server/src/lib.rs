//! `dory serve`: an OpenAI-compatible HTTP server and a web page, a thin client of the
//! engine API (docs/SERVER.md).
//!
//! - `engine`: worker threads that own the sessions and run generation;
//! - `routes`: the HTTP handlers, which only submit jobs; `answer`: the answers they give
//!   from a job's events, whole or as server-sent events;
//! - `openai`: the wire types; `params`: checking a request; `chat`: the chat template;
//! - `static/`: the page at `/`, compiled in.

pub mod answer;
pub mod chat;
pub mod engine;
pub mod error;
pub mod listen;
pub mod openai;
pub mod params;
pub mod routes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post, MethodRouter};
use axum::Router;
use dory::{Backend, Model};

pub use engine::{Engine, MakeSession};
use openai::ModelFacts;

/// `dory serve`'s own options (the CLI adds the model's).
#[derive(clap::Args, Clone, Debug)]
// Its group's default name, `Args`, is also that of the CLI's `serve` options, which
// clap's debug checks refuse.
#[group(id = "server")]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Requests generated at once, each in its own session (a copy of the backend's
    /// weights each).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub parallel: usize,
    /// Requests that may wait for a worker; more get 503.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub queue: usize,
    /// Prompt plus generated tokens, at most [default: the config's max_context, else 4096].
    #[arg(long, value_name = "TOKENS")]
    pub max_context: Option<usize>,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    pub max_body: usize,
    /// Seconds a client may take to send its request body.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub body_timeout: f64,
    /// The model's id in /v1/models [default: the model folder's name].
    #[arg(long)]
    pub name: Option<String>,
    /// Every /v1 request must send `Authorization: Bearer KEY` [default: $DORY_API_KEY,
    /// else none]. /health and the page stay open.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Seconds a client has to send a request's headers; a keep-alive connection idle
    /// that long is closed too.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub header_timeout: f64,
    /// Connections served at once; a few more may only ask /health, the rest are closed.
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_connections: usize,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            host: "127.0.0.1".into(),
            port: 8080,
            parallel: 2,
            queue: 32,
            max_context: None,
            max_body: 1 << 20,
            body_timeout: 30.0,
            name: None,
            api_key: None,
            header_timeout: 10.0,
            max_connections: 512,
        }
    }
}

/// Workers (each a session, on the CPU a copy of the weights) and waiting jobs (the
/// queue is allocated whole).
pub const MAX_PARALLEL: usize = 256;
pub const MAX_QUEUE: usize = 1 << 16;
pub const MAX_BODY: usize = 1 << 30;
/// Seconds, for every timeout option: a day.
pub const MAX_SECONDS: f64 = 86400.0;
pub const MAX_CONNECTIONS: usize = 1 << 16;

impl Args {
    /// Refuses options outside their bounds, naming the option, before anything starts.
    pub fn check(&self) -> anyhow::Result<()> {
        use dory::limits::{option, MAX_POSITIONS};
        option("--parallel", self.parallel, MAX_PARALLEL)?;
        option("--queue", self.queue, MAX_QUEUE)?;
        option("--max-body", self.max_body, MAX_BODY)?;
        if let Some(n) = self.max_context {
            anyhow::ensure!((2..=MAX_POSITIONS).contains(&n), "--max-context must be in 2…{MAX_POSITIONS}, got {n}");
        }
        option("--max-connections", self.max_connections, MAX_CONNECTIONS)?;
        for (name, t) in [("--body-timeout", self.body_timeout), ("--header-timeout", self.header_timeout)] {
            anyhow::ensure!(t > 0.0 && t <= MAX_SECONDS, "{name} must be in (0, {MAX_SECONDS}] seconds, got {t}");
        }
        anyhow::ensure!(self.key().is_none_or(|k| !k.is_empty()), "--api-key must not be empty");
        Ok(())
    }

    /// The API key: `--api-key`, else `$DORY_API_KEY`.
    pub fn key(&self) -> Option<String> {
        self.api_key.clone().or_else(|| std::env::var("DORY_API_KEY").ok())
    }
}

pub struct Limits {
    pub max_context: usize,
    pub max_body: usize,
    pub body_timeout: Duration,
    pub conns: listen::Conns,
    /// Every /v1 request must carry it.
    pub api_key: Option<String>,
}

/// What every handler shares.
pub struct App {
    pub engine: Engine,
    pub model: Arc<Model>,
    pub name: String,
    pub facts: ModelFacts,
    pub limits: Limits,
    /// Unix seconds the server started (the model card's `created`).
    pub started: u64,
}

/// The context limit when neither the flag nor the config gives one.
const DEFAULT_CONTEXT: usize = 4096;

impl App {
    /// Starts the engine's workers (sessions from `make`) and checks the options.
    pub fn start<B: Backend + 'static>(model: Model, args: &Args, make: MakeSession<B>) -> anyhow::Result<App> {
        App::start_with_fault(model, args, make, None)
    }

    /// `start`, with a fault injected into the workers (`engine::Fault`, for tests).
    pub fn start_with_fault<B: Backend + 'static>(
        model: Model,
        args: &Args,
        make: MakeSession<B>,
        fault: Option<engine::Fault>,
    ) -> anyhow::Result<App> {
        args.check()?;
        let max_context = args.max_context.or(model.config.max_context).unwrap_or(DEFAULT_CONTEXT);
        anyhow::ensure!(max_context >= 2, "--max-context must be ≥ 2");
        let name = args.name.clone().unwrap_or_else(|| {
            let dir = model.dir.canonicalize().unwrap_or_else(|_| model.dir.clone());
            dir.file_name().map_or("dory".into(), |n| n.to_string_lossy().into_owned())
        });
        let model = Arc::new(model);
        let engine = Engine::start(model.clone(), args.parallel, args.queue, make, fault)?;
        let c = &model.config;
        let facts = ModelFacts {
            passes: c.passes,
            layers: c.layers.iter().map(|k| k.name()).collect(),
            hidden: c.hidden,
            vocab_size: c.vocab_size,
            parameters: c.parameters(),
            max_context,
            attention: engine.attention,
            exit: params::exit_text(&c.exit),
            backend: engine.backend.clone(),
        };
        let conns =
            listen::Conns { max: args.max_connections, header_timeout: Duration::from_secs_f64(args.header_timeout) };
        let limits = Limits {
            max_context,
            max_body: args.max_body,
            body_timeout: Duration::from_secs_f64(args.body_timeout),
            conns,
            api_key: args.key(),
        };
        let started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        Ok(App { engine, model, name, facts, limits, started })
    }

    pub fn router(self) -> Router {
        // Each route answers a wrong method with OpenAI's error object, not an empty 405.
        let only = |m: MethodRouter<Arc<App>>| m.fallback(routes::wrong_method);
        let app = Arc::new(self);
        let v1 = Router::new()
            .route("/v1/models", only(get(routes::models)))
            .route("/v1/completions", only(post(routes::completions)))
            .route("/v1/chat/completions", only(post(routes::chat_completions)))
            .route_layer(axum::middleware::from_fn_with_state(app.clone(), routes::authorize));
        Router::new()
            .route("/", only(get(|| page("text/html; charset=utf-8", include_str!("../static/index.html")))))
            .route("/app.js", only(get(|| page("text/javascript; charset=utf-8", include_str!("../static/app.js")))))
            .route("/style.css", only(get(|| page("text/css; charset=utf-8", include_str!("../static/style.css")))))
            .route("/health", only(get(routes::health)))
            .merge(v1)
            .fallback(routes::not_found)
            .with_state(app)
    }

    /// Serves on `listener` with the connection limits until `shutdown` completes.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let conns = self.limits.conns;
        listen::serve(listener, self.router(), conns, shutdown).await
    }
}

async fn page(kind: &'static str, text: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")], text)
}

/// Runs the server until Ctrl-C or SIGTERM: builds the runtime, starts the workers,
/// binds, prints the address.
pub fn run<B: Backend + 'static>(model: Model, args: &Args, make: MakeSession<B>) -> anyhow::Result<()> {
    let app = App::start(model, args, make)?;
    let summary = format!(
        "model {} ({} workers, backend {}, queue {}, context {})",
        app.name, app.engine.workers, app.engine.backend, app.engine.queue, app.limits.max_context
    );
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
            .await
            .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
        let addr: SocketAddr = listener.local_addr()?;
        if !addr.ip().is_loopback() && app.limits.api_key.is_none() {
            eprintln!(
                "dory serve: warning: listening on {addr}, beyond this machine, with no API key: anyone who can \
                 reach it can use the model (set --api-key or DORY_API_KEY)"
            );
        }
        // The tests read this line to find the port.
        println!("dory serve: listening on http://{addr} — {summary}");
        use std::io::Write;
        std::io::stdout().flush()?;
        app.serve(listener, shutdown()).await.context("the server failed")
    })
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(t) => t,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
