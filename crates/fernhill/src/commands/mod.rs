//! The `fernhill` command's subcommands, one file each.

pub mod demo;
pub mod gate_check;
pub mod gate_serve;
pub mod host;
pub mod payment_provider;
pub mod probe;
pub mod runtime;
pub mod serve;
pub mod service_credential;
pub mod shop_api;
pub mod verify;
pub mod wire;
