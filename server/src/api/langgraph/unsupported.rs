//! The parts of the Agent Server API palgraph does not serve yet: crons (scheduled runs).
//! Each answers 501 with a JSON error that says so.

use aide::generate::GenContext;
use aide::openapi::{Operation, Response as DocResponse, StatusCode as DocStatus};
use aide::OperationOutput;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::common::ThreadPath;
use crate::api::auth::User;
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

/// The path of a scheduled run.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct CronPath {
    /// The schedule's id.
    cron_id: String,
}

/// `/runs/crons`, `/runs/crons/search`, `/runs/crons/count`.
pub(crate) async fn crons(_user: User) -> NotSupported {
    NotSupported("crons (scheduled runs)")
}

/// `/runs/crons/{cron_id}`.
pub(crate) async fn cron(_user: User, Path(p): Path<CronPath>) -> NotSupported {
    let _ = p.cron_id;
    NotSupported("crons (scheduled runs)")
}

/// `/threads/{thread_id}/runs/crons`.
pub(crate) async fn thread_crons(_user: User, Path(_p): Path<ThreadPath>) -> NotSupported {
    NotSupported("crons (scheduled runs)")
}
