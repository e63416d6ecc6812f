//! ARCHITECTURE.md names the code it describes: every code name it cites in backticks (a type,
//! `Type::function`, a `snake_case` function, a `CONSTANT`, a module path) must still be in the
//! source, outside comments, or the map describes a house that is gone.

use std::{collections::HashSet, path::Path};

/// Every word of the workspace's Rust source, outside `//` comments, string contents included
/// (an environment variable's name is a string).
fn words_of_the_source(root: &Path) -> HashSet<String> {
    let mut words = HashSet::new();
    let mut dirs = vec![root.join("crates")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") && !path.ends_with(file!()) {
                let text = std::fs::read_to_string(&path).unwrap();
                for line in text.lines() {
                    let code = line.trim_start();
                    if code.starts_with("//") {
                        continue;
                    }
                    let code = code.split(" // ").next().unwrap_or_default();
                    words.extend(
                        code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .filter(|word| !word.is_empty())
                            .map(str::to_owned),
                    );
                }
            }
        }
    }
    words
}

/// The code names among the backticked spans of `text`: `Shop::act`, `QuoteStore`,
/// `CLAIM_LEASE`, `may_decide`, `replicated`, `mrtr::records` (each as its path's segments):
/// every span that is identifiers joined by `::`. Flags, paths, URLs and literals are not.
fn code_names(text: &str) -> Vec<(String, Vec<String>)> {
    let mut names = Vec::new();
    for (index, span) in text.split('`').enumerate() {
        if index % 2 == 0 {
            continue;
        }
        let bare = span.trim_end_matches("()");
        let bare = bare.split('<').next().unwrap_or(bare);
        let segments: Vec<&str> = bare.split("::").collect();
        let is_identifier = |segment: &&str| {
            !segment.is_empty()
                && segment.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !segment.starts_with(|c: char| c.is_ascii_digit())
        };
        if !segments.iter().all(is_identifier) {
            continue;
        }
        names.push((span.to_owned(), segments.into_iter().map(str::to_owned).collect()));
    }
    names
}

#[test]
fn every_code_name_the_architecture_cites_is_in_the_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let words = words_of_the_source(&root);
    let cited = code_names(&map);
    assert!(cited.len() > 50, "the map cites {} code names: is the reading of it broken?", cited.len());
    let gone: Vec<&str> = cited
        .iter()
        .filter(|(_, segments)| segments.iter().any(|segment| !words.contains(segment)))
        .map(|(span, _)| span.as_str())
        .collect();
    assert!(gone.is_empty(), "ARCHITECTURE.md cites code that is not in the source: {gone:?}");
}

#[test]
fn a_name_that_is_gone_is_caught() {
    let words: HashSet<String> = ["Shop", "act", "CLAIM_LEASE"].map(String::from).into();
    let cited = code_names(
        "`Shop::act` holds `CLAIM_LEASE`; `Shop::release_hold` and `replicated` went; `--flag`, `/mcp`, `v1.` are not code",
    );
    let gone: Vec<&str> = cited
        .iter()
        .filter(|(_, segments)| segments.iter().any(|segment| !words.contains(segment)))
        .map(|(span, _)| span.as_str())
        .collect();
    assert_eq!(gone, ["Shop::release_hold", "replicated"]);
}
