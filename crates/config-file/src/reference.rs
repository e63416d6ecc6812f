//! The reference page (`docs/configuration.md`) and a commented example file, rendered from
//! the programs' clap types and the [`Schema`]: the help, the flag, the environment variable
//! and the default of each key are the ones the programs use.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command};

use crate::{
    effective::toml_value,
    schema::{Schema, split_key},
};

/// A key as one command reads it.
struct Reader<'c> {
    command: String,
    arg: &'c Arg,
}

/// Every reader of `key` among `programs` (each program's root command).
fn readers<'c>(schema: &Schema, programs: &'c [Command], key: &str) -> Vec<Reader<'c>> {
    let mut found = Vec::new();
    for (index, keys) in schema.commands.iter().enumerate() {
        // A command that reads the same keys as one before it (`config check`, which checks
        // what `serve` reads) says nothing new.
        if schema.commands[..index].iter().any(|before| std::ptr::eq(before.keys, keys.keys)) {
            continue;
        }
        let Some((&root, rest)) = keys.path.split_first() else { continue };
        let Some(program) = programs.iter().find(|program| program.get_name() == root) else { continue };
        let Some(command) = rest.iter().try_fold(program, |command, name| command.find_subcommand(name)) else {
            continue;
        };
        for (_, id) in keys.keys.iter().filter(|(name, _)| *name == key) {
            if let Some(arg) = command.get_arguments().find(|arg| arg.get_id() == *id) {
                found.push(Reader { command: keys.display(), arg });
            }
        }
    }
    found
}

/// Every key, in section order and then in the order the commands list them, once each.
fn keys_in_order(schema: &Schema, section: &str) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = Vec::new();
    for command in schema.commands {
        for (key, _) in command.keys {
            if split_key(key).0 == section && !keys.contains(key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// An arg's help on one line, as a sentence.
fn help(arg: &Arg) -> String {
    let text = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if !text.is_empty() && !text.ends_with(['.', ')', ':', '!', '?']) {
        text.push('.');
    }
    text
}

/// An arg's default as the file would write it, if it has one.
fn default(arg: &Arg) -> Option<String> {
    match arg.get_action() {
        ArgAction::SetTrue => return Some("false".into()),
        ArgAction::SetFalse => return Some("true".into()),
        _ => {}
    }
    let values: Vec<String> =
        arg.get_default_values().iter().map(|value| value.to_string_lossy().into_owned()).collect();
    match values.as_slice() {
        [] => None,
        [one] => Some(toml_value(one)),
        many => Some(format!("[{}]", many.iter().map(|value| toml_value(value)).collect::<Vec<_>>().join(", "))),
    }
}

/// The reference page: `intro` (Markdown), then each section's keys with what reads them.
pub fn markdown(schema: &Schema, programs: &[Command], intro: &str) -> String {
    let mut out = String::from(intro.trim_end());
    out.push('\n');
    for section in schema.sections {
        let keys = keys_in_order(schema, section.name);
        if keys.is_empty() {
            continue;
        }
        let _ = write!(out, "\n## `[{}]`\n\n{}\n", section.name, section.about);
        for key in keys {
            let readers = readers(schema, programs, key);
            let Some(first) = readers.first() else { continue };
            let short = split_key(key).1;
            let _ = write!(out, "\n### `{short}`\n\n{}\n\n", help(first.arg));
            if let Some(default) = default(first.arg) {
                let _ = writeln!(out, "- Default: `{default}`");
            }
            if first.arg.is_hide_env_values_set() {
                let _ = writeln!(out, "- A secret: `config check` never shows it.");
            }
            for reader in &readers {
                let flag = reader.arg.get_long().map(|long| format!(" `--{long}`")).unwrap_or_default();
                let env = reader.arg.get_env().map(|env| format!(", `{}`", env.to_string_lossy())).unwrap_or_default();
                let _ = writeln!(out, "- `{}`{flag}{env}", reader.command);
            }
        }
    }
    out
}

/// A commented example file: every key, each with its help; set where the schema gives an
/// example, else commented out with its default (so a default changed later still applies).
pub fn example(schema: &Schema, programs: &[Command], intro: &str) -> String {
    let mut out = String::new();
    for line in intro.lines() {
        let _ = writeln!(out, "# {line}");
    }
    for section in schema.sections {
        let keys = keys_in_order(schema, section.name);
        if keys.is_empty() {
            continue;
        }
        let _ = write!(out, "\n# {}\n[{}]\n", section.about, section.name);
        for key in keys {
            let readers = readers(schema, programs, key);
            let Some(first) = readers.first() else { continue };
            let short = split_key(key).1;
            for line in wrap(&help(first.arg), 92) {
                let _ = writeln!(out, "# {line}");
            }
            let _ = match (schema.example(key), default(first.arg)) {
                (Some(example), _) => writeln!(out, "{short} = {}", toml_value(example)),
                (None, Some(default)) => writeln!(out, "# {short} = {default}"),
                (None, None) => writeln!(out, "# {short} ="),
            };
        }
    }
    out
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
