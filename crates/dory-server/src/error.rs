//! Errors as clients see them: an HTTP status and OpenAI's error object, naming the
//! request field at fault (`param`) where there is one.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::openai::{ErrorBody, ErrorObject};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: Option<&'static str>,
}

impl ApiError {
    /// A 400 for a request field that breaks a rule.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some(param.into()),
            code: None,
        }
    }

    /// A 400 for an OpenAI feature this server does not implement.
    pub fn unsupported(param: &str, what: &str) -> ApiError {
        ApiError::invalid(param, format!("`{param}`: {what} is not supported by dory serve"))
            .code("unsupported_parameter")
    }

    pub fn code(mut self, code: &'static str) -> ApiError {
        self.code = Some(code);
        self
    }

    pub fn status(mut self, status: StatusCode) -> ApiError {
        self.status = status;
        self
    }

    /// A 400 for a body that is not what the endpoint reads, with no one field to blame.
    pub fn body(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: None,
        }
    }

    /// Every worker busy and the queue full: the client should retry later.
    pub fn busy(queue: usize) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!(
                "the server is busy: every worker is generating and the queue of {queue} waiting requests is \
                 full; retry later (dory serve --parallel/--queue raise the limits)"
            ),
            kind: "server_error",
            param: None,
            code: Some("queue_full"),
        }
    }

    /// Past the bound on open connections, every path but `/health` gets this.
    pub fn busy_connections() -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the server holds as many connections as it serves (dory serve --max-connections); this one \
                      may only ask /health: retry later"
                .into(),
            kind: "server_error",
            param: None,
            code: Some("too_many_connections"),
        }
    }

    /// A /v1 request without the server's API key.
    pub fn unauthorized(message: &str) -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: Some("invalid_api_key"),
        }
    }

    /// The engine failed while running a request that was valid.
    pub fn engine(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: Some("engine_error"),
        }
    }

    pub fn body_object(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorObject {
                message: self.message.clone(),
                kind: self.kind,
                param: self.param.clone(),
                code: self.code,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body_object())).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        response
    }
}
