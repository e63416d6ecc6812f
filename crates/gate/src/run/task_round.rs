//! An approved call's run, waited on as a task, whose upstream asks a round: the round is asked
//! through the task (`input_required`, with the upstream's questions as it asked them), and the
//! host's answers, brought by `tasks/update`, carry the run on ([`crate::run::continue_run`]:
//! each round once, within the run's lease).
//!
//! A task's keys are never asked twice, and an upstream may ask the same key in two rounds, so
//! each question goes out under the gate's number for its round (`ROUND.KEY`), and the answers
//! go back to the upstream under its own keys. The round itself (the held call, its run's start,
//! the upstream's state) stays at the gate, in the fleet's records under the task, for as long
//! as the run's lease: no host ever holds it, so it is not sealed.

use std::collections::BTreeMap;

use mrtr::tasks::TaskRecord;
use records::{Records, RecordsError};
use rmcp::model::{InputRequest, InputRequiredResult, InputResponses};

use crate::run::{RUN_LEASE, RunRound};

/// The record of the round `task` waits on.
fn key(task: &TaskRecord) -> String {
    format!("gate:task-round:{}", task.id)
}

/// Keep the round the upstream asked (`asked`, its state a [`RunRound`] as the run gave it)
/// as the one `task` waits on; its questions, as the task asks them. `None` when the round is
/// not one a run gave.
pub async fn keep(
    records: &dyn Records,
    task: &TaskRecord,
    asked: InputRequiredResult,
) -> Result<Option<Vec<(String, InputRequest)>>, RecordsError> {
    let Some(round) = asked.request_state.as_deref().and_then(RunRound::decode) else { return Ok(None) };
    records.put_kept(&key(task), round.encode(), RUN_LEASE).await?;
    let questions = asked.input_requests.unwrap_or_default();
    Ok(Some(questions.into_iter().map(|(asked, question)| (format!("{}.{asked}", round.round), question)).collect()))
}

/// The round `task`'s answers are for, and the answers under the upstream's own keys: `None`
/// when the task has no answers, or no round is kept for it (its lease passed, or the records
/// were lost).
pub async fn answered(
    records: &dyn Records,
    task: &TaskRecord,
) -> Result<Option<(RunRound, InputResponses)>, RecordsError> {
    if task.answers.is_empty() {
        return Ok(None);
    }
    let Some(round) = records.get(&key(task)).await?.as_deref().and_then(RunRound::decode) else { return Ok(None) };
    let prefix = format!("{}.", round.round);
    let answers: BTreeMap<String, serde_json::Value> = task
        .answers
        .iter()
        .filter_map(|(asked, answer)| asked.strip_prefix(&prefix).map(|asked| (asked.to_owned(), answer.clone())))
        .collect();
    Ok(Some((round, answers)))
}
