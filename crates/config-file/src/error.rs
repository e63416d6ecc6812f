//! Why a configuration could not be read.

use std::path::PathBuf;

/// A configuration file, or a value in it, that cannot be used. Each names the file, the line
/// and the key where it has them.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}:{line}: {message}", path.display())]
    Syntax { path: PathBuf, line: usize, message: String },
    #[error("{}:{line}: unknown key `{key}`{hint}", path.display())]
    UnknownKey { path: PathBuf, line: usize, key: String, hint: String },
    #[error("{}:{line}: `{key}`: {message}", path.display())]
    BadValue { path: PathBuf, line: usize, key: String, message: String },
    /// Settings that cannot hold together, wherever each came from.
    #[error("{0}")]
    Contradiction(String),
}
