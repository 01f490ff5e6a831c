//! The shared suite on the in-memory checkpointer.

use std::sync::Arc;

use palgraph::MemoryCheckpointer;

async fn memory() -> Arc<dyn palgraph::Checkpointer> {
    Arc::new(MemoryCheckpointer::new())
}

palgraph_conformance::checkpointer_suite!(memory);
