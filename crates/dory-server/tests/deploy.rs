//! What a deployment needs (docs/SERVER.md): the API key, limits on slow and idle
//! clients, the bound on open connections, and faults that cost only their request.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use dory::config::O1;
use dory::Attention;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn completion() -> serde_json::Value {
    json!({"model": "m", "prompt": "hello", "max_tokens": 3, "temperature": 0})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_guards_every_v1_route_and_only_those() {
    let s = start(Args { api_key: Some("s3cret".into()), ..args() }, true).await;
    let body = completion().to_string();
    for (method, path, body) in
        [("GET", "/v1/models", ""), ("POST", "/v1/completions", body.as_str()), ("POST", "/v1/chat/completions", "{}")]
    {
        let e = error_of(&request(s.addr, method, path, body).await, 401);
        assert_eq!(e["code"], "invalid_api_key", "{path} without a key");
        assert!(e["message"].as_str().unwrap().contains("Authorization: Bearer"), "{e}");
        let wrong = request_as(s.addr, method, path, body, "Authorization: Bearer s3cres\r\n").await;
        assert_eq!(error_of(&wrong, 401)["message"], "incorrect API key provided", "{path}");
        let basic = request_as(s.addr, method, path, body, "Authorization: Basic s3cret\r\n").await;
        error_of(&basic, 401);
    }
    let key = "Authorization: Bearer s3cret\r\n";
    assert_eq!(request_as(s.addr, "GET", "/v1/models", "", key).await.status, 200);
    let r = request_as(s.addr, "POST", "/v1/completions", &body, key).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(get(s.addr, "/health").await.status, 200, "/health stays open");
    assert_eq!(get(s.addr, "/").await.status, 200, "the page stays open");
    // The page asks for the key on a 401 and sends it with both of its /v1 requests.
    assert!(get(s.addr, "/").await.text().contains("id=\"api-key\""));
    let js = get(s.addr, "/app.js").await.text();
    assert!(js.contains("r.status === 401") && js.contains("Authorization: `Bearer ${key}`"));
    assert_eq!(js.matches("headers: headers(").count(), 2, "both fetches carry the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_or_absurd_option_is_refused_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let model = dory::Model::load(&model_dir(dir.path(), true)).unwrap();
    let make: dory_server::MakeSession<_> = Arc::new(|m: &dory::Model| session(m, &Attention::Exact));
    let cases = [
        (Args { api_key: Some(String::new()), ..args() }, "--api-key must not be empty"),
        (Args { header_timeout: 0.0, ..args() }, "--header-timeout must be in (0, 86400]"),
        (Args { max_connections: 0, ..args() }, "--max-connections must be in 1…65536"),
        (Args { parallel: 257, ..args() }, "--parallel must be in 1…256, got 257"),
    ];
    for (a, want) in cases {
        let e = a.check().unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    let e = dory_server::App::start(model, &Args { queue: 1 << 20, ..args() }, make).err().unwrap();
    assert!(e.to_string().contains("--queue must be in 1…65536"), "{e}");
}

/// Whether the server closes `s` within `within` (reading whatever it sends first).
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline.into(), s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_trickling_headers_are_cut_off() {
    let s = start(Args { header_timeout: 0.5, ..args() }, true).await;
    let mut slow = vec![];
    for _ in 0..100 {
        let mut c = TcpStream::connect(s.addr).await.unwrap();
        c.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        slow.push(c);
    }
    // Keep trickling a header byte every 100 ms: the limit is on the whole head.
    let t0 = Instant::now();
    let mut open = slow.len();
    while open > 0 && t0.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        open = 0;
        for c in &mut slow {
            if c.write_all(b"X").await.is_ok() {
                open += 1;
            }
        }
    }
    for c in &mut slow {
        assert!(closed_within(c, Duration::from_secs(3)).await, "a slow client stayed connected");
    }
    assert!(t0.elapsed() < Duration::from_secs(8));
    assert_eq!(get(s.addr, "/health").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed() {
    let s = start(Args { header_timeout: 0.5, ..args() }, true).await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    c.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 4096];
    let n = c.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let t0 = Instant::now();
    assert!(closed_within(&mut c, Duration::from_secs(5)).await, "an idle connection stayed open");
    assert!(t0.elapsed() >= Duration::from_millis(400), "closed before its time: {:?}", t0.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_bound_health_still_answers() {
    let s = start(Args { max_connections: 4, header_timeout: 60.0, ..args() }, true).await;
    // Four idle clients hold every connection the server serves in full.
    let mut held = vec![];
    for _ in 0..4 {
        let mut c = TcpStream::connect(s.addr).await.unwrap();
        c.write_all(b"GET /health HTTP/1.1\r\n").await.unwrap();
        held.push(c);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let h = get(s.addr, "/health").await;
    assert_eq!(h.status, 200, "{}", h.text());
    let e = error_of(&post(s.addr, "/v1/completions", &completion()).await, 503);
    assert_eq!(e["code"], "too_many_connections");
    // The reserve full too, a new connection is closed at once, never left hanging.
    for _ in 0..dory_server::listen::RESERVE {
        let mut c = TcpStream::connect(s.addr).await.unwrap();
        c.write_all(b"GET /health HTTP/1.1\r\n").await.unwrap();
        held.push(c);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = TcpStream::connect(s.addr).await.unwrap();
    assert!(closed_within(&mut extra, Duration::from_secs(2)).await);
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = post(s.addr, "/v1/completions", &completion()).await;
    assert_eq!(r.status, 200, "served again once the idle clients left: {}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_panics_costs_only_its_request() {
    // The fault: a prompt holding token 13 panics the worker generating it.
    let fault: dory_server::engine::Fault = Arc::new(|prompt: &[u32]| {
        if prompt.contains(&13) {
            panic!("injected fault");
        }
    });
    let one = Args { parallel: 1, ..args() };
    let s = start_faulty(one, true, Attention::Exact, Some(fault), 16).await;
    let good = completion();
    let before = post(s.addr, "/v1/completions", &good).await.json()["choices"][0]["text"].clone();
    // The weights on disk cut to nothing: the rebuilt session must not read them.
    std::fs::write(s.model.join("model.safetensors"), b"").unwrap();
    let bad = json!({"model": "m", "prompt": [5, 13, 7], "max_tokens": 3});
    let e = error_of(&post(s.addr, "/v1/completions", &bad).await, 500);
    assert!(e["message"].as_str().unwrap().contains("injected fault"), "{e}");
    for _ in 0..2 {
        let r = post(s.addr, "/v1/completions", &good).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["choices"][0]["text"], before, "the rebuilt session answers as before");
    }
    let streamed = json!({"model": "m", "prompt": [13], "max_tokens": 3, "stream": true});
    let r = post(s.addr, "/v1/completions", &streamed).await;
    assert!(r.text().contains("injected fault"), "a stream ends with the error: {}", r.text());
    let h = get(s.addr, "/health").await.json();
    assert_eq!((h["failed"].as_u64(), h["served"].as_u64()), (Some(2), Some(3)), "{h}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allocation_past_memory_fails_its_request_only() {
    // Sealing allocates sinks + window slots: 2^32 positions of 256 floats, 4 TiB a store,
    // past what any machine holds; before the seal, nothing.
    let o1 = O1 { sinks: 0, window: dory::limits::MAX_POSITIONS, landmarks: 2, stride: 1, seal_at: 6, ..O1::default() };
    let s = start_faulty(Args { parallel: 1, ..args() }, false, Attention::O1(o1), None, 256).await;
    let long = json!({"model": "m", "prompt": [5, 6, 7], "max_tokens": 8, "temperature": 0});
    let e = error_of(&post(s.addr, "/v1/completions", &long).await, 500);
    assert!(e["message"].as_str().unwrap().contains("would need"), "{e}");
    let short = json!({"model": "m", "prompt": [5, 6], "max_tokens": 2, "temperature": 0});
    let r = post(s.addr, "/v1/completions", &short).await;
    assert_eq!(r.status, 200, "{}", r.text());
}
