//! Accepting connections, with what `axum::serve` does not give a deployment: a time
//! limit on a request's headers (which also closes a keep-alive connection left idle),
//! and a bound on open connections that keeps `/health` answering.
//!
//! The bound: `max` connections are served in full. Past it, a few more (`RESERVE`) are
//! still accepted, but served one request each, with a short header limit, and only
//! `/health` answers (every other path gets a 503 in OpenAI's shape), so that a monitor
//! sees the server alive while slow or idle clients hold the rest. Past those too, a new
//! connection is closed at once: the process never runs out of file descriptors.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::IntoResponse;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use crate::error::ApiError;

/// Connections past the bound that may still ask `/health`.
pub const RESERVE: usize = 16;
/// The header limit of those reserve connections.
const RESERVE_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// How connections are bounded.
#[derive(Clone, Copy, Debug)]
pub struct Conns {
    /// Connections served in full at once.
    pub max: usize,
    /// Time a client has to send a request's headers, and that a keep-alive
    /// connection may stay idle between requests.
    pub header_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown` completes, then waits for the
/// connections' requests in flight to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    conns: Conns,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let full = Arc::new(Semaphore::new(conns.max));
    let reserve = Arc::new(Semaphore::new(RESERVE));
    let mut stopping = stop_rx.clone();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors, or a connection reset before it was accepted: the
                // listener is fine; wait a moment rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = stopping.changed() => break,
        };
        let (permit, limited) = match full.clone().try_acquire_owned() {
            Ok(p) => (p, false),
            Err(_) => match reserve.clone().try_acquire_owned() {
                Ok(p) => (p, true),
                Err(_) => continue, // dropped: closed at once
            },
        };
        let service = if limited { health_only(router.clone()) } else { router.clone() };
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            connection(stream, service, conns, limited, stop).await;
            drop(permit);
        });
    }
    // Every connection task holds a permit: wait until all are back.
    let _all = full.acquire_many(conns.max as u32).await;
    let _reserve = reserve.acquire_many(RESERVE as u32).await;
    Ok(())
}

/// Serves one connection until the client closes it, a limit closes it, or the server
/// stops (after the request in flight).
async fn connection(
    stream: tokio::net::TcpStream,
    router: Router,
    conns: Conns,
    limited: bool,
    mut stop: watch::Receiver<bool>,
) {
    let service = TowerToHyperService::new(router);
    let timeout = if limited { RESERVE_HEADER_TIMEOUT } else { conns.header_timeout };
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .keep_alive(!limited)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            changed = stop.changed() => {
                conn.as_mut().graceful_shutdown();
                if changed.is_err() {
                    // The server is gone: let the connection finish on its own.
                    let _ = conn.as_mut().await;
                    break;
                }
            }
        }
    }
}

/// The router for connections past the bound: `/health`, and a 503 for the rest.
fn health_only(router: Router) -> Router {
    router.layer(axum::middleware::from_fn(|req: Request, next: axum::middleware::Next| async move {
        if req.uri().path() == "/health" {
            return next.run(req).await;
        }
        ApiError::busy_connections().into_response()
    }))
}
