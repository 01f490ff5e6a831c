//! `GET /metrics`: the Prometheus text exposition of [`crate::prometheus::Metrics`].

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::AppState;
use crate::prometheus::CONTENT_TYPE;
use crate::User;

/// `GET /metrics`.
async fn scrape(State(state): State<AppState>, _user: User) -> Result<Response, ApiError> {
    let Some(metrics) = &state.metrics else {
        return Err(ApiError::NotFound(
            "metrics are turned off on this server (PALGRAPH_METRICS=false)".into(),
        ));
    };
    let graphs: Vec<String> = state.graphs.all().map(|g| g.graph_id.clone()).collect();
    let body = metrics.render(&graphs).await;
    let mut resp = body.into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    Ok(resp)
}

/// The `/metrics` route, documented.
pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/metrics",
        get_with(scrape, |o| {
            super::openapi::text_response(
                o.summary("Prometheus metrics (text exposition format)")
                    .tag("system"),
                &[CONTENT_TYPE],
                "The metrics",
            )
        }),
    )
}
