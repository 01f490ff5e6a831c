//! The long-term store's conformance suite on its three backends.

mod memory {
    palgraph::store_suite!(palgraph::testkit::backends::memory_store);
}

mod sqlite {
    palgraph::store_suite!(palgraph::testkit::backends::sqlite_store);
}

mod postgres {
    palgraph::store_suite!(palgraph::testkit::backends::postgres_store);
}
