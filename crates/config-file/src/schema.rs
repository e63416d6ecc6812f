//! What the file may hold: its sections, and for each command the argument each key sets.

/// A whole configuration file's shape, for every program that reads it.
#[derive(Debug)]
pub struct Schema {
    /// The environment variable that names the file when `--config` does not.
    pub env: &'static str,
    /// The sections, in the order the reference and the example print them.
    pub sections: &'static [Section],
    /// Each command that reads the file, with its keys.
    pub commands: &'static [CommandKeys],
    /// Environment variables renamed: (old, new). The old name still works, with a warning.
    pub renamed_env: &'static [(&'static str, &'static str)],
    /// A value for the example file where the argument has no default (`section.key`, value).
    pub examples: &'static [(&'static str, &'static str)],
}

/// One `[section]` of the file: one concern.
#[derive(Debug)]
pub struct Section {
    pub name: &'static str,
    /// Its heading in `--help`, where its flags are listed together.
    pub title: &'static str,
    /// One line on what it configures.
    pub about: &'static str,
}

/// The keys one command reads.
#[derive(Debug)]
pub struct CommandKeys {
    /// The command's names from the program's, such as `["fernhill-mcp", "serve"]`.
    pub path: &'static [&'static str],
    /// `(section.key, clap argument ID)`, one per key this command reads.
    pub keys: &'static [(&'static str, &'static str)],
}

/// A key's section and its name there: `("limits", "max_sessions")` for `limits.max_sessions`
/// (no section for a key without one).
pub fn split_key(key: &str) -> (&str, &str) {
    key.split_once('.').unwrap_or(("", key))
}

impl Schema {
    /// The keys of the command at `path`, if it reads the file.
    pub fn command(&self, path: &[String]) -> Option<&CommandKeys> {
        self.commands.iter().find(|command| command.path.iter().copied().eq(path.iter().map(String::as_str)))
    }

    /// Whether any command reads `key` (`section.key`).
    pub fn knows(&self, key: &str) -> bool {
        self.commands.iter().any(|command| command.keys.iter().any(|(name, _)| *name == key))
    }

    /// Whether `section` is one of the file's.
    pub fn has_section(&self, section: &str) -> bool {
        self.sections.iter().any(|known| known.name == section)
    }

    /// The example value of `key`, if one is written.
    pub fn example(&self, key: &str) -> Option<&'static str> {
        self.examples.iter().find(|(name, _)| *name == key).map(|(_, value)| *value)
    }
}

impl Schema {
    /// `root` with each flag that a key stands for listed in `--help` under its section's title,
    /// so a command's help reads as the file does: a heading per concern.
    pub fn headed(&self, root: clap::Command) -> clap::Command {
        let program = root.get_name().to_owned();
        self.commands
            .iter()
            .filter(|keys| keys.path.first() == Some(&program.as_str()))
            .fold(root, |root, keys| self.head(root, &keys.path[1..], keys))
    }

    fn head(&self, command: clap::Command, rest: &[&str], keys: &CommandKeys) -> clap::Command {
        match rest.split_first() {
            Some((name, rest)) => command.mut_subcommand(*name, |sub| self.head(sub, rest, keys)),
            None => command.mut_args(|arg| {
                let title = keys
                    .key_of(arg.get_id().as_str())
                    .map(|key| split_key(key).0)
                    .and_then(|section| self.sections.iter().find(|known| known.name == section))
                    .map(|section| section.title);
                match title {
                    Some(title) => arg.help_heading(title),
                    None => arg,
                }
            }),
        }
    }
}

impl CommandKeys {
    /// The key that sets the argument `arg`, if one does.
    pub fn key_of(&self, arg: &str) -> Option<&'static str> {
        self.keys.iter().find(|(_, id)| *id == arg).map(|(key, _)| *key)
    }

    /// The command as its user types it: `fernhill-mcp serve`.
    pub fn display(&self) -> String {
        self.path.join(" ")
    }
}
