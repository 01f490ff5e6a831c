//! The shared suite on the SQLite checkpointer (a fresh temporary file per test).

palgraph::checkpointer_suite!(palgraph::testkit::backends::sqlite);
