//! The parts of the Agent Server API palgraph does not serve: each answers 501 with a JSON
//! error that says so.

use aide::generate::GenContext;
use aide::openapi::{Operation, Response as DocResponse, StatusCode as DocStatus};
use aide::OperationOutput;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::api::openapi::{json_response, ErrorBody};

/// A 501 with a JSON error naming the part of the Agent Server API palgraph lacks.
pub(crate) struct NotSupported(pub(crate) &'static str);

impl IntoResponse for NotSupported {
    fn into_response(self) -> Response {
        (
            StatusCode::NOT_IMPLEMENTED,
            Json(json!({
                "detail": format!("{} is not supported by palgraph", self.0),
                "code": "not_supported",
            })),
        )
            .into_response()
    }
}

impl OperationOutput for NotSupported {
    type Inner = ErrorBody;

    fn operation_response(ctx: &mut GenContext, _operation: &mut Operation) -> Option<DocResponse> {
        Some(json_response(ctx, "Not supported by palgraph"))
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<DocStatus>, DocResponse)> {
        Self::operation_response(ctx, operation)
            .map(|r| vec![(Some(DocStatus::Code(501)), r)])
            .unwrap_or_default()
    }
}
