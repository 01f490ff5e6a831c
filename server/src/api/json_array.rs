//! A JSON array written out item by item as a producer makes them: the response holds one
//! item at a time (and the page its producer reads), never the whole body, and a client
//! that reads slowly slows the producer down instead of growing a buffer. It stops after
//! the item that takes it past the server's response size
//! (`PALGRAPH_MAX_RESPONSE_BYTES`) (at least one item is always sent);
//! the route says how a client asks for the rest.
//!
//! Errors before the first item are answered as usual by the handler; an error after it
//! ends the body early (the client sees a truncated array, never a well-formed short one).

use std::marker::PhantomData;

use aide::generate::GenContext;
use aide::openapi::{Operation, Response as DocResponse, StatusCode as DocStatus};
use aide::OperationOutput;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tokio::sync::mpsc;

/// Where a producer sends its items.
pub(crate) struct ArraySink {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    /// What the array is wrapped in (`{"items":` and `}`), or nothing.
    wrap: (&'static str, &'static str),
    written: usize,
    items: usize,
    max_bytes: usize,
}

/// Why a producer should stop.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The client went away.
    Gone,
    /// The response has its share of bytes.
    Full,
}

impl ArraySink {
    /// Sends one item; `Err` says to stop (the item was sent when the response is now
    /// full).
    pub(crate) async fn send(&mut self, item: &impl serde::Serialize) -> Result<(), Stop> {
        let mut bytes = Vec::with_capacity(256);
        if self.items == 0 {
            bytes.extend_from_slice(self.wrap.0.as_bytes());
            bytes.push(b'[');
        } else {
            bytes.push(b',');
        }
        let start = bytes.len();
        if serde_json::to_writer(&mut bytes, item).is_err() {
            bytes.truncate(start);
            bytes.extend_from_slice(b"null");
        }
        self.items += 1;
        self.written += bytes.len();
        self.tx
            .send(Ok(Bytes::from(bytes)))
            .await
            .map_err(|_| Stop::Gone)?;
        if self.written >= self.max_bytes {
            return Err(Stop::Full);
        }
        Ok(())
    }

    /// Bytes sent so far.
    pub(crate) fn written(&self) -> usize {
        self.written
    }

    /// Items sent so far.
    pub(crate) fn items(&self) -> usize {
        self.items
    }

    /// Ends the array.
    pub(crate) async fn finish(self) {
        let (open, close) = self.wrap;
        let end = if self.items == 0 {
            format!("{open}[]{close}")
        } else {
            format!("]{close}")
        };
        let _ = self.tx.send(Ok(Bytes::from(end))).await;
    }

    /// Ends the body with an error: the array is left unterminated.
    pub(crate) async fn fail(self, error: impl std::fmt::Display) {
        tracing::warn!(error = %error, "a streamed list failed part way");
        let _ = self
            .tx
            .send(Err(std::io::Error::other(error.to_string())))
            .await;
    }
}

/// A JSON array streamed by a producer task, documented as the JSON body `D` (the array,
/// `Vec<T>`, or the object it is wrapped in).
pub(crate) struct JsonArray<D> {
    resp: Response,
    of: PhantomData<fn() -> D>,
}

impl<D> JsonArray<D> {
    /// Starts the response and runs `produce` on its own task with the sink; the array
    /// ends when `produce` returns (it calls [`ArraySink::finish`] or [`ArraySink::fail`]).
    pub(crate) fn spawn<F, Fut>(max_bytes: usize, produce: F) -> Self
    where
        F: FnOnce(ArraySink) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        Self::spawn_wrapped(("", ""), max_bytes, produce)
    }

    /// [`JsonArray::spawn`] with the array wrapped in `wrap.0` and `wrap.1` (an object's
    /// opening up to the array's key, and its end).
    pub(crate) fn spawn_wrapped<F, Fut>(
        wrap: (&'static str, &'static str),
        max_bytes: usize,
        produce: F,
    ) -> Self
    where
        F: FnOnce(ArraySink) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        // One item in flight: the producer waits for the client.
        let (tx, mut rx) = mpsc::channel(1);
        let sink = ArraySink {
            tx,
            wrap,
            written: 0,
            items: 0,
            max_bytes: max_bytes.max(1),
        };
        tokio::spawn(produce(sink));
        let body = Body::from_stream(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        let mut resp = Response::new(body);
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        JsonArray {
            resp,
            of: PhantomData,
        }
    }
}

impl<D> IntoResponse for JsonArray<D> {
    fn into_response(self) -> Response {
        self.resp
    }
}

impl<D: schemars::JsonSchema> OperationOutput for JsonArray<D> {
    type Inner = D;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<DocResponse> {
        <Json<D> as OperationOutput>::operation_response(ctx, operation)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<DocStatus>, DocResponse)> {
        <Json<D> as OperationOutput>::inferred_responses(ctx, operation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of<T>(a: JsonArray<T>) -> Vec<u8> {
        axum::body::to_bytes(a.into_response().into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    #[tokio::test]
    async fn items_make_a_json_array_and_the_byte_cap_ends_it_after_the_crossing_item() {
        let a = JsonArray::<Vec<u32>>::spawn(1000, |mut sink| async move {
            for i in 0..3 {
                sink.send(&i).await.unwrap();
            }
            sink.finish().await;
        });
        assert_eq!(body_of(a).await, b"[0,1,2]");
        let a = JsonArray::<Vec<u32>>::spawn(1000, |sink| sink.finish());
        assert_eq!(body_of(a).await, b"[]");
        let a = JsonArray::<Vec<String>>::spawn(10, |mut sink| async move {
            let mut sent = 0;
            for _ in 0..5 {
                sent += 1;
                if sink.send(&"abcdef").await == Err(Stop::Full) {
                    break;
                }
            }
            assert_eq!(sent, 2);
            sink.finish().await;
        });
        assert_eq!(body_of(a).await, br#"["abcdef","abcdef"]"#);
    }

    #[tokio::test]
    async fn a_failure_part_way_leaves_the_array_unterminated() {
        let a = JsonArray::<Vec<u32>>::spawn(1000, |mut sink| async move {
            sink.send(&1).await.unwrap();
            sink.fail("storage went away").await;
        });
        let body = a.into_response().into_body();
        assert!(axum::body::to_bytes(body, usize::MAX).await.is_err());
    }
}
