//! How the binaries are linked, for a stdio server's start. A host starts a stdio server for
//! every session, and what a start costs is mostly the binary's pages it maps.
//!
//! Packed relative relocations (`DT_RELR`) on Linux: each start reads the binary's relative
//! relocations, about 39,000 of them, 0.9 MB as 24-byte records, packed into 15 KB. Measured
//! side by side (`fernhill-load cold-start 30`, two rounds): peak memory 20.7 -> 18.5 MiB,
//! start to exit unchanged within noise. Needs GNU ld 2.38 or lld 15, and glibc 2.36 to run;
//! set FERNHILL_PLAIN_RELOCS=1 to link without.
//!
//! The start's functions first (`fernhill-mcp`, with Rust's own linker, lld, on x86-64 Linux):
//! the kernel maps a binary's code 64 KB around each page it first runs, and a start that runs
//! 1.6 MB of functions spread over 15 MB of code mapped 8.8 MB of it. `start-order.txt` names
//! them (written by `scripts/start-order`), and a linker script made from it here lays them out
//! first, together. A name the build no longer has matches nothing, so a stale list costs
//! memory, never a failed link. Set FERNHILL_NO_START_ORDER=1 to link without.
//!
//! Done here rather than in RUSTFLAGS so that only this crate's link changes, and no other
//! crate is rebuilt.

fn main() {
    println!("cargo::rerun-if-env-changed=FERNHILL_PLAIN_RELOCS");
    println!("cargo::rerun-if-env-changed=FERNHILL_NO_START_ORDER");
    println!("cargo::rerun-if-changed=start-order.txt");
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    let linux = var("CARGO_CFG_TARGET_OS") == "linux";
    if linux && std::env::var_os("FERNHILL_PLAIN_RELOCS").is_none() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    // Rust links x86-64 GNU/Linux with its own lld by default (1.90 on); another linker is
    // given nothing it might refuse.
    let lld = linux && var("CARGO_CFG_TARGET_ARCH") == "x86_64" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if lld && std::env::var_os("FERNHILL_NO_START_ORDER").is_none() {
        let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("start-order.txt");
        let script = std::path::Path::new(&var("OUT_DIR")).join("start-order.ld");
        if let Ok(names) = std::fs::read_to_string(&order)
            && std::fs::write(&script, linker_script(&names)).is_ok()
        {
            println!("cargo::rustc-link-arg-bin=fernhill-mcp=-Wl,-T,{}", script.display());
        }
    }
}

/// A linker script that lays the sections of the functions `names` lists first, in its order,
/// in a code section of their own before the rest. A Rust name's hash (`17h…E`, which moves
/// with the crate's features and dependencies, and with what else is built beside it) is
/// written off in the list and matched by a glob here, so the list holds across builds;
/// each generic function's instantiations go together.
fn linker_script(names: &str) -> String {
    let mut script = String::from("SECTIONS\n{\n  .text.start : {\n");
    for name in names.lines().map(str::trim).filter(|name| !name.is_empty() && !name.starts_with('#')) {
        // A cold function (`#[cold]`, as std's growth paths are) sits in `.text.unlikely.`.
        let glob = if name.ends_with("17h") { "*" } else { "" };
        script.push_str(&format!("    *(.text.{name}{glob} .text.unlikely.{name}{glob})\n"));
    }
    script.push_str("  }\n}\nINSERT BEFORE .text;\n");
    script
}
