//! Other processes' announcements on Postgres (LISTEN/NOTIFY), and what the listening
//! connection tells besides: that the database went away. The moment it drops, the
//! connections opened until then are marked lost ([`palgraph::db::connections_lost`]), so
//! the pool opens fresh ones instead of lending those a restart ended; once a new listening
//! connection is up, the ones opened while none listened are marked too (a restart no
//! listener saw may have ended them).

use std::time::Duration;

use sqlx::postgres::{PgListener, PgNotification};
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::Notification;

/// The channels other processes announce on.
const CHANNELS: [&str; 4] = [
    "palgraph_events",
    "palgraph_cancel",
    "palgraph_runs",
    "palgraph_started",
];

/// How often the database is looked for while it is away.
const RECONNECT_EVERY: Duration = Duration::from_millis(50);

/// How long one look for the database may take (an unreachable host answers nothing).
const LOOK_WITHIN: Duration = Duration::from_secs(10);

/// A listening connection on every channel.
async fn subscribe(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    // A lost connection is reported at once rather than after connecting again (which
    // waits for the database to be back): the loss is marked before a request can be
    // served on a connection it ended.
    listener.eager_reconnect(false);
    listener.listen_all(CHANNELS).await?;
    Ok(listener)
}

/// The announcements, as they come; `None` when listening is not possible (they are then
/// polled).
pub(super) async fn notifications(pool: &PgPool) -> Option<UnboundedReceiver<Notification>> {
    let mut listener = match subscribe(pool).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "cannot LISTEN: other replicas' events are polled");
            return None;
        }
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let pool = pool.clone();
    tokio::spawn(async move {
        loop {
            let n = match listener.try_recv().await {
                Ok(Some(n)) => announcement(&n),
                // The connection dropped: anything announced meanwhile is lost, and the
                // database may have restarted, ending every pooled connection with it.
                // Watchers look at the tables now, and again once listening is back.
                lost => {
                    palgraph::db::connections_lost();
                    let error = lost.err().map(|e| e.to_string());
                    tracing::warn!(?error, "LISTEN connection lost; reconnecting");
                    if tx.send(Notification::Lost).is_err() {
                        return;
                    }
                    match relisten(&pool, &tx).await {
                        Some(l) => listener = l,
                        None => return,
                    }
                    Notification::Lost
                }
            };
            if tx.send(n).is_err() {
                return;
            }
        }
    });
    Some(rx)
}

fn announcement(n: &PgNotification) -> Notification {
    match n.channel() {
        "palgraph_events" => Notification::Events(n.payload().to_string()),
        "palgraph_cancel" => Notification::Cancel(n.payload().to_string()),
        "palgraph_started" => Notification::Started(n.payload().to_string()),
        _ => Notification::Runs(n.payload().to_string()),
    }
}

/// A new listening connection, once the database answers again; `None` once nobody listens
/// any more or the pool is closed. The database is looked for with a connection of its own
/// every [`RECONNECT_EVERY`], not through the pool, whose connecting waits longer and longer
/// between tries: a second restart soon after the first is seen too.
async fn relisten(pool: &PgPool, tx: &UnboundedSender<Notification>) -> Option<PgListener> {
    loop {
        if tx.is_closed() || pool.is_closed() {
            return None;
        }
        let options = pool.connect_options();
        let look = PgConnection::connect_with(&options);
        match tokio::time::timeout(LOOK_WITHIN, look).await {
            Ok(Ok(back)) => {
                let _ = back.close().await;
                match subscribe(pool).await {
                    Ok(l) => {
                        palgraph::db::connections_lost();
                        return Some(l);
                    }
                    Err(e) => tracing::debug!(error = %e, "cannot LISTEN yet"),
                }
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "the database is not back yet"),
            Err(_) => tracing::debug!("the database did not answer"),
        }
        tokio::time::sleep(RECONNECT_EVERY).await;
    }
}
