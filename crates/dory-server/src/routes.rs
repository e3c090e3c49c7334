//! The HTTP handlers. Each reads and checks its request, tokenizes the prompt off the
//! async threads, submits a job to the engine, and answers from the job's events
//! (`answer`): all at once, or as server-sent events. None of them runs the model.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::answer::{collect, finish_reason, stream_chat, stream_completion, usage, Meta};
use crate::engine::{Event, Job};
use crate::error::ApiError;
use crate::openai::*;
use crate::params::{self, json_kind, Plan};
use crate::{chat, App};

/// Tokens a completion generates when the request does not say (OpenAI's default).
const COMPLETION_DEFAULT_TOKENS: usize = 16;
/// Tokens a chat answer may take when the request does not say (at most the context).
const CHAT_DEFAULT_TOKENS: usize = 512;

pub async fn completions(State(app): State<Arc<App>>, req: Request) -> Result<Response, ApiError> {
    let value = params::json_body(&read_body(&app, req).await?)?;
    let body: CompletionBody = params::fields(&value)?;
    let knobs: Knobs = params::fields(&value)?;
    if body.echo == Some(true) {
        return Err(ApiError::unsupported("echo", "echo"));
    }
    if body.suffix.as_ref().is_some_and(|s| !s.is_null()) {
        return Err(ApiError::unsupported("suffix", "suffix (insertion)"));
    }
    if body.best_of.is_some_and(|b| b > 1) {
        return Err(ApiError::unsupported("best_of", "best_of > 1"));
    }
    if body.logprobs.as_ref().is_some_and(|l| !matches!(l, Value::Null | Value::Bool(false)) && l != &json!(0)) {
        return Err(ApiError::unsupported("logprobs", "logprobs"));
    }
    let plan = Plan::new(&knobs)?;
    let ids = match prompt_of(&body.prompt)? {
        Prompt::Text(text) => app.tokenize(text).await?,
        Prompt::Ids(ids) => app.check_ids(ids)?,
    };
    let rx = app.submit(ids, &plan, vec![], COMPLETION_DEFAULT_TOKENS, "prompt")?;
    let meta = Meta::new("cmpl", body.model);
    if plan.stream {
        return Ok(stream_completion(app, rx, meta, plan.include_usage).into_response());
    }
    let (text, s) = collect(rx).await?;
    let choice = CompletionChoice { index: 0, text, logprobs: None, finish_reason: Some(finish_reason(s.finish)) };
    let answer = meta.answer("text_completion", vec![choice], Some(usage(&s)), Some(Dory::Summary(app.summary(&s))));
    Ok(Json(answer).into_response())
}

pub async fn chat_completions(State(app): State<Arc<App>>, req: Request) -> Result<Response, ApiError> {
    let value = params::json_body(&read_body(&app, req).await?)?;
    let body: ChatBody = params::fields(&value)?;
    let mut knobs: Knobs = params::fields(&value)?;
    for (name, v) in [("tools", &body.tools), ("functions", &body.functions)] {
        if v.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(ApiError::unsupported(name, "tool calling"));
        }
    }
    if body.logprobs.as_ref().is_some_and(|l| !matches!(l, Value::Null | Value::Bool(false))) {
        return Err(ApiError::unsupported("logprobs", "logprobs"));
    }
    if let Some(f) = &body.response_format {
        if f.get("type").and_then(Value::as_str).is_some_and(|t| t != "text") {
            return Err(ApiError::unsupported("response_format", "a response_format other than text"));
        }
    }
    knobs.max_tokens = knobs.max_tokens.or(body.max_completion_tokens);
    let plan = Plan::new(&knobs)?;
    let prompt = chat::render(&body.messages)?;
    let ids = app.tokenize(prompt).await?;
    let rx =
        app.submit(ids, &plan, chat::STOP.iter().map(|s| s.to_string()).collect(), CHAT_DEFAULT_TOKENS, "messages")?;
    let meta = Meta::new("chatcmpl", body.model);
    if plan.stream {
        return Ok(stream_chat(app, rx, meta, plan.include_usage).into_response());
    }
    let (text, s) = collect(rx).await?;
    let message = AssistantMessage { role: "assistant", content: text };
    let choice = ChatChoice { index: 0, message, logprobs: None, finish_reason: finish_reason(s.finish) };
    let answer = meta.answer("chat.completion", vec![choice], Some(usage(&s)), Some(Dory::Summary(app.summary(&s))));
    Ok(Json(answer).into_response())
}

