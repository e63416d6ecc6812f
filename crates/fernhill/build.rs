//! Link the `fernhill` binary with packed relative relocations (`DT_RELR`) on Linux. A stdio
//! server is started by its host for every session, and each start reads the binary's relative
//! relocations: about 39,000 of them, 0.9 MB as 24-byte records, packed into 15 KB. Measured
//! side by side (`fernhill-load cold-start 30`, two rounds): peak memory 20.7 -> 18.5 MiB,
//! start to exit unchanged within noise (4.7-5.2 ms either way). Needs GNU ld 2.38 or lld 15,
//! and glibc 2.36 to run; set FERNHILL_PLAIN_RELOCS=1 to link without.
//! Done here rather than in RUSTFLAGS so that only this crate's link changes, and no other
//! crate is rebuilt.

fn main() {
    println!("cargo::rerun-if-env-changed=FERNHILL_PLAIN_RELOCS");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && std::env::var_os("FERNHILL_PLAIN_RELOCS").is_none() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
