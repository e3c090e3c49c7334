//! What the server tests share: a random model, a server on a free loopback port, and a
//! small raw HTTP/1.1 client (raw so that tests can send what a well-behaved client
//! library would refuse to: broken JSON, lying lengths, half a body).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dory::config::O1;
use dory::weights::DType;
use dory::{Attention, Config, Model};
use dory_server::engine::Fault;
use dory_server::App;
pub use dory_server::Args;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A random model: 400 ids, 2 layers (sliding, full), 3 passes. `eos: false` drops the
/// end-of-sequence token from its config, so that generation runs to the token limit.
pub fn model_dir(dir: &Path, eos: bool) -> PathBuf {
    model_dir_of(dir, eos, 16)
}

/// `model_dir` with heads `head_dim` wide.
pub fn model_dir_of(dir: &Path, eos: bool, head_dim: usize) -> PathBuf {
    let json = serde_json::json!({"architecture":"dory","vocab_size":400,"hidden":32,"heads":4,"kv_heads":1,
        "head_dim":head_dim,"ffn":64,"layers":["sliding","full"],"passes":3,"window":8});
    let config = Config::parse(&json.to_string(), Path::new("test-config.json")).unwrap();
    let out = dir.join("tiny");
    dory::init::write_random_model(&out, &config, 11, DType::F32, 1).unwrap();
    if !eos {
        let path = out.join("config.json");
        let mut json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        json.as_object_mut().unwrap().remove("eos_token_id");
        std::fs::write(&path, json.to_string()).unwrap();
    }
    out
}

pub struct Server {
    pub addr: SocketAddr,
    pub model: PathBuf,
    _dir: tempfile::TempDir,
}

/// A CPU session with `attention`, as the server's workers and the tests' references
/// build them.
pub fn session(model: &Model, attention: &Attention) -> anyhow::Result<dory::Session<dory::cpu::Cpu>> {
    let mut s = dory::cpu::session(model, 256)?;
    s.set_attention(attention.clone())?;
    Ok(s)
}

/// Small O(1) settings that seal after 18 positions.
pub fn small_o1() -> Attention {
    Attention::O1(O1 { sinks: 2, window: 8, landmarks: 4, stride: 2, rect: true, rcond: 1e-4, seal_at: 18 })
}

/// Starts a server on the CPU backend on a free port; it stops with the test's runtime.
pub async fn start(args: Args, eos: bool) -> Server {
    start_with(args, eos, Attention::Exact).await
}

pub async fn start_with(args: Args, eos: bool, attention: Attention) -> Server {
    start_faulty(args, eos, attention, None, 16).await
}

/// A server as `dory serve` runs one (the weights read into memory, its own listener),
/// with `fault` injected into its workers, on a model with heads `head_dim` wide.
pub async fn start_faulty(
    args: Args,
    eos: bool,
    attention: Attention,
    fault: Option<Fault>,
    head_dim: usize,
) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let model = model_dir_of(dir.path(), eos, head_dim);
    let loaded = Model::load_with(&model, true).unwrap();
    let make: dory_server::MakeSession<_> = std::sync::Arc::new(move |m: &Model| session(m, &attention));
    let start = move || App::start_with_fault(loaded, &args, make, fault);
    let app = tokio::task::spawn_blocking(start).await.unwrap().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { app.serve(listener, std::future::pending()).await.unwrap() });
    Server { addr, model, _dir: dir }
}

pub fn args() -> Args {
    Args { port: 0, ..Args::default() }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: String,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    /// The `data:` payloads of a server-sent-events body.
    pub fn events(&self) -> Vec<String> {
        self.text().lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_string).collect()
    }
}

/// Sends raw bytes and reads the whole answer (the request asks to close the
/// connection); fails the test if nothing complete comes back within 60 s.
pub async fn raw(addr: SocketAddr, request: &[u8]) -> Response {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // A server may answer before reading all of a body it refuses: a failed write is
    // then not the test's concern, the answer is.
    let _ = s.write_all(request).await;
    let mut buf = vec![];
    tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut buf))
        .await
        .expect("the server hung: no complete answer within 60 s")
        .expect("read");
    parse(&buf)
}

pub async fn request(addr: SocketAddr, method: &str, path: &str, body: &str) -> Response {
    request_as(addr, method, path, body, "").await
}

/// `request` with more header lines (each ending in \r\n).
pub async fn request_as(addr: SocketAddr, method: &str, path: &str, body: &str, headers: &str) -> Response {
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\n\
         {headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw(addr, req.as_bytes()).await
}

pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> Response {
    request(addr, "POST", path, &body.to_string()).await
}

pub async fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path, "").await
}

fn parse(buf: &[u8]) -> Response {
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("no end of headers in the answer");
    let head = String::from_utf8(buf[..split].to_vec()).unwrap();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status line");
    let mut body = buf[split + 4..].to_vec();
    let chunked = head.lines().any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding: chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Response { status, headers: head, body }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = vec![];
    loop {
        let line = b.windows(2).position(|w| w == b"\r\n").expect("chunk size line");
        let size = usize::from_str_radix(std::str::from_utf8(&b[..line]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[line + 2..line + 2 + size]);
        b = &b[line + 2 + size + 2..];
    }
}

/// Checks OpenAI's error object and the status; returns the error.
pub fn error_of(r: &Response, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    let v = r.json();
    let e = &v["error"];
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "no message: {v}");
    assert!(e["type"].is_string(), "no type: {v}");
    assert!(e.get("param").is_some() && e.get("code").is_some(), "param and code must be present: {v}");
    e.clone()
}

/// Polls /health until `ok` holds of it (5 s at most).
pub async fn wait_health(addr: SocketAddr, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        let h = get(addr, "/health").await.json();
        if ok(&h) {
            return h;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("/health never showed {what}: {}", get(addr, "/health").await.text());
}

/// Opens a streaming request and reads until `events` data lines arrived; the caller
/// drops the stream to disconnect.
pub async fn open_stream(addr: SocketAddr, body: &Value, events: usize) -> TcpStream {
    let body = body.to_string();
    let req = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut seen = vec![];
    let mut buf = [0u8; 4096];
    while seen.windows(5).filter(|w| w == b"data:").count() < events {
        let n = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf)).await.expect("stream stalled").unwrap();
        assert!(n > 0, "the stream closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(seen.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&seen));
    s
}
