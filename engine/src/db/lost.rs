//! Connections a database restart ended, left out before they are used.
//!
//! Neither the pools opened by [`super::open_postgres_as`] nor the [`super::reuse::Reused`]
//! connections ping a connection before each use (a round trip per statement); a connection
//! that died while idle is found by the statement that uses it, which then fails. When a
//! process sees its database go away (the server keeps a listening connection that notices
//! at once), it calls [`connections_lost`]: from then on those pools close, rather than
//! lend, every connection opened before that moment, and the reused connections are
//! replaced by fresh ones. A restart thus costs each connection one reconnect, and no
//! statement run once the database is back fails on a connection the restart ended.
//!
//! The mark is the process's: every such pool and set of reused connections in it is
//! affected (one on another database reopens its connections once, which costs nothing but
//! the reconnects).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// When connections were last lost: nanoseconds after [`origin`], plus one (0: never).
static LOST_AT: AtomicU64 = AtomicU64::new(0);

/// The instant marks count from.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Marks the connections opened until now as lost: pools opened by
/// [`super::open_postgres_as`] close them instead of lending them, and
/// [`super::reuse::Reused`] replaces them.
pub fn connections_lost() {
    let since = u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
    LOST_AT.fetch_max(since + 1, Ordering::AcqRel);
    eprintln!("DEBUGMARK {since}");
}

/// Whether a connection opened `age` ago was opened before connections were last lost.
#[cfg(feature = "postgres")]
pub(crate) fn aged_before_loss(age: Duration) -> bool {
    // Opened before this process's clock began: before any mark too.
    Instant::now()
        .checked_sub(age)
        .is_none_or(opened_before_loss)
}

/// Whether a connection opened at `opened` was opened before connections were last lost.
pub(crate) fn opened_before_loss(opened: Instant) -> bool {
    let lost = LOST_AT.load(Ordering::Acquire);
    if lost == 0 {
        return false;
    }
    opened <= origin() + Duration::from_nanos(lost - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_opened_before_the_mark_are_lost_and_later_ones_are_not() {
        let before = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        connections_lost();
        assert!(opened_before_loss(before));
        std::thread::sleep(Duration::from_millis(2));
        assert!(!opened_before_loss(Instant::now()), "opened after the mark");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_connection_is_aged_before_the_mark_by_its_age() {
        connections_lost();
        assert!(aged_before_loss(Duration::from_secs(3600)));
        std::thread::sleep(Duration::from_millis(2));
        assert!(!aged_before_loss(Duration::ZERO));
    }
}
