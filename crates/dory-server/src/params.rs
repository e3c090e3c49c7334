//! From a request body to what a worker runs: parsing with errors that name the field,
//! OpenAI's ranges for the sampling options, and the context limit.

use dory::{Criterion, ExitRule, Sampling};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;
use crate::openai::Knobs;

/// The body as JSON, or a 400 that says where it stops being JSON.
pub fn json_body(bytes: &[u8]) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::body(format!("the request body is not valid JSON: {e}")).code("invalid_json"))?;
    if !value.is_object() {
        return Err(ApiError::body(format!("the request body must be a JSON object, got {}", json_kind(&value))));
    }
    Ok(value)
}

/// Reads `T` from the body, naming the field whose type is wrong or that is missing.
pub fn fields<T: DeserializeOwned>(value: &Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // A missing field's path is its parent's; the name is in serde's message.
        let missing = inner.strip_prefix("missing field `").and_then(|s| s.split('`').next()).map(str::to_string);
        let param = match (missing, path.as_str()) {
            (Some(m), ".") => m,
            (Some(m), p) => format!("{p}.{m}"),
            (None, p) => p.to_string(),
        };
        let code = if inner.starts_with("missing field") { "missing_required_parameter" } else { "invalid_type" };
        ApiError::invalid(param.clone(), format!("`{param}`: {inner}")).code(code)
    })
}

pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What a request asks for, checked, before its prompt is tokenized.
#[derive(Debug)]
pub struct Plan {
    pub max_tokens: Option<usize>,
    pub sampling: Sampling,
    pub stop: Vec<String>,
    pub exit: Option<ExitRule>,
    pub stream: bool,
    pub include_usage: bool,
}

/// Most stop strings a request may give.
const MAX_STOPS: usize = 16;

impl Plan {
    /// Checks the shared options against OpenAI's ranges (and the engine's).
    pub fn new(k: &Knobs) -> Result<Plan, ApiError> {
        if let Some(n) = k.n.filter(|&n| n != 1) {
            return Err(ApiError::unsupported("n", &format!("n = {n} (several choices per request)")));
        }
        for (name, v) in [("presence_penalty", k.presence_penalty), ("frequency_penalty", k.frequency_penalty)] {
            if let Some(v) = v.filter(|&v| v != 0.0) {
                return Err(ApiError::unsupported(name, &format!("a non-zero {name} ({v}); use repetition_penalty")));
            }
        }
        if k.logit_bias.as_ref().is_some_and(|b| !b.is_null() && b.as_object().is_none_or(|o| !o.is_empty())) {
            return Err(ApiError::unsupported("logit_bias", "logit_bias"));
        }
        let temperature = k.temperature.unwrap_or(1.0);
        if !(0.0..=2.0).contains(&temperature) {
            return Err(ApiError::invalid(
                "temperature",
                format!("temperature must be between 0 and 2, got {temperature}"),
            ));
        }
        let top_p = k.top_p.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(ApiError::invalid("top_p", format!("top_p must be in (0, 1], got {top_p}")));
        }
        let min_p = k.min_p.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&min_p) {
            return Err(ApiError::invalid("min_p", format!("min_p must be between 0 and 1, got {min_p}")));
        }
        let repetition_penalty = k.repetition_penalty.unwrap_or(1.0);
        if !(repetition_penalty > 0.0 && repetition_penalty <= 10.0) {
            return Err(ApiError::invalid(
                "repetition_penalty",
                format!("repetition_penalty must be in (0, 10], got {repetition_penalty}"),
            ));
        }
        let max_tokens = match k.max_tokens {
            Some(0) => return Err(ApiError::invalid("max_tokens", "max_tokens must be ≥ 1, got 0")),
            Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => None,
        };
        let sampling = Sampling {
            temperature,
            top_k: usize::try_from(k.top_k.unwrap_or(0)).unwrap_or(usize::MAX),
            top_p,
            min_p,
            repetition_penalty,
            // Without a seed each request draws its own, as OpenAI's API does.
            seed: k.seed.unwrap_or_else(fresh_seed),
        };
        sampling.validate().map_err(|e| ApiError::body(e.to_string()))?;
        let exit = k.exit.as_deref().map(parse_exit).transpose()?;
        Ok(Plan {
            max_tokens,
            sampling,
            stop: stops(k.stop.as_ref())?,
            exit,
            stream: k.stream.unwrap_or(false),
            include_usage: k.stream_options.as_ref().and_then(|o| o.include_usage).unwrap_or(false),
        })
    }
}