pub async fn models(State(app): State<Arc<App>>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: vec![ModelCard {
            id: app.name.clone(),
            object: "model",
            created: app.started,
            owned_by: "dory",
            dory: app.facts.clone(),
        }],
    })
}

pub async fn health(State(app): State<Arc<App>>) -> Json<Value> {
    let s = &app.engine.stats;
    Json(json!({
        "status": "ok",
        "model": app.name,
        "backend": app.engine.backend,
        "workers": app.engine.workers,
        "busy": s.busy.load(Ordering::SeqCst),
        "queued": app.engine.queued(),
        "queue_capacity": app.engine.queue,
        "served": s.served.load(Ordering::Relaxed),
        "cancelled": s.cancelled.load(Ordering::Relaxed),
        "failed": s.failed.load(Ordering::Relaxed),
        "tokens": s.tokens.load(Ordering::Relaxed),
    }))
}

/// Refuses a /v1 request without the server's API key, when it has one.
pub async fn authorize(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let Some(key) = &app.limits.api_key else {
        return next.run(req).await;
    };
    let header = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match header.and_then(|v| v.strip_prefix("Bearer ")) {
        Some(given) if same(given.trim().as_bytes(), key.as_bytes()) => next.run(req).await,
        Some(_) => ApiError::unauthorized("incorrect API key provided").into_response(),
        None => ApiError::unauthorized(
            "this server needs an API key: send the header `Authorization: Bearer KEY` (dory serve --api-key)",
        )
        .into_response(),
    }
}

/// Byte equality in a time that does not tell where two keys first differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A 404 in OpenAI's shape, listing what there is.
pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(
        "url",
        format!(
            "no endpoint {method} {}; dory serve has POST /v1/completions, POST /v1/chat/completions, \
             GET /v1/models, GET /health and the page at /",
            uri.path()
        ),
    )
    .status(StatusCode::NOT_FOUND)
    .code("unknown_url")
}

pub async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid("method", format!("{} does not take {method}", uri.path()))
        .status(StatusCode::METHOD_NOT_ALLOWED)
        .code("method_not_allowed")
}

/// The body, at most `max_body` bytes, read within `body_timeout` (a client that
/// declares more than it sends must not hold a connection forever).
async fn read_body(app: &App, req: Request) -> Result<Bytes, ApiError> {
    let limit = app.limits.max_body;
    let too_large = |n: String| {
        ApiError::body(format!("the request body is {n} bytes; the limit is {limit} (dory serve --max-body)"))
            .status(StatusCode::PAYLOAD_TOO_LARGE)
            .code("body_too_large")
    };
    // Refuse a declared length at once, before reading any of it.
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if let Some(n) = declared.filter(|&n| n > limit as u64) {
        return Err(too_large(n.to_string()));
    }
    let body: Body = req.into_body();
    match tokio::time::timeout(app.limits.body_timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_length_limit(&e) => Err(too_large("more than that".into())),
        Ok(Err(e)) => Err(ApiError::body(format!("cannot read the request body: {e}"))),
        Err(_) => Err(ApiError::body(format!(
            "the request body did not arrive within {} s",
            app.limits.body_timeout.as_secs_f64()
        ))
        .status(StatusCode::REQUEST_TIMEOUT)
        .code("body_timeout")),
    }
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

enum Prompt {
    Text(String),
    Ids(Vec<u32>),
}

/// `prompt`: a string, a list of one string, a list of token ids, or a list of one list
/// of token ids.
fn prompt_of(v: &Value) -> Result<Prompt, ApiError> {
    let bad = |why: String| ApiError::invalid("prompt", why);
    match v {
        Value::String(s) => Ok(Prompt::Text(s.clone())),
        Value::Array(items) if items.len() == 1 && !items[0].is_number() => prompt_of(&items[0]),
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_number) => items
            .iter()
            .map(|i| i.as_u64().and_then(|i| u32::try_from(i).ok()))
            .collect::<Option<Vec<u32>>>()
            .map(Prompt::Ids)
            .ok_or_else(|| bad("a prompt of token ids must hold integers ≥ 0".into())),
        Value::Array(items) if items.len() > 1 && items.iter().all(|i| i.is_string() || i.is_array()) => {
            Err(ApiError::unsupported("prompt", "a batch of several prompts"))
        }
        Value::Array(items) if items.is_empty() => Err(bad("the prompt is an empty list".into())),
        other => Err(bad(format!("prompt must be a string or a list of token ids, got {}", json_kind(other)))),
    }
}

