//! A database an earlier palgraph build wrote upgrades in place under this one, on SQLite
//! and Postgres. `tests/upgrade/` holds one of each, written by palgraph 0.1.0 with its
//! migrations recorded as that build applied them (`write_databases.py` writes them with
//! any palgraph binary): the `approval` graph's thread `…0a` waits at its prompt, PalAssist's
//! thread `…0b` has its answer, and the store holds an item under `notes`.
//!
//! This build starts on it without running a recorded migration again, and its
//! conversations go on where they were: the prompt is answered and the draft published,
//! PalAssist takes the next turn with the earlier one in its history, the item is read.

use std::collections::BTreeMap;

use crate::common;
use common::{Backend, SseEvent, TestServer};
use palgraph::testkit::backends::{temp_db_path, PgSchema};
use serde_json::{json, Value};

const PAUSED: &str = "0193a9c4-0000-7000-8000-00000000000a";
const ANSWERED: &str = "0193a9c4-0000-7000-8000-00000000000b";
/// The schema `tests/upgrade/postgres.dump` was dumped from.
const DUMPED_SCHEMA: &str = "palgraph_release";

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/upgrade")
        .join(name)
}

/// Each scope's recorded migrations: version -> checksum.
type Recorded = BTreeMap<String, BTreeMap<i64, String>>;

fn recorded(rows: Vec<(String, i64, String)>) -> Recorded {
    let mut out = Recorded::new();
    for (scope, version, checksum) in rows {
        out.entry(scope).or_default().insert(version, checksum);
    }
    out
}

const RECORDED: &str = "SELECT scope, version, checksum FROM palgraph_migrations";

/// The newest version of each scope this build knows, on `backend`.
fn supported(backend: Backend) -> BTreeMap<String, i64> {
    [
        palgraph::db::MIGRATIONS,
        palgraph_nodes::documents::MIGRATIONS,
        palgraph_server::store::MIGRATIONS,
    ]
    .iter()
    .map(|m| {
        let v = match backend {
            Backend::Sqlite => m.supported_sqlite(),
            Backend::Postgres => m.supported_postgres(),
        };
        (m.scope.to_string(), v)
    })
    .collect()
}

/// What the earlier build recorded is still recorded, checksum for checksum, and each scope
/// is at this build's newest version.
fn assert_upgraded(backend: Backend, before: &Recorded, after: &Recorded) {
    for (scope, versions) in before {
        for (v, checksum) in versions {
            assert_eq!(
                after.get(scope).and_then(|s| s.get(v)),
                Some(checksum),
                "{scope} {v} is recorded as the earlier build applied it"
            );
        }
    }
    for (scope, newest) in supported(backend) {
        let at = after
            .get(&scope)
            .and_then(|s| s.keys().max().copied())
            .unwrap_or(0);
        assert_eq!(at, newest, "{scope} is at this build's newest version");
    }
}

/// A server on a copy of the SQLite file, and the migrations recorded before and after.
async fn on_sqlite() -> (TestServer, Recorded, Recorded) {
    let path = temp_db_path();
    std::fs::copy(fixture("sqlite.db"), &path).unwrap();
    let read = || async {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let rows: Vec<(String, i64, String)> =
            sqlx::query_as(RECORDED).fetch_all(&pool).await.unwrap();
        pool.close().await;
        recorded(rows)
    };
    let before = read().await;
    let s = TestServer::start_on_sqlite(path.clone(), &[]).await;
    let after = read().await;
    (s, before, after)
}

/// A server on a fresh schema holding the Postgres dump, the schema (dropped after the
/// server), and the migrations recorded before and after.
async fn on_postgres() -> (TestServer, PgSchema, Recorded, Recorded) {
    use sqlx::Connection;
    let schema = PgSchema::create().await;
    let dump = std::fs::read_to_string(fixture("postgres.dump"))
        .unwrap()
        .replace(&format!("CREATE SCHEMA {DUMPED_SCHEMA};"), "")
        .replace(DUMPED_SCHEMA, &schema.name);
    // One connection of its own: the dump sets the session's search_path.
    let mut conn = sqlx::PgConnection::connect_with(&schema.options())
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(dump))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let pool = schema.pool(1).await;
    let read = || async {
        let rows: Vec<(String, i64, String)> =
            sqlx::query_as(RECORDED).fetch_all(&pool).await.unwrap();
        recorded(rows)
    };
    let before = read().await;
    let s = TestServer::start_on(&schema.schema_url(), &[]).await;
    let after = read().await;
    pool.close().await;
    (s, schema, before, after)
}