/// `stop`: absent, null, a string, or a list of strings.
fn stops(v: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let list = match v {
        None | Some(Value::Null) => vec![],
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str().map(str::to_string).ok_or_else(|| {
                    ApiError::invalid(format!("stop[{i}]"), format!("stop[{i}] must be a string, got {}", json_kind(s)))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(ApiError::invalid(
                "stop",
                format!("stop must be a string or a list of strings, got {}", json_kind(other)),
            ))
        }
    };
    if list.len() > MAX_STOPS {
        return Err(ApiError::invalid("stop", format!("stop holds {} strings; at most {MAX_STOPS}", list.len())));
    }
    Ok(list)
}

/// The `exit` extension: `none`, `kl:T` or `confidence:T`, optionally `…:MIN_PASSES`.
pub fn parse_exit(text: &str) -> Result<ExitRule, ApiError> {
    text.parse().map_err(|e: dory::Error| ApiError::invalid("exit", e.to_string()))
}

/// How the `exit` field writes `rule`.
pub fn exit_text(rule: &ExitRule) -> String {
    let name = match rule.criterion {
        Criterion::None => return "none".into(),
        Criterion::Kl => "kl",
        Criterion::Confidence => "confidence",
    };
    format!("{name}:{}:{}", rule.threshold, rule.min_passes)
}

fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS once per process and varies per instance.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    h.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn knobs(v: Value) -> Result<Plan, ApiError> {
        Plan::new(&fields::<Knobs>(&v)?)
    }

    #[test]
    fn defaults_follow_openai() {
        let p = knobs(json!({})).unwrap();
        assert_eq!((p.sampling.temperature, p.sampling.top_p, p.sampling.top_k, p.sampling.min_p), (1.0, 1.0, 0, 0.0));
        assert_eq!((p.max_tokens, p.stream, p.include_usage, p.exit), (None, false, false, None));
        assert_ne!(knobs(json!({})).unwrap().sampling.seed, p.sampling.seed, "each request draws a seed");
        let p =
            knobs(json!({"seed": 7, "stop": "x", "stream": true, "stream_options": {"include_usage": true}})).unwrap();
        assert_eq!((p.sampling.seed, p.stop, p.stream, p.include_usage), (7, vec!["x".to_string()], true, true));
    }

    #[test]
    fn each_bad_option_is_named() {
        for (body, param) in [
            (json!({"temperature": 2.5}), "temperature"),
            (json!({"temperature": -1}), "temperature"),
            (json!({"temperature": "hot"}), "temperature"),
            (json!({"top_p": 0}), "top_p"),
            (json!({"top_p": 1.5}), "top_p"),
            (json!({"min_p": 2}), "min_p"),
            (json!({"repetition_penalty": 0}), "repetition_penalty"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"max_tokens": -3}), "max_tokens"),
            (json!({"seed": 1.5}), "seed"),
            (json!({"stop": 3}), "stop"),
            (json!({"stop": ["a", 3]}), "stop[1]"),
            (json!({"stop": vec!["s"; 17]}), "stop"),
            (json!({"n": 2}), "n"),
            (json!({"presence_penalty": 0.5}), "presence_penalty"),
            (json!({"logit_bias": {"5": 1}}), "logit_bias"),
            (json!({"exit": "kl"}), "exit"),
            (json!({"exit": "entropy:1"}), "exit"),
            (json!({"stream": "yes"}), "stream"),
            (json!({"stream_options": {"include_usage": 1}}), "stream_options.include_usage"),
        ] {
            let e = knobs(body.clone()).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
            assert_eq!(e.status.as_u16(), 400);
        }
    }

    #[test]
    fn exit_rules_round_trip() {
        for text in ["none", "kl:0.05:1", "confidence:0.9:2"] {
            assert_eq!(exit_text(&parse_exit(text).unwrap()), text);
        }
        assert_eq!(parse_exit("kl:0.5").unwrap().min_passes, 1);
        for bad in ["", "kl:-1", "kl:x", "confidence:0.5:0", "none:1", "kl:1:2:3"] {
            assert!(parse_exit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn missing_fields_are_named() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Need {
            prompt: String,
        }
        let e = fields::<Need>(&json!({})).unwrap_err();
        assert_eq!((e.param.as_deref(), e.code), (Some("prompt"), Some("missing_required_parameter")));
    }
}
