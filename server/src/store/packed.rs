//! How a run-event row's content is stored: its JSON text compressed with zstd, in the
//! `packed` column (migration 7). A PalAssist chat turn's events (one row of about 1.2 KB of
//! JSON) take about 0.7 KB this way; Postgres would not compress them itself, as it only
//! compresses rows past 2 KB.
//!
//! The first byte says how the rest is written: [`ZSTD`] (zstd, level [`LEVEL`]) or
//! [`PLAIN`] (the JSON text as it is: a short row, a terminal event alone, is smaller so than
//! with zstd's frame around it). Rows written before migration 7 keep their JSON in the
//! `event` column and are read from there ([`stored_event`]).

use std::cell::RefCell;

use serde_json::Value;

use super::StoreError;

/// The rest is the event's JSON text.
const PLAIN: u8 = 0;
/// The rest is a zstd frame of the event's JSON text.
const ZSTD: u8 = 1;
/// zstd's level: at a row's size, higher levels gain a few bytes for several times the time.
const LEVEL: i32 = 3;
/// The largest JSON text a stored row may decompress to (a row is a run's events of one
/// flush window: far smaller; this bounds what a corrupt row can make us allocate).
const MAX_TEXT: usize = 64 << 20;

thread_local! {
    /// This thread's compression context: making one costs more than compressing a row.
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> =
        RefCell::new(zstd::bulk::Compressor::new(LEVEL).ok());
}

/// A stored row's content, compressed when that makes it smaller.
pub(crate) fn pack(event: &Value) -> Vec<u8> {
    let text = event.to_string();
    let compressed = COMPRESSOR
        .with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            c.as_mut()?.compress(text.as_bytes()).ok()
        })
        .filter(|z| z.len() < text.len());
    let (tag, body) = match &compressed {
        Some(z) => (ZSTD, z.as_slice()),
        None => (PLAIN, text.as_bytes()),
    };
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(tag);
    out.extend_from_slice(body);
    out
}

/// [`pack`] as base64: a row carried in a JSON batch to Postgres, which stores it with
/// `decode(…, 'base64')`.
pub(crate) fn pack_base64(event: &Value) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(pack(event))
}

/// The JSON a [`pack`]ed row holds.
pub(crate) fn unpack(packed: &[u8]) -> Result<Value, StoreError> {
    let bad = |why: String| StoreError::Decode(format!("stored run event: {why}"));
    let (tag, body) = packed.split_first().ok_or_else(|| bad("empty".into()))?;
    let text = match *tag {
        PLAIN => body.to_vec(),
        ZSTD => {
            // The frame says how long the text is (zstd writes it); at most MAX_TEXT.
            let size = zstd::zstd_safe::get_frame_content_size(body)
                .ok()
                .flatten()
                .map_or(MAX_TEXT, |n| {
                    usize::try_from(n).unwrap_or(MAX_TEXT).min(MAX_TEXT)
                });
            zstd::bulk::decompress(body, size).map_err(|e| bad(e.to_string()))?
        }
        other => return Err(bad(format!("unknown format {other}"))),
    };
    serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))
}

/// A stored row's content, from whichever column holds it: `packed` (rows written since
/// migration 7) or `event` (rows written before it, as JSON).
pub fn stored_event(event: Option<Value>, packed: Option<&[u8]>) -> Result<Value, StoreError> {
    match (packed, event) {
        (Some(p), _) => unpack(p),
        (None, Some(e)) => Ok(e),
        (None, None) => Err(StoreError::Decode("a run event row without content".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_read_back_as_written_compressed_when_smaller() {
        let long = json!([["r", "turn"], ["d", "n", "m", "word ".repeat(200), [5, 10]],
                          {"type": "completed", "checkpoint_id": "c"}]);
        let packed = pack(&long);
        assert_eq!(packed[0], ZSTD);
        assert!(
            packed.len() < long.to_string().len() / 3,
            "{}",
            packed.len()
        );
        assert_eq!(unpack(&packed).unwrap(), long);

        let short = json!({"type": "completed"});
        let packed = pack(&short);
        assert_eq!(packed[0], PLAIN);
        assert_eq!(packed.len(), short.to_string().len() + 1);
        assert_eq!(unpack(&packed).unwrap(), short);

        // NUL is kept: the bytes are not JSONB, which refuses it.
        let nul = json!(["s", "n", "a\u{0}b".repeat(50)]);
        assert_eq!(unpack(&pack(&nul)).unwrap(), nul);
    }

    #[test]
    fn old_rows_read_from_their_json_and_bad_rows_are_errors() {
        let old = json!({"type": "status"});
        assert_eq!(stored_event(Some(old.clone()), None).unwrap(), old);
        assert!(stored_event(None, None).is_err());
        for bad in [
            &[][..],
            &[7, 1, 2][..],
            &[ZSTD, 1, 2, 3][..],
            &[PLAIN, b'{'][..],
        ] {
            assert!(unpack(bad).is_err(), "{bad:?}");
        }
    }
}
