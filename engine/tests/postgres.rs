//! The shared suite on the Postgres checkpointer (a fresh schema per test).

palgraph::checkpointer_suite!(palgraph::testkit::backends::postgres);
