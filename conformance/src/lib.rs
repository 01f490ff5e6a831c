//! The conformance suites of palgraph: the cases every checkpointer and every long-term
//! store must pass, as LangGraph's `checkpoint-conformance` is for its savers. palgraph's
//! memory, SQLite and Postgres backends run them; a backend of your own runs them the same
//! way, from its tests:
//!
//! ```
//! # fn main() {}
//! // tests/conformance.rs of a crate with a checkpointer of its own (palgraph's in-memory
//! // one stands in for it here).
//! use std::sync::Arc;
//!
//! async fn fresh() -> Arc<dyn palgraph::Checkpointer> {
//!     Arc::new(palgraph::MemoryCheckpointer::new())
//! }
//!
//! palgraph_conformance::checkpointer_suite!(fresh);
//! ```
//!
//! [`checkpointer_suite!`] expands to one `#[tokio::test]` per case, each on a fresh
//! checkpointer: the engine's behaviour on top of it (interrupts and resumes, durable steps,
//! `Send`, subgraphs, retries, crashes in the middle of a step) and storage itself
//! (round trips, history, pending writes, conflicts between racing writers, fencing,
//! threads copied, pruned and deleted). [`store_suite!`] does the same for a
//! [`palgraph::store::Store`] (the book's guide "A checkpointer or store of your own" shows
//! both). Each case is also a public `async fn` in its module, to run alone.

/// The engine the cases run on, for the macros.
#[doc(hidden)]
pub use palgraph;

pub mod breakpoint_cases;
pub mod cache_cases;
pub mod claim_cases;
pub mod defer_cases;
pub mod engine_cases;
pub mod entrypoint_cases;
pub mod failure_cases;
pub mod fencing_cases;
pub mod input_cases;
pub mod interrupt_cases;
pub mod observe_cases;
pub mod recovery_cases;
pub mod send_cases;
pub mod step_cases;
pub mod storage_cases;
pub mod store_cases;
pub mod store_search_cases;
pub mod subgraph_cases;
pub mod thread_cases;

