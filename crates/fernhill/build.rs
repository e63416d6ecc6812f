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
//! them (written by `scripts/start-order`) and lld lays them out first, together; a name the
//! build no longer has (its hash changed with a dependency) is passed over, so a stale list
//! costs memory, never a failed link. Set FERNHILL_NO_START_ORDER=1 to link without.
//!
//! Done here rather than in RUSTFLAGS so that only this crate's link changes, and no other
//! crate is rebuilt.

fn main() {
    println!("cargo::rerun-if-env-changed=FERNHILL_PLAIN_RELOCS");
    println!("cargo::rerun-if-env-changed=FERNHILL_NO_START_ORDER");
    println!("cargo::rerun-if-changed=start-order.txt");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    let linux = target("CARGO_CFG_TARGET_OS") == "linux";
    if linux && std::env::var_os("FERNHILL_PLAIN_RELOCS").is_none() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    // Rust links x86-64 GNU/Linux with its own lld by default (1.90 on); another linker (GNU
    // ld reads no such file) is given nothing it would refuse.
    let lld = linux && target("CARGO_CFG_TARGET_ARCH") == "x86_64" && target("CARGO_CFG_TARGET_ENV") == "gnu";
    if lld && std::env::var_os("FERNHILL_NO_START_ORDER").is_none() {
        let order = std::path::Path::new(&target("CARGO_MANIFEST_DIR")).join("start-order.txt");
        if order.exists() {
            println!("cargo::rustc-link-arg-bin=fernhill-mcp=-Wl,--symbol-ordering-file={}", order.display());
            println!("cargo::rustc-link-arg-bin=fernhill-mcp=-Wl,--no-warn-symbol-ordering");
        }
    }
}