impl App {
    /// Token ids of a prompt text, tokenized on a blocking thread (a long prompt takes
    /// a while).
    async fn tokenize(&self, text: String) -> Result<Vec<u32>, ApiError> {
        let model = self.model.clone();
        let ids = tokio::task::spawn_blocking(move || model.tokenizer.encode(&text))
            .await
            .map_err(|e| ApiError::engine(format!("the tokenizer stopped: {e}")))?
            .map_err(|e| ApiError::invalid("prompt", e.to_string()))?;
        Ok(ids)
    }

    fn check_ids(&self, ids: Vec<u32>) -> Result<Vec<u32>, ApiError> {
        let v = self.model.config.vocab_size;
        match ids.iter().position(|&id| id as usize >= v) {
            Some(i) => {
                Err(ApiError::invalid("prompt", format!("prompt[{i}] = {} is not a token id below {v}", ids[i])))
            }
            None => Ok(ids),
        }
    }

    /// Checks the prompt against the context limit, fixes the token budget, and queues
    /// the job; the receiver gets its events.
    fn submit(
        &self,
        ids: Vec<u32>,
        plan: &Plan,
        mut stop: Vec<String>,
        default_tokens: usize,
        prompt_param: &str,
    ) -> Result<UnboundedReceiver<Event>, ApiError> {
        // The engine prepends bos unless the prompt starts with it (spec §5).
        let bos = self.model.config.bos_token_id.is_some_and(|b| ids.first() != Some(&b));
        let prompt_tokens = ids.len() + usize::from(bos);
        if prompt_tokens == 0 {
            return Err(ApiError::invalid(prompt_param, "the prompt is empty (and the model has no bos token)"));
        }
        let limit = self.limits.max_context;
        let room = limit.saturating_sub(prompt_tokens);
        let max_tokens = plan.max_tokens.unwrap_or(default_tokens.min(room));
        if max_tokens == 0 || max_tokens > room {
            return Err(ApiError::invalid(
                prompt_param,
                format!(
                    "the context limit is {limit} tokens, but this request needs {} ({prompt_tokens} in the prompt, \
                     {max_tokens} to generate); shorten the prompt or lower max_tokens",
                    prompt_tokens.saturating_add(max_tokens.max(1))
                ),
            )
            .code("context_length_exceeded"));
        }
        stop.extend(plan.stop.iter().cloned());
        let (events, rx) = unbounded_channel();
        let request = dory::Request { max_tokens, sampling: plan.sampling.clone(), stop, bos: true };
        let job = Job { prompt: ids, request, exit: plan.exit, events, queued_at: Instant::now() };
        self.engine.submit(job).map_err(|_| ApiError::busy(self.engine.queue))?;
        Ok(rx)
    }
}
