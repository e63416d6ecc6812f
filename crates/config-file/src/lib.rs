//! A TOML configuration file beneath a clap command line.
//!
//! A setting comes from the first of four places that gives it: a flag on the command line, an
//! environment variable, a key in the file (`--config PATH`, or the environment variable the
//! [`Schema`] names), and last the default written once, in the clap type that holds it.
//!
//! - [`schema`]: the file's sections, and for each command which argument each key sets.
//! - [`file`]: the TOML read, each key's values as command-line text and the line it is on.
//! - [`layers`]: [`parse`] fills in as flags the keys nothing closer set, so clap parses and
//!   checks one command line; no file, and it is clap's own parse.
//! - [`effective`]: where each value came from, printed with secrets redacted (`config check`).
//! - [`reference`]: the reference page and a commented example, rendered from the same types.
//!
//! Why not `figment` or `config`: they merge into serde types, beside clap, so each default
//! would be written twice (clap's and serde's) and a value's source is lost for a flag. Here
//! clap stays the one place a setting is defined.

pub mod effective;
pub mod error;
pub mod file;
pub mod layers;
pub mod reference;
pub mod schema;

pub use effective::{Effective, Source};
pub use error::ConfigError;
pub use layers::{Layered, parse};
pub use schema::{CommandKeys, Schema, Section};

/// `T` with every setting at the default its flag declares, the environment ignored: the one
/// place a default is written is clap's attribute, and a type's `Default` (or a constructor for
/// tests and programs) is this. `argv` gives what has no default (a required flag), such as
/// `["--shop-api", "http://127.0.0.1:8710"]`.
pub fn defaults<T: clap::Args + clap::FromArgMatches>(argv: &[&str]) -> Result<T, clap::Error> {
    let command = T::augment_args(clap::Command::new("defaults").no_binary_name(true)).mut_args(|arg| arg.env(None));
    let matches = command.try_get_matches_from(argv)?;
    T::from_arg_matches(&matches)
}