/// Expands to one `#[tokio::test]` per case, each getting a fresh checkpointer from
/// `$factory` (an `async` closure or fn returning `Arc<dyn Checkpointer>`).
#[macro_export]
macro_rules! checkpointer_suite {
    ($factory:expr) => {
        $crate::checkpointer_suite!(@cases $factory;
            engine_cases::transient_fields_reset_and_persistent_fields_survive_three_turns,
            engine_cases::add_messages_replaces_by_id_and_removes,
            engine_cases::parallel_branches_merge_the_same_way_every_time,
            step_cases::a_step_stores_the_results_its_checkpoint_will_not_hold,
            interrupt_cases::resume_reenters_node_but_not_durable_step,
            interrupt_cases::two_interrupts_in_one_node_resume_in_order,
            interrupt_cases::memo_steps_are_stored_with_an_interrupt_and_only_then,
            interrupt_cases::a_retried_node_gets_its_memo_back,
            interrupt_cases::parallel_interrupts_are_answered_by_id,
            interrupt_cases::resume_with_nothing_pending_is_refused_and_changes_nothing,
            interrupt_cases::a_resume_from_the_cached_head_reads_nothing_and_a_stale_copy_is_not_trusted,
            recovery_cases::cancel_mid_run_keeps_last_checkpoint_and_ends_cancelled,
            engine_cases::recursion_limit_is_a_typed_error,
            engine_cases::fork_from_old_checkpoint_leaves_history_intact,
            engine_cases::a_turn_from_an_input_checkpoint_replaces_its_input,
            engine_cases::event_order_for_a_five_node_graph,
            interrupt_cases::finished_sibling_is_not_rerun_after_an_interrupt,
            recovery_cases::retry_policy_retries_transient_errors_only,
            engine_cases::conflicting_overwrites_in_one_step_fail,
            engine_cases::command_goto_overrides_edges,
            recovery_cases::failed_turn_is_not_carried_forward,
            engine_cases::update_state_as_node_plans_its_successors,
            engine_cases::join_waits_for_every_source,
            recovery_cases::crash_mid_node_recovers_without_repeating_steps,
            interrupt_cases::new_turn_abandons_a_pending_interrupt,
            recovery_cases::node_error_fails_with_typed_error_and_keeps_checkpoint,
            engine_cases::state_cache_follows_writes_of_other_instances,
            engine_cases::a_turn_reads_storage_only_when_its_bet_is_wrong,
            engine_cases::the_values_a_run_completed_with_need_no_read,
            breakpoint_cases::interrupt_before_stops_with_next_set_and_continue_runs_on,
            breakpoint_cases::interrupt_after_stops_and_update_state_between_is_kept,
            breakpoint_cases::a_retry_of_the_stopped_run_stops_again_and_bad_names_are_refused,
            send_cases::map_reduce_jokes_fold_in_send_order,
            send_cases::an_interrupt_in_one_of_ten_sends_reruns_only_that_one,
            send_cases::a_node_sends_with_a_command_and_bad_sends_fail,
            send_cases::a_crash_in_one_of_ten_sends_reruns_only_that_one,
            send_cases::a_step_runs_at_most_max_concurrency_tasks_at_once,
            send_cases::a_step_over_the_send_limit_fails_and_a_command_over_it_is_refused,
            defer_cases::a_deferred_node_runs_once_after_every_branch,
            defer_cases::a_waiting_deferred_node_survives_a_stop,
            cache_cases::a_cached_node_does_not_run_again_for_the_same_input,
            cache_cases::cache_entries_expire_and_custom_keys_apply,
            cache_cases::sends_are_cached_by_their_own_input,
            subgraph_cases::a_subgraph_runs_as_a_node_and_passes_interrupts_through,
            subgraph_cases::get_state_with_subgraphs_shows_the_inner_states_and_events_carry_namespaces,
            subgraph_cases::a_subgraph_node_hands_off_to_a_parent_node_with_command_to_parent,
            subgraph_cases::a_crash_inside_a_subgraph_continues_it_without_repeating_finished_nodes,
            subgraph_cases::a_supervisor_routes_between_two_sub_agent_subgraphs,
            subgraph_cases::a_copied_thread_resumes_inside_its_subgraph_and_delete_takes_namespaces,
            entrypoint_cases::an_entrypoint_is_durable_interruptible_and_sees_its_previous_result,
            failure_cases::a_panicking_node_fails_the_run_with_a_panic_error,
            failure_cases::a_value_that_does_not_encode_is_an_encode_error,
            failure_cases::a_settled_failed_turn_keeps_what_it_was_given_and_the_next_turn_follows,
            input_cases::check_input_refuses_what_a_run_refuses_and_changes_nothing,
            input_cases::a_resume_keyed_by_interrupt_ids_is_normalized_and_runs,
            input_cases::every_dyn_input_round_trips_through_json,
            claim_cases::a_claiming_put_hands_the_thread_over_with_its_checkpoint,
            claim_cases::a_run_claims_its_thread_before_any_node_and_a_superseded_claim_runs_nothing,
            fencing_cases::a_superseded_fence_refuses_puts_and_pending_writes,
            fencing_cases::a_run_whose_thread_was_handed_on_stops_and_writes_nothing_more,
            fencing_cases::an_unavailable_dependency_stops_the_run_without_a_failure,
            fencing_cases::a_failure_recorded_after_the_fact_is_not_carried_forward,
            storage_cases::every_reducer_round_trips_through_storage,
            storage_cases::history_is_newest_first_with_before_and_limit,
            storage_cases::history_filters_on_metadata,
            storage_cases::pending_writes_are_idempotent_and_per_checkpoint,
            storage_cases::unchanged_fields_are_not_written_again,
            storage_cases::put_with_stale_head_is_a_conflict,
            storage_cases::racing_writers_cannot_corrupt_the_chain,
            storage_cases::simultaneous_puts_are_each_durable_or_a_conflict,
            storage_cases::unicode_and_a_five_megabyte_field_round_trip,
            storage_cases::thousand_turns_on_one_thread,
            storage_cases::concurrent_threads_do_not_interfere,
            thread_cases::delete_thread_removes_everything,
            thread_cases::copy_thread_copies_history_and_leaves_source,
            thread_cases::delete_for_runs_keeps_chains_of_later_runs,
            thread_cases::prune_keep_latest_keeps_state_intact,
            thread_cases::prune_newer_than_keeps_recent_history_readable,
            thread_cases::missing_thread_and_checkpoint_read_as_none,
            observe_cases::each_step_records_its_tasks_timing_attempts_and_llm_calls,
            observe_cases::a_resumed_step_records_every_task_once,
            observe_cases::an_llm_call_in_a_subgraph_counts_for_its_subgraph_node,
        );
    };
    (@cases $factory:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let cp: std::sync::Arc<dyn $crate::palgraph::Checkpointer> = ($factory)().await;
                $crate::$module::$case(cp).await;
            }
        )*
    };
}
