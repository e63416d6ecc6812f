//! What a fleet's gates share beside their held calls: the records the approvals engines keep
//! (a decision's claim, so two gates deciding one call at once make one decision and one
//! receipt) and the approval page keeps (its visitors' sessions), and the tasks a host waits on.
//! One gate keeps them in its process; a fleet keeps them in Redis (`--store redis://…`), so a
//! host's next request, a decider's next page and a task's next poll may reach any gate.

use std::{sync::Arc, time::Duration};

use mrtr::tasks::TaskStore;
use records::Records;

/// How long a task is remembered after its lifetime ends, for a host that asks late.
const TASK_GRACE: Duration = Duration::from_secs(3600);

/// The records and tasks the gates of one policy share.
#[derive(Clone)]
pub struct Shared {
    /// Records: the engines' claims and declines, the page's sessions.
    pub records: Arc<dyn Records>,
    /// The tasks held calls wait on.
    pub tasks: Arc<dyn TaskStore>,
}

/// A store that cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotAStore(String);

impl Shared {
    /// Kept in this process: they end with it.
    pub fn in_process() -> Shared {
        Shared {
            records: Arc::new(records::InMemory::new()),
            tasks: Arc::new(mrtr::tasks::InMemoryTasks::new(TASK_GRACE)),
        }
    }

    /// Kept where `store` says (`memory`, or a Redis URL: `redis://`, `redis+sentinel://`,
    /// `redis+cluster://`), keys under `prefix`.
    pub fn at(store: &str, prefix: &str) -> Result<Shared, NotAStore> {
        let records = records::from_url(store, prefix).map_err(|error| NotAStore(error.to_string()))?;
        let tasks = mrtr::tasks::from_url(store, prefix, TASK_GRACE).map_err(|error| NotAStore(error.to_string()))?;
        Ok(Shared { records, tasks })
    }
}
