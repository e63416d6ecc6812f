//! The file: TOML read into `section.key` → values as a command line writes them, each with
//! the line it is on, so an error can point at it.
//!
//! Only what a command line can say is taken: a string, a number, a boolean, a date, or an
//! array of those (a flag given once per element). A key outside a section, or a table inside
//! one, is an error.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use toml::de::{DeTable, DeValue};

use crate::{error::ConfigError, schema::Schema};

/// A configuration file read and checked against its [`Schema`].
#[derive(Debug, Clone)]
pub struct File {
    pub path: PathBuf,
    entries: BTreeMap<String, Entry>,
}

/// One key's values and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Line number, from 1.
    pub line: usize,
    /// Its values as command-line text: one, or one per element of an array.
    pub values: Vec<String>,
}

impl File {
    /// Reads `path` and checks that every section and key is one `schema` knows.
    pub fn read(path: &Path, schema: &Schema) -> Result<File, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        File::parse(path, &text, schema)
    }

    /// As [`File::read`], from text already read.
    pub fn parse(path: &Path, text: &str, schema: &Schema) -> Result<File, ConfigError> {
        let line = |offset: usize| text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1;
        let syntax =
            |offset: usize, message: String| ConfigError::Syntax { path: path.to_owned(), line: line(offset), message };
        let document = DeTable::parse(text)
            .map_err(|error| syntax(error.span().map_or(0, |span| span.start), error.message().trim().to_owned()))?;
        let mut entries = BTreeMap::new();
        // In the order written, so the first mistake is the one reported.
        let mut sections: Vec<_> = document.get_ref().iter().collect();
        sections.sort_by_key(|(section, _)| section.span().start);
        for (section, body) in sections {
            let at = section.span().start;
            let DeValue::Table(keys) = body.get_ref() else {
                return Err(syntax(
                    at,
                    format!("`{}` is outside any section: each key belongs in one, such as [store]", section.get_ref()),
                ));
            };
            if !schema.has_section(section.get_ref()) {
                let known: Vec<_> = schema.sections.iter().map(|section| section.name).collect();
                return Err(syntax(
                    at,
                    format!("unknown section [{}]; the sections are {}", section.get_ref(), known.join(", ")),
                ));
            }
            let mut keys: Vec<_> = keys.iter().collect();
            keys.sort_by_key(|(key, _)| key.span().start);
            for (key, value) in keys {
                let name = format!("{}.{}", section.get_ref(), key.get_ref());
                let at = line(key.span().start);
                if !schema.knows(&name) {
                    let hint = close_key(schema, section.get_ref(), key.get_ref())
                        .map(|known| format!(": did you mean `{known}`?"))
                        .unwrap_or_default();
                    return Err(ConfigError::UnknownKey { path: path.to_owned(), line: at, key: name, hint });
                }
                let bad = |message: String| ConfigError::BadValue {
                    path: path.to_owned(),
                    line: at,
                    key: name.clone(),
                    message,
                };
                let values = match value.get_ref() {
                    DeValue::Array(elements) => elements
                        .iter()
                        .map(|element| scalar(element.get_ref()).map_err(&bad))
                        .collect::<Result<_, _>>()?,
                    other => vec![scalar(other).map_err(&bad)?],
                };
                entries.insert(name, Entry { line: at, values });
            }
        }
        Ok(File { path: path.to_owned(), entries })
    }

    /// The entry for `key` (`section.key`), if the file has it.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }
}

/// A scalar as a command line writes it.
fn scalar(value: &DeValue<'_>) -> Result<String, String> {
    Ok(match value {
        DeValue::String(text) => text.to_string(),
        DeValue::Integer(integer) => {
            let digits = integer.as_str().replace('_', "");
            i128::from_str_radix(digits.trim_start_matches('+'), integer.radix())
                .map_err(|error| format!("{error}"))?
                .to_string()
        }
        DeValue::Float(float) => float.as_str().replace('_', ""),
        DeValue::Boolean(boolean) => boolean.to_string(),
        DeValue::Datetime(datetime) => datetime.to_string(),
        DeValue::Array(_) => return Err("an array inside an array says nothing a command line can".into()),
        DeValue::Table(_) => return Err("a table here says nothing a command line can: give a value".into()),
    })
}

