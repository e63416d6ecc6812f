//! A tool's name as a rule names it: exact, or a glob (`write_*`, `*_file`, `*`).

use std::fmt;

/// A tool name or glob (`*` any run of characters, `?` one, `[...]` a class), as a rule names
/// the tools it holds. Matching is on the whole name, case-sensitive, as MCP names are.
#[derive(Debug, Clone)]
pub struct ToolName {
    written: String,
    // The `glob` crate's pattern: a name is not a path, but its syntax is the one operators
    // know from shells, and its `matches` reads a plain string.
    pattern: glob::Pattern,
}

impl ToolName {
    /// `written` as a name or glob; refused when the glob does not parse, or is empty.
    pub fn parse(written: &str) -> Result<ToolName, String> {
        if written.trim().is_empty() {
            return Err("a tool name is empty; write the name, or a glob such as `write_*`".into());
        }
        let pattern =
            glob::Pattern::new(written).map_err(|error| format!("`{written}` is not a glob: {}", error.msg))?;
        Ok(ToolName { written: written.to_owned(), pattern })
    }

    /// Whether the tool called `name` is this one.
    pub fn matches(&self, name: &str) -> bool {
        self.pattern.matches_with(
            name,
            glob::MatchOptions {
                case_sensitive: true,
                require_literal_separator: false,
                require_literal_leading_dot: false,
            },
        )
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_matches_itself_and_a_glob_its_family() {
        let exact = ToolName::parse("write_file").unwrap();
        assert!(exact.matches("write_file") && !exact.matches("write_files") && !exact.matches("Write_file"));
        let family = ToolName::parse("write_*").unwrap();
        assert!(family.matches("write_file") && family.matches("write_") && !family.matches("read_file"));
        // A name is not a path: a slash is one more character.
        assert!(ToolName::parse("*").unwrap().matches("fs/write"));
    }

    #[test]
    fn an_empty_name_or_a_broken_glob_is_refused() {
        assert!(ToolName::parse(" ").unwrap_err().contains("empty"));
        assert!(ToolName::parse("write_[").unwrap_err().contains("not a glob"));
    }
}
