//! Load on a fleet: simulated support leads confirming refunds over MCP on HTTP, against
//! servers given by URL or a fleet started on this machine, and the books checked afterwards
//! (the shop's API asked where every refund ended, against what each lead said and was told).
//!
//! - [`leads`]: the leads. Each does `quote_refund` → `issue_refund` (answered
//!   `input_required`) → the retry with a yes and the state, each round to the next server in
//!   turn, so a call's rounds land on different replicas; then the shop's API is asked whether
//!   every refund was released exactly once.
//! - `confirmation`: one confirmation as its lead lived it, and how it ended;
//! - [`report`]: what a run of leads found: its confirmations counted, percentiles per step,
//!   the books, the servers' CPU time and memory, and the report as a person reads it;
//! - [`fleet`]: a fresh shop API and several `fernhill-mcp serve --http` replicas sharing one key
//!   and one store, with no stickiness; a replica can be killed and restarted.
//! - [`arrivals`]: confirmations arriving at a fixed rate (an open loop, to overload a
//!   server), and the goodput: those finished within a person's patience;
//! - [`faults`]: a fault (a replica killed or restarted, Redis restarted or failed over, the
//!   API down or slow) striking a relayed fleet under load, and the books checked: one row of a
//!   table each.
//! - [`overload`]: one bounded replica's capacity, then 2x and 5x that arriving, shed or
//!   queued past the bound: goodput side by side;
//! - [`orders`]: which order each confirmation refunds (an order is refunded once, so a run
//!   needs one for each; the API adds them for load tests);
//! - [`relay`]: a TCP relay in front of a replica or the API, that a fault run cuts or slows;
//! - [`redis_server`]: a Redis of a run's own, to stop and start again, [`sentinel`]: a
//!   primary, a replica and a Sentinel, to fail over, and [`cluster`]: a Redis Cluster of
//!   three primaries with a replica each, to fail over and reshard (`redis_node`: one node);
//! - [`task_cost`]: what a task waiting for another lead costs one server: CPU per
//!   `tasks/get` beside a `lookup_order`, and its memory while tasks wait;
//! - [`waiting_tasks`]: refunds that wait as tasks for another lead (the Tasks extension)
//!   while every replica is restarted and Redis fails over or crashes, then decided and read
//!   through random replicas: the books;
//! - [`cold_start`]: a stdio server's start to its first answer, and its peak memory;
//! - [`held_calls`]: calls a gate holds, has decided and runs, a second, in front of an
//!   upstream of this tool's own that counts what it runs;
//! - [`usage`]: the CPU time server processes spend during a run, and their memory;
//! - [`echo`]: the floor, a bare JSON service answering a confirmation's requests with canned
//!   bytes of the same shape, to read the servers' figures against;
//! - [`child_log`]: a child process's stderr, collected so a caller can wait for a line;
//! - [`authorization`]: how the leads authorize with servers that ask for OAuth.
//!
//! The binary, `fernhill-load`, is a thin command line over these: a subcommand each
//! ([`commands`]).

pub mod arrivals;
pub mod authorization;
pub mod child_log;
pub mod cluster;
pub mod cold_start;
pub mod commands;
mod confirmation;
pub mod echo;
pub mod faults;
pub mod fleet;
pub mod held_calls;
pub mod leads;
pub mod orders;
pub mod overload;
pub mod passed_calls;
mod redis_node;
pub mod redis_server;
pub mod relay;
pub mod report;
pub mod sentinel;
pub mod task_cost;
pub mod usage;
pub mod waiting_tasks;
