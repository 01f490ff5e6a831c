//! The shared suite on the SQLite checkpointer (a fresh temporary file per test).

palgraph_conformance::checkpointer_suite!(palgraph::testkit::backends::sqlite);
