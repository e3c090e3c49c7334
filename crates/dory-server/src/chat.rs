//! The chat template: how a list of messages becomes one prompt for a base model.
//!
//! A base model has seen text, not roles, so the template is plain text a reader would
//! understand (docs/SERVER.md shows it):
//!
//! ```text
//! {each system or developer message}\n\n
//! User: {content}\n
//! Assistant: {content}\n
//! …
//! Assistant:
//! ```
//!
//! Generation stops before the model starts the user's next turn (`STOP`).

use serde_json::Value;

use crate::error::ApiError;
use crate::openai::Message;

/// Stop strings every chat request gets, besides the client's own.
pub const STOP: &[&str] = &["\nUser:"];

/// The prompt text of `messages`.
pub fn render(messages: &[Message]) -> Result<String, ApiError> {
    if messages.is_empty() {
        return Err(ApiError::invalid("messages", "`messages` must hold at least one message"));
    }
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        let content = text_of(&m.content, i)?;
        match m.role.as_str() {
            "system" | "developer" => {
                out.push_str(content.trim_end());
                out.push_str("\n\n");
            }
            "user" => out.push_str(&format!("User: {}\n", content.trim())),
            "assistant" => out.push_str(&format!("Assistant: {}\n", content.trim())),
            other => {
                return Err(ApiError::invalid(
                    format!("messages[{i}].role"),
                    format!(
                        "messages[{i}].role is {other:?}; dory serve takes system, developer, user and assistant \
                         messages (no tools)"
                    ),
                ))
            }
        }
    }
    out.push_str("Assistant:");
    Ok(out)
}

/// A message's text: a string, null (an empty message), or a list of text parts.
fn text_of(content: &Value, i: usize) -> Result<String, ApiError> {
    let param = format!("messages[{i}].content");
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => {
            let mut text = String::new();
            for (j, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text").and_then(Value::as_str)) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    _ => {
                        return Err(ApiError::invalid(
                            format!("{param}[{j}]"),
                            format!("{param}[{j}] must be {{\"type\": \"text\", \"text\": …}}: only text is supported"),
                        ))
                    }
                }
            }
            Ok(text)
        }
        other => Err(ApiError::invalid(
            param.clone(),
            format!("{param} must be a string or a list of text parts, got {}", crate::params::json_kind(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn msgs(v: Value) -> Vec<Message> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn renders_roles_in_order_and_ends_with_the_assistant_cue() {
        let m = msgs(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": " Hi there "},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": [{"type": "text", "text": "Who "}, {"type": "text", "text": "are you?"}]}
        ]));
        assert_eq!(
            render(&m).unwrap(),
            "Be brief.\n\nUser: Hi there\nAssistant: Hello.\nUser: Who are you?\nAssistant:"
        );
        assert_eq!(render(&msgs(json!([{"role": "user", "content": null}]))).unwrap(), "User: \nAssistant:");
    }

    #[test]
    fn refuses_what_it_cannot_render() {
        let e = render(&[]).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages"));
        let e = render(&msgs(json!([{"role": "tool", "content": "x"}]))).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].role"));
        let e = render(&msgs(json!([{"role": "user", "content": 5}]))).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content"));
        let e = render(&msgs(json!([{"role": "user", "content": [{"type": "image_url"}]}]))).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content[0]"));
    }
}
