//! Answers from a job's events: whole (collected), or streamed as server-sent events in
//! OpenAI's chunk shapes with Dory's per-token extension.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use dory::Finish;
use futures_util::Stream;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::engine::{Event, Summary};
use crate::error::ApiError;
use crate::openai::*;
use crate::App;

/// The response's id, creation time and echoed model name.
pub struct Meta {
    pub id: String,
    pub created: u64,
    pub model: String,
}

impl Meta {
    pub fn new(prefix: &str, model: String) -> Meta {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let created = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Meta { id: format!("{prefix}-{created:x}{n:06x}"), created, model }
    }

    /// An answer, or a chunk of one (`object` says which), around `choices`.
    pub fn answer<C>(
        &self,
        object: &'static str,
        choices: Vec<C>,
        usage: Option<Usage>,
        dory: Option<Dory>,
    ) -> Answer<C> {
        Answer { id: self.id.clone(), object, created: self.created, model: self.model.clone(), choices, usage, dory }
    }
}

pub fn finish_reason(f: Finish) -> &'static str {
    match f {
        Finish::Length => "length",
        Finish::Eos | Finish::Stop => "stop",
        // Only a client that went away cancels, and it reads no answer.
        Finish::Cancelled => "cancelled",
    }
}

pub fn usage(s: &Summary) -> Usage {
    Usage {
        prompt_tokens: s.prompt_tokens,
        completion_tokens: s.passes.len(),
        total_tokens: s.prompt_tokens + s.passes.len(),
    }
}

/// A whole answer's text and figures.
pub async fn collect(mut rx: UnboundedReceiver<Event>) -> Result<(String, Summary), ApiError> {
    let mut text = String::new();
    while let Some(event) = rx.recv().await {
        match event {
            Event::Token { text: t, .. } => text.push_str(&t),
            Event::Done(s) => return Ok((text, s)),
            Event::Failed(m) => return Err(ApiError::engine(m)),
        }
    }
    Err(ApiError::engine("the worker stopped before the answer was complete"))
}

pub fn stream_completion(app: Arc<App>, rx: UnboundedReceiver<Event>, meta: Meta, include_usage: bool) -> Response {
    let choice = |text: Option<String>, finish| CompletionChoice {
        index: 0,
        text: text.unwrap_or_default(),
        logprobs: None,
        finish_reason: finish,
    };
    stream(app, rx, meta, "text_completion", include_usage, vec![], choice)
}

pub fn stream_chat(app: Arc<App>, rx: UnboundedReceiver<Event>, meta: Meta, include_usage: bool) -> Response {
    let choice = |content: Option<String>, finish| ChatChunkChoice {
        index: 0,
        delta: Delta { role: None, content },
        logprobs: None,
        finish_reason: finish,
    };
    // OpenAI's streams open with the role.
    let mut open = choice(Some(String::new()), None);
    open.delta.role = Some("assistant");
    let first = data(&meta.answer("chat.completion.chunk", vec![open], None, None));
    stream(app, rx, meta, "chat.completion.chunk", include_usage, vec![first], choice)
}

/// A stream of `object` chunks after `first`: each token's text as a choice
/// (`choice(Some(text), None)`), then a choice with the finish reason and no text, then
/// the usage when the client asked for it.
fn stream<C: Serialize>(
    app: Arc<App>,
    rx: UnboundedReceiver<Event>,
    meta: Meta,
    object: &'static str,
    include_usage: bool,
    first: Vec<String>,
    choice: impl Fn(Option<String>, Option<&'static str>) -> C + Send + 'static,
) -> Response {
    sse(rx, first, move |event| match event {
        Event::Token { id, passes, text } => {
            let dory = Dory::Token(DoryToken { token: id, passes });
            vec![data(&meta.answer(object, vec![choice(Some(text), None)], None, Some(dory)))]
        }
        Event::Done(s) => {
            let end = vec![choice(None, Some(finish_reason(s.finish)))];
            let last = meta.answer(object, end, None, Some(Dory::Summary(app.summary(&s))));
            closing(&last, include_usage.then(|| meta.answer(object, vec![], Some(usage(&s)), None)).as_ref())
        }
        Event::Failed(m) => vec![data(&ApiError::engine(m).body_object())],
    })
}

/// What ends a stream: the last chunk, then the usage chunk when the client asked for it.
fn closing<C: Serialize>(last: &C, usage: Option<&C>) -> Vec<String> {
    std::iter::once(last).chain(usage).map(data).collect()
}

fn data(v: &impl Serialize) -> String {
    serde_json::to_string(v).expect("wire types serialize")
}

/// Server-sent events: `first`, then each job event as `render` writes it, then
/// `data: [DONE]`; comments keep an idle connection open while the prompt runs. When
/// the client goes away, the stream and with it the job's receiver are dropped, which
/// the worker sees at its next token and stops.
fn sse(
    rx: UnboundedReceiver<Event>,
    first: Vec<String>,
    render: impl FnMut(Event) -> Vec<String> + Send + 'static,
) -> Response {
    struct St<R> {
        rx: UnboundedReceiver<Event>,
        pending: VecDeque<String>,
        render: R,
        done: bool,
    }
    let st = St { rx, pending: first.into(), render, done: false };
    let stream = futures_util::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(d) = st.pending.pop_front() {
                return Some((Ok::<_, Infallible>(SseEvent::default().data(d)), st));
            }
            if st.done {
                return None;
            }
            let event = st.rx.recv().await;
            let end = !matches!(event, Some(Event::Token { .. }));
            match event {
                Some(e) => st.pending.extend((st.render)(e)),
                None => st.pending.push_back(data(
                    &ApiError::engine("the worker stopped before the answer was complete").body_object(),
                )),
            }
            if end {
                st.pending.push_back("[DONE]".into());
                st.done = true;
            }
        }
    });
    sse_response(stream)
}

fn sse_response(stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static) -> Response {
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(5))).into_response()
}

impl App {
    /// Dory's figures of a finished generation.
    pub(crate) fn summary(&self, s: &Summary) -> DorySummary {
        let decode_s = s.decode.as_secs_f64();
        let n = s.passes.len();
        DorySummary {
            passes: s.passes.clone(),
            mean_passes: s.passes.iter().sum::<usize>() as f64 / n.max(1) as f64,
            max_passes: self.model.config.passes,
            attention: self.facts.attention,
            cache_bytes: s.cache_bytes,
            prefill_ms: s.prefill.as_secs_f64() * 1e3,
            decode_ms: decode_s * 1e3,
            // The decoding loop samples every token and runs a step for each but the last.
            tokens_per_second: if decode_s > 0.0 { n as f64 / decode_s } else { 0.0 },
            queue_ms: s.queued.as_secs_f64() * 1e3,
        }
    }
}
