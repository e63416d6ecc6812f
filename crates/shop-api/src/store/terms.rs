//! The store's terms unless told otherwise: how long a quote and a hold last, and the words an
//! expired hold ends with.

use std::time::Duration;

/// How long a quote can be issued unless told otherwise: a day, as the MCP server keeps it.
pub const DEFAULT_QUOTE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Why a held refund that no lead decided in time was cancelled.
pub const EXPIRED: &str = "expired: no lead decided";

/// How long a held refund waits for a lead by default (72 hours).
pub const DEFAULT_APPROVAL_DEADLINE: Duration = Duration::from_secs(72 * 3600);
