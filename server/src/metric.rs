//! The names of the server's metrics. Code anywhere in the server records them through the
//! [`metrics`] facade; [`crate::prometheus`] describes and renders them.

/// Runs claimed after their lease lapsed (counter).
pub const LEASE_TAKEOVERS: &str = "palgraph_run_lease_takeovers_total";
/// Seconds of a run's claim, by graph and final status (histogram).
pub const RUN_SECONDS: &str = "palgraph_run_duration_seconds";
/// Event streams open (gauge).
pub const SSE_STREAMS: &str = "palgraph_sse_streams";
/// Rows one commit carried (histogram).
pub const BATCH_SIZE: &str = "palgraph_group_commit_batch_size";
/// HTTP requests (counter).
pub const HTTP_REQUESTS: &str = "palgraph_http_requests_total";
/// HTTP request durations (histogram).
pub const HTTP_SECONDS: &str = "palgraph_http_request_duration_seconds";
