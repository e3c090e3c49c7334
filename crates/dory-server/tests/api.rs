//! The API against the engine itself: what the server answers is what `dory::generate`
//! gives for the same request, whole or streamed, and in OpenAI's shapes.

mod common;

use common::*;
use dory::{Attention, Model, Request, Sampling};
use serde_json::{json, Value};

/// What the engine generates for `prompt` on a fresh session.
fn engine_text(
    model: &std::path::Path,
    prompt: &str,
    max_tokens: usize,
    sampling: Sampling,
    stop: &[&str],
) -> (String, Vec<usize>) {
    let (text, passes, _) = engine_run(model, &Attention::Exact, prompt, max_tokens, sampling, stop);
    (text, passes)
}

/// The text, passes per token and final cache bytes of the engine's own run.
fn engine_run(
    model: &std::path::Path,
    attention: &Attention,
    prompt: &str,
    max_tokens: usize,
    sampling: Sampling,
    stop: &[&str],
) -> (String, Vec<usize>, usize) {
    let model = Model::load(model).unwrap();
    let mut session = session(&model, attention).unwrap();
    let ids = model.tokenizer.encode(prompt).unwrap();
    let req = Request { max_tokens, sampling, stop: stop.iter().map(|s| s.to_string()).collect(), bos: true };
    let g = dory::generate(&mut session, &model.tokenizer, &ids, &req, |_| true).unwrap();
    (g.text, g.passes, session.forward().cache_bytes())
}

