//! The OpenAI wire types, all in one file: what clients send and what they get back,
//! plus Dory's extensions (the `dory` fields), which OpenAI clients ignore.
//!
//! Requests are read in two layers from one JSON object: the kind's own body
//! (`CompletionBody`, `ChatBody`) and the `Knobs` both kinds share; serde ignores the
//! fields each layer does not know, so a client's unknown fields are ignored too.
//! Fields whose JSON type varies (`prompt`, `stop`, `content`) are kept as `Value` and
//! checked by hand so that errors can say what was expected.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Options shared by `/v1/completions` and `/v1/chat/completions`.
#[derive(Debug, Default, Deserialize)]
pub struct Knobs {
    pub max_tokens: Option<u64>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    /// A string or a list of strings.
    pub stop: Option<Value>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub n: Option<u64>,
    pub presence_penalty: Option<f32>,
    pub frequency_penalty: Option<f32>,
    pub logit_bias: Option<Value>,
    pub user: Option<String>,
    /// Dory extension: keep the K likeliest tokens (0: all).
    pub top_k: Option<u64>,
    /// Dory extension: drop tokens less likely than min_p × the likeliest.
    pub min_p: Option<f32>,
    /// Dory extension: penalise the session's last 64 tokens (1: off).
    pub repetition_penalty: Option<f32>,
    /// Dory extension: the early-exit rule, `none`, `kl:T` or `confidence:T[:MIN_PASSES]`.
    pub exit: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    pub include_usage: Option<bool>,
}

/// `/v1/completions`' own fields.
#[derive(Debug, Deserialize)]
pub struct CompletionBody {
    pub model: String,
    /// A string, a list of one string, a list of token ids, or a list of one such list.
    pub prompt: Value,
    pub echo: Option<bool>,
    pub suffix: Option<Value>,
    pub best_of: Option<u64>,
    pub logprobs: Option<Value>,
}

/// `/v1/chat/completions`' own fields.
#[derive(Debug, Deserialize)]
pub struct ChatBody {
    pub model: String,
    pub messages: Vec<Message>,
    /// The newer name of `max_tokens`.
    pub max_completion_tokens: Option<u64>,
    pub logprobs: Option<Value>,
    pub tools: Option<Value>,
    pub functions: Option<Value>,
    pub response_format: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct Message {
    pub role: String,
    /// A string, null, or a list of `{"type": "text", "text": …}` parts.
    #[serde(default)]
    pub content: Value,
}

#[derive(Debug, Serialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

/// What every answer and streamed chunk is: OpenAI's envelope around the choices `C`.
#[derive(Debug, Serialize)]
pub struct Answer<C> {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<C>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dory: Option<Dory>,
}

/// A whole `/v1/completions` answer, or one streamed chunk of it.
pub type Completion = Answer<CompletionChoice>;
/// A whole `/v1/chat/completions` answer.
pub type ChatCompletion = Answer<ChatChoice>;
/// One streamed chunk of a chat answer.
pub type ChatChunk = Answer<ChatChunkChoice>;

#[derive(Debug, Serialize)]
pub struct CompletionChoice {
    pub index: u32,
    pub text: String,
    pub logprobs: Option<()>,
    pub finish_reason: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct ChatChoice {
    pub index: u32,
    pub message: AssistantMessage,
    pub logprobs: Option<()>,
    pub finish_reason: &'static str,
}

#[derive(Debug, Serialize)]
pub struct AssistantMessage {
    pub role: &'static str,
    pub content: String,
}

#[derive(Debug, Serialize)]
pub struct ChatChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub logprobs: Option<()>,
    pub finish_reason: Option<&'static str>,
}

#[derive(Debug, Default, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// Dory's extension of a response: one token of a stream, or the whole generation's
/// figures (in a whole answer, and in the stream's chunk that carries `finish_reason`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Dory {
    Token(DoryToken),
    Summary(DorySummary),
}

#[derive(Debug, Serialize)]
pub struct DoryToken {
    /// The generated token's id.
    pub token: u32,
    /// Passes of the loop that produced it (adaptive depth: at most `max_passes`).
    pub passes: usize,
}

#[derive(Debug, Serialize)]
pub struct DorySummary {
    /// Passes used by each generated token, in order.
    pub passes: Vec<usize>,
    pub mean_passes: f64,
    /// The model's P.
    pub max_passes: usize,
    /// "exact" (every full layer keeps every position) or "o1" (spec §6).
    pub attention: &'static str,
    /// Bytes the request's caches held when it ended (keys, values and, in O(1) mode,
    /// sampled queries or landmark state), as the backend counts them.
    pub cache_bytes: u64,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    /// Generated tokens per second of decoding.
    pub tokens_per_second: f64,
    /// Milliseconds the request waited for a free worker.
    pub queue_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<ModelCard>,
}

#[derive(Debug, Serialize)]
pub struct ModelCard {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub owned_by: &'static str,
    pub dory: ModelFacts,
}

/// What the web page and clients may want to know about the served model.
#[derive(Clone, Debug, Serialize)]
pub struct ModelFacts {
    pub passes: usize,
    pub layers: Vec<&'static str>,
    pub hidden: usize,
    pub vocab_size: usize,
    pub parameters: usize,
    /// Prompt plus generated tokens, at most.
    pub max_context: usize,
    pub attention: &'static str,
    /// The config's early-exit rule, as the `exit` request field writes it.
    pub exit: String,
    pub backend: String,
}

/// OpenAI's error object: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Debug, Serialize)]
pub struct ErrorObject {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: Option<&'static str>,
}