/// A known key in `section` one letter's edit or a shared word away from `key`, to suggest.
fn close_key(schema: &Schema, section: &str, key: &str) -> Option<String> {
    let prefix = format!("{section}.");
    let candidates = schema.commands.iter().flat_map(|command| command.keys.iter().map(|(name, _)| *name));
    candidates
        .filter_map(|name| name.strip_prefix(&prefix).map(|short| (name, short)))
        .find(|(_, short)| {
            short.replace('_', "-") == key.replace('_', "-")
                || short.split('_').any(|word| key.split(['_', '-']).any(|other| other == word && word.len() > 3))
        })
        .map(|(_, short)| format!("{section}.{short}"))
        .or_else(|| {
            // The key under another section.
            schema
                .commands
                .iter()
                .flat_map(|command| command.keys.iter().map(|(name, _)| *name))
                .find(|name| name.rsplit('.').next() == Some(key))
                .map(str::to_owned)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{CommandKeys, Section};

    static SCHEMA: Schema = Schema {
        env: "TEST_CONFIG",
        sections: &[
            Section { name: "store", title: "Store", about: "" },
            Section { name: "limits", title: "Limits", about: "" },
        ],
        commands: &[CommandKeys {
            path: &["prog", "serve"],
            keys: &[("store.url", "store"), ("limits.max_sessions", "max_sessions"), ("limits.hosts", "hosts")],
        }],
        renamed_env: &[],
        examples: &[],
    };

    fn parse(text: &str) -> Result<File, ConfigError> {
        File::parse(Path::new("f.toml"), text, &SCHEMA)
    }

    #[test]
    fn values_become_command_line_text_with_their_lines() {
        let file = parse(
            "# a comment\n[store]\nurl = \"redis://x\"\n\n[limits]\nmax_sessions = 0x10\nhosts = [\"a\", \"b\"]\n",
        )
        .unwrap();
        assert_eq!(file.get("store.url"), Some(&Entry { line: 3, values: vec!["redis://x".into()] }));
        assert_eq!(file.get("limits.max_sessions"), Some(&Entry { line: 6, values: vec!["16".into()] }));
        assert_eq!(file.get("limits.hosts").unwrap().values, ["a", "b"]);
    }

    #[test]
    fn an_unknown_key_names_its_line_and_a_close_one() {
        let error =
            parse("[store]\nurl = \"memory\"\nprefx = \"x\"\n[limits]\nsessions = 3\n").unwrap_err().to_string();
        assert_eq!(error, "f.toml:3: unknown key `store.prefx`");
        let error = parse("[limits]\nmax-sessions = 3\n").unwrap_err().to_string();
        assert_eq!(error, "f.toml:2: unknown key `limits.max-sessions`: did you mean `limits.max_sessions`?");
        let error = parse("[limits]\nurl = 3\n").unwrap_err().to_string();
        assert_eq!(error, "f.toml:2: unknown key `limits.url`: did you mean `store.url`?");
    }

    #[test]
    fn sections_and_syntax_are_checked_with_lines() {
        assert_eq!(
            parse("url = 1\n").unwrap_err().to_string(),
            "f.toml:1: `url` is outside any section: each key belongs in one, such as [store]"
        );
        assert_eq!(
            parse("\n[stores]\n").unwrap_err().to_string(),
            "f.toml:2: unknown section [stores]; the sections are store, limits"
        );
        let error = parse("[store]\nurl = \n").unwrap_err().to_string();
        assert!(error.starts_with("f.toml:2: "), "{error}");
        let error = parse("[store]\nurl = { a = 1 }\n").unwrap_err().to_string();
        assert_eq!(error, "f.toml:2: `store.url`: a table here says nothing a command line can: give a value");
    }
}