fn openai_sampling(temperature: f32, top_p: f32, seed: u64) -> Sampling {
    Sampling { temperature, top_k: 0, top_p, min_p: 0.0, repetition_penalty: 1.0, seed }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_is_what_the_engine_generates() {
    let s = start(args(), true).await;
    let body = json!({"model": "whatever-name", "prompt": "The sea", "max_tokens": 12, "temperature": 0});
    let r = post(s.addr, "/v1/completions", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("content-type").unwrap().starts_with("application/json"));
    let v = r.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["model"], "whatever-name", "the request's model is echoed");
    assert!(v["id"].as_str().unwrap().starts_with("cmpl-"));
    let (text, passes, cache_bytes) = engine_run(&s.model, &Attention::Exact, "The sea", 12, Sampling::greedy(), &[]);
    let choice = &v["choices"][0];
    assert_eq!(choice["text"], text.as_str());
    let n = passes.len();
    assert_eq!(choice["finish_reason"], if n == 12 { "length" } else { "stop" });
    // "The sea" is 7 byte-level tokens at most, plus bos.
    let prompt_tokens = Model::load(&s.model).unwrap().tokenizer.encode("The sea").unwrap().len() + 1;
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n})
    );
    let d = &v["dory"];
    assert_eq!(d["passes"], json!(passes));
    assert_eq!((d["max_passes"].as_u64(), d["attention"].as_str()), (Some(3), Some("exact")));
    assert_eq!(d["cache_bytes"].as_u64().unwrap() as usize, cache_bytes);
    // Exact attention keeps every position of the full layer: 2 × 16 floats each.
    assert!(cache_bytes >= (prompt_tokens + n - 1) * 2 * 16 * 4, "{cache_bytes}");
    assert!(d["tokens_per_second"].as_f64().unwrap() >= 0.0 && d["prefill_ms"].as_f64().unwrap() > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_sampling_follows_the_request_and_repeats() {
    let s = start(args(), false).await;
    let body =
        json!({"model": "m", "prompt": "Once upon", "max_tokens": 20, "temperature": 0.9, "top_p": 0.8, "seed": 42});
    let a = post(s.addr, "/v1/completions", &body).await.json();
    let b = post(s.addr, "/v1/completions", &body).await.json();
    assert_eq!(a["choices"][0]["text"], b["choices"][0]["text"], "the same seed gives the same text");
    let (text, _) = engine_text(&s.model, "Once upon", 20, openai_sampling(0.9, 0.8, 42), &[]);
    assert_eq!(a["choices"][0]["text"], text.as_str());
    let other =
        post(s.addr, "/v1/completions", &json!({"model": "m", "prompt": "Once upon", "max_tokens": 20, "seed": 43}))
            .await
            .json();
    let (text43, _) = engine_text(&s.model, "Once upon", 20, openai_sampling(1.0, 1.0, 43), &[]);
    assert_eq!(other["choices"][0]["text"], text43.as_str(), "temperature and top_p default to 1");
    // Token ids are a prompt too.
    let ids = Model::load(&s.model).unwrap().tokenizer.encode("Once upon").unwrap();
    let by_ids = post(
        s.addr,
        "/v1/completions",
        &json!({"model": "m", "prompt": ids, "max_tokens": 20, "temperature": 0.9, "top_p": 0.8, "seed": 42}),
    )
    .await
    .json();
    assert_eq!(by_ids["choices"][0]["text"], text.as_str());
}

/// Token chunks' text, the last chunk with a finish reason, and what follows it.
fn split_stream(events: &[String]) -> (String, Vec<Value>, Vec<Value>) {
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "{events:?}");
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    let tokens: Vec<Value> = chunks.iter().filter(|c| c["dory"]["token"].is_u64()).cloned().collect();
    let rest: Vec<Value> = chunks.iter().filter(|c| !c["dory"]["token"].is_u64()).cloned().collect();
    let text = tokens
        .iter()
        .map(|c| c["choices"][0]["text"].as_str().or(c["choices"][0]["delta"]["content"].as_str()).unwrap().to_string())
        .collect();
    (text, tokens, rest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_completion_is_the_whole_one_in_pieces() {
    let s = start(args(), false).await;
    let mut body = json!({"model": "m", "prompt": "Hello", "max_tokens": 15, "temperature": 0.7, "seed": 5});
    let whole = post(s.addr, "/v1/completions", &body).await.json();
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let r = post(s.addr, "/v1/completions", &body).await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/event-stream"));
    let (text, tokens, rest) = split_stream(&r.events());
    assert_eq!(text, whole["choices"][0]["text"].as_str().unwrap());
    assert_eq!(tokens.len(), 15, "one chunk per token");
    let passes: Vec<Value> = tokens.iter().map(|c| c["dory"]["passes"].clone()).collect();
    assert_eq!(json!(passes), whole["dory"]["passes"]);
    assert!(tokens.iter().all(|c| c["object"] == "text_completion" && c["model"] == "m" && c["id"] == tokens[0]["id"]));
    // The finish chunk with Dory's summary, then the usage chunk.
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert_eq!(rest[0]["choices"][0]["finish_reason"], "length");
    assert_eq!(rest[0]["dory"]["passes"], whole["dory"]["passes"]);
    assert_eq!(rest[1]["choices"], json!([]));
    assert_eq!(rest[1]["usage"], whole["usage"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_uses_the_documented_template() {
    let s = start(args(), false).await;
    let messages = json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hi"}
    ]);
    let body = json!({"model": "chat-model", "messages": messages, "max_tokens": 10, "temperature": 0});
    let v = post(s.addr, "/v1/chat/completions", &body).await.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "chat-model");
    let prompt = "You are terse.\n\nUser: Say hi\nAssistant:";
    let (text, _) = engine_text(&s.model, prompt, 10, Sampling::greedy(), &["\nUser:"]);
    assert_eq!(v["choices"][0]["message"], json!({"role": "assistant", "content": text}));
    let ids = Model::load(&s.model).unwrap().tokenizer.encode(prompt).unwrap();
    assert_eq!(v["usage"]["prompt_tokens"], ids.len() + 1);
    // Streamed: the role first, then the same content.
    let mut body = body;
    body["stream"] = json!(true);
    let r = post(s.addr, "/v1/chat/completions", &body).await;
    let events = r.events();
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    let (streamed, _, rest) = split_stream(&events[1..]);
    assert_eq!(streamed, text);
    assert_eq!(rest.len(), 1, "no usage chunk unless asked");
    assert!(rest[0]["choices"][0]["finish_reason"].is_string());
    // max_completion_tokens is max_tokens' newer name.
    let v =
        post(s.addr, "/v1/chat/completions", &json!({"model": "m", "messages": messages, "max_completion_tokens": 3}))
            .await
            .json();
    assert_eq!(v["usage"]["completion_tokens"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_strings_cut_the_text() {
    let s = start(args(), false).await;
    let body = json!({"model": "m", "prompt": "abc", "max_tokens": 40, "temperature": 0});
    let full = post(s.addr, "/v1/completions", &body).await.json()["choices"][0]["text"].as_str().unwrap().to_string();
    // A stop string from the middle of the greedy text (on a character boundary).
    let chars: Vec<char> = full.chars().collect();
    assert!(chars.len() >= 12, "{full:?}");
    let stop: String = chars[8..10].iter().collect();
    let at = full.find(&stop).unwrap();
    for stream in [false, true] {
        let body = json!({"model": "m", "prompt": "abc", "max_tokens": 40, "temperature": 0, "stop": [stop], "stream": stream});
        let r = post(s.addr, "/v1/completions", &body).await;
        let (text, finish) = if stream {
            let (text, _, rest) = split_stream(&r.events());
            (text, rest[0]["choices"][0]["finish_reason"].clone())
        } else {
            let v = r.json();
            (v["choices"][0]["text"].as_str().unwrap().to_string(), v["choices"][0]["finish_reason"].clone())
        };
        assert_eq!(text, &full[..at], "stream {stream}");
        assert_eq!(finish, "stop");
    }
    // A single string works as well as a list.
    let v = post(
        s.addr,
        "/v1/completions",
        &json!({"model": "m", "prompt": "abc", "max_tokens": 40, "temperature": 0, "stop": stop}),
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["text"], &full[..at]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_health_and_the_page() {
    let s = start(Args { name: Some("tiny-test".into()), ..args() }, true).await;
    let m = get(s.addr, "/v1/models").await.json();
    assert_eq!(m["object"], "list");
    assert_eq!(m["data"][0]["id"], "tiny-test");
    assert_eq!(m["data"][0]["object"], "model");
    assert_eq!(m["data"][0]["dory"]["passes"], 3);
    assert_eq!(m["data"][0]["dory"]["layers"], json!(["sliding", "full"]));
    let h = get(s.addr, "/health").await.json();
    assert_eq!((h["status"].as_str(), h["workers"].as_u64(), h["busy"].as_u64()), (Some("ok"), Some(2), Some(0)));
    let page = get(s.addr, "/").await;
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").unwrap().starts_with("text/html"));
    assert!(page.text().contains("<textarea id=\"prompt\"") && page.text().contains("/app.js"));
    let js = get(s.addr, "/app.js").await;
    assert!(js.header("content-type").unwrap().starts_with("text/javascript") && js.text().contains("/v1/completions"));
    assert!(get(s.addr, "/style.css").await.header("content-type").unwrap().starts_with("text/css"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_rule_per_request_changes_the_passes() {
    let s = start(args(), false).await;
    let body = |exit: &str| json!({"model": "m", "prompt": "deep", "max_tokens": 10, "temperature": 0, "exit": exit});
    let none = post(s.addr, "/v1/completions", &body("none")).await.json();
    assert!(none["dory"]["passes"].as_array().unwrap().iter().all(|p| p == 3));
    // Confidence ≥ 0 always holds: every decoded token leaves after one pass; the first
    // token comes from the prompt's last row, which runs all passes.
    let early = post(s.addr, "/v1/completions", &body("confidence:0")).await.json();
    let passes: Vec<u64> = early["dory"]["passes"].as_array().unwrap().iter().map(|p| p.as_u64().unwrap()).collect();
    assert_eq!(passes[0], 3);
    assert!(passes[1..].iter().all(|&p| p == 1), "{passes:?}");
    assert_eq!(early["dory"]["mean_passes"].as_f64().unwrap(), (3.0 + 9.0) / 10.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o1_attention_is_reported_and_its_caches_stop_growing() {
    let s = start_with(args(), false, small_o1()).await;
    let m = get(s.addr, "/v1/models").await.json();
    assert_eq!(m["data"][0]["dory"]["attention"], "o1");
    let mut bytes = vec![];
    for n in [40, 80] {
        let body = json!({"model": "m", "prompt": "far away", "max_tokens": n, "temperature": 0});
        let v = post(s.addr, "/v1/completions", &body).await.json();
        assert_eq!(v["dory"]["attention"], "o1");
        let (text, _, cache) = engine_run(&s.model, &small_o1(), "far away", n, Sampling::greedy(), &[]);
        assert_eq!(v["choices"][0]["text"], text.as_str(), "{n} tokens");
        assert_eq!(v["dory"]["cache_bytes"].as_u64().unwrap() as usize, cache);
        bytes.push(cache);
    }
    // Both ran far past the seal (position 18): the caches hold the same bytes.
    assert_eq!(bytes[0], bytes[1]);
    let exact = start(args(), false).await;
    let body = json!({"model": "m", "prompt": "far away", "max_tokens": 80, "temperature": 0});
    let v = post(exact.addr, "/v1/completions", &body).await.json();
    assert!(v["dory"]["cache_bytes"].as_u64().unwrap() as usize > bytes[1], "exact attention grows past O(1)'s");
}
