//! Several requests at once: each its own session, a bounded queue that answers 503
//! when full, and a client that leaves cancelling its generation.

mod common;

use common::*;
use serde_json::{json, Value};

/// A request that would keep a worker busy for a long time: no eos in the model, and a
/// context large enough for many thousands of tokens.
fn long() -> Value {
    json!({"model": "m", "prompt": "long", "max_tokens": 200_000, "temperature": 0, "stream": true})
}

fn big_context() -> Args {
    Args { max_context: Some(300_000), ..args() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_stream_cancels_its_generation() {
    let s = start(Args { parallel: 1, ..big_context() }, false).await;
    let stream = open_stream(s.addr, &long(), 5).await;
    let h = wait_health(s.addr, "the worker busy", |h| h["busy"] == 1).await;
    assert_eq!(h["cancelled"], 0);
    drop(stream);
    // Without the cancel the worker would be busy for minutes.
    let h = wait_health(s.addr, "the generation cancelled", |h| h["busy"] == 0 && h["cancelled"] == 1).await;
    assert_eq!(h["served"], 0);
    // The worker's session was reset: the next request is answered as on a fresh server.
    let body = json!({"model": "m", "prompt": "fresh", "max_tokens": 8, "temperature": 0});
    let a = post(s.addr, "/v1/completions", &body).await.json();
    let fresh = start(Args { parallel: 1, ..big_context() }, false).await;
    let b = post(fresh.addr, "/v1/completions", &body).await.json();
    assert_eq!(a["choices"][0]["text"], b["choices"][0]["text"]);
    assert_eq!(a["dory"]["cache_bytes"], b["dory"]["cache_bytes"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_before_a_whole_answer_cancels_too() {
    let s = start(Args { parallel: 1, ..big_context() }, false).await;
    let mut body = long();
    body["stream"] = json!(false);
    let body = body.to_string();
    let req = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut c, req.as_bytes()).await.unwrap();
    wait_health(s.addr, "the worker busy", |h| h["busy"] == 1).await;
    drop(c);
    wait_health(s.addr, "the generation cancelled", |h| h["busy"] == 0 && h["cancelled"] == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_503_and_frees_up() {
    let s = start(Args { parallel: 1, queue: 1, ..big_context() }, false).await;
    let running = open_stream(s.addr, &long(), 3).await;
    wait_health(s.addr, "one request running", |h| h["busy"] == 1).await;
    // The second waits in the queue: its first event comes only when a worker takes it.
    let waiting = {
        let addr = s.addr;
        tokio::spawn(async move { open_stream(addr, &long(), 1).await })
    };
    wait_health(s.addr, "one request queued", |h| h["queued"] == 1).await;
    let r = post(s.addr, "/v1/completions", &json!({"model": "m", "prompt": "x", "max_tokens": 1})).await;
    let e = error_of(&r, 503);
    assert_eq!(e["code"], "queue_full");
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));
    // Leaving frees the worker; the queued request starts, then leaves too.
    drop(running);
    let second = waiting.await.unwrap();
    drop(second);
    wait_health(s.addr, "both cancelled and the queue empty", |h| {
        h["busy"] == 0 && h["queued"] == 0 && h["cancelled"] == 2
    })
    .await;
    let r = post(s.addr, "/v1/completions", &json!({"model": "m", "prompt": "x", "max_tokens": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_at_once_keep_their_own_state() {
    let s = start(Args { parallel: 3, ..args() }, false).await;
    let bodies: Vec<Value> = (0..8)
        .map(|i| {
            json!({"model": format!("m{i}"), "prompt": format!("prompt number {i}"), "max_tokens": 30,
                   "temperature": 0.8, "seed": i, "stream": i % 2 == 0})
        })
        .collect();
    // One at a time first, as the reference.
    let mut alone = vec![];
    for b in &bodies {
        alone.push(text_of(&post(s.addr, "/v1/completions", b).await, b["stream"] == true));
    }
    let tasks: Vec<_> = bodies
        .iter()
        .cloned()
        .map(|b| {
            let addr = s.addr;
            tokio::spawn(async move {
                let r = post(addr, "/v1/completions", &b).await;
                (r.status, text_of(&r, b["stream"] == true))
            })
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        let (status, text) = t.await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(text, alone[i], "request {i} in a crowd gives what it gives alone");
    }
    let h = get(s.addr, "/health").await.json();
    assert_eq!((h["served"].as_u64(), h["failed"].as_u64(), h["busy"].as_u64()), (Some(16), Some(0), Some(0)));
}

fn text_of(r: &Response, stream: bool) -> String {
    assert_eq!(r.status, 200, "{}", r.text());
    if !stream {
        return r.json()["choices"][0]["text"].as_str().unwrap().to_string();
    }
    r.events()
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str::<Value>(e).unwrap()["choices"][0]["text"].as_str().unwrap_or("").to_string())
        .collect()
}
