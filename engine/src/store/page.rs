//! A search's page as the SQL backends read it: the rows their query returns, in its order,
//! kept when the query's filter passes, after `offset` of them and at most `limit`; then
//! the items handed back with their scores, once their time to live has been refreshed.

use futures_util::{Stream, TryStreamExt};

use super::filter::matches;
use super::{Item, SearchItem, SearchQuery, StoreError};

/// One hit: the item, its time to live in milliseconds (when it has one, to refresh), and
/// its score.
pub(crate) type Hit = (Item, Option<i64>, Option<f64>);

/// Items with their times to live in milliseconds: what a refresh updates.
pub(crate) type Lived = Vec<(Item, Option<i64>)>;

/// The page of `query` from `rows`, each read by `hit`: the rows are read only until the
/// page is full.
pub(crate) async fn page_of<R, S>(
    mut rows: S,
    query: &SearchQuery,
    hit: impl Fn(&R) -> Result<Hit, StoreError>,
) -> Result<Vec<Hit>, StoreError>
where
    S: Stream<Item = Result<R, sqlx::Error>> + Unpin,
{
    let mut page = Vec::new();
    let mut skip = query.offset;
    while page.len() < query.limit {
        let Some(row) = rows.try_next().await? else {
            break;
        };
        let found = hit(&row)?;
        if !passes(query, &found.0) {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        page.push(found);
    }
    Ok(page)
}

/// Whether `item` passes `query`'s filter.
pub(crate) fn passes(query: &SearchQuery, item: &Item) -> bool {
    query
        .filter
        .as_ref()
        .is_none_or(|f| matches(f, &item.value))
}

/// The page's items with their times to live (what a refresh updates), and their scores.
pub(crate) fn split(page: Vec<Hit>) -> (Lived, Vec<Option<f64>>) {
    page.into_iter()
        .map(|(item, ttl, score)| ((item, ttl), score))
        .unzip()
}

/// The hits to hand back: each item, refreshed, with its score.
pub(crate) fn search_items(items: Lived, scores: Vec<Option<f64>>) -> Vec<SearchItem> {
    items
        .into_iter()
        .zip(scores)
        .map(|((item, _), score)| SearchItem { item, score })
        .collect()
}