fn terminal(events: &[SseEvent]) -> Value {
    let ends: Vec<&Value> = events
        .iter()
        .map(|e| &e.data)
        .filter(|d| {
            ["response", "interrupt", "error", "cancelled"]
                .contains(&d["type"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(ends.len(), 1, "one terminal event: {events:?}");
    ends[0].clone()
}

async fn history(s: &TestServer, t: &str) -> Value {
    let (code, h) = s.get_json(&format!("/chat/history/{t}")).await;
    assert_eq!(code, 200, "{h}");
    h
}

fn messages(h: &Value) -> Vec<(String, String)> {
    h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The conversations the earlier build left go on under this one.
async fn conversations_go_on(s: &TestServer) {
    // The approval prompt is still pending, and answering it publishes the draft.
    let paused = history(s, PAUSED).await;
    assert_eq!(
        paused["pending_interrupt"]["interrupt_type"], "text_input",
        "{paused}"
    );
    let events = s
        .sse(s.client.post(s.url("/chat/resume")).json(&json!({
            "thread_id": PAUSED,
            "resume_value": {"type": "text_input", "value": "yes"}
        })))
        .await
        .all()
        .await;
    let end = terminal(&events);
    assert_eq!(end["type"], "response", "{end}");
    assert!(
        end["response"].as_str().unwrap().contains("otters"),
        "the published draft is the one written before: {end}"
    );
    assert!(history(s, PAUSED).await["pending_interrupt"].is_null());

    // PalAssist's thread takes another turn, with the earlier turn in its history.
    let before = messages(&history(s, ANSWERED).await);
    assert_eq!(before.len(), 2, "{before:?}");
    assert!(before[0].1.contains("retention period"), "{before:?}");
    let events = s
        .sse(s.client.post(s.url("/chat")).json(&json!({
            "thread_id": ANSWERED,
            "message": "And how long are recorded telephone calls kept?"
        })))
        .await
        .all()
        .await;
    let end = terminal(&events);
    assert_eq!(end["type"], "response", "{end}");
    let after = messages(&history(s, ANSWERED).await);
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after[..2], before[..]);

    // The store's item.
    let (code, item) = s.get_json("/store/items?namespace=notes&key=kept").await;
    assert_eq!(code, 200, "{item}");
    assert_eq!(item["value"]["text"], "written before");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_from_an_earlier_build_upgrades_in_place_and_its_conversations_go_on() {
    let (s, before, after) = on_sqlite().await;
    assert!(!before.is_empty());
    assert_upgraded(Backend::Sqlite, &before, &after);
    conversations_go_on(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_schema_from_an_earlier_build_upgrades_in_place_and_its_conversations_go_on() {
    let (s, schema, before, after) = on_postgres().await;
    assert!(!before.is_empty());
    assert_upgraded(Backend::Postgres, &before, &after);
    conversations_go_on(&s).await;
    drop(s);
    drop(schema);
}

/// A database a newer build has migrated further stops this one at start, with one line
/// that says why, and is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_ahead_of_this_build_is_refused_at_start_and_left_alone() {
    let path = temp_db_path();
    std::fs::copy(fixture("sqlite.db"), &path).unwrap();
    let url = format!("sqlite://{}", path.display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO palgraph_migrations (scope, version, name, checksum)
         VALUES ('server', 999, 'from a newer build', '')",
    )
    .execute(&pool)
    .await
    .unwrap();
    let before: Vec<(String, i64, String)> =
        sqlx::query_as(RECORDED).fetch_all(&pool).await.unwrap();
    pool.close().await;

    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_palgraph"))
        .arg("serve")
        .env("PALGRAPH_PORT", "0")
        .env("PALGRAPH_DB", &path)
        .env("RUST_LOG", "error")
        .env_remove("DATABASE_URL")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("999")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("newer than this binary") && said[0].matches("999").count() == 1,
        "the reason once: {stderr}"
    );

    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let after: Vec<(String, i64, String)> =
        sqlx::query_as(RECORDED).fetch_all(&pool).await.unwrap();
    pool.close().await;
    assert_eq!(recorded(before), recorded(after));
    palgraph::testkit::backends::remove_sqlite_files(&path);
}
