//! Every kind of bad request gets a 4xx with OpenAI's error object naming the culprit,
//! the connection is answered (never left hanging), and the server keeps serving.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `body` to `path`, checks the error, and that the server still answers.
async fn refused(path: &str, body: &str, status: u16, param: Option<&str>) -> Value {
    let s = start(Args { max_context: Some(64), ..args() }, true).await;
    let r = request(s.addr, "POST", path, body).await;
    let e = error_of(&r, status);
    assert_eq!(e["param"].as_str(), param, "{e}");
    let ok = post(s.addr, "/v1/completions", &json!({"model": "m", "prompt": "still", "max_tokens": 2})).await;
    assert_eq!(ok.status, 200, "the server serves on after a bad request: {}", ok.text());
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json() {
    let e = refused("/v1/completions", r#"{"model": "m", "prompt": "x",,}"#, 400, None).await;
    assert_eq!(e["code"], "invalid_json");
    assert!(e["message"].as_str().unwrap().contains("not valid JSON"), "{e}");
    refused("/v1/chat/completions", "", 400, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_an_object() {
    let e = refused("/v1/completions", "[1, 2]", 400, None).await;
    assert!(e["message"].as_str().unwrap().contains("JSON object"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_types() {
    let e =
        refused("/v1/completions", r#"{"model": "m", "prompt": "x", "temperature": "hot"}"#, 400, Some("temperature"))
            .await;
    assert_eq!(e["code"], "invalid_type");
    let (completions, chat) = ("/v1/completions", "/v1/chat/completions");
    for (path, body, param) in [
        (completions, r#"{"model": "m", "prompt": "x", "max_tokens": "ten"}"#, "max_tokens"),
        (completions, r#"{"model": "m", "prompt": {"text": "x"}}"#, "prompt"),
        (completions, r#"{"model": 7, "prompt": "x"}"#, "model"),
        (completions, r#"{"model": "m", "prompt": "x", "stop": 5}"#, "stop"),
        (chat, r#"{"model": "m", "messages": "hi"}"#, "messages"),
        (chat, r#"{"model": "m", "messages": [{"role": 1, "content": "x"}]}"#, "messages[0].role"),
        (chat, r#"{"model": "m", "messages": [{"role": "user", "content": 5}]}"#, "messages[0].content"),
    ] {
        refused(path, body, 400, Some(param)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_fields() {
    let e = refused("/v1/completions", r#"{"model": "m"}"#, 400, Some("prompt")).await;
    assert_eq!(e["code"], "missing_required_parameter");
    refused("/v1/completions", r#"{"prompt": "x"}"#, 400, Some("model")).await;
    refused("/v1/chat/completions", r#"{"model": "m"}"#, 400, Some("messages")).await;
    refused("/v1/chat/completions", r#"{"model": "m", "messages": [{"content": "x"}]}"#, 400, Some("messages[0].role"))
        .await;
    refused("/v1/chat/completions", r#"{"model": "m", "messages": []}"#, 400, Some("messages")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_longer_than_the_context() {
    // The server's context is 64 tokens; each letter is a token here.
    let long = "x ".repeat(100);
    let e = refused("/v1/completions", &json!({"model": "m", "prompt": long}).to_string(), 400, Some("prompt")).await;
    assert_eq!(e["code"], "context_length_exceeded");
    assert!(e["message"].as_str().unwrap().contains("context limit is 64"), "{e}");
    // A short prompt with too many tokens asked for.
    let e =
        refused("/v1/completions", r#"{"model": "m", "prompt": "x", "max_tokens": 100}"#, 400, Some("prompt")).await;
    assert_eq!(e["code"], "context_length_exceeded");
    let huge = json!({"model": "m", "prompt": "x", "max_tokens": u64::MAX}).to_string();
    let e = refused("/v1/completions", &huge, 400, Some("prompt")).await;
    assert_eq!(e["code"], "context_length_exceeded");
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": long}]}).to_string();
    refused("/v1/chat/completions", &chat, 400, Some("messages")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_values_out_of_range() {
    for (field, value) in [
        ("temperature", json!(2.5)),
        ("temperature", json!(-0.1)),
        ("top_p", json!(0)),
        ("top_p", json!(1.01)),
        ("min_p", json!(1.5)),
        ("repetition_penalty", json!(0)),
        ("max_tokens", json!(0)),
        ("max_tokens", json!(-1)),
        ("seed", json!(-5)),
        ("exit", json!("kl:-1")),
    ] {
        let mut body = json!({"model": "m", "prompt": "x"});
        body[field] = value;
        refused("/v1/completions", &body.to_string(), 400, Some(field)).await;
    }
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 9});
    refused("/v1/chat/completions", &chat.to_string(), 400, Some("temperature")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_ids_outside_the_vocabulary() {
    let e = refused("/v1/completions", r#"{"model": "m", "prompt": [5, 400]}"#, 400, Some("prompt")).await;
    assert!(e["message"].as_str().unwrap().contains("below 400"), "{e}");
    refused("/v1/completions", r#"{"model": "m", "prompt": [5, -1]}"#, 400, Some("prompt")).await;
    refused("/v1/completions", r#"{"model": "m", "prompt": []}"#, 400, Some("prompt")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_features_are_refused_not_ignored() {
    let e = refused("/v1/completions", r#"{"model": "m", "prompt": "x", "n": 2}"#, 400, Some("n")).await;
    assert_eq!(e["code"], "unsupported_parameter");
    refused("/v1/completions", r#"{"model": "m", "prompt": ["a", "b"]}"#, 400, Some("prompt")).await;
    refused("/v1/completions", r#"{"model": "m", "prompt": "x", "echo": true}"#, 400, Some("echo")).await;
    let tools = r#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}"#;
    refused("/v1/chat/completions", tools, 400, Some("tools")).await;
    let role = r#"{"model": "m", "messages": [{"role": "tool", "content": "x"}]}"#;
    refused("/v1/chat/completions", role, 400, Some("messages[0].role")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_size_limit() {
    let s = start(Args { max_body: 1000, ..args() }, true).await;
    // Declared too long: refused before it is read.
    let big = json!({"model": "m", "prompt": "x".repeat(5000)}).to_string();
    let e = error_of(&request(s.addr, "POST", "/v1/completions", &big).await, 413);
    assert_eq!(e["code"], "body_too_large");
    // Chunked, with no length given: refused once the limit is passed.
    let chunk = "y".repeat(600);
    let req = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: t\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n\
         {:x}\r\n{{\"prompt\": \"{chunk}\r\n{:x}\r\n{chunk}\"}}\r\n0\r\n\r\n",
        chunk.len() + 12,
        chunk.len() + 2
    );
    error_of(&raw(s.addr, req.as_bytes()).await, 413);
    // Just under the limit is fine.
    let ok = json!({"model": "m", "prompt": "x".repeat(900), "max_tokens": 1}).to_string();
    let r = request(s.addr, "POST", "/v1/completions", &ok).await;
    assert!(r.status == 200 || r.status == 400, "{}", r.text());
    assert_eq!(get(s.addr, "/health").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives() {
    let s = start(Args { body_timeout: 0.5, ..args() }, true).await;
    let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    // Promises 100 bytes, sends 10, then waits.
    c.write_all(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"model\": ").await.unwrap();
    let mut buf = vec![];
    let mut chunk = [0u8; 1024];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") || !buf.ends_with(b"}") {
            let n = c.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed without an answer");
            buf.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .expect("the server left a half-sent request hanging");
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"code\":\"body_timeout\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods() {
    let s = start(args(), true).await;
    let e = error_of(&get(s.addr, "/v1/engines").await, 404);
    assert!(e["message"].as_str().unwrap().contains("/v1/completions"), "the 404 lists the endpoints: {e}");
    let e = error_of(&get(s.addr, "/v1/completions").await, 405);
    assert_eq!(e["code"], "method_not_allowed");
    error_of(&request(s.addr, "DELETE", "/v1/models", "").await, 405);
}
