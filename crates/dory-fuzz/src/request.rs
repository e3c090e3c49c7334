//! Request bodies through the server's own router, against a small random model.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use dory::weights::DType;
use dory::Model;
use tower::ServiceExt;

/// The runtime and the router of a server on the small model, made once. Its context
/// is short, so that a body asking for many tokens is refused or cheap.
fn server() -> &'static (tokio::runtime::Runtime, Router) {
    static SERVER: OnceLock<(tokio::runtime::Runtime, Router)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = crate::scratch("server");
        dory::init::write_random_model(&dir, &crate::files::small_config(), 2, DType::F32, 1).expect("a model");
        let model = Model::load_with(&dir, true).expect("the model");
        let make: dory_server::MakeSession<_> = Arc::new(|m: &Model| Ok(dory::cpu::session(m, 64)?));
        let args = dory_server::Args { parallel: 1, queue: 4, max_context: Some(24), ..Default::default() };
        let app = dory_server::App::start(model, &args, make).expect("a server");
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build();
        (runtime.expect("a runtime"), app.router())
    })
}

/// A body for /v1/completions (first byte even) or /v1/chat/completions: any answer
/// but a 500, which only a failing engine gives.
pub fn request(data: &[u8]) {
    let (runtime, router) = server();
    let (path, body) = match data.split_first() {
        Some((b, rest)) if b % 2 == 0 => ("/v1/completions", rest),
        Some((_, rest)) => ("/v1/chat/completions", rest),
        None => ("/v1/completions", data),
    };
    let req = Request::post(path).header(header::CONTENT_TYPE, "application/json").body(Body::from(body.to_vec()));
    let response = runtime.block_on(async {
        let r = router.clone().oneshot(req.expect("a request")).await.expect("the router answers");
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 24).await.expect("a whole answer");
        (status, bytes)
    });
    let (status, bytes) = response;
    let text = String::from_utf8_lossy(&bytes);
    assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR, "{text}");
    assert!(!text.contains("engine_error"), "a stream's engine failed: {text}");
    if !status.is_success() {
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("an error in JSON");
        assert!(v["error"]["message"].is_string(), "OpenAI's error shape: {v}");
    }
}
